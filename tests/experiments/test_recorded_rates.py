"""The rates make train takes from policies.TUNED_LR cover every rate its
experiments need on the recorded tasks, each a rate of its grid."""

from neuron_fabric.experiments.train import catalogue, experiments, policies


def test_every_needed_rate_is_recorded_and_on_its_grid():
    for task in catalogue.RECORDED:
        needed = experiments.needed_rates(catalogue.EXPERIMENTS, task)
        assert needed
        for aggregation, encoding in needed:
            rate = policies.tuned_lr(task, aggregation, encoding)
            assert rate in policies.lr_grid(task, aggregation), (aggregation, encoding, rate)
