"""Classification tasks built from data that ships inside a pip package.

Both tasks use scikit-learn's bundled handwritten digits (1,797 images of
8x8 pixels, 16 grey levels, 10 classes): nothing is downloaded.

* ``digits`` (easy, plays CIFAR-10's role): the images themselves, 10 classes.
* ``pairs`` (hard, plays CIFAR-100's role): two digit images side by side
  (8x16 pixels), labelled by the ordered pair, ``10 * left + right``: 100
  classes.  Train, validation and test pairs are drawn from disjoint image
  sets, so a test pair never shows an image seen in training.

Splits are fixed per seed: the same seed always gives the same arrays.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["Task", "digits", "pairs", "pairs_hard", "HARD", "TASKS", "load_task"]

#: Image fractions of the train / validation / test splits of the digits.
SPLIT = (0.6, 0.2, 0.2)


@dataclass(frozen=True)
class Task:
    """A classification task: images ``(N, H, W)`` float32 in [0, 1], int32 labels."""
    name: str
    classes: int
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def image_shape(self):
        return self.x_train.shape[1:]


def _split_digits(seed):
    """Stratified train / validation / test split of the digit images."""
    from sklearn.datasets import load_digits  # deferred: scikit-learn (train extra)
    from sklearn.model_selection import train_test_split  # deferred: scikit-learn (train extra)

    data = load_digits()
    x = (data.images / 16.0).astype(np.float32)
    y = data.target.astype(np.int32)
    test = SPLIT[2]
    val = SPLIT[1] / (SPLIT[0] + SPLIT[1])
    x_rest, x_test, y_rest, y_test = train_test_split(
        x, y, test_size=test, stratify=y, random_state=seed)
    x_train, x_val, y_train, y_val = train_test_split(
        x_rest, y_rest, test_size=val, stratify=y_rest, random_state=seed)
    return (x_train, y_train), (x_val, y_val), (x_test, y_test)


def digits(seed=0):
    """The easy task: the digits themselves, 10 classes."""
    train, val, test = _split_digits(seed)
    return Task("digits", 10, *train, *val, *test)


def _pair_set(images, labels, count, rng):
    """``count`` pairs, class-balanced: the pair class first, then one image of each digit."""
    by_digit = [np.flatnonzero(labels == d) for d in range(10)]
    cls = np.arange(count) % 100
    rng.shuffle(cls)
    left, right = np.empty(count, np.int64), np.empty(count, np.int64)
    for d in range(10):
        for side, digit in ((left, cls // 10), (right, cls % 10)):
            pick = digit == d
            side[pick] = rng.choice(by_digit[d], pick.sum())
    x = np.concatenate([images[left], images[right]], axis=2)
    return x, cls.astype(np.int32)


def pairs(seed=0, train=10_000, val=2_000, test=2_000):
    """The hard task: ordered pairs of digits side by side, 100 classes.

    Parameters
    ----------
    train, val, test : int
        Number of pairs per split (class-balanced: ``train / 100`` per class).
    """
    splits = _split_digits(seed)
    rng = np.random.default_rng([seed, 100])
    out = [_pair_set(x, y, count, rng) for (x, y), count in zip(splits, (train, val, test))]
    return Task("pairs", 100, *out[0], *out[1], *out[2])


#: The corruptions of ``pairs-hard``: shift (pixels each way), the share of
#: digits occluded by a 3x3 block of uniform grey levels, pixel noise (std).
HARD = dict(shift=1, occlude=0.35, block=3, noise=0.2)


def _corrupt(x, rng, shift, occlude, block, noise):
    """Each 8x8 half of the pairs ``x`` (N, 8, 16) shifted, occluded, noisy."""
    out = np.empty_like(x)
    n = len(x)
    for half in (slice(0, 8), slice(8, 16)):
        d = x[:, :, half]
        dy, dx = rng.integers(-shift, shift + 1, size=(2, n))
        padded = np.pad(d, ((0, 0), (shift, shift), (shift, shift)))
        rows = (np.arange(8)[None, :] + shift - dy[:, None])[:, :, None]
        cols = (np.arange(8)[None, :] + shift - dx[:, None])[:, None, :]
        d = padded[np.arange(n)[:, None, None], rows, cols]
        hide = rng.random(n) < occlude
        y0, x0 = rng.integers(0, 8 - block + 1, size=(2, n))
        grey = rng.random((n, block, block), dtype=np.float32)
        for i in np.flatnonzero(hide):
            d[i, y0[i]:y0[i] + block, x0[i]:x0[i] + block] = grey[i]
        out[:, :, half] = d
    out += rng.standard_normal(out.shape, dtype=np.float32) * np.float32(noise)
    return np.clip(out, 0.0, 1.0).astype(np.float32)


def pairs_hard(seed=0, train=30_000, val=2_000, test=2_000):
    """The paper-regime hard task: :func:`pairs` with shifts, occlusion and
    noise (:data:`HARD`), 100 classes."""
    splits = _split_digits(seed)
    rng = np.random.default_rng([seed, 101])
    out = []
    for (x, y), count in zip(splits, (train, val, test)):
        xp, yp = _pair_set(x, y, count, rng)
        out.append((_corrupt(xp, rng, **HARD), yp))
    return Task("pairs-hard", 100, *out[0], *out[1], *out[2])


TASKS = {"digits": digits, "pairs": pairs, "pairs-hard": pairs_hard}


@lru_cache(maxsize=8)
def load_task(name, seed=0):
    """The task called ``name`` for ``seed`` (the last few kept: a process
    that runs many configurations builds each task once)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {sorted(TASKS)}")
    return TASKS[name](seed)
