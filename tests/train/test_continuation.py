"""The paper's evaluation and the sweep's training by continuation: tail rules, the final phase's squared loss,
warm starts, the convergence criterion, and failed cells kept out of the results."""

from __future__ import annotations

from dataclasses import replace

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics import models
from numerics.evaluate import losses as evaluation
from numerics.train.continuation import Stages, converged, start_for
from numerics.io import save_model
from numerics.train import TrainConfig, init_state, loss_fn


def test_tail_rules_fail_a_single_exploding_sequence_and_a_noisy_mean():
    rng = np.random.default_rng(0)
    calm = rng.exponential(0.05, 100_000)
    assert evaluation.tail_stats(calm)["failed"] is None
    one = calm.copy()
    one[7] = 2 * evaluation.FAIL_MAX
    t = evaluation.tail_stats(one)
    assert "largest" in t["failed"] and t["max"] == 2 * evaluation.FAIL_MAX and t["above_100x_median"] >= 1
    noisy = calm.copy()
    noisy[:3] = 900.0  # below FAIL_MAX, but three sequences carry the mean
    assert "SE" in evaluation.tail_stats(noisy)["failed"]
    bad = calm.copy()
    bad[0] = np.inf
    assert "non-finite" in evaluation.tail_stats(bad)["failed"]


def test_tail_check_gives_the_mean_and_se_of_its_sequences():
    d, n = 3, 6
    P, Q = models.universal(models.init("diag", jax.random.PRNGKey(4), 2, d, scale=0.3), d)
    key = jax.random.PRNGKey(5)
    with jax.enable_x64(True):
        tc = evaluation.tail_check(P, Q, "uniform:0", n, d, key, 3000, chunk=1000)
        a = evaluation.adjusted_per_sequence(P, Q, "uniform:0", n, d, key, 3000, chunk=1000)
    assert tc["mean"] == pytest.approx(float(np.mean(a)), rel=1e-12)
    assert tc["se"] == pytest.approx(float(np.std(a, ddof=1)) / np.sqrt(3000), rel=1e-12)


def test_the_tail_check_judges_the_se_rule_where_the_evaluation_fails_it_alone():
    from numerics.reproduce.judge import failure

    rng = np.random.default_rng(1)
    small = rng.pareto(2.5, 100_000) * 1e-4  # σ = 0: near zero, heavy-tailed, bounded
    small[:5] = 10.0  # an SE of about 2e-4, above the floor
    ev = evaluation.tail_stats(small)
    assert "SE" in ev["failed"]

    def cell(ev: dict, tc: dict | None) -> dict:
        return {"eval": {"tail": ev}, "tail_check": tc, "train": {}}

    settled = {"passed": True, "max": 50, "above": 0, "sequences": 10**6, "limit": 1e4, "mean": 1e-3, "se": 5e-5}
    unsettled = settled | {"se": 2e-4}
    assert failure(cell(ev, settled)) is None
    assert failure(cell(ev, unsettled)).startswith("evaluation: SE")
    assert failure(cell(ev, None)).startswith("evaluation: SE")  # no tail check: the evaluation decides
    stored = {k: v for k, v in settled.items() if k not in ("mean", "se")}  # a check stored without mean and SE
    assert failure(cell(ev, stored)).startswith("evaluation: SE")
    spectral = {"spectra": 2**21, "mean": 1e-3, "se": 5e-5, "max": 40, "above": 0, "limit": 1e4}  # GD++ at σ = 0
    assert failure(cell(ev, unsettled) | {"spectral": spectral}) is None
    assert failure(cell(ev, unsettled) | {"spectral": spectral | {"se": 2e-4}}).startswith("evaluation: SE")
    exploding = spectral | {"max": 1.5e10, "above": 1}  # one context in 2²¹ that 10⁶ sequences missed
    assert failure(cell(ev, settled) | {"spectral": exploding}).startswith("spectral check: 1 of 2097152")
    big = small.copy()
    big[0] = 2 * evaluation.FAIL_MAX
    assert failure(cell(evaluation.tail_stats(big), settled)).startswith("evaluation: largest")  # only the SE rule
    assert failure(cell(evaluation.tail_stats(big[1:] * 0 + 1.0), settled)) is None


