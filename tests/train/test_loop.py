"""The training loop: determinism, resume, FULL's DIAG phase, GD++'s projection, the y step, and the recovery from
divergence (rollback, step rejection, skipped steps)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics import models
from numerics.data import sample
from numerics.errors import LintfError
from numerics.io import load_model
from numerics.train import (
    CHUNK_CACHE,
    Result,
    TrainConfig,
    diag_part,
    effective_params,
    init_state,
    train,
)
from numerics.train.rundir import run as run_dir
from numerics.train.rundir import save_checkpoint
from tests.strategies.training import TINY, leaves


# --- determinism and resume ----------------------------------------------------------------------
def test_same_seed_same_numbers_other_seed_differs() -> None:
    cfg = TrainConfig(model="full", seeds=2, **TINY)
    a = train(cfg)
    CHUNK_CACHE.clear()  # retrace: a key baked in at trace time (clock, counter) would now differ
    jax.clear_caches()
    b = train(cfg)
    for x, y in zip(leaves(a.state), leaves(b.state)):
        np.testing.assert_array_equal(x, y)
    assert a.curve == b.curve
    c = train(TrainConfig(model="full", seeds=2, **{**TINY, "seed": 1}))
    assert not np.array_equal(leaves(a.state)[0], leaves(c.state)[0])


@pytest.mark.slow  # two compiled chunks: about 15 s
def test_a_chunk_in_micro_batches_repeats_itself_and_tracks_the_whole_batch_chunk() -> None:
    """``micro_batch`` reaches the compiled training chunk: the same seed gives the same numbers, and five steps in
    parts of 16 are the whole batch's up to the order of the additions, in another program."""
    from numerics.train import noise_values
    from numerics.train.step import chunk_fn, place

    cfg = TrainConfig(model="diag", **TINY, micro_batch=16)
    devices = tuple(jax.devices()[:1])

    def five(c: TrainConfig) -> tuple:
        out = chunk_fn(c, 5, devices)(
            place(init_state(c), devices), jnp.asarray(c.seed, jnp.int32), noise_values(c)
        )
        return leaves(out[0].params) + [np.asarray(out[2])]

    parts, again, whole = five(cfg), five(cfg), five(replace(cfg, micro_batch=0))
    for x, y in zip(parts, again):
        np.testing.assert_array_equal(x, y)
    assert not all(np.array_equal(x, y) for x, y in zip(parts, whole))
    for x, y in zip(parts, whole):
        np.testing.assert_allclose(x, y, rtol=1e-3, atol=1e-6)


def test_resume_after_interrupt_equals_uninterrupted(tmp_path: Path) -> None:
    cfg = TrainConfig(model="full", seeds=2, **TINY)
    whole = run_dir(cfg, tmp_path / "whole", progress=False, baselines=False)
    before = time.time()
    assert (
        run_dir(cfg, tmp_path / "cut", progress=False, baselines=False, stop_at=10) is None
    )  # "killed" at step 10
    assert not (tmp_path / "cut" / "model.npz").exists()
    with np.load(
        tmp_path / "cut" / "checkpoint.npz"
    ) as z:  # the checkpoint says when it was written
        assert before <= json.loads(str(z["meta"]))["time"] <= time.time()
    resumed = run_dir(cfg, tmp_path / "cut", progress=False, baselines=False)  # same command again
    P1, Q1, _ = load_model(tmp_path / "whole" / "model.npz")
    P2, Q2, _ = load_model(tmp_path / "cut" / "model.npz")
    np.testing.assert_array_equal(P1, P2)
    np.testing.assert_array_equal(Q1, Q2)
    assert whole["adjusted_loss"] == resumed["adjusted_loss"] and whole["curve"] == resumed["curve"]
    with pytest.raises(LintfError, match="different config"):
        run_dir(TrainConfig(model="full", seeds=3, **TINY), tmp_path / "whole", progress=False)


