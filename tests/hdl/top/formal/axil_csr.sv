// AXI4-Lite slave properties of the control registers (module nf_csr, the
// exported ControlRegisters of a small configuration).  Proved by k-induction.
//
// Assumed of the master (AXI4-Lite rules): a valid stays up with a stable
// payload until its ready.  Checked of the slave:
//   - RVALID/BVALID stay up with a stable payload until RREADY/BREADY;
//   - one response per request: the reads accepted minus the responses given
//     equal the one the slave holds (ARREADY low from the request to its
//     response, RVALID only then), so no response comes without a request
//     and none twice; and the
//     write addresses/data accepted minus the write responses equal the one
//     held in the slave plus BVALID.
// Every other input (events, write_go = the request pipeline's idle) is free.
module axil_csr_spec (
    input clk,
    input rst,
    input [11:0] awaddr, input [2:0] awprot, input awvalid,
    input [31:0] wdata, input [3:0] wstrb, input wvalid,
    input bready,
    input [11:0] araddr, input [2:0] arprot, input arvalid,
    input rready,
    input [4:0] errors, input [4:0] count_inc,
    input write_go
);
    wire awready, wready, bvalid, arready, rvalid, write_pending;
    wire [1:0] bresp, rresp;
    wire [31:0] rdata;

    nf_csr dut (
        .clk(clk), .rst(rst),
        .s_axil_awaddr(awaddr), .s_axil_awprot(awprot), .s_axil_awvalid(awvalid),
        .s_axil_awready(awready),
        .s_axil_wdata(wdata), .s_axil_wstrb(wstrb), .s_axil_wvalid(wvalid),
        .s_axil_wready(wready),
        .s_axil_bresp(bresp), .s_axil_bvalid(bvalid), .s_axil_bready(bready),
        .s_axil_araddr(araddr), .s_axil_arprot(arprot), .s_axil_arvalid(arvalid),
        .s_axil_arready(arready),
        .s_axil_rdata(rdata), .s_axil_rresp(rresp), .s_axil_rvalid(rvalid),
        .s_axil_rready(rready),
        .errors(errors), .count_inc(count_inc),
        .write_pending(write_pending), .write_go(write_go)
    );

    reg init = 1'b1;
    always @(posedge clk) init <= 1'b0;
    always @(*) if (init) assume (rst);

    reg [3:0] n_ar = 0, n_r = 0, n_aw = 0, n_w = 0, n_b = 0;
    always @(posedge clk) begin
        if (rst) begin
            n_ar <= 0; n_r <= 0; n_aw <= 0; n_w <= 0; n_b <= 0;
        end else begin
            n_ar <= n_ar + (arvalid && arready);
            n_r  <= n_r  + (rvalid && rready);
            n_aw <= n_aw + (awvalid && awready);
            n_w  <= n_w  + (wvalid && wready);
            n_b  <= n_b  + (bvalid && bready);
        end
    end

    wire [3:0] reads_open = n_ar - n_r;
    wire [3:0] aw_open = n_aw - n_b;
    wire [3:0] w_open = n_w - n_b;

    always @(*) if (!init && !rst) begin
        assert (reads_open == {3'b0, !arready});
        assert (!rvalid || !arready);
        assert (aw_open == {3'b0, !awready} + {3'b0, bvalid});
        assert (w_open == {3'b0, !wready} + {3'b0, bvalid});
    end

    always @(posedge clk) if (!init && !$past(rst) && !rst) begin
        // master rules (assumed)
        if ($past(arvalid && !arready)) assume (arvalid && araddr == $past(araddr));
        if ($past(awvalid && !awready)) assume (awvalid && awaddr == $past(awaddr));
        if ($past(wvalid && !wready))
            assume (wvalid && wdata == $past(wdata) && wstrb == $past(wstrb));
        // slave rules (checked)
        if ($past(rvalid && !rready))
            assert (rvalid && rdata == $past(rdata) && rresp == $past(rresp));
        if ($past(bvalid && !bready))
            assert (bvalid && bresp == $past(bresp));
    end
endmodule
