// Integration example: a plain Verilog top that drops neuron_fabric between a
// CXL.mem link layer and an AXI4 memory controller.
//
// Export the block first (default parameters: LINE_BITS 512, WORKERS 8,
// STAGES 5, REGIONS 8, MAX_OUTSTANDING 32, so the AXI ID is 5 bits):
//     make verilog            -> build/verilog/neuron_fabric.v
// or take build/release/full/neuron_fabric.v from `make release`, and
// compile this file together with it.  The exported module has no Verilog
// parameters; the widths below must match the exported build, whose
// neuron_fabric_params.vh holds them (NF_LINE_BITS, NF_AXI_ID_BITS and
// NF_WIDTH_<PORT>).  Lint with the release's waiver file first,
//     $ verilator --lint-only -Wall neuron_fabric.vlt neuron_fabric.v this.v
// which waives the export's style in the exported file alone: a width here
// that does not match the build is a WIDTH warning in this file.

`default_nettype none

// (the module is named after what it is, not after this example's file)
// verilator lint_off DECLFILENAME

module cxl_mem_expander #(
    parameter LINE_BITS = 512,
    parameter ID_BITS   = 5
) (
    // verilator lint_on DECLFILENAME
    input  wire                   clk,
    input  wire                   rst,          // synchronous, active high

    // CXL.mem from the link layer
    input  wire                   req_valid,
    output wire                   req_ready,
    input  wire [3:0]             req_opcode,
    input  wire [51:0]            req_addr,
    input  wire [15:0]            req_tag,
    input  wire                   rwd_valid,
    output wire                   rwd_ready,
    input  wire [3:0]             rwd_opcode,
    input  wire [51:0]            rwd_addr,
    input  wire [15:0]            rwd_tag,
    input  wire [LINE_BITS-1:0]   rwd_data,
    input  wire [LINE_BITS/8-1:0] rwd_be,
    input  wire                   rwd_poison,
    output wire                   drs_valid,
    input  wire                   drs_ready,
    output wire [2:0]             drs_opcode,
    output wire [15:0]            drs_tag,
    output wire [LINE_BITS-1:0]   drs_data,
    output wire                   drs_poison,
    output wire [1:0]             drs_devload,
    output wire                   ndr_valid,
    input  wire                   ndr_ready,
    output wire [2:0]             ndr_opcode,
    output wire [15:0]            ndr_tag,
    output wire [1:0]             ndr_devload,

    // AXI4 to the memory controller
    output wire [ID_BITS-1:0]     mem_awid,
    output wire [51:0]            mem_awaddr,
    output wire [7:0]             mem_awlen,
    output wire [2:0]             mem_awsize,
    output wire [1:0]             mem_awburst,
    output wire                   mem_awvalid,
    input  wire                   mem_awready,
    output wire [LINE_BITS-1:0]   mem_wdata,
    output wire [LINE_BITS/8-1:0] mem_wstrb,
    output wire                   mem_wlast,
    output wire                   mem_wvalid,
    input  wire                   mem_wready,
    input  wire [ID_BITS-1:0]     mem_bid,
    input  wire [1:0]             mem_bresp,
    input  wire                   mem_bvalid,
    output wire                   mem_bready,
    output wire [ID_BITS-1:0]     mem_arid,
    output wire [51:0]            mem_araddr,
    output wire [7:0]             mem_arlen,
    output wire [2:0]             mem_arsize,
    output wire [1:0]             mem_arburst,
    output wire                   mem_arvalid,
    input  wire                   mem_arready,
    input  wire [ID_BITS-1:0]     mem_rid,
    input  wire [LINE_BITS-1:0]   mem_rdata,
    input  wire [1:0]             mem_rresp,
    input  wire                   mem_rlast,
    input  wire                   mem_rvalid,
    output wire                   mem_rready,

    // AXI4-Lite from the management processor
    input  wire [11:0]            csr_awaddr,
    input  wire [2:0]             csr_awprot,
    input  wire                   csr_awvalid,
    output wire                   csr_awready,
    input  wire [31:0]            csr_wdata,
    input  wire [3:0]             csr_wstrb,
    input  wire                   csr_wvalid,
    output wire                   csr_wready,
    output wire [1:0]             csr_bresp,
    output wire                   csr_bvalid,
    input  wire                   csr_bready,
    input  wire [11:0]            csr_araddr,
    input  wire [2:0]             csr_arprot,
    input  wire                   csr_arvalid,
    output wire                   csr_arready,
    output wire [31:0]            csr_rdata,
    output wire [1:0]             csr_rresp,
    output wire                   csr_rvalid,
    input  wire                   csr_rready
);

    neuron_fabric u_neuron_fabric (
        .clk(clk), .rst(rst),
        .m2s_req_valid(req_valid), .m2s_req_ready(req_ready), .m2s_req_opcode(req_opcode),
        .m2s_req_addr(req_addr), .m2s_req_tag(req_tag),
        .m2s_rwd_valid(rwd_valid), .m2s_rwd_ready(rwd_ready), .m2s_rwd_opcode(rwd_opcode),
        .m2s_rwd_addr(rwd_addr), .m2s_rwd_tag(rwd_tag), .m2s_rwd_data(rwd_data),
        .m2s_rwd_be(rwd_be), .m2s_rwd_poison(rwd_poison),
        .s2m_drs_valid(drs_valid), .s2m_drs_ready(drs_ready), .s2m_drs_opcode(drs_opcode),
        .s2m_drs_tag(drs_tag), .s2m_drs_data(drs_data), .s2m_drs_poison(drs_poison),
        .s2m_drs_devload(drs_devload),
        .s2m_ndr_valid(ndr_valid), .s2m_ndr_ready(ndr_ready), .s2m_ndr_opcode(ndr_opcode),
        .s2m_ndr_tag(ndr_tag), .s2m_ndr_devload(ndr_devload),
        .m_axi_awid(mem_awid), .m_axi_awaddr(mem_awaddr), .m_axi_awlen(mem_awlen),
        .m_axi_awsize(mem_awsize), .m_axi_awburst(mem_awburst), .m_axi_awvalid(mem_awvalid),
        .m_axi_awready(mem_awready),
        .m_axi_wdata(mem_wdata), .m_axi_wstrb(mem_wstrb), .m_axi_wlast(mem_wlast),
        .m_axi_wvalid(mem_wvalid), .m_axi_wready(mem_wready),
        .m_axi_bid(mem_bid), .m_axi_bresp(mem_bresp), .m_axi_bvalid(mem_bvalid),
        .m_axi_bready(mem_bready),
        .m_axi_arid(mem_arid), .m_axi_araddr(mem_araddr), .m_axi_arlen(mem_arlen),
        .m_axi_arsize(mem_arsize), .m_axi_arburst(mem_arburst), .m_axi_arvalid(mem_arvalid),
        .m_axi_arready(mem_arready),
        .m_axi_rid(mem_rid), .m_axi_rdata(mem_rdata), .m_axi_rresp(mem_rresp),
        .m_axi_rlast(mem_rlast), .m_axi_rvalid(mem_rvalid), .m_axi_rready(mem_rready),
        .s_axil_awaddr(csr_awaddr), .s_axil_awprot(csr_awprot), .s_axil_awvalid(csr_awvalid),
        .s_axil_awready(csr_awready),
        .s_axil_wdata(csr_wdata), .s_axil_wstrb(csr_wstrb), .s_axil_wvalid(csr_wvalid),
        .s_axil_wready(csr_wready),
        .s_axil_bresp(csr_bresp), .s_axil_bvalid(csr_bvalid), .s_axil_bready(csr_bready),
        .s_axil_araddr(csr_araddr), .s_axil_arprot(csr_arprot), .s_axil_arvalid(csr_arvalid),
        .s_axil_arready(csr_arready),
        .s_axil_rdata(csr_rdata), .s_axil_rresp(csr_rresp), .s_axil_rvalid(csr_rvalid),
        .s_axil_rready(csr_rready)
    );

endmodule

`default_nettype wire
