"""Training with the RTL in the loop (run by tests/hdl/top/test_train_rtl.py and
``make train-rtl``).

The same loop, runtime and control plane (:func:`neuron_fabric.experiments.pilots.train_loop`)
run twice in this process: against the transaction-level device model,
then against the exported ``neuron_fabric`` under the simulator (control
through AXI4-Lite by the driver, gradients through M2S RwD / Req and S2M
DRS, :class:`RtlPort`).  The final weights must be bit-identical, the per-step modes
equal, and the control plane must have changed modes at least twice.

Parameters (the runner's ``params``, :func:`~neuron_fabric.sim.toolchain.bench_params`):
the TopParams fields, ``train`` (LoopConfig as JSON), ``out`` (where to
write the result JSON: an absolute path, since the bench runs in its own
folder), ``quick`` (a smoke run, too short for the control plane to change
modes: the two runs must still agree).
``python -m neuron_fabric.sim.cocotb_train`` (``make train-rtl``) builds the
top and runs it, writing ``train_rtl.json``.
"""

import json
import pathlib
import time
from dataclasses import replace

import cocotb
import jax
import numpy as np

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import TOP_MODULE, TopParams
from neuron_fabric.contract.paths import BUILD
from neuron_fabric.experiments.pilots import (
    RTL_CONFIG,
    loop_config_from_json,
    loop_config_to_json,
    train_loop,
)
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.sim.rtl_port import RtlPort
from neuron_fabric.sim.tb_top import TopTB, top_params
from neuron_fabric.sim.toolchain import bench_params, export_top, run_cocotb


def _leaves(params):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(params)]


@cocotb.test()
async def test_training_matches_the_device_model(dut):
    params, bench = top_params(), bench_params()
    cfg = loop_config_from_json(bench["train"])
    tb = TopTB(dut, params)
    await tb.reset()
    port = RtlPort(tb)
    dev = Device(params)
    # the model run first: it compiles the JAX functions both runs share,
    # so the two step times compare like with like
    t0 = time.perf_counter()
    model = await train_loop(cfg, dev, Driver(dev, params))
    model_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    rtl = await train_loop(cfg, port, tb.driver)
    rtl_s = time.perf_counter() - t0
    tb.check()
    changes = [d for d in rtl["decisions"] if d["reason"] != "default mode"]
    result = dict(steps=cfg.steps, line_bits=params.line_bits, workers=params.workers,
                  rtl_step_ms=1e3 * rtl_s / cfg.steps, model_step_ms=1e3 * model_s / cfg.steps,
                  lines_written=port.lines_written, lines_read=port.lines_read,
                  cycles=tb.cycle, mode_changes=[(d["step"], d["reason"]) for d in changes],
                  low_bit_share=rtl["low_bit_share"], test_accuracy=rtl["test"],
                  identical=all(a.tobytes() == b.tobytes() and a.dtype == b.dtype
                                for a, b in zip(_leaves(rtl["params"]), _leaves(model["params"]))))
    out = bench.get("out")
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
    cocotb.log.info(f"RTL in the loop: {result}")
    assert rtl["modes"] == model["modes"], "the RTL run and the model run chose different modes"
    assert bench.get("quick") or len(changes) >= 2, f"only {len(changes)} mode changes: {changes}"
    assert not rtl["faults"], rtl["faults"]
    assert result["identical"], "final weights differ between the RTL and the device model"


#: Steps of the quick run (``--quick``, ``make train-rtl SMOKE=1``).
QUICK_STEPS = 6


def run_train_rtl(params, cfg, out, quick=False):
    """Export ``params``' top, run this module on Verilator, return the result
    dict (also written to ``out``, relative to the working folder)."""
    out = pathlib.Path(out).resolve()        # the bench runs in a folder of its own
    # (a folder of its own for the quick run, which a test runs beside the full one)
    build_dir = BUILD / "cocotb" / f"train_{params.tag()}{'_quick' if quick else ''}"
    src = export_top(params, BUILD / "cocotb" / "src" / params.tag() / "neuron_fabric.v")
    bench = dict(params.__dict__, train=loop_config_to_json(cfg), out=str(out), quick=quick)
    run_cocotb(sources=[src], toplevel=TOP_MODULE, test_module="neuron_fabric.sim.cocotb_train",
               simulator="verilator", build_dir=build_dir, params=bench)
    return json.loads(out.read_text())


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.sim.cocotb_train", parameters=True,
                        description="Train with the exported top in the loop and compare "
                                    "with the device model.")
    ap.add_argument("--out", default="build/reports", help="output folder")
    ap.add_argument("--line-bits", type=int, default=512)
    ap.add_argument("--steps", type=int,
                    help=f"training steps (default {RTL_CONFIG.steps}; {QUICK_STEPS} with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: {QUICK_STEPS} steps, too few for the control plane to "
                         "change modes (the RTL and the model must still agree)")
    args = ap.parse_args(argv)
    steps = args.steps if args.steps is not None else (QUICK_STEPS if args.quick
                                                       else RTL_CONFIG.steps)
    if steps < 1:
        ap.error(f"--steps must be at least 1, not {steps}")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    params = TopParams(line_bits=args.line_bits)     # the default top at that width
    result = run_train_rtl(params, replace(RTL_CONFIG, steps=steps), out / "train_rtl.json",
                           quick=args.quick)
    print(json.dumps(result, indent=1))
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
