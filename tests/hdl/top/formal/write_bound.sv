// The control-write bound of contract 4.3, shared by control_bound.sv (the
// whole top) and csr_bound.sv (the control registers alone).  A write is
// waiting in a cycle in which the slave holds both its address and its
// data (AWREADY and WREADY low) and no earlier write response is pending
// (BVALID low).  Number the rising edges from edge 0, the one that begins
// the first such cycle: the edge of the later of the AW and W handshakes,
// or of the previous write's B handshake if that comes later.  `waited` is
// the number of edges since edge 0 with BVALID still low, so the assertion
// says BVALID rises at edge BOUND at the latest (high in the cycle that
// edge begins); counted in cycles from the one in which the later
// handshake takes place to the first with BVALID high, that is BOUND + 1.
// The cover shows the bound is reached (it is exact).
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
