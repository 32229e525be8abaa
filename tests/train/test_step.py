"""The training step: GD++'s projection, the y step, step rejection, the in-step guard against one
bad batch, micro-batches, and the compiled chunk's cache key."""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics import models
from numerics.data import sample
from numerics.train.config import TrainConfig, config_dict
from numerics.train.loop import init_state, train, training_devices
from numerics.train.objective import data_key, draw, noise_values
from numerics.train.step import (
    CHUNK_CACHE,
    accepts,
    chunk_fn,
    place,
    seed_step,
    y_moment,
    y_step,
)
from tests.strategies.training import TINY, leaves


@pytest.mark.slow  # two compiled chunks: about 15 s
def test_a_chunk_in_micro_batches_repeats_itself_and_tracks_the_whole_batch_chunk() -> None:
    """``micro_batch`` reaches the compiled training chunk: the same seed gives the same numbers,
    and five steps in parts of 16 are the whole batch's up to the order of the additions, in another
    program."""
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


#: The one training program most tests here share: GD++, two seeds, TINY, step rejection on (the
#: rate, warm-up and steps are arguments of the compiled chunk, not part of it).  The step-rejection
#: tests below are about the step, not the model: they run on the program the projection test
#: needs.
GDPP2 = TrainConfig(model="gdpp", seeds=2, **TINY)


def test_gdpp_omega_xx_is_held_nonpositive_by_projection() -> None:
    """Projected Adam: GD++'s ω_xx stays ≤ 0 by default, and the bound is active: ω_xx that
    started below 0 end at exactly 0 (Adam pushed them up and the projection clipped them), so the
    projection is what holds them.  config.json records it for GD++ only.  The fast sibling of
    :func:`test_gdpp_omega_xx_is_held_nonpositive_unless_free` (one training program, not two):
    :data:`GDPP2`'s."""
    cfg = GDPP2
    start = np.asarray(init_state(cfg).params.omega_xx)
    assert np.all(start <= 0)
    held = np.asarray(train(cfg).state.params.omega_xx)
    assert np.all(held <= 0) and np.any(held < 0)
    assert np.any((start < 0) & (held == 0)), (start, held)
    assert (
        config_dict(cfg)["gdpp_xx"] == "nonpositive"
        and config_dict(replace(cfg, gdpp_xx="free"))["gdpp_xx"] == "free"
    )
    assert "gdpp_xx" not in config_dict(TrainConfig(model="diag", **TINY))


# two GD++ training programs; fast sibling: test_gdpp_omega_xx_is_held_nonpositive_by_projection
@pytest.mark.slow
def test_gdpp_omega_xx_is_held_nonpositive_unless_free() -> None:
    """Projected Adam: GD++'s ω_xx stays ≤ 0 by default; the same run with ``gdpp_xx="free"`` moves
    some above 0, so the projection is what holds them.  config.json records it for GD++ only."""
    cfg = GDPP2
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
    """The symmetry behind ``y_step``: DIAG on tokens ``(x, y/s)`` with ``q_y ↦ s² q_y`` predicts
    ``ŷ/s`` (literal token pass, compiled once for both); ``q_y`` is the only parameter that moves.
    Parameters and data are drawn with NumPy: any will do."""
    d, n, s = 3, 7, 2.7
    rng = np.random.default_rng(3)
    params = models.Diag(*(0.3 * rng.standard_normal((4, 2)) for _ in range(4)))  # (L, H)
    X, w, xq = (
        rng.standard_normal((16, n, d)),
        rng.standard_normal((16, d)),
        rng.standard_normal((16, d)),
    )
    y = np.einsum("bnd,bd->bn", X, w) + rng.uniform(0, 2, (16, 1)) * rng.standard_normal((16, n))

    @jax.jit
    def yhat(p, y):  # noqa: ANN001, ANN202
        return -models.forward_tokens(*models.universal(p, d), X, y, xq)[-1, :, -1, -1]

    ref = yhat(params, y)
    got = yhat(params._replace(qy=params.qy * s**2), y / s)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref) / s, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("noise", ["uniform:2", "fixed:1.5", "categorical:1,3"])
