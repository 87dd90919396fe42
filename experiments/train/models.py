"""A small CNN in plain JAX whose classifier head is its own parameter group.

Parameters are a dict of two groups, ``{"backbone": {...}, "head": {...}}``,
the split the paper's layer-aware admission works on (Table 5 and 6):

* backbone: 3x3 convolution (1 -> C1, ReLU), 3x3 convolution with stride 2
  (C1 -> C2, ReLU), a dense layer to ``hidden`` features (ReLU);
* head: the dense classifier, ``hidden`` features -> classes (weights and
  biases).
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

__all__ = ["GROUPS", "CHANNELS", "HIDDEN", "init", "apply", "loss", "accuracy", "group_sizes", "Flattener"]

#: Parameter groups, in the order the runtime lays them out.
GROUPS = ("backbone", "head")
#: Default model size: convolution channels, and features the head reads.
CHANNELS = (8, 16)
HIDDEN = 64

_DN = ("NHWC", "HWIO", "NHWC")


def _he(rng, shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def init(seed, image_shape, classes, channels=CHANNELS, hidden=HIDDEN):
    """Initial parameters for images of ``image_shape`` (H, W), drawn with
    numpy from ``seed`` (no JAX random kernels to compile)."""
    c1, c2 = channels
    h, w = image_shape
    flat = ((h + 1) // 2) * ((w + 1) // 2) * c2
    rng = np.random.default_rng([seed, 0])
    zeros = lambda n: np.zeros(n, np.float32)
    tree = {
        "backbone": {
            "conv1_w": _he(rng, (3, 3, 1, c1), 9),
            "conv1_b": zeros(c1),
            "conv2_w": _he(rng, (3, 3, c1, c2), 9 * c1),
            "conv2_b": zeros(c2),
            "dense_w": _he(rng, (flat, hidden), flat),
            "dense_b": zeros(hidden),
        },
        "head": {
            "w": (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32),
            "b": zeros(classes),
        },
    }
    return jax.tree_util.tree_map(jnp.asarray, tree)


def apply(params, x):
    """Logits for images ``x`` of shape (N, H, W)."""
    b = params["backbone"]
    x = x[..., None]
    x = jax.lax.conv_general_dilated(x, b["conv1_w"], (1, 1), "SAME", dimension_numbers=_DN)
    x = jax.nn.relu(x + b["conv1_b"])
    x = jax.lax.conv_general_dilated(x, b["conv2_w"], (2, 2), "SAME", dimension_numbers=_DN)
    x = jax.nn.relu(x + b["conv2_b"])
    x = jax.nn.relu(x.reshape(x.shape[0], -1) @ b["dense_w"] + b["dense_b"])
    return x @ params["head"]["w"] + params["head"]["b"]


def loss(params, x, y):
    """Mean softmax cross-entropy of ``params`` on images ``x``, labels ``y``."""
    logp = jax.nn.log_softmax(apply(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def accuracy(params, x, y, batch=2048):
    """Top-1 accuracy on a whole split (in batches, on the host)."""
    correct = 0
    for start in range(0, len(y), batch):
        logits = _logits(params, x[start:start + batch])
        correct += int(np.sum(np.argmax(logits, axis=1) == y[start:start + batch]))
    return correct / len(y)


_logits = jax.jit(apply)


def group_sizes(params):
    """Element count of each parameter group."""
    return {g: int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(params[g])))
            for g in GROUPS}


class Flattener:
    """Flattens each parameter group to one vector and back (one layout for all steps)."""

    def __init__(self, params):
        self._unravel = {g: ravel_pytree(params[g])[1] for g in GROUPS}

    @staticmethod
    def flatten(tree):
        """``{group: vector}`` for a parameter-shaped tree."""
        return {g: ravel_pytree(tree[g])[0] for g in GROUPS}

    def unflatten(self, vectors):
        """Inverse of :meth:`flatten`."""
        return {g: self._unravel[g](vectors[g]) for g in GROUPS}