def test_a_run_resumes_from_a_start_moved_elsewhere_but_not_from_another_start(
    tmp_path: Path,
) -> None:
    """The start's content defines a warm-started run, not its path: a run directory whose start file now lies
    elsewhere (a sweep moved or copied, ``--out`` spelled another way) resumes to the uninterrupted run's numbers;
    a start with other content at that path is another run, and is refused."""
    import shutil

    first = run_dir(
        TrainConfig(model="diag", **TINY), tmp_path / "diag", progress=False, baselines=False
    )
    assert first is not None
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    shutil.copy(tmp_path / "diag" / "model.npz", here / "start.npz")
    cfg = TrainConfig(
        model="diag", **{**TINY, "warm_start": str(here / "start.npz")}
    )  # the first run's program
    whole = run_dir(cfg, tmp_path / "whole", progress=False, baselines=False)
    for cut in ("cut", "other"):
        assert run_dir(cfg, tmp_path / cut, progress=False, baselines=False, stop_at=10) is None
    here.rename(there)
    moved = replace(cfg, warm_start=str(there / "start.npz"))
    resumed = run_dir(moved, tmp_path / "cut", progress=False, baselines=False)
    assert resumed["adjusted_loss"] == whole["adjusted_loss"] and resumed["curve"] == whole["curve"]
    np.testing.assert_array_equal(
        load_model(tmp_path / "cut" / "model.npz")[1],
        load_model(tmp_path / "whole" / "model.npz")[1],
    )

    other = TrainConfig(model="diag", **{**TINY, "seed": 5})
    run_dir(other, tmp_path / "diag5", progress=False, baselines=False)
    shutil.copy(tmp_path / "diag5" / "model.npz", there / "start.npz")
    with pytest.raises(LintfError, match=r"different config \(warm_start, warm_start_sha256\)"):
        run_dir(moved, tmp_path / "other", progress=False, baselines=False)


def test_full_trains_its_diag_part_first_only_when_asked() -> None:
    """With ``diag_steps = S₁`` a FULL run's first ``S₁`` steps move only the DIAG family (x-diagonal together,
    y-diagonal); every other entry keeps its random start until the FULL phase, which then moves it.  By default
    FULL trains every entry from its own start (no DIAG phase)."""
    cfg = TrainConfig(model="full", seeds=2, diag_steps=13, **TINY)
    s1 = cfg.phase1_steps
    assert s1 == 13 and TrainConfig(model="full", **TINY).phase1_steps == 0
    d = TINY["d"]
    start = init_state(cfg).params
    mid = train(cfg, stop_at=10).state.params  # 10 < S₁ steps
    end = train(cfg).state.params
    mask = np.eye(d + 1, dtype=bool)
    for M0, M1, M2 in zip(start, mid, end):
        moved, later = np.asarray(M1 - M0), np.asarray(M2 - M0)
        assert np.all(moved[..., ~mask] == 0), (
            "the DIAG phase moved an entry outside diag(p_x I, p_y)"
        )
        dg = np.diagonal(moved, axis1=-2, axis2=-1)
        assert np.abs(dg).max() > 0 and np.ptp(dg[..., :d], axis=-1).max() < 1e-6 * np.abs(dg).max()
        assert np.abs(later[..., ~mask]).max() > 1e-4, (
            "the FULL phase never moved the off-DIAG entries"
        )
    eff = effective_params(cfg, mid, 10)
    np.testing.assert_array_equal(
        np.asarray(eff.P[0]),
        np.asarray(models.universal(diag_part(jax.tree_util.tree_map(lambda a: a[0], mid)), d)[0]),
    )


def test_gdpp_omega_xx_is_held_nonpositive_unless_free() -> None:
    """Projected Adam: GD++'s ω_xx stays ≤ 0 by default; the same run with ``gdpp_xx="free"`` moves some
    above 0, so the projection is what holds them.  config.json records it for GD++ only."""
    from dataclasses import replace

    from numerics.train import config_dict

    cfg = TrainConfig(model="gdpp", seeds=2, **TINY)
    assert np.all(np.asarray(init_state(cfg).params.omega_xx) <= 0)
    held = np.asarray(train(cfg).state.params.omega_xx)
    free = np.asarray(train(replace(cfg, gdpp_xx="free")).state.params.omega_xx)
    assert np.all(held <= 0) and np.any(held < 0)
    assert np.any(free > 0)
    assert (
        config_dict(cfg)["gdpp_xx"] == "nonpositive"
        and config_dict(replace(cfg, gdpp_xx="free"))["gdpp_xx"] == "free"
    )
    assert "gdpp_xx" not in config_dict(TrainConfig(model="diag", **TINY))


