"""The exported form of the top: the contract's flat port names
(``m2s_req_opcode``, ``m_axi_awid``, ``s_axil_wdata``...) around :class:`.top.Top`.

Each interface member of the top becomes one port named
``<interface>_<member>``; a stream's payload becomes one port per layout
field.  Every handshake is kept whole (valid and ready on every channel),
so the exported module has exactly the ports of contract section 4.
"""

from amaranth.hdl import Const, Fragment
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.hdl.top.top import Top

__all__ = ["FlatTop", "flat_names", "flat_statements"]


def flat_names(signature):
    """``[(flat name, path, flow, shape)]`` for every port of ``signature``:
    ``path`` leads from the interface object to the value."""
    out = []
    for path, member in signature.members.flatten():
        if not member.is_port:
            continue
        name = "_".join(str(part) for part in path)
        if path[-1] == "payload" and isinstance(member.shape, data.StructLayout):
            prefix = "_".join(str(part) for part in path[:-1])
            for field, _ in member.shape:
                out.append((f"{prefix}_{field}", path + (field,), member.flow,
                            member.shape[field].shape))
        else:
            out.append((name, path, member.flow, member.shape))
    return out


def _lookup(obj, path):
    for part in path:
        obj = obj[part] if isinstance(part, int) or isinstance(obj, data.View) else \
            getattr(obj, part)
    return obj


class FlatTop(wiring.Component):
    """:class:`.top.Top` with flat port names (same parameters)."""

    def __init__(self, **params):
        self._top = Top(**params)
        self._ports = flat_names(self._top.signature)
        super().__init__({name: (In if flow == In else Out)(shape)
                          for name, _, flow, shape in self._ports})

    @property
    def params(self):
        return self._top.params

    def elaborate(self, platform):
        # The top's own module, not a submodule: one level of hierarchy less,
        # so the blocks keep their names (neuron_fabric.csr, ...) and synthesis
        # sees no pass-through module.
        fragment = Fragment.get(self._top, platform)
        fragment.add_statements("comb", *flat_statements(self, self._top, self._ports))
        return fragment


def flat_statements(outer, inner, ports):
    """Assignments driving each flat port of ``outer`` from (or into)
    ``inner``'s member at ``path``, for the ``ports`` of :func:`flat_names`."""
    out = []
    for name, path, flow, _ in ports:
        value = _lookup(inner, path)
        if flow == In and isinstance(value, Const):
            continue            # (an always-ready stream's ``ready``: nothing to drive)
        port = getattr(outer, name)
        out.append(value.eq(port) if flow == In else port.eq(value))
    return out
