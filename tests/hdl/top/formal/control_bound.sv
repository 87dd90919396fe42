// "A control write completes within a bounded number of cycles, whatever
// the backpressure on memory and the CXL channels" for the top neuron_fabric
// of a small configuration (the check itself in write_bound.sv): BVALID
// rises at most BOUND rising edges after the edge at which the slave has
// taken both the write's address and its data with no earlier response
// pending (contract 4.3).
//
// Every input of the top is free in every cycle (anyseq): the host's
// requests on M2S Req/RwD, the memory's AW/W/AR ready, B and R beats, the
// S2M DRS/NDR ready, and the control port itself.
module control_bound_spec (input clk);
    localparam BOUND = 12;

    (* anyseq *) reg rst;
    (* anyseq *) reg m2s_req_valid; (* anyseq *) reg [3:0] m2s_req_opcode;
    (* anyseq *) reg [51:0] m2s_req_addr; (* anyseq *) reg [15:0] m2s_req_tag;
    (* anyseq *) reg m2s_rwd_valid; (* anyseq *) reg [3:0] m2s_rwd_opcode;
    (* anyseq *) reg [51:0] m2s_rwd_addr; (* anyseq *) reg [15:0] m2s_rwd_tag;
    (* anyseq *) reg [63:0] m2s_rwd_data; (* anyseq *) reg [7:0] m2s_rwd_be;
    (* anyseq *) reg m2s_rwd_poison;
    (* anyseq *) reg s2m_drs_ready; (* anyseq *) reg s2m_ndr_ready;
    (* anyseq *) reg m_axi_awready; (* anyseq *) reg m_axi_wready;
    (* anyseq *) reg [1:0] m_axi_bid; (* anyseq *) reg [1:0] m_axi_bresp;
    (* anyseq *) reg m_axi_bvalid; (* anyseq *) reg m_axi_arready;
    (* anyseq *) reg [1:0] m_axi_rid; (* anyseq *) reg [63:0] m_axi_rdata;
    (* anyseq *) reg [1:0] m_axi_rresp; (* anyseq *) reg m_axi_rlast;
    (* anyseq *) reg m_axi_rvalid;
    (* anyseq *) reg [11:0] s_axil_awaddr; (* anyseq *) reg s_axil_awvalid;
    (* anyseq *) reg [31:0] s_axil_wdata; (* anyseq *) reg [3:0] s_axil_wstrb;
    (* anyseq *) reg s_axil_wvalid; (* anyseq *) reg s_axil_bready;
    (* anyseq *) reg [11:0] s_axil_araddr; (* anyseq *) reg s_axil_arvalid;
    (* anyseq *) reg s_axil_rready;

    wire s_axil_awready, s_axil_wready, s_axil_bvalid;

    neuron_fabric dut (
        .clk(clk), .rst(rst),
        .m2s_req_valid(m2s_req_valid), .m2s_req_opcode(m2s_req_opcode),
        .m2s_req_addr(m2s_req_addr), .m2s_req_tag(m2s_req_tag),
        .m2s_rwd_valid(m2s_rwd_valid), .m2s_rwd_opcode(m2s_rwd_opcode),
        .m2s_rwd_addr(m2s_rwd_addr), .m2s_rwd_tag(m2s_rwd_tag), .m2s_rwd_data(m2s_rwd_data),
        .m2s_rwd_be(m2s_rwd_be), .m2s_rwd_poison(m2s_rwd_poison),
        .s2m_drs_ready(s2m_drs_ready), .s2m_ndr_ready(s2m_ndr_ready),
        .m_axi_awready(m_axi_awready), .m_axi_wready(m_axi_wready),
        .m_axi_bid(m_axi_bid), .m_axi_bresp(m_axi_bresp), .m_axi_bvalid(m_axi_bvalid),
        .m_axi_arready(m_axi_arready),
        .m_axi_rid(m_axi_rid), .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp),
        .m_axi_rlast(m_axi_rlast), .m_axi_rvalid(m_axi_rvalid),
        .s_axil_awaddr(s_axil_awaddr), .s_axil_awprot(3'b0), .s_axil_awvalid(s_axil_awvalid),
        .s_axil_awready(s_axil_awready),
        .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb), .s_axil_wvalid(s_axil_wvalid),
        .s_axil_wready(s_axil_wready),
        .s_axil_bvalid(s_axil_bvalid), .s_axil_bready(s_axil_bready),
        .s_axil_araddr(s_axil_araddr), .s_axil_arprot(3'b0), .s_axil_arvalid(s_axil_arvalid),
        .s_axil_rready(s_axil_rready)
    );

    reg init = 1'b1;
    always @(posedge clk) init <= 1'b0;
    always @(*) if (init) assume (rst);

    write_bound #(.BOUND(BOUND)) check (
        .clk(clk), .rst(rst), .init(init),
        .awready(s_axil_awready), .wready(s_axil_wready), .bvalid(s_axil_bvalid));
endmodule
