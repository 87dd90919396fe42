# amaranth: UnusedElaboratable=no
"""The port table of the top ``neuron_fabric`` in README.md and docs/top.md,
generated from the export's port list (:func:`.integration.port_widths`).

Each row of :data:`ROWS` names its ports and what they mean; the
directions and widths come from the export, a width written as LINE_BITS,
LINE_BYTES or ID_BITS when it follows that parameter (found by comparing
two builds), as a number otherwise.  Every port of the export is in
exactly one row, or the table is refused.

``python -m neuron_fabric.hdl.export.ports FILE ...`` rewrites the block
between ``<!-- ports:begin -->`` and ``<!-- ports:end -->`` in each file;
``--check`` only says which are stale (exit 1).  ``make regdocs`` runs it.
"""

import pathlib
import sys

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import TopParams
from neuron_fabric.hdl.export.integration import port_widths

__all__ = ["ROWS", "BEGIN", "END", "port_table", "render", "main"]

BEGIN, END = "<!-- ports:begin -->", "<!-- ports:end -->"

#: ``(channel, ports, meaning)``, in the order of contract 4.1; a channel
#: of ``""`` continues the one above.
ROWS = (
    ("clock, reset", ("clk",), "the one clock"),
    ("", ("rst",), "synchronous, active high"),
    ("M2S Req", ("m2s_req_valid", "m2s_req_ready"), "handshake"),
    ("", ("m2s_req_opcode",), "MemInv 0, MemRd 1, MemRdData 2, MemSpecRd 8, MemInvNT 9"),
    ("", ("m2s_req_addr",), "byte address (bits below a line ignored)"),
    ("", ("m2s_req_tag",), "returned with the response"),
    ("M2S RwD", ("m2s_rwd_valid", "m2s_rwd_ready"), "handshake"),
    ("", ("m2s_rwd_opcode",), "MemWr 1, MemWrPtl 2"),
    ("", ("m2s_rwd_addr", "m2s_rwd_tag"), "as for Req"),
    ("", ("m2s_rwd_data",), "the line; byte 0 is bits [7:0]"),
    ("", ("m2s_rwd_be",), "byte enables (MemWrPtl)"),
    ("", ("m2s_rwd_poison",), "poisoned: dropped, NDR Cmp, STATUS.POISON_DROP"),
    ("S2M DRS", ("s2m_drs_valid", "s2m_drs_ready"), "handshake"),
    ("", ("s2m_drs_opcode",), "MemData 0"),
    ("", ("s2m_drs_tag", "s2m_drs_data"), "the read's tag and (transformed) line"),
    ("", ("s2m_drs_poison",), "the memory answered RRESP != OKAY"),
    ("", ("s2m_drs_devload",), "in-flight table load: light, optimal, moderate, severe"),
    ("S2M NDR", ("s2m_ndr_valid", "s2m_ndr_ready"), "handshake"),
    ("", ("s2m_ndr_opcode", "s2m_ndr_tag", "s2m_ndr_devload"), "Cmp 0, the tag, the load"),
    ("AXI4 master to memory, write",
     ("m_axi_awid", "m_axi_awaddr", "m_axi_awlen", "m_axi_awsize", "m_axi_awburst",
      "m_axi_awvalid", "m_axi_awready"),
     "one beat per line: `awlen` 0, `awsize` log2(LINE_BYTES), INCR"),
    ("", ("m_axi_wdata", "m_axi_wstrb", "m_axi_wlast", "m_axi_wvalid", "m_axi_wready"),
     "`wlast` 1; `wstrb` all ones or the MemWrPtl's `be`"),
    ("", ("m_axi_bid", "m_axi_bresp", "m_axi_bvalid", "m_axi_bready"), ""),
    ("AXI4 master to memory, read",
     ("m_axi_arid", "m_axi_araddr", "m_axi_arlen", "m_axi_arsize", "m_axi_arburst",
      "m_axi_arvalid", "m_axi_arready"), "as AW"),
    ("", ("m_axi_rid", "m_axi_rdata", "m_axi_rresp", "m_axi_rlast", "m_axi_rvalid",
          "m_axi_rready"), "`rlast` ignored; answers in any order across IDs"),
    ("AXI4-Lite control slave", ("s_axil_awaddr", "s_axil_awprot", "s_axil_awvalid",
                                 "s_axil_awready"), "12-bit byte address; `prot` ignored"),
    ("", ("s_axil_wdata", "s_axil_wstrb", "s_axil_wvalid", "s_axil_wready"), ""),
    ("", ("s_axil_bresp", "s_axil_bvalid", "s_axil_bready"), "SLVERR for a rejected write"),
    ("", ("s_axil_araddr", "s_axil_arprot", "s_axil_arvalid", "s_axil_arready"), ""),
    ("", ("s_axil_rdata", "s_axil_rresp", "s_axil_rvalid", "s_axil_rready"),
     "SLVERR for an unmapped offset"),
)