def test_the_larger_estimate_judges_the_se_rule_with_the_evaluations_own_sequences():
    """The evaluation's 10⁵ sequences pool with the tail check's 10⁶ (:func:`judge.pooled`).  Heavy but bounded
    tails, two sequences at 8 over a mean of 10⁻⁴ (FULL-4 at ``uniform:0`` on one grid: largest 8.7), settle on the
    pooled sequences.  One sequence at 560 (DIAG-4 at ``uniform:0`` on one grid: 560 on the evaluation, none above
    1.75 on the tail check, whose mean is 1.2·10⁻⁴ ± 4.7·10⁻⁶) carries the pooled mean, and the cell fails, though the
    tail check alone would settle."""
    from numerics.reproduce import judge

    rng = np.random.default_rng(3)
    base = rng.pareto(2.5, 100_000) * 1e-4
    tc = {"passed": True, "max": 1.75, "above": 0, "sequences": 10**6, "limit": 1e4, "mean": 1.2e-4, "se": 4.7e-6}
    assert evaluation.se_settles(tc["mean"], tc["se"])
    for value, count, fails in ((8.0, 2, False), (560.0, 1, True)):
        a = base.copy()
        a[:count] = value
        ev = evaluation.tail_stats(a)
        assert ev["failed"].startswith("SE") and ev["max"] <= evaluation.FAIL_MAX
        mean, se = judge.pooled(ev, tc)
        assert mean == pytest.approx((a.sum() + 10**6 * tc["mean"]) / 1_100_000)
        assert se == pytest.approx(np.hypot(a.std(ddof=1) * np.sqrt(a.size), 10**6 * tc["se"]) / 1_100_000)
        if fails:  # the example of judge.pooled's docstring
            assert (mean, se) == (pytest.approx(6e-4, rel=0.1), pytest.approx(5e-4, rel=0.1))
        verdict = judge.failure({"eval": {"tail": ev}, "tail_check": tc, "train": {}})
        assert (verdict is not None) == fails and (verdict or "evaluation: SE").startswith("evaluation: SE")
    spectral = {"spectra": 2**21, "mean": 1.2e-4, "se": 4.7e-6}
    assert judge.pooled(ev, spectral)[0] == pytest.approx((a.sum() + 2**21 * 1.2e-4) / (10**5 + 2**21))


def test_the_se_rule_has_an_absolute_floor_for_a_near_perfect_model():
    """At σ = 0 a near-perfect model's mean of about 10⁻⁶ is carried by rare contexts at any sample size
    (DIAG-5 at ``uniform:0``: mean 7.0e-7, SE 1.9e-7, largest 0.012).  Its SE is within the floor, and it passes;
    one sequence at 2 in 10⁵ lifts the SE to about 2e-5, above the floor, and it fails."""
    rng = np.random.default_rng(2)
    near = rng.pareto(1.5, 100_000) * 3e-8
    near[:20] = 0.01
    t = evaluation.tail_stats(near)
    assert t["se"] > evaluation.FAIL_SE_REL * t["mean"]  # a tenth of the mean is out of reach ...
    assert t["failed"] is None  # ... but the mean is pinned to well below the table's resolution
    one = near.copy()
    one[0] = 2.0
    t = evaluation.tail_stats(one)
    assert t["se"] > evaluation.SE_FLOOR and t["failed"].startswith("SE")
    assert evaluation.se_settles(1e-6, evaluation.SE_FLOOR) and not evaluation.se_settles(1e-6, 1.01e-5)
    assert evaluation.se_settles(1.0, 0.1) and not evaluation.se_settles(1.0, 0.11)  # the floor leaves large means


