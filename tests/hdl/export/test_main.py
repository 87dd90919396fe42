"""``python -m neuron_fabric.hdl.export`` is the export's command line: the
same parser and the same exit codes as ``neuron-fabric-export``."""

import runpy
import sys

import pytest


def _run(monkeypatch, *argv):
    monkeypatch.setattr(sys, "argv", ["python -m neuron_fabric.hdl.export", *argv])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("neuron_fabric.hdl.export", run_name="__main__")
    return exit_.value.code


def test_help_exits_zero_and_names_the_parameters(monkeypatch, capsys):
    assert _run(monkeypatch, "--help") == 0
    out = capsys.readouterr().out
    for option in ("--line-bits", "--workers", "--stages", "--regions", "--max-outstanding"):
        assert option in out


def test_a_bad_value_is_one_line_and_exit_2(monkeypatch, capsys):
    assert _run(monkeypatch, "--line-bits", "96") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and "96" in err[-1]
