"""``make figures``: the figure blocks of README.md and docs/*.md,
rewritten from the reports' JSON.

A figure block is the text between two markers in README.md or in a
Markdown file of the docs folder beside it::

    <!-- figure:NAME:begin -->
    ...
    <!-- figure:NAME:end -->

one block per figure (:data:`FIGURES`: summary, route, envelope, bench,
training, evidence, pilots, hierarchy, ddp, race in README; hierarchy-lanes
in docs/hierarchy.md).  Each block is rewritten from its report's
JSON under ``build/reports`` and states the command that makes that JSON.
A block whose JSON is absent is left as it is, and the tool says which it
skipped; text outside the blocks is never touched.

    python -m neuron_fabric.sim.figures [--readme README.md] [--reports build/reports]
"""

import dataclasses
import json
import pathlib
import re
import sys

from neuron_fabric.contract.cli import ArgumentParser, guarded
from neuron_fabric.contract.paths import REPO, REPORTS
from neuron_fabric.sim import figures_experiments as ex
from neuron_fabric.sim import figures_hardware as hw

__all__ = ["Figure", "FIGURES", "BLOCK", "render", "update", "main"]

#: One figure block: ``<!-- figure:NAME:begin -->``, its body, ``<!-- figure:NAME:end -->``.
BLOCK = re.compile(r"(<!-- figure:(?P<name>[\w-]+):begin -->\n)(?P<body>.*?)"
                   r"(<!-- figure:(?P=name):end -->)", re.S)


@dataclasses.dataclass(frozen=True)
class Figure:
    """A README block: the JSON files it is made from (under the reports
    folder), the command that writes them, and the function that turns the
    loaded JSON (``{file name: data}``) into the block's Markdown lines."""
    files: tuple
    command: str
    render: object


#: Every figure block, by name.
FIGURES = {
    "summary": Figure(("summary.json",), "make summary", hw.summary),
    "route": Figure(("route.json",), "make route", hw.route),
    "envelope": Figure(("envelope.json",), "make envelope", hw.envelope),
    "bench": Figure(("golden_bench.json", "runtime_bench.json"), "make bench", hw.bench),
    "training": Figure(("training.json",), "make train", ex.training),
    "evidence": Figure(("evidence.json",), "make evidence", ex.evidence),
    "pilots": Figure(("pilots.json",), "make pilots", ex.pilots),
    "hierarchy": Figure(("hierarchy.json",), "make hierarchy", ex.hierarchy),
    "hierarchy-lanes": Figure(("hierarchy.json",), "make hierarchy", ex.hierarchy_lanes),
    "ddp": Figure(("ddp.json",), "make ddp", ex.ddp),
    "race": Figure(("race.json",), "make race", ex.race),
}


def render(name, reports):
    """The body of block ``name`` (ending in a newline) from the JSON under
    ``reports``, or None when one of its files is absent."""
    fig = FIGURES[name]
    paths = [pathlib.Path(reports) / f for f in fig.files]
    if not all(p.is_file() for p in paths):
        return None
    data = {p.name: json.loads(p.read_text()) for p in paths}
    made = ", ".join(f"`build/reports/{f}`" for f in fig.files)
    return "\n".join([f"`{fig.command}` → {made}", ""] + fig.render(data)) + "\n"


def update(text, reports):
    """``(new text, updated, skipped)``: every figure block of ``text``
    rewritten from ``reports``; ``skipped`` maps a block left as it was to
    the reason."""
    updated, skipped = [], {}

    def one(m):
        name = m["name"]
        if name not in FIGURES:
            skipped[name] = "no such figure"
            return m[0]
        body = render(name, reports)
        if body is None:
            missing = [f for f in FIGURES[name].files if not (pathlib.Path(reports) / f).is_file()]
            skipped[name] = f"no {', '.join(missing)} (run `{FIGURES[name].command}`)"
            return m[0]
        updated.append(name)
        return m[1] + body + m[4]

    return BLOCK.sub(one, text), updated, skipped


@guarded
def main(argv=None):
    ap = ArgumentParser(prog="python -m neuron_fabric.sim.figures",
                        description=__doc__.splitlines()[0])
    ap.add_argument("--readme", default=str(REPO / "README.md"),
                    help="README to rewrite, with the docs/*.md beside it")
    ap.add_argument("--reports", default=str(REPORTS), help="folder of the reports' JSON")
    args = ap.parse_args(argv)
    readme = pathlib.Path(args.readme)
    for path in [readme] + sorted((readme.parent / "docs").glob("*.md")):
        text = path.read_text()
        opened = len(re.findall(r"<!-- figure:[\w-]+:begin -->", text))
        new, updated, skipped = update(text, args.reports)
        if opened != len(updated) + len(skipped):
            ap.error(f"{path}: a figure block's begin marker has no matching end marker")
        if new != text:
            path.write_text(new)
        where = "" if path == readme else f" in {path.parent.name}/{path.name}"
        for name in updated:
            print(f"updated {name}{where}")
        for name, why in skipped.items():
            print(f"skipped {name}{where}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
