"""``make latency`` against the contract and the envelope model: a G-Binary
read takes exactly STAGES cycles more than a BYPASS read (contract 4.3) and
went through the core; a control write with nothing in flight finishes
within the formally proved bound; the envelope model's front end of our
top is the measured BYPASS read less the memory's cycle."""

from neuron_fabric.hdl.top.csr import control_write_bound
from neuron_fabric.hdl.top.request import idle_after
from neuron_fabric.contract.facts import TopParams
from neuron_fabric.models.envelope.params import TOP_FRONT_END_CYCLES
from neuron_fabric.sim.latency import measure


def test_latency_figures():
    p = TopParams(profile="paper")
    res = measure(line_bits=p.line_bits, profile=p.profile)
    assert res["G-Binary read -> DRS"] - res["BYPASS read -> DRS"] == p.stages
    # the bench's line is 0x0F repeated: G-Binary returns counts, not the line
    assert res["gbinary_word"] != 0x0F0F0F0F
    # (the bound counts edges from the one at which the address and data
    # are taken to the one at which BVALID rises; the bench, to the one at
    # which BVALID is taken, one more)
    bound = control_write_bound(idle_after(p))
    assert res["control write, AW/W -> BVALID"] <= bound + 1
    assert TOP_FRONT_END_CYCLES == res["BYPASS read -> DRS"] - 1