def test_y_moment_is_the_second_moment_of_the_data_y(noise: str) -> None:
    """``E y² = d + E σ²`` from the traced noise levels, against the mean of ``y²`` over 20 000
    drawn sequences (the shape of the evaluation's float64 chunks at :data:`TINY`'s ``n`` and ``d``:
    its sampler is compiled once in a test run)."""
    cfg = TrainConfig(model="diag", **(TINY | {"noise": noise}))
    b = sample(jax.random.PRNGKey(5), noise, 20_000, cfg.n, cfg.d, jnp.float64)
    # the sequences are independent; their tokens share w
    per_seq = np.mean(np.asarray(b.y) ** 2, axis=1)
    se = per_seq.std() / np.sqrt(per_seq.size)
    assert abs(float(y_moment(cfg, noise_values(cfg))) - per_seq.mean()) < 4 * se


@pytest.mark.parametrize("kind", ["diag", "full", "gdpp"])
def test_the_scaled_y_step_divides_q_y_by_e_y2_and_leaves_every_other_entry(kind: str) -> None:
    """:func:`y_step` on a drawn update (the shape of one seed's parameters): DIAG's ``q_y`` and
    FULL's ``Q_yy`` (``Q[..., d, d]``) divided by ``c = E y² = d + E σ²``, every other entry as it
    was; GD++ (no ``q_y``) and the plain step unchanged.  The chunk's own step, from one start both
    ways, is the slow test below."""
    cfg = TrainConfig(model=kind, **TINY)
    params = jax.tree.map(lambda a: a[0], init_state(cfg).params)
    rng = np.random.default_rng(3)
    updates = jax.tree.map(lambda a: jnp.asarray(rng.standard_normal(a.shape), a.dtype), params)
    values = noise_values(cfg)
    c = cfg.d + 4 / 3  # uniform:2: E σ² = 4/3
    assert float(y_moment(cfg, values)) == pytest.approx(c, rel=1e-7)  # the run's float32
    plain = leaves(y_step(replace(cfg, y_step="plain"), updates, values))
    if kind == "gdpp":  # its configuration refuses "scaled": the kind's rule itself
        scaled = leaves(cfg.kind.scale_y_step(updates, jnp.asarray(c), cfg.d))
    else:
        scaled = leaves(y_step(replace(cfg, y_step="scaled"), updates, values))
    divided = 0
    for name, sc, pl, u in zip(cfg.kind.params_type._fields, scaled, plain, leaves(updates)):
        np.testing.assert_array_equal(pl, u)
        mask = np.zeros(pl.shape, bool)
        if kind == "diag" and name == "qy":
            mask[...] = True
        elif kind == "full" and name == "Q":
            mask[..., cfg.d, cfg.d] = True
        np.testing.assert_allclose(sc[mask] * c, pl[mask], rtol=1e-6)
        np.testing.assert_array_equal(sc[~mask], pl[~mask])
        divided += int(mask.sum())
    assert divided == {"diag": TINY["layers"], "full": TINY["layers"], "gdpp": 0}[kind]


# One compiled training chunk each way: about 25 s for FULL, more for DIAG.
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["diag", "full"])
def test_y_step_divides_the_step_of_q_y_by_e_y2(kind: str) -> None:
    """One Adam step from the same start: ``y_step="scaled"`` moves DIAG's ``q_y`` (FULL's ``Q_yy``)
    ``c = E y²`` times less than ``"plain"``, and every other entry the same.  config.json records
    ``"scaled"`` (DIAG and FULL).  The step is the first of a chunk of five, the last phase of a run
    that ends after it (the rate is 0 from the next step on), so that the chunk is a shared program:
    FULL's, from the step after its DIAG phase (a step of every entry, not of the DIAG family), is
    ``test_loop.py``'s FULL run with ``"scaled"``; DIAG's are two programs of its own."""
    if kind == "full":
        start = 13
        cfg = TrainConfig(model="full", seeds=2, diag_steps=start, **{**TINY, "steps": start + 1})
    else:
        start, cfg = 0, TrainConfig(model="diag", seeds=2, **{**TINY, "steps": 1})
    cfg = replace(cfg, lr=cfg.peak_lr / 10)  # the first rate of TINY's default warm-up
    devices = training_devices(cfg.batch)
    moved = {}
    for ys in ("scaled", "plain"):
        c = replace(cfg, y_step=ys)
        s0 = place(init_state(c)._replace(step=jnp.asarray(start, jnp.int32)), devices)
        s1, ok, _ = chunk_fn(c, 5, devices)(s0, jnp.asarray(0, jnp.int32), noise_values(c))
        assert bool(np.all(ok)) and int(s1.step) == start + 5
        moved[ys] = [np.asarray(a - z, np.float64) for a, z in zip(s1.params, s0.params)]
        assert config_dict(c).get("y_step", "plain") == ys
    c = float(y_moment(cfg, noise_values(cfg)))
    assert c == pytest.approx(cfg.d + 4 / 3)  # uniform:2: E σ² = 4/3
    for name, sc, pl in zip(cfg.kind.params_type._fields, moved["scaled"], moved["plain"]):
        mask = np.zeros(pl.shape, bool)
        if name == "qy":
            mask[...] = True
        elif name == "Q":
            mask[..., cfg.d, cfg.d] = True
        assert np.abs(pl).max() > 0
        if mask.any():  # q_y moves (the last layer's: the query's y is 0 before it)
            assert np.abs(pl[mask]).max() > 0
        np.testing.assert_allclose(sc[mask] * c, pl[mask], rtol=1e-5)
        np.testing.assert_array_equal(sc[~mask], pl[~mask])
    assert "y_step" not in config_dict(TrainConfig(model="gdpp", **TINY))


