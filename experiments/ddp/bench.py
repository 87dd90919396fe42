"""``make bench-ddp``: the hook's pack and decode on one core, in GB/s of one
rank's FP32 gradient, beside the device model's read and the numpy
runtime's packing (``golden.encode_signs`` and ``golden.decode``) ->
``build/reports/ddp_bench.json``.

    python -m neuron_fabric.experiments.ddp.bench [--elements 16777216] [--out build/reports]

Best of 5 for each piece, one thread (``torch.set_num_threads(1)``), timed in
the thread's CPU seconds (``time.thread_time``): on a shared machine the time
spent waiting for a core is not the code's.
"""

import json
import pathlib
import time

import numpy as np
import torch

from neuron_fabric.host import golden
from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.host.device import Device
from neuron_fabric.host.driver import Driver
from neuron_fabric.contract.facts import Format, Layout, Mode, TopParams
from neuron_fabric.host.ddp.pack import pack_signs
from neuron_fabric.host.ddp.replica import run_untimed
from neuron_fabric.host.runtime import engine
from neuron_fabric.experiments.timing import best_of

__all__ = ["bench", "main"]


def _best(fn, repeat=5):
    """Best of ``repeat`` calls, in this thread's CPU seconds (the machine
    may be shared: time waiting for a core is not counted)."""
    return best_of(fn, repeat, clock=time.thread_time)


def bench(elements, workers=(4, 8, 16), line_bits=512):
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    g = torch.from_numpy(rng.standard_normal(elements).astype(np.float32))
    gbytes = elements * 4 / 1e9
    # One untimed pack first: the allocator's first large blocks come fresh
    # from the system (page faults on every call) until glibc raises its
    # mmap threshold, which halved the first row's figure.
    pack_signs(g, -(-elements // 64) * 64)
    rows = []
    for w in workers:
        lanes = line_bits // w
        lines = -(-elements // lanes)
        t_pack = _best(lambda: pack_signs(g, lines * lanes))
        resp = rng.integers(0, 256, (lines, line_bits // 8), dtype=np.uint8)
        t_dec = _best(lambda: torch.from_numpy(engine.direction(
            engine.decode_lanes(resp, w, Format.SIGN, elements, np.float32), Format.SIGN, w)))
        dev = Device(TopParams(line_bits=line_bits, workers=w))
        drv = Driver(dev, dev.params)
        run_untimed(drv.set_region(0, base=0, limit=lines * line_bits // 8, mode=Mode.GBINARY,
                             format=Format.SIGN, layout=Layout.WORKER_MAJOR))
        dev.poke(0, resp)
        t_dev = _best(lambda: run_untimed(dev.read_lines(0, lines)), 3)
        grads = rng.standard_normal((w, elements // w)).astype(np.float32)
        t_np = _best(lambda: golden.decode(golden.encode_signs(grads, line_bits), w,
                                           Format.SIGN, elements // w), 3)
        rows.append(dict(workers=w, elements=elements, pack_gbs=gbytes / t_pack,
                         decode_gbs=gbytes / t_dec, pack_decode_gbs=gbytes / (t_pack + t_dec),
                         device_gbs=gbytes / t_dev,
                         numpy_gbs=gbytes / t_np))
    return dict(rows=rows, threads=torch.get_num_threads(), line_bits=line_bits,
                note="GB/s of one rank's FP32 gradient (elements * 4 bytes); numpy runtime: "
                     "golden.encode_signs of W workers' gradients of elements / W each and "
                     "golden.decode of the lines, the same total bytes")


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.experiments.ddp.bench")
    ap.add_argument("--elements", type=int, default=1 << 24)
    ap.add_argument("--out", default="build/reports")
    a = ap.parse_args(argv)
    result = bench(a.elements)
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ddp_bench.json").write_text(json.dumps(result, indent=1))
    for r in result["rows"]:
        print(f"W {r['workers']:2d}: pack {r['pack_gbs']:.2f} GB/s, decode {r['decode_gbs']:.2f}, "
              f"pack + decode {r['pack_decode_gbs']:.2f}, device read {r['device_gbs']:.2f}, "
              f"numpy runtime {r['numpy_gbs']:.2f}")


if __name__ == "__main__":
    main()
