"""The configuration sweep (``sim/configs.py``): every legal parameter set
of contract section 1 exports, lints clean and matches the device model.

The sets are checked to cover the space written in ``contract/facts.py``
(every pair of LINE_BITS and WORKERS in each profile, every STAGES and
REGIONS value, MAX_OUTSTANDING's extremes and a value between that is not
a power of two), and on builds with the packed view reads of it.  ``make
test`` runs the covering subset
:data:`~neuron_fabric.sim.configs.QUICK`; ``make test-long`` every set
(``make configs`` does the same outside pytest).  Each run adds its row to
``build/reports/configs.{md,json}``.
"""

import itertools
import json

import pytest

from neuron_fabric.contract.facts import (LINE_BITS_CHOICES, MAX_OUTSTANDING_RANGE, PROFILES,
                                      REGIONS_RANGE, STAGES_RANGE, WORKERS_CHOICES)
from neuron_fabric.sim import configs

#: A differential run compares at least this many responses ("a few hundred
#: requests" after the initial fill).
MIN_RESPONSES = 200


def _check(params):
    row = configs.run_config(params, log=lambda text: None)
    configs.write_report()
    assert row["export"] == "ok", f"{params.tag()}: export failed: {row['message']}"
    assert row["lint"] == "clean", f"{params.tag()}: {row['lint']}\n{row['lint_output']}"
    assert row["diff"] == "passed", f"{params.tag()}: differential run: {row['message']}"
    assert row["responses"] >= MIN_RESPONSES, row
    # on a build with the packed view, its bench too (contract section 6)
    assert row["view"] in ("passed", "not built"), f"{params.tag()}: view: {row['message']}"


@pytest.mark.parametrize("params", [configs.by_tag(tag) for tag in configs.QUICK],
                         ids=list(configs.QUICK))
def test_quick_config(params):
    _check(params)


@pytest.mark.long
@pytest.mark.parametrize("params", configs.CONFIGS, ids=[p.tag() for p in configs.CONFIGS])
def test_config(params):
    _check(params)


def test_the_sets_cover_the_parameter_space():
    sets = configs.CONFIGS
    assert len({p.tag() for p in sets}) == len(sets)
    assert sorted((p.line_bits, p.workers, p.profile) for p in sets) == sorted(
        itertools.product(LINE_BITS_CHOICES, WORKERS_CHOICES, PROFILES))
    assert {p.stages for p in sets} == set(STAGES_RANGE)
    assert {p.regions for p in sets} == set(REGIONS_RANGE)
    outstanding = {p.max_outstanding for p in sets}
    assert {MAX_OUTSTANDING_RANGE.start, MAX_OUTSTANDING_RANGE.stop - 1} <= outstanding
    assert any(n & (n - 1) for n in outstanding), "no MAX_OUTSTANDING that is not a power of 2"


def test_the_quick_subset_covers_workers_profiles_and_extremes():
    quick = [configs.by_tag(tag) for tag in configs.QUICK]
    assert {p.workers for p in quick} == set(WORKERS_CHOICES)
    assert {p.profile for p in quick} == set(PROFILES)
    narrowest = min(lb // w for lb in LINE_BITS_CHOICES for w in WORKERS_CHOICES)
    assert {p.profile for p in quick if p.lanes == narrowest} == set(PROFILES)
    assert {STAGES_RANGE.start, STAGES_RANGE.stop - 1} <= {p.stages for p in quick}
    assert {REGIONS_RANGE.start, REGIONS_RANGE.start + 1} <= {p.regions for p in quick}
    outstanding = {p.max_outstanding for p in quick}
    assert MAX_OUTSTANDING_RANGE.start in outstanding
    # the most IDs (8 bits), in a table whose size is not a power of two
    assert any(n > (MAX_OUTSTANDING_RANGE.stop - 1) // 2 and n & (n - 1) for n in outstanding)


def test_report_lists_every_set(tmp_path):
    md, js = configs.write_report(tmp_path)
    table = json.loads(js.read_text())
    assert [r["tag"] for r in table["rows"]] == [p.tag() for p in configs.CONFIGS]
    lines = [line for line in md.read_text().splitlines() if line.startswith("| L")]
    assert len(lines) == len(configs.CONFIGS)