def test_a_rate_far_too_large_is_damped_by_step_rejection_without_rollback() -> None:
    """With the default ``trust``, the rate 1e3 (DIAG diverges at it without step rejection:
    ``test_loop.py``) never reaches the guard: its steps are rejected (each halving the rate) until
    they stop raising the batch's median loss, and nothing is rolled back.  :data:`GDPP2`'s
    program."""
    cfg = replace(GDPP2, lr=1e3, warmup=0)
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
    """Five steps (one chunk of :data:`GDPP2`'s program): rejected (``lr`` 1e4, still far too large
    at 1/16 of it), parameters and Adam's moments stay as they were, ``damp`` halves at each and
    ``rejected`` counts them; accepted (``lr`` 1e-3), the steps are taken and ``damp`` stays at its
    cap 1."""
    cfg = replace(GDPP2, lr=lr, warmup=0, steps=5)
    start, res = init_state(cfg), train(cfg)
    moved = [
        not np.array_equal(a, b)
        for a, b in zip(
            leaves(start.params) + leaves(start.opt_state),
            leaves(res.state.params) + leaves(res.state.opt_state),
        )
    ]
    assert all(moved) if taken else not any(moved)
    assert np.asarray(res.state.damp).tolist() == ([1.0, 1.0] if taken else [0.5**5, 0.5**5])
    assert np.asarray(res.state.rejected).tolist() == ([0, 0] if taken else [5, 5])
    assert res.rollbacks == [] and res.skipped == 0


@pytest.mark.parametrize(
    "before,after,kept",
    [
        (0.10, 0.20, True),  # doubled: at trust 2
        (0.10, 0.21, False),  # more than doubled, above the floor 0.15 (d = 3)
        (0.01, 0.15, True),  # fifteen times, but at the floor
        (0.01, 0.16, False),  # ... and above it
        (1.00, 0.50, True),
        (1.00, np.nan, False),
        (1.00, np.inf, False),
        (np.inf, 1.00, True),  # a finite median after a non-finite one
        (np.inf, np.inf, False),  # within trust × inf, but not finite
    ],
)
def test_accepts_keeps_a_step_within_trust_or_below_the_floor(
    before: float, after: float, kept: bool
) -> None:
    """Step rejection's rule on the two medians, at ``trust = 2`` and ``d = 3`` (floor
    ``TRUST_FLOOR × d/2 = 0.15``); the chunk applies it (the slow test below, and
    ``test_a_rejected_step_leaves_the_state_and_halves_the_rate``)."""
    assert bool(accepts(jnp.asarray(before), jnp.asarray(after), 2.0, 3)) is kept


# A training chunk compiled with the floor patched: about 10 s.
@pytest.mark.slow
def test_a_step_that_stays_below_the_floor_is_kept(monkeypatch) -> None:
    """``TRUST_FLOOR``: the same steps (``lr`` 10, which multiplies the median loss many times over)
    are rejected with the default floor (the rate halved), and kept when the floor is above the loss
    they reach.  The default floor's run is :data:`GDPP2`'s program, compiled once."""
    import numerics.train.step as tr

    cfg = replace(GDPP2, lr=10.0, warmup=0, steps=5)
    res = train(cfg)
    verdicts = [(np.asarray(res.state.rejected), np.asarray(res.state.damp))]
    monkeypatch.setattr(tr, "TRUST_FLOOR", 1e30)
    CHUNK_CACHE.clear()  # the floor is read as the chunk is traced
    try:
        res = train(cfg)
    finally:
        CHUNK_CACHE.clear()
    verdicts.append((np.asarray(res.state.rejected), np.asarray(res.state.damp)))
    (rej, damp), (rej_high, damp_high) = verdicts
    assert np.all(rej >= 1) and np.all(damp < 1), verdicts
    assert rej_high.tolist() == [0, 0] and damp_high.tolist() == [1.0, 1.0], verdicts