def test_y_scaled_by_s_is_the_model_with_q_y_times_s_squared() -> None:
    """The symmetry behind ``y_step``: DIAG on tokens ``(x, y/s)`` with ``q_y ↦ s² q_y`` predicts ``ŷ/s`` (literal
    token pass); ``q_y`` is the only parameter that moves."""
    d, n, s = 3, 7, 2.7
    params = models.init("diag", jax.random.PRNGKey(3), 4, d, 2, scale=0.3, dtype=jnp.float64)
    b = sample(jax.random.PRNGKey(4), "uniform:2", 16, n, d, jnp.float64)

    def yhat(p, y):  # noqa: ANN001, ANN202
        return -models.forward_tokens(*models.universal(p, d), b.X, y, b.x_query)[-1, :, -1, -1]

    ref = yhat(params, b.y)
    got = yhat(params._replace(qy=params.qy * s**2), b.y / s)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref) / s, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("noise", ["uniform:2", "fixed:1.5", "categorical:1,3"])
def test_y_moment_is_the_second_moment_of_the_data_y(noise: str) -> None:
    """``E y² = d + E σ²`` from the traced noise levels, against the mean of ``y²`` over drawn sequences."""
    from numerics.train import noise_values, y_moment

    cfg = TrainConfig(model="diag", **(TINY | {"noise": noise}))
    b = sample(jax.random.PRNGKey(5), noise, 100_000, 4, cfg.d, jnp.float64)
    per_seq = np.asarray(
        jnp.mean(b.y**2, axis=1)
    )  # the sequences are independent; their tokens share w
    se = per_seq.std() / np.sqrt(per_seq.size)
    assert abs(float(y_moment(cfg, noise_values(cfg))) - per_seq.mean()) < 4 * se


# FULL's scaled step is its default, and runs by default; DIAG's is an option, behind `slow` (a training program more).
@pytest.mark.parametrize("kind", [pytest.param("diag", marks=pytest.mark.slow), "full"])
def test_y_step_divides_the_step_of_q_y_by_e_y2(kind: str) -> None:
    """One Adam step from the same start: ``y_step="scaled"`` moves DIAG's ``q_y`` (FULL's ``Q_yy``) ``c = E y²``
    times less than ``"plain"``, and every other entry the same.  config.json records ``"scaled"`` (DIAG and FULL)."""
    from dataclasses import replace

    from numerics.train import chunk_fn, config_dict, noise_values, training_devices, y_moment

    cfg = TrainConfig(model=kind, diag_steps=0 if kind == "full" else None, **TINY)
    moved = {}
    for ys in ("scaled", "plain"):
        c = replace(cfg, y_step=ys)
        s0 = init_state(c)
        s1, ok, _ = chunk_fn(c, 1, training_devices(c.batch))(
            s0, jnp.asarray(0, jnp.int32), noise_values(c)
        )
        assert bool(np.all(ok))
        moved[ys] = [np.asarray(a - z, np.float64) for a, z in zip(s1.params, s0.params)]
        assert config_dict(c).get("y_step", "plain") == ys
    c = float(y_moment(cfg, noise_values(cfg)))
    assert c == pytest.approx(cfg.d + 4 / 3)  # uniform:2: E σ² = 4/3
    for name, sc, pl in zip(type(init_state(cfg).params)._fields, moved["scaled"], moved["plain"]):
        mask = np.zeros(pl.shape, bool)
        if name == "qy":
            mask[...] = True
        elif name == "Q":
            mask[..., cfg.d, cfg.d] = True
        assert np.abs(pl).max() > 0
        np.testing.assert_allclose(sc[mask] * c, pl[mask], rtol=1e-5)
        np.testing.assert_array_equal(sc[~mask], pl[~mask])
    assert "y_step" not in config_dict(TrainConfig(model="gdpp", **TINY))


