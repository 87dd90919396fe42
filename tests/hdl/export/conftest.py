"""Shared pytest helpers of the export's tests."""

import re

import pytest


def spec_ports(line_bits, id_bits):
    """contract 4.1, written out by hand: name -> (direction, width)."""
    lb = line_bits // 8
    ports = {"clk": ("input", 1), "rst": ("input", 1)}

    def add(direction, spec):
        for item in spec.split():
            name, _, width = item.partition(":")
            ports[name] = (direction, int(width or 1))

    add("input", f"m2s_req_valid m2s_req_opcode:4 m2s_req_addr:52 m2s_req_tag:16 "
                 f"m2s_rwd_valid m2s_rwd_opcode:4 m2s_rwd_addr:52 m2s_rwd_tag:16 "
                 f"m2s_rwd_data:{line_bits} m2s_rwd_be:{lb} m2s_rwd_poison "
                 f"s2m_drs_ready s2m_ndr_ready")
    add("output", "m2s_req_ready m2s_rwd_ready s2m_drs_valid s2m_drs_opcode:3 s2m_drs_tag:16 "
                  f"s2m_drs_data:{line_bits} s2m_drs_poison s2m_drs_devload:2 "
                  "s2m_ndr_valid s2m_ndr_opcode:3 s2m_ndr_tag:16 s2m_ndr_devload:2")
    add("output", f"m_axi_awid:{id_bits} m_axi_awaddr:52 m_axi_awlen:8 m_axi_awsize:3 "
                  f"m_axi_awburst:2 m_axi_awvalid m_axi_wdata:{line_bits} m_axi_wstrb:{lb} "
                  f"m_axi_wlast m_axi_wvalid m_axi_bready m_axi_arid:{id_bits} m_axi_araddr:52 "
                  f"m_axi_arlen:8 m_axi_arsize:3 m_axi_arburst:2 m_axi_arvalid m_axi_rready")
    add("input", f"m_axi_awready m_axi_wready m_axi_bid:{id_bits} m_axi_bresp:2 m_axi_bvalid "
                 f"m_axi_arready m_axi_rid:{id_bits} m_axi_rdata:{line_bits} m_axi_rresp:2 "
                 f"m_axi_rlast m_axi_rvalid")
    add("input", "s_axil_awaddr:12 s_axil_awprot:3 s_axil_awvalid s_axil_wdata:32 "
                 "s_axil_wstrb:4 s_axil_wvalid s_axil_bready s_axil_araddr:12 s_axil_arprot:3 "
                 "s_axil_arvalid s_axil_rready")
    add("output", "s_axil_awready s_axil_wready s_axil_bresp:2 s_axil_bvalid s_axil_arready "
                  "s_axil_rdata:32 s_axil_rresp:2 s_axil_rvalid")
    return ports


@pytest.fixture(scope="session")
def top_contract_ports():
    """``top_contract_ports(line_bits, id_bits)``: the top's ports of
    contract 4.1, name -> (direction, width)."""
    return spec_ports


def parse_ports(text, module):
    """The ports of ``module`` in exported Verilog ``text``: name ->
    (direction, width)."""
    body = text[text.index(f"module {module}("):]
    body = body[:body.index("endmodule")]
    ports = {}
    for direction, width, name in re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);",
                                             body, re.M):
        ports[name] = (direction, int(width) + 1 if width else 1)
    return ports


@pytest.fixture(scope="session")
def exported_ports():
    """``exported_ports(text, module)``: the ports the Verilog declares."""
    return parse_ports
