"""best_of keeps the least of its timings (a clock worked by hand)."""

import pytest

from neuron_fabric.experiments.timing import best_of


def test_best_of_keeps_the_least_timing_and_calls_fn_repeat_times():
    ticks = iter([0.0, 5.0, 10.0, 12.0, 20.0, 23.0])     # timings 5, 2, 3
    calls = []
    assert best_of(lambda: calls.append(1), 3, clock=lambda: next(ticks)) == 2.0
    assert len(calls) == 3


def test_best_of_refuses_no_repeats():
    with pytest.raises(ValueError, match="repeat"):
        best_of(lambda: None, 0)