def test_y_step_defaults_to_scaled_for_full_and_plain_for_diag() -> None:
    """The per-model default (``DEFAULT_Y_STEP``), and what config.json records: FULL's choice always (its runs from
    before the scaled default were plain), DIAG's only when it is not the default."""
    from numerics.train import config_dict

    full, diag = TrainConfig(model="full", **TINY), TrainConfig(model="diag", **TINY)
    assert (full.y_step, diag.y_step, TrainConfig(model="gdpp", **TINY).y_step) == (
        "scaled",
        "plain",
        "plain",
    )
    assert config_dict(full)["y_step"] == "scaled" and "y_step" not in config_dict(diag)
    assert config_dict(TrainConfig(model="full", y_step="plain", **TINY))["y_step"] == "plain"
    assert config_dict(TrainConfig(model="diag", y_step="scaled", **TINY))["y_step"] == "scaled"


# --- divergence ----------------------------------------------------------------------------------
def test_divergence_is_rolled_back_and_lr_lowered(tmp_path: Path) -> None:
    cfg = TrainConfig(
        model="full", seeds=2, lr=1e3, warmup=0, trust=0, **TINY
    )  # no step rejection: the guard acts
    metrics = run_dir(cfg, tmp_path, progress=False, baselines=False)
    assert metrics["rollbacks"], "a learning rate of 1e3 must trigger the divergence guard"
    rho = json.loads((tmp_path / "config.json").read_text())  # config unchanged by rollbacks
    assert rho["lr"] == 1e3
    with np.load(tmp_path / "checkpoint.npz") as z:
        leaves = [z[k] for k in z.files if k.startswith("leaf_")]
    assert all(np.all(np.isfinite(x)) for x in leaves if x.dtype.kind == "f")
    lowered = {s: r for ev in metrics["rollbacks"] for s, r in zip(ev["seeds"], ev["rho"])}
    assert lowered and all(r < 1 for r in lowered.values())
    P, Q, _ = load_model(tmp_path / "model.npz")
    assert np.all(np.isfinite(P)) and np.all(np.isfinite(Q))
    assert np.isfinite(metrics["adjusted_loss"])


def test_a_rate_far_too_large_is_damped_by_step_rejection_without_rollback() -> None:
    """With the default ``trust``, the rate 1e3 that diverges above never reaches the guard: its steps are rejected
    (each halving the rate) until they stop raising the batch's median loss, and nothing is rolled back."""
    cfg = TrainConfig(model="full", seeds=2, lr=1e3, warmup=0, **TINY)
    assert cfg.trust == 2.0
    res = train(cfg)
    rejected = np.asarray(res.state.rejected)
    assert res.rollbacks == [] and res.skipped == 0, (res.rollbacks, res.skipped)
    assert np.all(rejected >= 5), rejected
    assert np.all(
        np.asarray(res.state.damp) < 1e-2
    )  # damped by at least 2^-7 from 1e3 towards a sane rate
    assert all(np.all(np.isfinite(x)) for x in leaves(res.state.params))


@pytest.mark.parametrize("lr,taken", [(1e4, False), (1e-3, True)])
def test_a_rejected_step_leaves_the_state_and_halves_the_rate(lr: float, taken: bool) -> None:
    """One step: rejected (``lr`` 1e4), parameters and Adam's moments stay as they were, ``damp`` halves and
    ``rejected`` counts it; accepted (``lr`` 1e-3), the step is taken and ``damp`` stays at its cap 1."""
    cfg = TrainConfig(model="diag", seeds=2, lr=lr, warmup=0, **{**TINY, "steps": 1, "chunk": 1})
    start, res = init_state(cfg), train(cfg)
    moved = [
        not np.array_equal(a, b)
        for a, b in zip(
            leaves(start.params) + leaves(start.opt_state),
            leaves(res.state.params) + leaves(res.state.opt_state),
        )
    ]
    assert all(moved) if taken else not any(moved)
    assert np.asarray(res.state.damp).tolist() == ([1.0, 1.0] if taken else [0.5, 0.5])
    assert np.asarray(res.state.rejected).tolist() == ([0, 0] if taken else [1, 1])
    assert res.rollbacks == [] and res.skipped == 0


