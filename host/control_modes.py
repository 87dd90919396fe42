"""The control plane's mode names and the runtime policy of each (see
:mod:`neuron_fabric.host.control`)."""

from neuron_fabric.host import runtime
from neuron_fabric.models.traffic import BITS_PER_ELEMENT

#: The host FP32 path (no device).
FP32 = "fp32"

#: Low-bit modes in ladder order: fewest bits per element first.
LOW_BIT_MODES = tuple(sorted((m for m in BITS_PER_ELEMENT if m != FP32),
                             key=BITS_PER_ELEMENT.get))

#: The runtime policy of each mode.  FP32 is BYPASS: the runtime averages
#: FP32 groups on the host and never reads them through the datapath.  The
#: low-bit modes return SIGN lanes (majority sign; G-Ternary with the
#: paper's fixed 2-of-3 pattern gate).
MODE_POLICY = {FP32: runtime.FP32, "gbinary": runtime.G_BINARY, "gternary": runtime.G_TERNARY}


def _check_mode(mode):
    if mode != FP32 and mode not in LOW_BIT_MODES:
        raise ValueError(f"mode must be one of {(FP32,) + LOW_BIT_MODES}, not {mode!r}")
    return mode
