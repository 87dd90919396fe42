"""The repository's folders: every output goes under one ignored ``build/``.

In a source checkout (an editable install) ``REPO`` is the checkout and
``BUILD`` its ``build/``; an installed wheel has no checkout, so its
``BUILD`` is ``build/`` in the working directory.  ``NEURON_FABRIC_BUILD``
moves ``BUILD`` and ``NEURON_FABRIC_REPORTS`` moves the reports folder.
"""

import os
import pathlib

__all__ = ["REPO", "BUILD", "CACHE", "VERILOG_CACHE", "REPORTS", "CONSTRAINTS"]

_HERE = pathlib.Path(__file__).resolve().parent.parent
#: The source checkout (``pyproject.toml`` beside the packages' folders).
REPO = _HERE if (_HERE / "pyproject.toml").is_file() else pathlib.Path.cwd()
#: Every generated file goes under here.
BUILD = pathlib.Path(os.environ.get("NEURON_FABRIC_BUILD", REPO / "build"))
#: Caches keyed by input digests (flows, exports).
CACHE = BUILD / "cache"
#: Exports kept by :func:`neuron_fabric.hdl.export.verilog.cached_verilog`.
VERILOG_CACHE = CACHE / "verilog"
#: Reports of the make targets (tables, JSON, plots).
REPORTS = pathlib.Path(os.environ.get("NEURON_FABRIC_REPORTS", BUILD / "reports"))
#: The flows' settings (``flow.toml``).
CONSTRAINTS = REPO / "constraints"
