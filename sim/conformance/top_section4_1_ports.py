"""Conformance of the top to contract section 4.1: the ports and their widths.

Written from the contract only (see :mod:`neuron_fabric.sim.conformance`).
"""

from neuron_fabric.sim.conformance.common import port_mismatches
from neuron_fabric.sim.conformance.top_bench import conformance_test, run


def spec_ports():
    """contract section 4.1's ports and widths for this run's parameters."""
    return {
        "clk": 1, "rst": 1,
        "m2s_req_valid": 1, "m2s_req_ready": 1, "m2s_req_opcode": 4, "m2s_req_addr": 52,
        "m2s_req_tag": 16,
        "m2s_rwd_valid": 1, "m2s_rwd_ready": 1, "m2s_rwd_opcode": 4, "m2s_rwd_addr": 52,
        "m2s_rwd_tag": 16, "m2s_rwd_data": run.LINE_BITS, "m2s_rwd_be": run.LB, "m2s_rwd_poison": 1,
        "s2m_drs_valid": 1, "s2m_drs_ready": 1, "s2m_drs_opcode": 3, "s2m_drs_tag": 16,
        "s2m_drs_data": run.LINE_BITS, "s2m_drs_poison": 1, "s2m_drs_devload": 2,
        "s2m_ndr_valid": 1, "s2m_ndr_ready": 1, "s2m_ndr_opcode": 3, "s2m_ndr_tag": 16,
        "s2m_ndr_devload": 2,
        "m_axi_awaddr": 52, "m_axi_awlen": 8, "m_axi_awsize": 3, "m_axi_awburst": 2,
        "m_axi_awvalid": 1, "m_axi_awready": 1, "m_axi_wdata": run.LINE_BITS, "m_axi_wstrb": run.LB,
        "m_axi_wlast": 1, "m_axi_wvalid": 1, "m_axi_wready": 1, "m_axi_bresp": 2,
        "m_axi_bvalid": 1, "m_axi_bready": 1, "m_axi_araddr": 52, "m_axi_arlen": 8,
        "m_axi_arsize": 3, "m_axi_arburst": 2, "m_axi_arvalid": 1, "m_axi_arready": 1,
        "m_axi_rdata": run.LINE_BITS, "m_axi_rresp": 2, "m_axi_rlast": 1, "m_axi_rvalid": 1,
        "m_axi_rready": 1,
        "s_axil_awaddr": 12, "s_axil_awprot": 3, "s_axil_awvalid": 1, "s_axil_awready": 1,
        "s_axil_wdata": 32, "s_axil_wstrb": 4, "s_axil_wvalid": 1, "s_axil_wready": 1,
        "s_axil_bresp": 2, "s_axil_bvalid": 1, "s_axil_bready": 1, "s_axil_araddr": 12,
        "s_axil_arprot": 3, "s_axil_arvalid": 1, "s_axil_arready": 1, "s_axil_rdata": 32,
        "s_axil_rresp": 2, "s_axil_rvalid": 1, "s_axil_rready": 1,
    }


@conformance_test
async def ports_and_widths(dut):
    bad = port_mismatches(dut, spec_ports())
    for name in ("m_axi_awid", "m_axi_bid", "m_axi_arid", "m_axi_rid"):
        if getattr(dut, name, None) is None:
            bad.append(f"{name}: missing")
    assert not bad, "; ".join(bad)