def test_a_step_that_stays_below_the_floor_is_kept(monkeypatch) -> None:
    """``TRUST_FLOOR``: the same step (``lr`` 10, which multiplies the median loss many times over) is rejected
    with the default floor, and kept when the floor is above the loss it reaches."""
    import numerics.train.step as tr

    cfg = TrainConfig(model="diag", lr=10.0, warmup=0, **{**TINY, "steps": 1, "chunk": 1})
    verdicts = []
    for floor in (tr.TRUST_FLOOR, 1e30):
        monkeypatch.setattr(tr, "TRUST_FLOOR", floor)
        CHUNK_CACHE.clear()
        res = train(cfg)
        verdicts.append(
            (int(np.asarray(res.state.rejected)[0]), float(np.asarray(res.state.damp)[0]))
        )
    CHUNK_CACHE.clear()
    assert verdicts == [(1, 0.5), (0, 1.0)], verdicts


def _edge_chunks(edge_step: int, edge: float):
    """A stand-in for the compiled chunk: every parameter moves by ``ρ`` per step, and a chunk that starts at
    ``edge_step`` with parameters above ``edge`` fails whatever ``ρ`` is (the start sits at a cliff)."""

    def make(cfg, length, devices):
        def run(state, seed, values):
            start = float(np.asarray(jax.tree_util.tree_leaves(state.params)[0]).ravel()[0])
            ok = np.full(cfg.seeds, not (int(state.step) == edge_step and start > edge))
            params = jax.tree_util.tree_map(
                lambda p: p + (state.rho * length).reshape(-1, *[1] * (p.ndim - 1)), state.params
            )
            return (
                state._replace(params=params, step=state.step + length),
                ok,
                np.zeros((length, cfg.seeds)),
            )

        return run

    return make


def _start_at_zero(monkeypatch, cfg: TrainConfig) -> None:
    """Training starts from all-zero parameters, so that :func:`_edge_chunks`' parameters count ``Σ ρ``."""
    import numerics.train.loop as tr

    zero = jax.tree_util.tree_map(jnp.zeros_like, init_state(cfg).params)
    monkeypatch.setattr(
        tr, "init_state", lambda c, template=False: init_state(c)._replace(params=zero)
    )


def test_a_start_at_the_edge_is_left_by_going_back_a_chunk(monkeypatch) -> None:
    """A chunk that fails again from the same start rolls back one chunk further, with the rate halved
    again, instead of retrying the same start until ``max_rollbacks`` (which raised before)."""
    import numerics.train.loop as tr

    monkeypatch.setattr(tr, "chunk_fn", _edge_chunks(edge_step=10, edge=7.5))
    cfg = TrainConfig(model="diag", **{**TINY, "steps": 20})
    _start_at_zero(monkeypatch, cfg)
    res = train(cfg)
    assert [(e["step"], e.get("to")) for e in res.rollbacks] == [(10, None), (10, 5)]
    assert float(res.state.rho[0]) == 0.25 and int(res.state.step) == 20
    # the redone chunk 5..10 at ρ = 1/4 and the rest: 5 + 5/4 + 10/4
    assert float(leaves(res.state.params)[0].ravel()[0]) == pytest.approx(5 + 1.25 + 2.5)
    assert [c[0] for c in res.curve] == [5, 10, 15, 20]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_run_that_keeps_diverging_names_the_remedies(monkeypatch, dtype: str) -> None:
    """Past ``max_rollbacks`` the run stops with a one-line error; a float32 run is also told of float64, the
    remedy where the noise levels are large."""
    import numerics.train.loop as tr

    def failing(cfg, length, devices):
        return lambda state, seed, values: (
            state,
            np.zeros(cfg.seeds, bool),
            np.zeros((length, cfg.seeds)),
        )

    monkeypatch.setattr(tr, "chunk_fn", failing)
    with jax.enable_x64(dtype == "float64"):
        cfg = TrainConfig(model="diag", dtype=dtype, max_rollbacks=2, **TINY)
        with pytest.raises(LintfError) as err:
            train(cfg)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("training diverged 3 times") and "lower --lr" in msg
    assert ("--dtype float64" in msg) == (dtype == "float32"), msg


