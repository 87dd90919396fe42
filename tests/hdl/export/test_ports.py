"""The port tables of README.md and docs/top.md, generated from the
export's port list (``hdl/export/ports.py``): current, complete, and
their directions and widths those of contract 4.1 (``conftest.py``)."""

import re

import pytest

from neuron_fabric.contract.facts import TopParams
from neuron_fabric.contract.paths import REPO
from neuron_fabric.hdl.export import ports


@pytest.mark.parametrize("doc", ["README.md", "docs/top.md"])
def test_port_tables_are_current(doc):
    text = (REPO / doc).read_text()
    assert ports.render(text, ports.port_table()) == text, \
        f"{doc}'s port table is stale: run `make regdocs`"


def test_table_holds_the_contract_ports(top_contract_ports):
    params = TopParams()
    symbols = {"LINE_BITS": params.line_bits, "LINE_BYTES": params.line_bytes,
               "ID_BITS": params.id_bits}
    found = {}
    for row in ports.port_table().splitlines():
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) != 5 or not cells[1].startswith("`"):
            continue
        for names, direction, widths in zip(cells[1].split(" / "), cells[2].split(" / "),
                                            cells[3].split(" / ")):
            names = re.findall(r"`(\w+)`", names)
            widths = widths.split(", ") * (len(names) if "," not in widths else 1)
            for name, width in zip(names, widths):
                found[name] = ({"in": "input", "out": "output"}[direction],
                               symbols.get(width) or int(width))
    assert found == top_contract_ports(params.line_bits, params.id_bits)


def test_a_port_without_a_row_is_refused(monkeypatch):
    monkeypatch.setattr(ports, "ROWS", ports.ROWS[1:])
    with pytest.raises(ValueError, match=r"missing \['clk'\]"):
        ports.port_table()


def test_render_needs_the_markers():
    with pytest.raises(ValueError, match="no <!-- ports:begin -->"):
        ports.render("no table here", "| table |")
