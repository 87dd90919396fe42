"""Golden model of the low-bit read transform (numpy only, no HDL).

This module defines every mode of contract section 2 bit-exactly.  It has two
independent forms that the tests hold against each other:

* :func:`transform_lane` -- one lane, plain integer arithmetic, written
  straight from the contract formulas; the reference for formal proofs and
  hand-worked examples;
* :func:`transform` -- many lines at once, vectorised with lookup tables;
  the oracle for simulation (a 64 MiB buffer transforms in a fraction of a
  second, see ``make bench``).

Line layout
-----------
A line is ``LINE_BYTES`` bytes; line bit ``n`` is bit ``n % 8`` of byte
``n // 8`` (so byte 0 holds Verilog bits ``[7:0]``).  Lane ``i`` is line bits
``[i*W, (i+1)*W)``; bit ``k`` of a lane is worker ``k``'s sign bit
(1 = positive gradient).  Arrays of lines are ``uint8`` of shape
``(L, LINE_BYTES)``.

Encoding
--------
:func:`encode_signs` packs FP32 gradients of shape ``(W, N)`` element-major.
The last line is padded with lanes whose bits are all 0 (every worker
"non-positive"); :func:`decode` drops them again when told ``N``.

The hierarchy extension (contract section 5)
--------------------------------------------
* Worker-major layout (``layout=Layout.WORKER_MAJOR``): worker ``k`` owns
  line bits ``[k*E, (k+1)*E)``, bit ``j`` of its segment being its sign for
  element ``j``; :func:`to_element_major` / :func:`to_worker_major` are the
  permutation, and :func:`transform` of a worker-major line returns what the
  element-major line of the same signs returns.
* Count operands (:func:`encode_counts`, :func:`transform_counts`,
  :func:`decode_counts`, the one-element reference
  :func:`transform_count_lane`): a 32-bit count lane per element holds ``N``
  partial counts of ``b`` bits (``N, b`` = 8, 4 for COUNTS4 and 4, 8 for
  COUNTS8); a read sums them exactly (``c``), forms ``a = 2c - total`` and
  returns 32-bit output lanes.
* :func:`transform_wide`: the contract's formulas over any number of
  workers with 32-bit output lanes, the reference a multi-level hierarchy
  must match bit for bit.

The package's modules hold the definitions by what they are: ``checks``
(configuration checks), ``lane`` (the one-lane references), ``gate`` (the
PATTERN gate), ``swar`` (the vectorised sign transform), ``layout``
(worker-major permutation), ``encodings`` (encode and decode) and
``counts`` (count operands, wide votes) and ``packed`` (the packed result
view, contract section 6: :func:`pack_view`, :func:`unpack_view`,
:func:`view_code`); every public name is importable
from here, and nothing outside the package imports the modules.
"""

from neuron_fabric.host.golden.checks import CHUNK_LINES, check_config, check_count_config
from neuron_fabric.host.golden.counts import transform_counts, transform_wide
from neuron_fabric.host.golden.encodings import (decode, decode_counts, encode_counts, encode_signs,
                                                 lines_from_ints, lines_to_ints)
from neuron_fabric.host.golden.gate import gate_pattern, line_phase
from neuron_fabric.host.golden.lane import transform_count_lane, transform_lane
from neuron_fabric.host.golden.layout import to_element_major, to_worker_major
from neuron_fabric.host.golden.packed import pack_view, unpack_view, view_code
from neuron_fabric.host.golden.swar import transform

__all__ = [
    "CHUNK_LINES", "check_config", "check_count_config", "transform_lane", "transform", "gate_pattern",
    "encode_signs", "decode", "line_phase", "lines_from_ints", "lines_to_ints",
    "to_element_major", "to_worker_major", "encode_counts",
    "transform_count_lane", "transform_counts", "decode_counts", "transform_wide",
    "pack_view", "unpack_view", "view_code",
]