def test_deeper_rollback_after_resume_uses_the_checkpointed_history(
    tmp_path: Path, monkeypatch
) -> None:
    """The chunk starts kept for going back are part of the checkpoint: interrupted at step 10 and resumed,
    the run ends where the uninterrupted run ends (without them it went back only to step 10 and stopped)."""
    import numerics.train.loop as tr
    import numerics.train.rundir as rd

    monkeypatch.setattr(tr, "chunk_fn", _edge_chunks(edge_step=15, edge=12.5))
    cfg = TrainConfig(model="diag", **{**TINY, "steps": 25, "max_rollbacks": 4})
    _start_at_zero(monkeypatch, cfg)
    whole = train(cfg)
    train(
        cfg,
        checkpoint=lambda s, r: (rd.claim(tmp_path, cfg), save_checkpoint(tmp_path, s, r)),
        stop_at=15,
    )  # as run()
    rest = train(cfg, resume=rd.prepare(tmp_path, cfg))
    assert rest.rollbacks == whole.rollbacks and [e.get("to") for e in whole.rollbacks] == [
        None,
        10,
    ]
    for a, b in zip(leaves(rest.state), leaves(whole.state)):
        np.testing.assert_array_equal(a, b)
    assert rest.curve == whole.curve


def test_metrics_hold_the_baselines_of_the_same_setting(tmp_path: Path, monkeypatch) -> None:
    """finalize calls numerics.baselines.table for the run's noise, n, d and seed and stores its table in
    metrics.json (table itself is tested in test_baselines.py; a recording stub keeps this fast)."""
    import numerics.baselines as nb

    calls = []

    def stub(noise, **kw):
        calls.append((noise, kw))
        return {m: {"loss": 0.125 + i, "se": 0.001} for i, m in enumerate(kw["methods"])}

    monkeypatch.setattr(nb, "table", stub)
    cfg = TrainConfig(model="diag", **{**TINY, "n": 8, "steps": 5})
    run_dir(cfg, tmp_path, progress=False)
    got = json.loads((tmp_path / "metrics.json").read_text())["baselines"]
    assert len(calls) == 1 and calls[0][0] == cfg.noise
    assert {k: calls[0][1][k] for k in ("n", "d", "seed")} == {
        "n": cfg.n,
        "d": cfg.d,
        "seed": cfg.seed,
    }
    assert {"ConstRR", "AdaRR", "TunedRR", "Bayes"} <= set(got) and got["ConstRR"][
        "loss"
    ] == 0.125 + 1


def test_one_bad_batch_is_skipped_in_step(monkeypatch) -> None:
    """A single poisoned training batch (y = NaN at step 7) is skipped by the in-step guard: no rollback,
    one skipped step per seed, finite parameters, and the other steps' updates are kept."""
    import numerics.train.step as tr

    bad_step = 7
    real_key, real_draw = tr.data_key, tr.draw

    def key_with_index(seed, stream, index):
        return real_key(seed, stream, index), jnp.asarray(stream == 1) & (
            jnp.asarray(index) == bad_step
        )

    def draw(cfg, key, batch, sharding=None, values=None):
        k, poison = key
        b = real_draw(cfg, k, batch, sharding, values)
        return b._replace(y=jnp.where(poison, jnp.nan, b.y))

    monkeypatch.setattr(tr, "data_key", key_with_index)
    monkeypatch.setattr(tr, "draw", draw)
    CHUNK_CACHE.clear()
    try:
        cfg = TrainConfig(model="diag", seeds=2, **TINY)
        res = train(cfg)
    finally:
        CHUNK_CACHE.clear()
    assert res.rollbacks == [] and res.skipped == cfg.seeds, (res.rollbacks, res.skipped)
    assert all(np.all(np.isfinite(x)) for x in leaves(res.state.params))
    assert np.all(np.isfinite(np.asarray(res.curve)))
    monkeypatch.undo()
    clean = train(cfg)  # unpoisoned data: the skipped step changes the result
    assert not np.array_equal(leaves(res.state.params)[0], leaves(clean.state.params)[0])


def test_checkpoint_refuses_non_finite(tmp_path: Path) -> None:
    cfg = TrainConfig(model="diag", **TINY)
    s = init_state(cfg)
    bad = s._replace(params=jax.tree_util.tree_map(lambda a: a.at[0].set(jnp.nan), s.params))
    with pytest.raises(LintfError, match="non-finite"):
        save_checkpoint(tmp_path, bad, Result(bad))