def test_final_phase_is_the_plain_squared_loss_and_counts_dead_sequences():
    d, n = 3, 6
    key = jax.random.PRNGKey(1)
    params = models.init("diag", key, 2, d, scale=0.3)
    from numerics.data import sample

    b = sample(jax.random.PRNGKey(2), "uniform:1", 64, n, d)
    b = b._replace(y_query=b.y_query.at[0].set(1e3))  # one residual far beyond δ
    delta = 1.0
    huber, aux_h = loss_fn(params, b, delta=delta, final=False)
    plain, aux_p = loss_fn(params, b, delta=delta, final=True)
    yhat = models.predict(*models.universal(params, d), b.X, b.y, b.x_query)
    assert float(plain) == pytest.approx(float(jnp.mean(0.5 * (yhat - b.y_query) ** 2)), rel=1e-4)
    assert float(huber) < float(plain)
    assert int(aux_h.dropped) >= 1 and int(aux_p.dropped) == 0
    dead = b._replace(X=b.X.at[1].set(1e12))  # overflows the guarded float32 pass: dead, counted in any phase
    assert int(loss_fn(params, dead, delta=delta, final=True)[1].dropped) == 1


def test_final_start_is_the_last_tenth():
    cfg = TrainConfig(model="diag", layers=1, steps=1000)
    assert cfg.final_start == 900
    assert TrainConfig(model="diag", layers=1, steps=5).final_start == 4
    with pytest.raises(ValueError, match="final_fraction"):
        TrainConfig(model="diag", layers=1, final_fraction=0.0)


def test_warm_start_puts_the_files_layers_first_in_every_seed(tmp_path):
    d = 10
    old = models.init("diag", jax.random.PRNGKey(3), 2, d, scale=0.1)
    P, Q = models.universal(old, d)
    f = tmp_path / "m.npz"
    save_model(f, np.asarray(P, np.float64), np.asarray(Q, np.float64))
    for kind in ("diag", "full"):
        cfg = TrainConfig(model=kind, layers=3, seeds=2, warm_start=str(f), diag_steps=0 if kind == "full" else None)
        st = init_state(cfg)
        for s in range(2):
            Ps, Qs = models.universal(jax.tree_util.tree_map(lambda a: a[s], st.params), d)
            np.testing.assert_allclose(np.asarray(Ps[:2]), np.asarray(P), rtol=1e-6)
            np.testing.assert_allclose(np.asarray(Qs[:2]), np.asarray(Q), rtol=1e-6)
            assert float(jnp.max(jnp.abs(Ps[2]))) < 0.01  # the new layer starts near the identity
    with pytest.raises(ValueError, match="at most 1 layers"):
        init_state(TrainConfig(model="diag", layers=1, warm_start=str(f)))


def test_convergence_criterion_relative_and_paired():
    rng = np.random.default_rng(4)
    old = rng.exponential(0.1, 20_000)
    st = Stages(steps=10, most=2, batch=8, seeds=1)
    assert converged(old * 0.98, old, st)  # 2 % better: within 3 %
    assert not converged(old * 0.9, old, st)  # 10 % better, with a tiny paired SE
    assert converged(old * 1.2, old, st)  # 20 % worse: more steps do not help (one-sided)
    assert converged(old * 0.9 + rng.normal(0, 5.0, old.shape), old, st)  # a paired SE of 0.035 covers a 0.01 move


def test_cells_start_from_the_previous_depth_and_full_from_diag(tmp_path):
    have = {("diag", 3): tmp_path / "d3", ("diag", 2): tmp_path / "d2", ("full", 2): tmp_path / "f2",
            ("gdpp", 1): tmp_path / "g1"}
    look = lambda m, L: have.get((m, L))  # noqa: E731
    assert start_for("diag", 3, "uniform:5", look) == have[("diag", 2)]
    assert start_for("full", 3, "uniform:5", look) == have[("diag", 3)]
    assert start_for("full", 4, "uniform:5", look) is None
    assert start_for("gdpp", 2, "uniform:5", look) == have[("gdpp", 1)]
    assert start_for("gdpp", 2, "uniform:0", look) is None  # the spectral fit
    assert start_for("diag", 1, "uniform:5", look) is None


