"""The schedule is a traced argument of the compiled chunk (:class:`numerics.train.schedule.Schedule`): the stages of a
sweep's cell, which differ in steps and learning rate, share one program, and the traced schedule computes the
numbers the schedule built into the program as constants computed, bit for bit."""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics.models.kinds import DIAG
from numerics.train import step as st
from numerics.train.config import TrainConfig, default_warmup
from numerics.train.loop import init_state, nanmean, train, training_devices
from numerics.train.objective import batch_sharding, noise_values, static_config
from numerics.train.schedule import lr_at, schedule
from numerics.train.step import CHUNK_CACHE, chunk_fn
from tests.strategies.training import TINY, leaves


def constant_lr(cfg: TrainConfig, step: jax.Array) -> jax.Array:
    """The schedule as it was built into the program before it became an argument: Python constants."""

    def warm_cosine(t, peak, warmup, steps):  # noqa: ANN001, ANN202
        warm = jnp.minimum(1.0, (t + 1.0) / warmup)
        cos = 0.5 * (1.0 + jnp.cos(jnp.pi * jnp.minimum(t, steps) / steps))
        return peak * warm * cos

    t = step.astype(jnp.float32)
    s1 = cfg.phase1_steps
    last = warm_cosine(t - s1, cfg.peak_lr, cfg.warmup_steps, cfg.steps - s1)
    if not s1:
        return last
    return jnp.where(t < s1, warm_cosine(t, DIAG.default_lr, default_warmup(s1), s1), last)


def stage_configs(
    model: str, start: str | None = "start.npz", seeds: int = 1, **kw
) -> list[TrainConfig]:  # noqa: ANN003
    """A cell's first four stages as :func:`numerics.reproduce.cell.train_stages` makes them (``seeds``, one
    in a cell: the steps doubled, the rate halved), stages 2… from ``start`` (``None``: from the random start,
    to train them without a file)."""
    base = TrainConfig(model=model, **{**TINY, **kw})
    return [
        replace(
            base,
            steps=20 * 2 ** max(0, k - 2),
            seeds=seeds,
            lr=None if k == 1 else base.peak_lr * 0.5 ** (k - 1),
            warm_start=start and "start.npz",
        )
        for k in range(1, 5)
    ]


@pytest.mark.parametrize("model", ["diag", "full", "gdpp"])
def test_the_stages_of_a_cell_share_one_program(model: str) -> None:
    """Steps, lr, warm-up, final fraction and the DIAG phase's length are arguments, not part of the cache key."""
    dev = training_devices(TINY["batch"])
    no_phase = {"diag_steps": 0} if model == "full" else {}
    cfgs = [
        *stage_configs(model, **no_phase),
        TrainConfig(
            model=model,
            **{**TINY, **no_phase, "steps": 33, "lr": 3e-3, "warmup": 7, "final_fraction": 0.5},
        ),
    ]
    chunks = [chunk_fn(c, 5, dev) for c in cfgs]
    assert len({id(c.program) for c in chunks}) == 1
    assert len({tuple(map(float, c.sched)) for c in chunks}) == len(
        cfgs
    )  # ... and each has its own schedule
    assert (
        chunk_fn(cfgs[0], 4, dev).program is not chunks[0].program
    )  # the chunk length is part of the program
    if (
        model == "full"
    ):  # with a DIAG phase the program holds its lax.cond: one program for every S₁ > 0
        phased = [
            chunk_fn(TrainConfig(model="full", **{**TINY, **kw}), 5, dev).program
            for kw in (
                {"diag_steps": 13},
                {"steps": 30, "diag_steps": 7},
                {"steps": 90, "diag_steps": 60, "lr": 1e-3, "warmup": 3},
            )
        ]
        assert phased[0] is not chunks[0].program and all(p is phased[0] for p in phased)


#: Two seeds with step rejection off: a high rate rolls back.  The traced schedule's training check
#: below runs the same program at a sane rate; it is also the program of ``test_loop.py``'s
#: ``UNTRUSTED`` runs and of ``test_step.py``'s clean run (one compile in a test run).
UNTRUSTED = {**TINY, "seeds": 2, "trust": 0}


def test_training_the_stages_traces_and_compiles_once() -> None:
    """Three stages of a cell trained one after the other (4, 4 and 8 chunks): every chunk of every stage, the first
    included, runs one compiled program.  A schedule that reached it as a static or differently typed value would
    retrace and compile, and so would a start not placed as the program returns its state (uncommitted arrays of
    :func:`init_state` carry no mesh in their type; :func:`numerics.train.step.place`).  Each stage trains with its
    own schedule.  The stages train the program of the checks below (:data:`UNTRUSTED`), compiled once."""
    CHUNK_CACHE.clear()
    cfgs = stage_configs("diag", start=None, **UNTRUSTED)[:3]
    first = train(cfgs[0])
    program = chunk_fn(cfgs[0], 5, training_devices(TINY["batch"])).program
    assert program._cache_size() == 1
    later = [train(c) for c in cfgs[1:]]
    assert len(CHUNK_CACHE) == 1 and program._cache_size() == 1
    assert [int(r.state.step) for r in (first, *later)] == [c.steps for c in cfgs] == [20, 20, 40]
    assert not np.array_equal(
        leaves(first.state)[0], leaves(later[0].state)[0]
    )  # stage 2's lr is half