def test_a_step_on_a_batch_of_nan_targets_is_not_taken() -> None:
    """:func:`seed_step`'s guard on its own, one seed of :data:`TINY` DIAG without step rejection:
    with every target NaN, or every target 10³ times too large, the parameters and Adam's state
    stay as they were, the step is not ``good``, its median counts as exploded, its loss is reported
    as NaN and no rejection is counted; on the same batch with its targets the step is taken.  The
    chunk that skips such a batch and goes on is the slow test below."""
    cfg = TrainConfig(model="diag", seeds=2, trust=0.0, **TINY)
    state = init_state(cfg)
    params, opt_state = (jax.tree.map(lambda a: a[0], t) for t in (state.params, state.opt_state))
    values = noise_values(cfg)
    clean = draw(cfg, data_key(0, 1, 0), cfg.batch, None, values)

    @jax.jit
    def step(b):  # noqa: ANN001, ANN202
        lr = jnp.asarray(1e-3, state.rho.dtype)
        return seed_step(
            cfg, params, opt_state, state.rho[0], state.damp[0], lr, b, False, values, False
        )

    cases = {
        "clean": clean,
        "nan": clean._replace(y=jnp.full_like(clean.y, jnp.nan)),
        # a finite loss, but the batch's median far above explode × d/2 (1049 against 150)
        "exploded": clean._replace(y=clean.y * 1e3),
    }
    for name, b in cases.items():
        new, new_opt, damp, rejected, good, boom, loss, _ = step(b)
        taken = name == "clean"
        assert bool(good) is taken and bool(boom) is not taken and not bool(rejected), name
        assert bool(jnp.isfinite(loss)) is taken and float(damp) == 1.0, name  # NaN where not good
        same = [np.array_equal(x, y) for x, y in zip(leaves(params), leaves(new))]
        same += [np.array_equal(x, y) for x, y in zip(leaves(opt_state), leaves(new_opt))]
        assert all(same) if not taken else not any(same[: len(leaves(params))]), (name, same)


# A training chunk compiled with the poisoned draw: about 15 s.
@pytest.mark.slow
def test_one_bad_batch_is_skipped_in_step(monkeypatch) -> None:
    """A single poisoned training batch (y = NaN at step 7) is skipped by the in-step guard: no
    rollback, one skipped step per seed, finite parameters, and the other steps' updates are
    kept."""
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
        # no step rejection: it, too, would refuse the NaN step; the in-step guard alone is checked
        cfg = TrainConfig(model="diag", seeds=2, trust=0.0, **TINY)
        res = train(cfg)
    finally:
        CHUNK_CACHE.clear()
    assert res.rollbacks == [] and res.skipped == cfg.seeds, (res.rollbacks, res.skipped)
    assert all(np.all(np.isfinite(x)) for x in leaves(res.state.params))
    assert np.all(np.isfinite(np.asarray(res.curve)))
    monkeypatch.undo()
    # unpoisoned data (test_loop.py's UNTRUSTED program): the skipped step changes the result
    clean = train(cfg)
    assert not np.array_equal(leaves(res.state.params)[0], leaves(clean.state.params)[0])


def test_one_program_serves_every_noise_level_and_start(tmp_path):
    """The compiled chunk is keyed on what it computes: noise levels, seed and start are its
    arguments or its input state, so cells of one model and depth share it; so is the schedule
    (steps, lr: ``test_schedule.py``), and the chunk's length is keyed on."""
    from numerics.model_file import save_model

    P = np.tile(0.01 * np.eye(5), (2, 1, 1, 1))  # a DIAG start: two layers, d = 4
    save_model(tmp_path / "start.npz", P, P)
    base = TrainConfig(model="diag", layers=2, d=4, n=8, noise="uniform:1", steps=20, batch=16)
    same = [
        replace(base, noise="uniform:3", seed=7),
        replace(base, warm_start=str(tmp_path / "start.npz")),
        replace(base, init_scale=0.01),
    ]
    f = chunk_fn(base, 5, tuple(jax.devices()[:1]))
    assert all(chunk_fn(c, 5, tuple(jax.devices()[:1])).program is f.program for c in same)
    assert chunk_fn(replace(base, steps=40), 5, tuple(jax.devices()[:1])).program is f.program
    assert chunk_fn(base, 4, tuple(jax.devices()[:1])).program is not f.program
