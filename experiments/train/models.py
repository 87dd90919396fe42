"""A small CNN in plain JAX whose classifier head is its own parameter group.

Parameters are a dict of two groups, ``{"backbone": {...}, "head": {...}}``,
the split the paper's layer-aware admission works on (Table 5 and 6):

* backbone: 3x3 convolution (1 -> C1, ReLU), 3x3 convolution with stride 2
  (C1 -> C2, ReLU), optionally a dense layer to ``wide`` features (ReLU;
  the paper-regime model, :data:`PAPER_REGIME`, where it holds most of the
  parameters), a dense layer to ``hidden`` features (ReLU);
* head: the dense classifier, ``hidden`` features -> classes (weights and
  biases).

With ``norm`` (:data:`NORM_REGIME`) every hidden layer is normalised
before its ReLU: group normalisation (:data:`NORM_GROUPS` groups, a scale
and a shift per feature, in the backbone) after each convolution, after
the wide dense layer and after the dense layer the head reads, as a
ResNet has it (its head reads the ReLU of a batch normalisation).  The
head's input needs it most: left un-normalised, the first steps of
plain SGD shrink its few features to zero (ReLUs that never fire again)
and the loss stays at ln(classes).
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

__all__ = ["GROUPS", "CHANNELS", "HIDDEN", "PAPER_REGIME", "NORM_REGIME", "NORM_GROUPS", "init", "apply", "loss", "accuracy", "group_sizes", "Flattener"]

#: Parameter groups, in the order the runtime lays them out.
GROUPS = ("backbone", "head")
#: Default model size: convolution channels, and features the head reads.
CHANNELS = (8, 16)
HIDDEN = 64
#: The paper's regime (section 7: ResNet-18's head is 0.46% of its
#: parameters): ``channels``, ``hidden`` and ``wide`` of a model whose
#: backbone has over 1 M parameters and whose head, on the 100-class task,
#: is 48 x 100 + 100 = 4,900 of them (0.45%).
PAPER_REGIME = dict(channels=(16, 32), hidden=48, wide=1024)
#: The normalised regime of ``make evidence``: group normalisation after
#: every hidden layer, half :data:`PAPER_REGIME`'s wide
#: layer (a step costs about half), and a head of 24 x 100 + 100 = 2,500
#: of 545,580 parameters on the 100-class task (0.46%, ResNet-18's share).
NORM_REGIME = dict(channels=(16, 32), hidden=24, wide=512, norm=True)
#: Groups of the group normalisation.
NORM_GROUPS = 4

_DN = ("NHWC", "HWIO", "NHWC")


def _he(rng, shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def init(seed, image_shape, classes, channels=CHANNELS, hidden=HIDDEN, wide=0, norm=False):
    """Initial parameters for images of ``image_shape`` (H, W), drawn with
    numpy from ``seed`` (no JAX random kernels to compile); ``wide`` > 0
    adds a dense layer of that many features before the ``hidden`` one;
    ``norm`` a scale (1) and a shift (0) per feature of each normalised
    layer, and a head that starts at zero (every class equally likely: a
    random head's first gradients mostly shrink the features it reads,
    and the loss sits near ln(classes) for many steps)."""
    c1, c2 = channels
    h, w = image_shape
    flat = ((h + 1) // 2) * ((w + 1) // 2) * c2
    rng = np.random.default_rng([seed, 0])
    zeros = lambda n: np.zeros(n, np.float32)
    backbone = {
        "conv1_w": _he(rng, (3, 3, 1, c1), 9),
        "conv1_b": zeros(c1),
        "conv2_w": _he(rng, (3, 3, c1, c2), 9 * c1),
        "conv2_b": zeros(c2),
    }
    if wide:
        backbone.update(wide_w=_he(rng, (flat, wide), flat), wide_b=zeros(wide))
        flat = wide
    if norm:
        for name, n in (("conv1", c1), ("conv2", c2)) + ((("wide", wide),) if wide else ()) \
                + (("dense", hidden),):
            backbone.update({f"{name}_scale": np.ones(n, np.float32), f"{name}_shift": zeros(n)})
    backbone.update(dense_w=_he(rng, (flat, hidden), flat), dense_b=zeros(hidden))
    head_w = np.zeros((hidden, classes), np.float32) if norm else \
        (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32)
    tree = {
        "backbone": backbone,
        "head": {
            "w": head_w,
            "b": zeros(classes),
        },
    }
    return jax.tree_util.tree_map(jnp.asarray, tree)


def _group_norm(x, scale, shift, groups=NORM_GROUPS, eps=1e-5):
    """Group normalisation of ``x`` (N, ..., C): each example's features in
    ``groups`` groups of C / groups channels, each group (over every
    spatial position) to mean 0 and variance 1, then ``scale`` and
    ``shift`` per channel."""
    shape = x.shape
    g = x.reshape(shape[0], -1, groups, shape[-1] // groups)
    mean = g.mean(axis=(1, 3), keepdims=True)
    var = g.var(axis=(1, 3), keepdims=True)
    return ((g - mean) * jax.lax.rsqrt(var + eps)).reshape(shape) * scale + shift


def _activate(b, name, x):
    """ReLU of layer ``name``'s pre-activation ``x``, normalised first when
    the parameters hold its scale."""
    if f"{name}_scale" in b:
        x = _group_norm(x, b[f"{name}_scale"], b[f"{name}_shift"])
    return jax.nn.relu(x)


def apply(params, x):
    """Logits for images ``x`` of shape (N, H, W)."""
    b = params["backbone"]
    x = x[..., None]
    x = jax.lax.conv_general_dilated(x, b["conv1_w"], (1, 1), "SAME", dimension_numbers=_DN)
    x = _activate(b, "conv1", x + b["conv1_b"])
    x = jax.lax.conv_general_dilated(x, b["conv2_w"], (2, 2), "SAME", dimension_numbers=_DN)
    x = _activate(b, "conv2", x + b["conv2_b"])
    x = x.reshape(x.shape[0], -1)
    if "wide_w" in b:
        x = _activate(b, "wide", x @ b["wide_w"] + b["wide_b"])
    x = _activate(b, "dense", x @ b["dense_w"] + b["dense_b"])
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
