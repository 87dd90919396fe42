"""One job of processes per world size, shared by the tests of this folder:
each process imports torch once and runs every scenario of its plan.  The
helpers ``ranks.py`` (what a rank runs) and ``oracle.py`` (what it must
give) are loaded by path (:func:`~neuron_fabric.host.ddp.launch.load_file`),
here and in the tests."""

import pathlib

import pytest

HERE = pathlib.Path(__file__).parent

#: The end-to-end run: the easy task, G-Binary, the harness's defaults.
TRAIN_ARGV = ["--hook", "gbinary", "--task", "digits", "--seed", "0"]
#: The drop-in run: the hook's defaults and the FP32 rate for every step.
DROP_IN_ARGV = ["--hook", "gbinary", "--drop-in", "--task", "digits", "--seed", "0",
                "--steps", "200"]


def plans():
    from neuron_fabric.host.ddp.launch import load_file
    oracle = load_file(HERE / "oracle.py")
    CASES, HIERARCHY_CASES, OPTION_CASES = oracle.CASES, oracle.HIERARCHY_CASES, oracle.OPTION_CASES
    return {
        2: [("exact", "aggregate", dict(cases=CASES)),
            ("options", "aggregate", dict(cases=OPTION_CASES, steps=3)),
            ("widths", "aggregate", dict(cases=oracle.WIDTH_CASES)),
            ("drop-in", "train", dict(argv=DROP_IN_ARGV)),
            ("checkpoint", "checkpoint", {}),
            ("live-checkpoint", "live_checkpoint", {}),
            ("odd-level2", "aggregate", dict(cases=oracle.ODD_LEVEL2_CASES)),
            ("views", "aggregate", dict(cases=oracle.VIEW_CASES))],
        3: [("odd", "aggregate", dict(cases=oracle.ODD_CASES)),
            ("unequal", "aggregate", dict(cases=oracle.UNEQUAL_CASES[3]))],
        4: [("exact", "aggregate", dict(cases=CASES)),
            ("control", "control", {}),
            ("fault-write", "fault", dict(kind="write")),
            ("fault-read", "fault", dict(kind="read")),
            ("fault-read-view", "fault", dict(kind="read", packed_view=True)),
            ("train", "train", dict(argv=TRAIN_ARGV)),
            ("unequal", "aggregate", dict(cases=oracle.UNEQUAL_CASES[4])),
            ("stop", "stop", dict(victim=2, timeout_s=2.0, crash=False))],
        8: [("two-controllers", "aggregate",
             dict(cases=[(p, dict(c, ranks_per_controller=4)) for p, c in HIERARCHY_CASES])),
            # (lanes, as the two controllers read level 1: the same pieces)
            ("one-controller", "aggregate",
             dict(cases=[(p, dict(c, packed_view=False)) for p, c in HIERARCHY_CASES])),
            ("two-controllers-64", "aggregate",
             dict(cases=[(p, dict(c, ranks_per_controller=4, line_bits=64))
                         for p, c in HIERARCHY_CASES[:2]])),
            ("stop", "stop", dict(victim=5, timeout_s=10.0))],
        # (make test-long: the default split of a prime world size, 6 + 5)
        11: [("default-split", "aggregate", dict(cases=oracle.ELEVEN_CASES))],
    }


_JOBS = {}


def run_job(world):
    """The results of the job of ``world`` ranks: ``{rank: {scenario: value}}``
    for the ranks that finished (the stopped rank of the 8-rank job does not)."""
    if world not in _JOBS:
        from neuron_fabric.host.ddp.launch import spawn
        results = spawn(f"{HERE / 'ranks.py'}:scenarios", world, dict(plan=plans()[world]),
                        timeout_s=300)
        _JOBS[world] = results
    return _JOBS[world]


@pytest.fixture(scope="session")
def job():
    return run_job