#: Two builds whose widths tell a fixed width from one that follows a
#: parameter (they differ in LINE_BITS and in the AXI ID width).
_BUILDS = (TopParams(), TopParams(line_bits=128, max_outstanding=256))


def _symbol(name, widths):
    if len(set(widths)) == 1:
        return str(widths[0])
    for symbol, of in (("LINE_BITS", lambda p: p.line_bits),
                       ("LINE_BYTES", lambda p: p.line_bytes),
                       ("ID_BITS", lambda p: p.id_bits)):
        if all(w == of(p) for w, p in zip(widths, _BUILDS)):
            return symbol
    raise ValueError(f"port {name}'s width {widths} follows no parameter")


def _ports():
    """``{name: (dir, width text)}`` of the export, in its order."""
    builds = [{name: (direction, width) for name, direction, width in port_widths(p)}
              for p in _BUILDS]
    return {name: ({"input": "in", "output": "out"}[d],
                   _symbol(name, [b[name][1] for b in builds]))
            for name, (d, _) in builds[0].items()}


def _runs(items):
    """``items`` (``(direction, value)``) as runs of one direction."""
    runs = []
    for direction, value in items:
        if runs and runs[-1][0] == direction:
            runs[-1][1].append(value)
        else:
            runs.append((direction, [value]))
    return runs


def port_table():
    """The Markdown port table (and the sentence before it)."""
    ports = _ports()
    listed = [name for _, names, _ in ROWS for name in names]
    if sorted(listed) != sorted(ports):
        raise ValueError(f"the port table's rows and the export's ports differ: "
                         f"missing {sorted(set(ports) - set(listed))}, "
                         f"not exported {sorted(set(listed) - set(ports))}")
    out = ["Directions and widths from the export's port list (`make regdocs` rewrites "
           "this table); LINE_BYTES = LINE_BITS / 8 and ID_BITS = ceil(log2(MAX_OUTSTANDING)) "
           f"({_BUILDS[0].id_bits} at the defaults).",
           "",
           "| channel | port | dir | width | meaning |",
           "|---|---|---|---:|---|"]
    for channel, names, meaning in ROWS:
        runs = _runs((ports[n][0], n) for n in names)
        port = " / ".join(", ".join(f"`{n}`" for n in run) for _, run in runs)
        direction = " / ".join(d for d, _ in runs)
        widths = []
        for _, run in runs:
            texts = [ports[n][1] for n in run]
            widths.append(texts[0] if len(set(texts)) == 1 else ", ".join(texts))
        out.append(f"| {channel} | {port} | {direction} | {' / '.join(widths)} | {meaning} |")
    return "\n".join(out)


def render(text, table):
    """``text`` with the block between :data:`BEGIN` and :data:`END`
    replaced by ``table``."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table}\n{END}{tail}"


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.hdl.export.ports",
                        description="Rewrite the port table of the top in each FILE, from "
                                    "the export's port list.")
    ap.add_argument("files", nargs="+", metavar="FILE")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a table is stale")
    args = ap.parse_args(argv)
    table = port_table()
    stale = []
    for name in args.files:
        path = pathlib.Path(name)
        try:
            text = path.read_text()
            new = render(text, table)
        except (OSError, ValueError) as exc:
            ap.error(f"{name}: {exc}")
        if new == text:
            print(f"up to date: {path}")
        elif args.check:
            stale.append(name)
            print(f"stale: {path} (make regdocs rewrites it)")
        else:
            path.write_text(new)
            print(f"wrote {path}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
