"""Training harness: tasks, model groups, G-Binary training equal to a plain
numpy MajoritySignSGD bit for bit, determinism per seed, the command line,
and a short version of the experiments through the report."""

import json
from dataclasses import asdict

import jax
import numpy as np
import pytest

from neuron_fabric.models.traffic import round_half_up
from neuron_fabric.experiments.train import experiments, harness, models, policies, report, tasks
from neuron_fabric.experiments.train.__main__ import main as cli_main
from neuron_fabric.experiments.train.harness import RunConfig, train

SHORT = dict(steps=6, evals=2, diag_at=0.0, diag_steps=3)


# -- tasks and model -------------------------------------------------------------------

def test_digits_splits_are_fixed_per_seed_and_disjoint():
    a, b, c = tasks.digits(0), tasks.digits(0), tasks.digits(1)
    assert (len(a.y_train), len(a.y_val), len(a.y_test)) == (1077, 360, 360)
    np.testing.assert_array_equal(a.x_test, b.x_test)
    assert not np.array_equal(a.y_test, c.y_test)
    train = {x.tobytes() for x in a.x_train}
    # load_digits holds a few duplicate images; nearly every test image is unseen.
    assert sum(x.tobytes() in train for x in a.x_test) <= 3


def test_pairs_are_two_digits_of_the_same_split():
    t, d = tasks.pairs(0), tasks.digits(0)
    assert t.classes == 100 and t.image_shape == (8, 16)
    assert np.bincount(t.y_train, minlength=100).min() == 100
    for x_pairs, y_pairs, x_dig, y_dig in ((t.x_test, t.y_test, d.x_test, d.y_test),
                                           (t.x_train, t.y_train, d.x_train, d.y_train)):
        by_image = {x.tobytes(): y for x, y in zip(x_dig, y_dig)}
        for x, y in zip(x_pairs[:200], y_pairs[:200]):
            assert by_image[x[:, :8].tobytes()] == y // 10
            assert by_image[x[:, 8:].tobytes()] == y % 10


def test_model_groups_and_flattening():
    params = models.init(0, (8, 16), 100)
    sizes = models.group_sizes(params)
    assert sizes["head"] == models.HIDDEN * 100 + 100
    flat = models.Flattener(params)
    vectors = flat.flatten(params)
    assert {g: v.size for g, v in vectors.items()} == sizes
    back = flat.unflatten(vectors)
    for a, b in zip(jax.tree_util.tree_leaves(back), jax.tree_util.tree_leaves(params)):
        np.testing.assert_array_equal(a, b)


def test_every_policy_names_known_aggregations():
    for p in policies.POLICIES.values():
        assert set(p.groups) == set(models.GROUPS)
        for g in models.GROUPS:
            agg = p.aggregation(g)
            assert agg.group_policy(8).low_bit == (agg.traffic != "fp32")
            assert policies.tuned_lr("pairs", agg.name) in agg.lr_grid
    assert policies.cosine([1, 0], [1, 1]) == pytest.approx(2 ** -0.5)
    assert policies.cosine([0, 0], [1, 1]) == 0.0