def test_rollbacks_and_a_resume_run_the_same_compiled_chunk(tmp_path) -> None:  # noqa: ANN001
    """A rollback's halved ``rho`` and a state read from a checkpoint (with the earlier chunk starts it keeps for
    going back) are placed as the program's outputs: a run that rolls back, then a run interrupted and resumed,
    leave one entry in the program's cache."""
    import numerics.train.rundir as rd

    CHUNK_CACHE.clear()
    hot = TrainConfig(model="diag", **{**UNTRUSTED, "lr": 3.0, "max_rollbacks": 100})
    res = train(hot)
    program = chunk_fn(hot, 5, training_devices(TINY["batch"])).program
    assert len(res.rollbacks) >= 2 and program._cache_size() == 1
    cfg = replace(hot, lr=0.3)  # the same program (a lower rate is an argument)
    train(
        cfg,
        checkpoint=lambda s, r: (rd.claim(tmp_path, cfg), rd.save_checkpoint(tmp_path, s, r)),
        stop_at=10,
    )
    rest = train(cfg, resume=rd.prepare(tmp_path, cfg))
    assert (
        int(rest.state.step) == cfg.steps and len(CHUNK_CACHE) == 1 and program._cache_size() == 1
    )
    # the chunk starts read from the checkpoint, kept for going back further, are placed too
    assert rest.history and {
        x.sharding for h, _, _ in rest.history for x in jax.tree_util.tree_leaves(h)
    } == {x.sharding for x in jax.tree_util.tree_leaves(rest.state)}


CONFIGS = [
    dict(model="diag", steps=300),
    dict(model="diag", steps=133, lr=4e-3, warmup=0),
    dict(model="gdpp", steps=257, lr=1e-3 * 0.5**3, warmup=40),
    dict(model="full", steps=300),
    dict(model="full", steps=211, diag_steps=60, lr=3.3e-3, warmup=77),
    dict(model="full", steps=96, diag_steps=0),
]


@pytest.mark.parametrize("kw", CONFIGS, ids=lambda kw: "-".join(map(str, kw.values())))
def test_traced_schedule_is_the_constant_schedule_bit_for_bit(kw: dict) -> None:
    """``η_t`` at every step of a run and past its end, one scalar step at a time inside a scan as in training:
    the traced schedule against the constants XLA folds (a division by a constant becomes a product with its
    float32 reciprocal, and products of constants are gathered)."""
    cfg = TrainConfig(layers=2, **kw)
    n = cfg.steps + 3

    def steps(lr):  # noqa: ANN001, ANN202
        return lambda t0, *a: jax.lax.scan(lambda c, _: (c + 1, lr(c, *a)), t0, None, length=n)[1]

    want = np.asarray(jax.jit(steps(lambda c: constant_lr(cfg, c)))(jnp.int32(0)))
    got = np.asarray(
        jax.jit(steps(lambda c, s: lr_at(static_config(cfg), c, s)))(jnp.int32(0), schedule(cfg))
    )
    assert want.dtype == got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


# DIAG in the default run; FULL (its two phases) and GD++ compile a training program each and go behind `slow`.  The
# schedule of every kind, FULL's phases included, is checked bit for bit step by step above in the default run.
@pytest.mark.parametrize(
    "model,kw",
    [
        ("diag", {"lr": 4e-3, "warmup": 3}),
        pytest.param("full", {"diag_steps": 8, "warmup": 2}, marks=pytest.mark.slow),
        pytest.param("gdpp", {"steps": 15}, marks=pytest.mark.slow),
    ],
)
def test_training_with_the_traced_schedule_is_training_with_the_constant_one(
    model: str, kw: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole chunks: the shared program against one built with the schedule as constants (the old program).
    The run is the rollback check's (its program), at rates that do not roll back.  The two programs
    agree to float32 rounding, a few units in the last place: under the test run's compile flags
    (``tests/conftest.py``) XLA may round a product with a constant rate differently from one with a
    traced rate; the rate itself is checked bit for bit, step by step, above."""
    cfg = TrainConfig(model=model, **{**UNTRUSTED, **kw})
    dev = training_devices(cfg.batch)
    traced = train(cfg)
    # placed as the program returns its state, so that the constant program compiles once (place)
    state, seed, curve = st.place(init_state(cfg), dev), jnp.asarray(cfg.seed, jnp.int32), []
    with monkeypatch.context() as m:  # traced on its first call, here
        m.setattr(st, "lr_at", lambda _static, step, _sched: constant_lr(cfg, step))
        const = st.make_chunk(static_config(cfg), cfg.chunk, batch_sharding(list(dev)))
        while int(state.step) < cfg.steps:
            state, ok, losses = const(state, seed, noise_values(cfg), schedule(cfg))
            assert bool(np.all(np.asarray(ok)))
            curve.append(
                [int(state.step), *nanmean(np.asarray(losses, np.float64), axis=0).tolist()]
            )
    assert not traced.rollbacks
    for a, b in zip(leaves(traced.state), leaves(state), strict=True):
        np.testing.assert_array_max_ulp(np.asarray(a), np.asarray(b), maxulp=4)
    np.testing.assert_allclose(traced.curve, curve, rtol=1e-6, atol=0)
