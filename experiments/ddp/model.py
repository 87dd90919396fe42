"""The training harness's small CNN in torch, with the same initial weights.

The architecture and the numpy draws of :mod:`neuron_fabric.experiments.train.models`
(JAX): 3x3 convolution (1 -> C1, ReLU), 3x3 convolution with stride 2 and
JAX's SAME padding (one extra row and column at the far side), a dense layer
to ``hidden`` features (the *backbone*), and the dense classifier (the
*head*).  The dense layer reads the features in JAX's (H, W, C) order, so
the same seed gives the same parameters as the harness.
"""

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["CNN", "groups"]


def _he(rng, shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


class CNN(torch.nn.Module):
    """The harness's CNN for images of ``image_shape`` (H, W) and ``classes``."""

    def __init__(self, seed, image_shape, classes, channels=(8, 16), hidden=64):
        super().__init__()
        c1, c2 = channels
        h, w = image_shape
        flat = ((h + 1) // 2) * ((w + 1) // 2) * c2
        rng = np.random.default_rng([seed, 0])
        conv1 = _he(rng, (3, 3, 1, c1), 9)
        conv2 = _he(rng, (3, 3, c1, c2), 9 * c1)
        dense = _he(rng, (flat, hidden), flat)
        head = (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32)
        p = lambda a: torch.nn.Parameter(torch.from_numpy(np.ascontiguousarray(a)))
        self.conv1_w = p(conv1.transpose(3, 2, 0, 1))      # HWIO -> OIHW
        self.conv1_b = p(np.zeros(c1, np.float32))
        self.conv2_w = p(conv2.transpose(3, 2, 0, 1))
        self.conv2_b = p(np.zeros(c2, np.float32))
        self.dense_w = p(dense.T)                           # (hidden, flat)
        self.dense_b = p(np.zeros(hidden, np.float32))
        self.head_w = p(head.T)
        self.head_b = p(np.zeros(classes, np.float32))

    def forward(self, x):
        x = x[:, None]
        x = F.relu(F.conv2d(x, self.conv1_w, self.conv1_b, padding=1))
        x = F.relu(F.conv2d(F.pad(x, (0, 1, 0, 1)), self.conv2_w, self.conv2_b, stride=2))
        x = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)
        x = F.relu(F.linear(x, self.dense_w, self.dense_b))
        return F.linear(x, self.head_w, self.head_b)


def groups(model):
    """The parameter groups: ``{"backbone": [...], "head": [...]}``."""
    head = [model.head_w, model.head_b]
    ids = {id(p) for p in head}
    return {"backbone": [p for p in model.parameters() if id(p) not in ids], "head": head}
