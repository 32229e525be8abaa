"""The training objective: the overflow guard drops a sequence with a zero gradient, and the Huber loss is the squared
loss with targets moved within δ."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics import models
from numerics.data import Batch
from numerics.models.forward import predict_fast
from numerics.train.config import TrainConfig
from numerics.train.objective import loss_fn, static_config
from tests.strategies.training import TINY


@partial(jax.jit, static_argnames="delta")
def _loss_and_grad(params, b, delta: float = 0.0):  # noqa: ANN001, ANN202
    """``jax.value_and_grad(loss_fn, has_aux=True)`` compiled, as the training step runs it: one
    program per batch shape and ``δ`` (``loss_sums`` branches on ``δ``), where op by op each check
    dispatched a few thousand small programs."""
    return jax.value_and_grad(loss_fn, has_aux=True)(params, b, delta=delta)


#: the guarded and the plain fast pass, compiled
_predict = jax.jit(predict_fast, static_argnames="guard")


def _batch(seed: int, size: int, dtype: type, smax: float) -> Batch:
    """``size`` sequences of ``n = 6``, ``d = 3`` as :func:`numerics.data.sample` draws them at
    ``uniform:smax`` (``w, x ~ N(0, I)``, ``y = ⟨w, x⟩ + σ ε``), drawn with NumPy: what is checked
    here holds on any batch, and no sampler is compiled."""
    rng = np.random.default_rng(seed)
    X, w, xq = (rng.standard_normal(s) for s in ((size, 6, 3), (size, 3), (size, 3)))
    sigma = rng.uniform(0, smax, size)
    y = np.einsum("bnd,bd->bn", X, w) + sigma[:, None] * rng.standard_normal((size, 6))
    parts = (X, y, xq, np.einsum("bd,bd->b", xq, w), sigma, w)
    return Batch(*(np.asarray(a, dtype) for a in parts))


def _params(kind: str, seed: int, layers: int, scale: float, dtype: type) -> models.Params:
    """Parameters of ``kind`` (``d = 3``, one head) with the shapes of :func:`numerics.models.init`
    and entries ``scale · N(0, 1)``, drawn with NumPy (no initialiser compiled)."""
    shapes = jax.eval_shape(
        lambda: models.init(kind, jax.random.PRNGKey(0), layers, 3, 1, scale, dtype)
    )
    rng = np.random.default_rng(seed)
    return jax.tree_util.tree_map(
        lambda a: np.asarray(scale * rng.standard_normal(a.shape), a.dtype), shapes
    )


# FULL's twin runs with the slow tests: its pass differs from DIAG's only in G (checked in tests/models/test_forward.py),
# and op by op it takes 15 s here
@pytest.mark.parametrize("kind", [pytest.param("full", marks=pytest.mark.slow), "diag"])
def test_guard_drops_an_overflowing_sequence_with_zero_gradient(kind: str) -> None:
    """A sequence whose pass overflows float32 is dead: the training loss and gradient equal those of
    the batch without it, and stay finite (unguarded, one such sequence makes the gradient NaN)."""
    b = _batch(3, 16, np.float32, 1.0)
    X = b.X.copy()
    X[0] *= 1e5  # E^0 ~ 1e10·|E|: past max_float^(1/4) = 1.4e9
    bad = b._replace(X=X)
    clean = Batch(*(a[1:] for a in b))
    params = _params(kind, 0, 3, 0.05, np.float32)
    (l_bad, med_bad), g_bad = _loss_and_grad(params, bad)
    (l_ok, _), g_ok = _loss_and_grad(params, clean)
    yhat, alive = _predict(params, bad.X, bad.y, bad.x_query, guard=True)
    alive = np.asarray(alive)
    assert not alive[0] and alive[1:].all()
    assert not np.isfinite(
        float(_predict(params, bad.X, bad.y, bad.x_query)[0])
    )  # it does overflow
    np.testing.assert_allclose(float(l_bad), float(l_ok), rtol=1e-6)
    for a, c in zip(jax.tree_util.tree_leaves(g_bad), jax.tree_util.tree_leaves(g_ok)):
        assert np.all(np.isfinite(np.asarray(a)))
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "kind", [pytest.param("full", marks=pytest.mark.slow), "diag"]
)  # FULL: as above
def test_huber_gradient_is_the_squared_loss_gradient_with_targets_moved_within_delta(
    kind: str,
) -> None:
    """Two routes to the training gradient: autodiff of the Huber loss, and autodiff of the plain squared
    loss after moving each target to within ``δ`` of the prediction (``∂huber/∂r = clip(r, −δ, δ)``).
    A large ``δ`` gives back the plain squared loss, value and gradient."""
    b = _batch(5, 32, np.float64, 1.0)
    params = _params(kind, 1, 2, 0.3, np.float64)
    yhat = np.asarray(_predict(params, b.X, b.y, b.x_query))
    delta = float(np.quantile(np.abs(yhat - b.y_query), 0.7))  # about a third of them beyond δ
    moved = b._replace(y_query=yhat - np.clip(yhat - b.y_query, -delta, delta))
    g_huber = _loss_and_grad(params, b, delta=delta)[1]
    g_moved = jax.jit(jax.grad(_sq_at))(params, moved)
    for a, c in zip(jax.tree_util.tree_leaves(g_huber), jax.tree_util.tree_leaves(g_moved)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-9, atol=1e-12)
    assert not np.allclose(
        np.asarray(jax.tree_util.tree_leaves(g_huber)[0]),
        np.asarray(jax.tree_util.tree_leaves(_loss_and_grad(params, b)[1])[0]),
    )
    big = 10 * float(np.max(np.abs(yhat - b.y_query)))
    (l_big, _), g_big = _loss_and_grad(params, b, delta=big)
    (l_sq, _), g_sq = _loss_and_grad(params, b)
    assert float(l_big) == float(l_sq)
    for a, c in zip(jax.tree_util.tree_leaves(g_big), jax.tree_util.tree_leaves(g_sq)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))


def _sq_at(params, b):
    """``½ mean (ŷ_θ − y')²`` with the moved targets ``y'`` held fixed (their own dependence on θ cut)."""
    yhat = predict_fast(params, b.X, b.y, b.x_query)
    return 0.5 * jnp.mean((yhat - jax.lax.stop_gradient(b.y_query)) ** 2)


def test_huber_keeps_the_step_finite_when_one_residual_overflows_its_square() -> None:
    """One alive sequence with a residual of 1e20 (its square overflows float32): the squared loss (and its
    gradient's norm) is infinite, so the in-step guard would skip the step; the Huber loss and its gradient
    stay finite."""
    b = _batch(6, 16, np.float32, 1.0)
    b.y_query[0] = 1e20
    # the shapes of the guard check's DIAG, batch and parameters: its squared loss's program
    params = _params("diag", 2, 3, 0.05, np.float32)
    (l_sq, _), g_sq = _loss_and_grad(params, b)
    (l_h, _), g_h = _loss_and_grad(params, b, delta=30 * 3**0.5)
    import optax

    # the step's finiteness check: loss and gradient norm (the norm squares the entries)
    assert not (np.isfinite(float(l_sq)) and np.isfinite(float(optax.tree.norm(g_sq))))
    assert np.isfinite(float(l_h)) and np.isfinite(float(optax.tree.norm(g_h)))


@pytest.mark.parametrize("kind,phase,micro", [("diag", False, 4), ("full", True, 8)])
def test_a_batch_in_micro_batches_has_the_whole_batchs_loss_statistics_and_gradient(
    kind: str, phase: bool, micro: int
) -> None:
    """The step's loss, median, dropped count and gradient from parts of ``micro`` sequences (their sums added,
    divided once by the alive count) are the whole batch's: in float64 to round-off, with a dead sequence in a part,
    the Huber loss clipping some, and FULL's DIAG phase."""
    from numerics.train import objective

    loss_and_grad = jax.jit(objective.loss_and_grad, static_argnums=(2, 4, 6))
    b = _batch(7, 16, np.float64, 2.0)
    b.X[5] *= 1e40  # past max_float^(1/4) in float64: dead
    params = _params(kind, 2, 1, 0.05, np.float64)  # one layer: the parts' sums hold at any depth
    yhat, alive = map(np.asarray, _predict(params, b.X, b.y, b.x_query, guard=True))
    assert not alive[5] and alive.sum() == 15
    delta = float(np.quantile(np.abs(yhat - b.y_query)[alive], 0.8))
    for final in (False, True):
        final = jnp.asarray(final)  # traced, as in the training step
        (l_whole, a_whole), g_whole = loss_and_grad(params, b, "fast", phase, delta, final, 0)
        (l_part, a_part), g_part = loss_and_grad(params, b, "fast", phase, delta, final, micro)
        np.testing.assert_allclose(float(l_part), float(l_whole), rtol=1e-13)
        np.testing.assert_allclose(float(a_part.median), float(a_whole.median), rtol=1e-13)
        assert int(a_part.dropped) == int(a_whole.dropped)
        assert int(a_whole.dropped) == (
            1 if bool(final) else 1 + 3
        )  # the dead one, and the 3 beyond δ unless final
        for a, c in zip(jax.tree_util.tree_leaves(g_part), jax.tree_util.tree_leaves(g_whole)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-11, atol=1e-14)


def test_the_static_config_keeps_only_whether_there_is_a_diag_phase() -> None:
    full = TrainConfig(model="full", **TINY)  # by default without a DIAG phase
    phased = replace(full, diag_steps=13)
    assert static_config(phased) == static_config(
        replace(full, steps=80, diag_steps=3, lr=1e-3, warmup=5)
    )
    assert static_config(full) != static_config(phased)
    assert static_config(full).phase1_steps == 0 and static_config(phased).phase1_steps > 0
