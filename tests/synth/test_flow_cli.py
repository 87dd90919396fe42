"""The flows' command lines: a bad argument is one line of error naming the
value and the command as it is run (``python -m neuron_fabric.synth.<flow>``),
exit status 2, no usage block."""

import importlib

import pytest

FLOWS = ["endpoints", "generic", "route", "sky130", "summary"]


@pytest.mark.parametrize("flow", FLOWS)
def test_bad_argument_is_one_line_naming_the_value(flow, capsys):
    main = importlib.import_module(f"neuron_fabric.synth.{flow}").main
    with pytest.raises(SystemExit) as exc:
        main(["--jobs", "many"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "usage" not in err
    assert err.startswith(f"python -m neuron_fabric.synth.{flow}: error: ")
    assert "'many'" in err
