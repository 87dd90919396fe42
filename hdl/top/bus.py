"""Bus interfaces of the top: AXI4-Lite and AXI4 as ``Signature`` subclasses
(as amaranth-soc writes its buses), and the four CXL.mem channels as
``stream.Signature`` with ``data.StructLayout`` payloads (contract 4.1).

Every signature is written from the manager's side (the side that drives
``valid`` of the request channels): the top's AXI4 master port is
``Out(AXI4Signature(...))``, its control port ``In(AXI4LiteSignature(...))``.
Members have the AXI names without prefix, so the flat Verilog name of a
port is its prefix and the member name (``s_axil_`` + ``awaddr``).
"""

from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from neuron_fabric.contract.facts import CXL_ADDR_BITS

__all__ = ["AXI4LiteSignature", "AXI4Signature", "ReqLayout", "RwdLayout", "DrsLayout",
           "NdrLayout", "cxl_channels", "OKAY", "SLVERR", "BURST_INCR"]

#: AXI response codes and burst type used by the top.
OKAY = 0b00
SLVERR = 0b10
BURST_INCR = 0b01

#: Width of a CXL tag (contract 4.1).
TAG_BITS = 16


def _check_width(name, value, minimum=1):
    if not isinstance(value, int) or value < minimum:
        raise TypeError(f"{name} must be an integer >= {minimum}, not {value!r}")


class _AxiSignature(wiring.Signature):
    """Common part: keyword widths, validated and exposed read-only;
    equality and ``repr`` by those widths."""

    _WIDTHS = ()

    def __init__(self, **widths):
        for name in self._WIDTHS:
            _check_width(name, widths[name])
        self._widths = {name: widths[name] for name in self._WIDTHS}
        super().__init__(self._members(**self._widths))

    def __getattr__(self, name):
        if name in type(self)._WIDTHS:
            return self._widths[name]
        raise AttributeError(name)

    def __eq__(self, other):
        return type(self) is type(other) and self._widths == other._widths

    def __hash__(self):
        return hash((type(self), tuple(self._widths.items())))

    def __repr__(self):
        args = ", ".join(f"{k}={v}" for k, v in self._widths.items())
        return f"{type(self).__name__}({args})"


class AXI4LiteSignature(_AxiSignature):
    """AXI4-Lite, manager side.

    Parameters
    ----------
    addr_width, data_width : int
        Widths of ``awaddr``/``araddr`` and ``wdata``/``rdata``.
    """

    _WIDTHS = ("addr_width", "data_width")

    @staticmethod
    def _members(*, addr_width, data_width):
        return {
            "awaddr": Out(addr_width), "awprot": Out(3), "awvalid": Out(1), "awready": In(1),
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wvalid": Out(1),
            "wready": In(1),
            "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(addr_width), "arprot": Out(3), "arvalid": Out(1), "arready": In(1),
            "rdata": In(data_width), "rresp": In(2), "rvalid": In(1), "rready": Out(1),
        }


class AXI4Signature(_AxiSignature):
    """AXI4 with the signals the top uses (one beat per burst), manager side.

    Parameters
    ----------
    addr_width, data_width, id_width : int
    """

    _WIDTHS = ("addr_width", "data_width", "id_width")

    @staticmethod
    def _members(*, addr_width, data_width, id_width):
        def address(ch):
            return {f"{ch}id": Out(id_width), f"{ch}addr": Out(addr_width), f"{ch}len": Out(8),
                    f"{ch}size": Out(3), f"{ch}burst": Out(2), f"{ch}valid": Out(1),
                    f"{ch}ready": In(1)}
        return {
            **address("aw"),
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wlast": Out(1),
            "wvalid": Out(1), "wready": In(1),
            "bid": In(id_width), "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            **address("ar"),
            "rid": In(id_width), "rdata": In(data_width), "rresp": In(2), "rlast": In(1),
            "rvalid": In(1), "rready": Out(1),
        }


def ReqLayout():
    """M2S Req payload."""
    return data.StructLayout({"opcode": 4, "addr": CXL_ADDR_BITS, "tag": TAG_BITS})


def RwdLayout(line_bits):
    """M2S RwD payload."""
    return data.StructLayout({"opcode": 4, "addr": CXL_ADDR_BITS, "tag": TAG_BITS,
                              "data": line_bits, "be": line_bits // 8, "poison": 1})


def DrsLayout(line_bits):
    """S2M DRS payload."""
    return data.StructLayout({"opcode": 3, "tag": TAG_BITS, "data": line_bits, "poison": 1,
                              "devload": 2})


def NdrLayout():
    """S2M NDR payload."""
    return data.StructLayout({"opcode": 3, "tag": TAG_BITS, "devload": 2})


def cxl_channels(line_bits):
    """The CXL.mem members of the top, seen from the device:
    ``{name: In/Out(stream.Signature)}`` (full valid/ready handshakes)."""
    return {
        "m2s_req": In(stream.Signature(ReqLayout())),
        "m2s_rwd": In(stream.Signature(RwdLayout(line_bits))),
        "s2m_drs": Out(stream.Signature(DrsLayout(line_bits))),
        "s2m_ndr": Out(stream.Signature(NdrLayout())),
    }
