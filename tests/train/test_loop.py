"""The training loop: determinism, FULL's DIAG phase, and the recovery from divergence (rollback,
going back further, the one-line error past ``max_rollbacks``), after a resume too."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics import models
from numerics.errors import LintfError
from numerics.model_file import load_model
from numerics.train import loop
from numerics.train.checkpoint import save_checkpoint
from numerics.train.config import TrainConfig
from numerics.train.loop import adjusted_losses, init_state, train
from numerics.train.objective import diag_part, effective_params
from numerics.train.rundir import run as run_dir
from numerics.train.step import CHUNK_CACHE
from tests.strategies.training import TINY, leaves


# --- evaluation ---------------------------------------------------------------------------------
def test_evaluation_compiles_once_for_configs_that_differ_only_in_training() -> None:
    """The held-out programs are cached on what evaluation reads (model, noise kind and level count,
    n, d, dtype): a config that differs in rate, seeds, step rejection, batch or chunk reuses the
    program and gives the same numbers; other noise levels reuse it with their own numbers; another
    ``n`` compiles its own.  Two seeds' parameters: the program of the two-seed runs' evaluations
    below (compiled once)."""
    base = TrainConfig(model="diag", seeds=2, **TINY)
    params = init_state(base).params
    loop._EVAL_CACHE.clear()
    a = adjusted_losses(base, params, 3, 256)
    assert len(loop._EVAL_CACHE) == 1
    other = TrainConfig(
        model="diag",
        **{**TINY, "lr": 3e-3, "seeds": 3, "trust": 0.0, "batch": 32, "chunk": 4, "clip": 0.5},
    )
    b = adjusted_losses(other, params, 3, 256)
    assert len(loop._EVAL_CACHE) == 1, "a config that differs only in training compiled again"
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    c = adjusted_losses(TrainConfig(model="diag", **{**TINY, "noise": "uniform:5"}), params, 3, 256)
    assert len(loop._EVAL_CACHE) == 1
    assert not np.array_equal(a[1], c[1]), "another noise level drew the same sequences' noise"
    adjusted_losses(TrainConfig(model="diag", **{**TINY, "n": 7}), params, 3, 256)
    assert len(loop._EVAL_CACHE) == 2


# --- determinism and resume ----------------------------------------------------------------------
#: DIAG, two seeds, no step rejection: the divergence test below trains it at a rate of 1e3, the
#: determinism test at the default rate, with one compiled program (the rate is an argument), the
#: one of the clean run in ``test_step.py``'s bad-batch test.
UNTRUSTED = dict(model="diag", seeds=2, trust=0.0, **TINY)


def test_same_seed_same_numbers_other_seed_differs() -> None:
    cfg = TrainConfig(**UNTRUSTED)
    a = train(cfg)
    CHUNK_CACHE.clear()  # retrace: a key baked in at trace time (clock, counter) would now differ
    jax.clear_caches()
    b = train(cfg)
    for x, y in zip(leaves(a.state), leaves(b.state)):
        np.testing.assert_array_equal(x, y)
    assert a.curve == b.curve
    c = train(TrainConfig(**{**UNTRUSTED, "seed": 1}))
    assert not np.array_equal(leaves(a.state)[0], leaves(c.state)[0])


def test_full_trains_its_diag_part_first_only_when_asked() -> None:
    """With ``diag_steps = S₁`` a FULL run's first ``S₁`` steps move only the DIAG family (x-diagonal together,
    y-diagonal); every other entry keeps its random start until the FULL phase, which then moves it.  By default
    FULL trains every entry from its own start (no DIAG phase)."""
    # the program of the y-step check in test_step.py (compiled once)
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


# --- divergence ----------------------------------------------------------------------------------
def test_divergence_is_rolled_back_and_lr_lowered(tmp_path: Path) -> None:
    cfg = TrainConfig(lr=1e3, warmup=0, **UNTRUSTED)  # no step rejection: the guard acts
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
    cfg = TrainConfig(model="diag", **{**TINY, "seeds": 2, "steps": 20})  # DIAG2's start
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
    cfg = TrainConfig(model="diag", **{**TINY, "seeds": 2, "steps": 25, "max_rollbacks": 4})
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