def test_a_failed_cell_keeps_its_metrics_but_no_model(tmp_path):
    from numerics.reproduce import experiments as ex

    budget = replace(ex.get_budget("test"), attempts=1)  # one attempt: further attempts are tested in tests/reproduce

    def exploding(cfg, run):
        run.mkdir(parents=True, exist_ok=True)
        params = models.init(cfg.model, jax.random.PRNGKey(0), cfg.layers, cfg.d, scale=3.0)  # huge layers
        P, Q = models.universal(params, cfg.d)
        save_model(run / "model.npz", np.asarray(P, np.float64), np.asarray(Q, np.float64))
        return ex.Trained({"steps": cfg.steps, "dropped_final": 0}, run / "model.npz")

    cell = ex.Cell("diag", 2, "uniform:1")
    m = ex.run_cell(cell, budget, tmp_path / "out", tmp_path / "runs", exploding)
    d = ex.cell_dir(tmp_path / "out", cell)
    assert m["failed"] and "evaluation" in m["failed"]
    assert json.loads((d / "metrics.json").read_text())["failed"] == m["failed"]
    assert not (d / "model.npz").exists() and ex.finished_model(tmp_path / "out", cell) is None


def _still_trainer(calls: list) -> tuple:
    """A trainer whose model never moves (it records each stage's steps in ``calls``), with a tiny stage schedule
    and config to run it under."""
    from numerics.reproduce import experiments as ex

    P, Q = (np.asarray(x, np.float64) for x in models.universal(models.init("diag", jax.random.PRNGKey(1), 1, 10), 10))

    def still(cfg, run):
        calls.append(cfg.steps)
        save_model(run / "model.npz", P, Q)
        return ex.Trained({"steps": cfg.steps}, run / "model.npz")

    st = Stages(steps=10, most=4, batch=8, seeds=1, held_out=2000, scale_pool=64)
    return still, st, TrainConfig(model="diag", layers=1, noise="uniform:1", steps=10, batch=8)


def test_a_blown_stage_is_no_reference_for_convergence(tmp_path, monkeypatch):
    """Stage 1 explodes on one held-out sequence, stage 2 does not: the explosion makes the paired SE of the
    change huge, so stage 2 would look converged next to it.  Convergence needs a stage that is not blown, so
    stage 3 is trained and compared with stage 2."""
    from numerics.train import continuation

    calm = np.random.default_rng(3).exponential(0.05, 2000)
    blown = calm.copy()
    blown[0] = 1e11
    held = iter([blown, calm * 0.5, calm * 0.5])
    monkeypatch.setattr(continuation, "scaled_model", lambda model, *a: (model, {}))
    monkeypatch.setattr(continuation, "held_out_losses", lambda *a: next(held))
    calls = []
    trainer, st, cfg = _still_trainer(calls)
    best, summary = continuation.train_stages(cfg, st, None, tmp_path, trainer)
    assert [s["blown"] for s in summary["stages"]] == [True, False, False]
    assert summary["converged"] and calls == [10, 10, 20] and best.k == 2


