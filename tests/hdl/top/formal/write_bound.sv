// The control-write bound, shared by control_bound.sv (the whole top) and
// csr_bound.sv (the control registers alone): a write is waiting while the
// slave holds both its address and its data (AWREADY and WREADY low) and
// no earlier write response is pending (BVALID low); no write waits more
// than BOUND consecutive cycles, so BVALID rises at most BOUND cycles after
// the later of the AW and W handshakes' following cycle.  The cover shows
// the bound is reached (it is exact).
module write_bound #(parameter BOUND = 7) (
    input clk, input rst, input init,
    input awready, input wready, input bvalid
);
    wire waiting = !awready && !wready && !bvalid;
    reg [3:0] waited = 0;
    always @(posedge clk)
        if (rst || !waiting) waited <= 0;
        else if (waited != 4'hF) waited <= waited + 1;

    always @(*) if (!init && !rst) assert (waited <= BOUND);
    always @(*) if (!init && !rst) cover (waited == BOUND);
endmodule