def test_group_norm_against_numpy():
    # Each example's features in NORM_GROUPS groups, each group over every
    # position to mean 0 and variance 1, then scale and shift per channel.
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 5, 8)).astype(np.float32) * 3 + 1
    scale, shift = rng.random(8).astype(np.float32), rng.random(8).astype(np.float32)
    groups = models.NORM_GROUPS
    want = np.empty_like(x)
    for n in range(3):
        for k in range(groups):
            c = slice(k * 8 // groups, (k + 1) * 8 // groups)
            v = x[n, :, :, c]
            want[n, :, :, c] = (v - v.mean()) / np.sqrt(v.var() + 1e-5)
    want = want * scale + shift
    np.testing.assert_allclose(models._group_norm(x, scale, shift), want, atol=1e-5)


def test_the_norm_regime_head_is_resnet18s_share():
    params = models.init(0, (8, 16), 100, **models.NORM_REGIME)
    sizes = models.group_sizes(params)
    assert sizes["head"] == 24 * 100 + 100
    assert 0.0044 < sizes["head"] / sum(sizes.values()) < 0.0048     # ResNet-18: 0.46%
    assert {"conv1_scale", "conv2_shift", "wide_scale", "dense_scale"} <= set(params["backbone"])


def test_the_norm_regime_starts_with_every_class_equally_likely():
    task = tasks.load_task("pairs-hard", 0)
    params = models.init(0, task.image_shape, task.classes, **models.NORM_REGIME)
    x, y = task.x_val[:64], task.y_val[:64]
    assert float(models.loss(params, x, y)) == pytest.approx(np.log(100), abs=1e-6)


def _head_features(params, x):
    """The features the head reads: its input, found as the gradient of
    the logits' sum with respect to the head's weights (w's row i sums
    feature i over the batch)."""
    grad = jax.grad(lambda w: models.apply({**params, "head": {**params["head"], "w": w}},
                                           x).sum())(params["head"]["w"])
    return np.asarray(grad[:, 0])


def test_the_features_the_head_reads_survive_the_first_steps():
    # A un-normalised layer before the head lost every feature to ReLUs
    # that never fire again within 20 FP32 steps on pairs-hard (the loss
    # then stays at ln 100 whatever the rate).
    task = tasks.load_task("pairs-hard", 0)
    model = models.NORM_REGIME
    worker_grads, update, init = harness.step_functions(
        task.image_shape, task.classes, model["channels"], model["hidden"], model["wide"],
        model["norm"])
    params = models.init(0, task.image_shape, task.classes, **model)
    state = init(params)
    batches = harness.batch_indices(len(task.y_train), 8 * 16, 0)
    for _ in range(20):
        idx = next(batches)
        _, grads = worker_grads(params, task.x_train[idx].reshape(8, 16, 8, 16),
                                task.y_train[idx].reshape(8, 16))
        params, state = update(params, state, {g: v.mean(axis=0) for g, v in grads.items()},
                               {g: np.float32(0.1) for g in models.GROUPS})
    alive = _head_features(params, task.x_val[:256]) > 0
    assert alive.mean() > 0.5


def test_a_scale_free_group_steps_by_its_rate_whatever_the_gradient_scale():
    # Adam's first step is -lr * g / (|g| + eps): -lr * sgn(g) for |g| >> eps,
    # so a head gradient of 1e-2 moves each weight by the rate, as a sign
    # step does; the SGD backbone moves by lr * g.
    worker_grads, update, init = harness.step_functions((8, 8), 10, scale_free=("head",))
    params = models.init(0, (8, 8), 10)
    flat = models.Flattener(params)
    sizes = models.group_sizes(params)
    rng = np.random.default_rng(8)
    d = {g: (rng.choice([-1.0, 1.0], sizes[g]) * 1e-2).astype(np.float32) for g in models.GROUPS}
    new, _ = update(params, init(params), d, {"backbone": np.float32(0.5), "head": np.float32(1e-3)})
    moved = {g: flat.flatten(new)[g] - flat.flatten(params)[g] for g in models.GROUPS}
    np.testing.assert_allclose(moved["head"], -1e-3 * np.sign(d["head"]), rtol=1e-4)
    np.testing.assert_allclose(moved["backbone"], -0.5 * d["backbone"], rtol=1e-4, atol=1e-9)
    with pytest.raises(ValueError, match="scale_free names no group"):
        harness.step_functions((8, 8), 10, scale_free=("tail",))


# -- G-Binary is MajoritySignSGD -------------------------------------------------------------

def majority_sign_sgd(cfg):
    """The same training loop with MajoritySignSGD in plain numpy: the
    update is the sign of the sum of the workers' signs, ``sgn(sum_k
    sgn(g_k))`` (a zero gradient counts 0, a tie gives 0: the contract's
    tie rule), computed without any packing."""
    cfg = cfg.resolved()
    task = tasks.load_task(cfg.task, cfg.seed)
    worker_grads, update, init = harness.step_functions(task.image_shape, task.classes)
    params = models.init(cfg.seed, task.image_shape, task.classes)
    state = init(params)
    batches = harness.batch_indices(len(task.y_train), cfg.workers * cfg.batch, cfg.seed)
    for step in range(cfg.steps):
        idx = next(batches)
        _, grads = worker_grads(params, task.x_train[idx].reshape(cfg.workers, cfg.batch, 8, 8),
                                task.y_train[idx].reshape(cfg.workers, cfg.batch))
        directions = {g: np.sign(np.sign(np.asarray(v)).sum(axis=0)).astype(np.float32)
                      for g, v in grads.items()}
        factor = harness.lr_factor(step, cfg.steps)
        params, state = update(params, state, directions,
                               {g: np.float32(cfg.lr[g] * factor) for g in models.GROUPS})
    return params


def test_g_binary_training_with_abstaining_zeros_is_majority_sign_sgd_bit_for_bit():
    cfg = RunConfig("digits", "gbinary", {"backbone": 1e-3, "head": 1e-3}, seed=3,
                    encoding="abstain", **SHORT)
    ours = train(cfg, progress=False, keep_params=True)["params"]
    ref = majority_sign_sgd(cfg)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    # The contract's packing (a zero votes negative) is not MajoritySignSGD
    # on these gradients: the digits' border pixels give exact zeros.
    packed = train(RunConfig(**{**asdict(cfg), "encoding": "negative"}), progress=False,
                   keep_params=True)["params"]
    assert any(np.asarray(a).tobytes() != np.asarray(b).tobytes()
               for a, b in zip(jax.tree_util.tree_leaves(packed), jax.tree_util.tree_leaves(ref)))


def test_runs_are_deterministic_per_seed():
    lr = {"backbone": 1e-3, "head": 0.1}
    cfg = RunConfig("pairs", "gternary-backbone+fp32-head", lr, seed=1, **SHORT)
    first, again = train(cfg, progress=False), train(cfg, progress=False)
    other = train(RunConfig("pairs", "gternary-backbone+fp32-head", lr, seed=2, **SHORT),
                  progress=False)
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    assert first["curve"] != other["curve"]
    assert 0 < first["diagnostics"]["backbone"] < 1
    assert first["diagnostics"]["head"] == pytest.approx(1.0)
    assert first["traffic"]["head"]["payload_ratio"] == 1.0


# -- command line --------------------------------------------------------------------------

def test_command_line(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert cli_main(["--task", "digits", "--policy", "gbinary-margin", "--seeds", "0",
                     "--steps", "3", "--out", str(out), "--no-progress"]) == 0
    result = json.loads(out.read_text())
    assert result[0]["config"]["lr"]["head"] == policies.tuned_lr("digits", "gbinary-margin")
    assert "G-Binary-MARGIN seed 0: test" in capsys.readouterr().out


def test_command_line_takes_the_encodings_rate(tmp_path, monkeypatch):
    # (hand-set rates: the abstaining encoding's differs from the packing's)
    monkeypatch.setitem(policies.TUNED_LR, "digits",
                        dict(policies.TUNED_LR["digits"], **{"gbinary": 1e-4,
                                                             "gbinary@abstain": 3e-3}))
    out = tmp_path / "run.json"
    assert cli_main(["--task", "digits", "--policy", "gbinary-backbone+fp32-head@low-bit-lr",
                     "--encoding", "abstain", "--steps", "2", "--out", str(out),
                     "--no-progress"]) == 0
    assert json.loads(out.read_text())[0]["config"]["lr"] == {"backbone": 3e-3, "head": 3e-3}


@pytest.mark.parametrize("argv, message", [
    (["--task", "cifar", "--policy", "fp32"], "invalid choice: 'cifar'"),
    (["--task", "digits", "--policy", "fp32", "--steps", "0"], "--steps must be at least 1, not 0"),
    (["--task", "digits", "--policy", "fp32", "--lr", "-1"], "--lr must be positive"),
])
def test_command_line_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as err:
        cli_main(argv)
    assert err.value.code == 2
    assert message in capsys.readouterr().err


# -- the experiments, short ----------------------------------------------------------------

TINY = dict(wide=0, channels=(4, 8), hidden=8, probe_steps=2)


def grid_fp32(i):
    return policies.AGGREGATIONS["fp32"].lr_grid[i]


def test_short_experiments_through_the_report(tmp_path):
    # every encoding's rate its own: the abstaining one a grid step higher
    rates = {t: {policies.rate_key(a, e): agg.lr_grid[1 + (policies.rate_key(a, e) != a)]
                 for a, agg in policies.AGGREGATIONS.items() for e in experiments.ENCODINGS}
             for t in experiments.TASKS}
    configs = experiments.plan(rates, seeds=(0, 1), quick=True)
    names = {(c["task"], c["policy"], c["encoding"]) for c in configs}
    # digits: fp32 and signofmean once, 5 low-bit policies x 2 encodings = 12;
    # pairs-hard: fp32, signofmean, gbinary x 2, gternary x 2 (6), the two
    # low-bit-backbone splits x 2 (4), the G-Binary ablation x 2 (2) = 12
    assert len(names) == 24
    assert all(c["probe_at"] for c in configs if c["policy"] == "fp32")
    assert not any(c["probe_at"] for c in configs if c["policy"] != "fp32")
    ablation = next(c for c in configs if c["policy"].endswith("@low-bit-lr")
                    and c["encoding"] == "negative")
    assert ablation["lr"]["head"] == rates["pairs-hard"]["gbinary"] != rates["pairs-hard"]["fp32"]
    split = {c["encoding"]: c["lr"] for c in configs
             if c["policy"] == "gbinary-backbone+fp32-head" and c["task"] == "pairs-hard"}
    grid = policies.AGGREGATIONS["gbinary"].lr_grid
    assert split == {"negative": {"backbone": grid[1], "head": grid_fp32(1)},
                     "abstain": {"backbone": grid[2], "head": grid_fp32(1)}}
    runs = [train(RunConfig(**{**c, **SHORT, **TINY}), progress=False)
            for c in configs if c["seed"] == 0 or c["policy"] in ("fp32", "gbinary")]
    runs += [dict(r, config=dict(r["config"], seed=1)) for r in runs
             if r["config"]["policy"] not in ("fp32", "gbinary")]
    paths = report.write(tmp_path, runs=runs, rates=rates, trials=[], seeds=(0, 1), quick=True,
                         wall_seconds=1.0, jobs=1)
    assert all(p.exists() for p in paths)
    data = json.loads((tmp_path / "training.json").read_text())
    exps = data["experiments"]
    assert set(exps["boundary"]["policies"]) == set(experiments.EXPERIMENTS["boundary"].policies)
    for per in exps["admission"]["policies"].values():
        for row in per.values():
            assert round_half_up(row["resnet18_traffic_ratio"]) == row["paper_traffic_ratio"]
            assert {"accuracy_mean", "accuracy_std", "traffic_ratio"} <= set(row)
    assert set(exps["admission"]["policies"]["gbinary"]) == {"negative", "abstain"}
    assert set(exps["admission"]["policies"]["fp32"]) == {"negative"}
    gb = exps["boundary"]["policies"]["gbinary"]["abstain"]
    assert gb["traffic_ratio"] == pytest.approx(1 / 32, rel=0.05)
    assert len(gb["accuracies"]) == len(experiments.EXPERIMENTS["boundary"].seeds)
    assert gb["accuracies"] != exps["boundary"]["policies"]["gbinary"]["negative"]["accuracies"]
    t5 = data["table5"]["pairs-hard"]["batch16"]
    assert set(t5) == {"0.1", "0.3", "0.6"}
    point = next(iter(t5.values()))
    assert {"gbinary/negative", "gbinary/abstain", "gternary/alternate", "signofmean"} <= set(point)
    assert set(data["zeros"]["digits"]["batch16"][next(iter(data["zeros"]["digits"]["batch16"]))]) \
        >= {"backbone_zero", "head_all_zero_lanes"}
    text = (tmp_path / "training.md").read_text()
    assert "| G-Binary backbone + FP32 head | 73.11 ± 0.11 |" in text
    assert "| G-Binary backbone + FP32 head at the low-bit rate | 73.24 ± 0.56 |" in text


# -- Table 5 on the same gradients -------------------------------------------------------

def test_probe_rows_against_numpy():
    """One probe step on hand-made gradients: SignOfMean's cosine is
    |m|_1 / (sqrt(n) |m|_2) with n the non-zero entries of m, the abstaining G-Binary direction is
    sgn(sum_k sgn(g_k)), the contract's packing makes an all-zero lane -1,
    and the zero fractions count the zeros."""
    import asyncio
    from neuron_fabric.experiments.train import probe
    rng = np.random.default_rng(8)
    g = {"backbone": rng.standard_normal((8, 600)).astype(np.float32),
         "head": rng.standard_normal((8, 90)).astype(np.float32)}
    g["backbone"][:, :60] = 0.0          # 60 all-zero lanes
    g["backbone"][:4, 60:120] = 0.0      # 240 more zero entries
    sums = probe.ProbeSums()

    async def go():
        rts = await probe.probe_runtimes({"backbone": 600, "head": 90}, 8)
        await probe.probe_step(rts, g, sums)
    asyncio.run(go())
    rows = sums.result()

    def cos(u, v):
        return float(u @ v / np.sqrt((u @ u) * (v @ v)))
    for grp in ("backbone", "head"):
        m = g[grp].astype(np.float64).mean(axis=0)
        assert rows["signofmean"][grp] == pytest.approx(
            np.abs(m).sum() / (np.sqrt(np.count_nonzero(m)) * np.sqrt((m * m).sum())), rel=1e-9)
        vote = np.sign(np.sign(g[grp]).sum(axis=0))
        assert rows["gbinary/abstain"][grp] == pytest.approx(cos(vote, m), rel=1e-6)
        neg = np.sign((2 * (g[grp] > 0).sum(axis=0) - 8).astype(np.float64))
        assert rows["gbinary/negative"][grp] == pytest.approx(cos(neg, m), rel=1e-6)
    z = rows["zeros"]
    assert z["backbone_zero"] == pytest.approx((8 * 60 + 4 * 60) / (8 * 600))
    assert z["backbone_all_zero_lanes"] == pytest.approx(60 / 600)
    assert z["head_zero"] == 0.0


# -- learning-rate selection ---------------------------------------------------------------

def _fake_runs(val):
    """A stand-in for the training runs: ``val(config)`` as each run's
    validation accuracy, the configs kept in order."""
    seen = []

    def run_jobs(configs, jobs, desc):
        seen.append([dict(c) for c in configs])
        return [dict(val=val(c), config=c) for c in configs]
    return run_jobs, seen


def test_rate_keys_and_what_each_task_needs():
    assert policies.rate_key("gbinary") == "gbinary"
    assert policies.rate_key("gbinary", "abstain") == "gbinary@abstain"
    assert policies.rate_key("signofmean", "abstain") == "signofmean"   # (no bits)
    with pytest.raises(ValueError, match="encoding"):
        policies.rate_key("gbinary", "positive")
    need = experiments.needed_rates(experiments.EXPERIMENTS, "pairs-hard")
    assert need == sorted([("fp32", "negative"), ("signofmean", "negative"),
                           ("gbinary", "negative"), ("gbinary", "abstain"),
                           ("gternary", "negative"), ("gternary", "abstain")])


def test_selection_per_encoding_and_on_the_split(monkeypatch):
    """Hand-made validation accuracies: FP32 peaks at its grid's second
    rate; on the hard task a low-bit rate is tried on the split policy with
    the head at that FP32 rate, and each encoding keeps its own best (the
    contract's at the grid's second rate, the abstaining one at its fourth;
    a tie keeps the smaller rate)."""
    exps = {"admission": experiments.EXPERIMENTS["admission"]}
    fp32_grid = policies.lr_grid("pairs-hard", "fp32")
    sign_grid = policies.lr_grid("pairs-hard", "gbinary")

    def val(c):
        if c["policy"] == "fp32":
            return 0.5 - abs(fp32_grid.index(c["lr"]["backbone"]) - 1) * 0.1
        assert c["policy"].endswith("-backbone+fp32-head")
        assert c["lr"]["head"] == fp32_grid[1]
        best = 1 if c["encoding"] == "negative" else 3
        return 0.4 - min(abs(sign_grid.index(c["lr"]["backbone"]) - best), 1) * 0.1
    run_jobs, seen = _fake_runs(val)
    monkeypatch.setattr(experiments, "run_jobs", run_jobs)
    rates, trials, by_key = experiments.tune(1, False, exps)
    assert rates["pairs-hard"] == {"fp32": fp32_grid[1], "gbinary": sign_grid[1],
                                   "gbinary@abstain": sign_grid[3], "gternary": sign_grid[1],
                                   "gternary@abstain": sign_grid[3]}
    assert len(seen) == 2                           # FP32 first, then the splits
    assert {c["policy"] for c in seen[0]} == {"fp32"}
    assert len(seen[1]) == 2 * 2 * len(sign_grid)
    assert len(trials) == len(fp32_grid) + 2 * 2 * len(sign_grid)
    # the seed-0 runs at the chosen rates are kept for the plan
    key = ("pairs-hard", "gbinary-backbone+fp32-head", "abstain", 16, 0)
    assert by_key[key]["config"]["lr"] == {"backbone": sign_grid[3], "head": fp32_grid[1]}


def test_recorded_rates_are_not_selected_again(monkeypatch):
    recorded = {"fp32": 0.1, "signofmean": 3e-4, "gbinary": 3e-5, "gbinary@abstain": 3e-4,
                "gternary": 3e-5, "gternary@abstain": 1e-4}
    monkeypatch.setitem(policies.TUNED_LR, "pairs-hard", recorded)
    run_jobs, seen = _fake_runs(lambda c: 0.5)
    monkeypatch.setattr(experiments, "run_jobs", run_jobs)
    hard = {k: e for k, e in experiments.EXPERIMENTS.items() if e.task == "pairs-hard"}
    rates, trials, by_key = experiments.tune(1, False, hard, recorded=("pairs-hard",))
    assert rates == {"pairs-hard": recorded} and not seen and not trials and not by_key