@pytest.mark.parametrize("retry", [False, True])
def test_a_blown_later_stage_ends_the_cell_unless_the_stages_retry(tmp_path, monkeypatch, retry):
    """Stage 2 explodes on one held-out sequence.  Without ``retry_blown`` that ends the cell (a later stage above
    the best one); with it stage 3 starts again from stage 1, and converges next to it."""
    from numerics.train import continuation

    calm = np.random.default_rng(5).exponential(0.05, 2000)
    blown = calm * 0.5
    blown[0] = 1e11
    held = iter([calm, blown, calm * 0.99])
    monkeypatch.setattr(continuation, "scaled_model", lambda model, *a: (model, {}))
    monkeypatch.setattr(continuation, "held_out_losses", lambda *a: next(held))
    calls = []
    trainer, st, cfg = _still_trainer(calls)
    best, summary = continuation.train_stages(cfg, replace(st, retry_blown=retry), None, tmp_path, trainer)
    assert summary["converged"] and [s["blown"] for s in summary["stages"]] == [False, True, False][:len(calls)]
    assert calls == ([10, 10, 20] if retry else [10, 10]) and best.k == (3 if retry else 1)


def test_stages_stop_when_converged_but_not_before_least(tmp_path):
    """A trainer whose model never moves converges at stage 2; ``least`` (the convergence check's rerun, which
    must spend as many stages as the cell it checks) holds it to more."""
    from numerics.train.continuation import train_stages

    calls = []
    still, st, cfg = _still_trainer(calls)
    _, summary = train_stages(cfg, st, None, tmp_path / "a", still)
    assert summary["converged"], summary
    assert calls == [10, 10]
    calls.clear()
    _, summary = train_stages(cfg, st, None, tmp_path / "b", still, least=3)
    assert summary["converged"] and calls == [10, 10, 20] and summary["steps"] == 40


@pytest.mark.parametrize("model, layers, want", [("diag", 3, [10, 10]), ("diag", 4, [10, 10, 20]),
                                                  ("full", 4, [10, 10]), ("gdpp", 6, [10, 10])])
def test_a_deep_diag_cell_trains_at_least_the_stages_of_its_rule(tmp_path, model, layers, want):
    """With ``diag_least=3`` from depth 4, a DIAG cell of depth 4 whose model never moves trains three stages; a
    shallower DIAG cell, and FULL or GD++ of any depth, stop at stage 2 as the stage rule says.  The rule stays out
    of the signature of a budget without it, so that cells stored before it keep theirs."""
    from numerics.reproduce.budgets import BUDGETS, stages_signature
    from numerics.train.continuation import train_stages

    calls = []
    still, st, cfg = _still_trainer(calls)
    st, cfg = replace(st, diag_least=3, diag_least_depth=4), replace(cfg, model=model, layers=layers)
    _, summary = train_stages(cfg, st, None, tmp_path, still)
    assert summary["converged"] and calls == want
    assert {"diag_least", "diag_least_depth"} <= set(stages_signature(st))
    for name in ("paper", "lean"):  # their cells were stored before the rule
        assert not {"diag_least", "diag_least_depth"} & set(stages_signature(BUDGETS[name].stages))
    for bad in ({"diag_least": 0}, {"diag_least": 5}, {"diag_least_depth": 0}):
        with pytest.raises(ValueError, match=r"diag_least must be in 1\.\.most \(4\)"):
            replace(st, **bad)


def test_stage_k_trains_at_decay_to_the_k_minus_1_of_the_peak_rate():
    from numerics.reproduce.budgets import stages_signature
    from numerics.train.continuation import stage_config

    cfg = TrainConfig(model="diag", layers=2, noise="uniform:1", steps=10, batch=8)
    for decay in (0.5, 0.7, 1.0):
        st = Stages(steps=10, most=4, batch=8, seeds=1, decay=decay)
        lrs = [stage_config(cfg, st, k, None).lr for k in (2, 3, 4)]
        assert lrs == pytest.approx([cfg.peak_lr * decay ** (k - 1) for k in (2, 3, 4)], rel=1e-12, abs=0)
        assert ("decay" in stages_signature(st)) is (decay != 0.5)  # cells stored before the field trained at 0.5
    with pytest.raises(ValueError, match=r"decay must be in \(0, 1\], got 1.5"):
        Stages(steps=10, most=4, batch=8, seeds=1, decay=1.5)
