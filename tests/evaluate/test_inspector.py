"""Implicit-weight inspector (Theorem 4.1, Lemma 4.3): derived recursion vs autodiff vs literal
tokens.

The comparisons run in NumPy on the routes' outputs: an operation on JAX arrays compiles once per
shape, and the checks here meet many shapes."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from numerics import models
from numerics.evaluate import inspector
from tests.strategies import RTOL64, scaled_model, toy_batch


def max_rel_err(a, b) -> float:  # noqa: ANN001
    """:func:`tests.strategies.max_rel_err` in NumPy: ``max |a − b| / max(max |b|, 1e-30)``."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


# (kind, L, H): FULL and DIAG up to 7 layers; FULL/DIAG share universal shapes, so jit caches are reused.
CASES = [
    ("full", 1, 1),
    ("full", 3, 2),
    ("full", 7, 1),
    ("diag", 1, 1),
    ("diag", 3, 2),
    ("diag", 7, 1),
]


@pytest.mark.parametrize(("kind", "layers", "heads"), CASES)
def test_recursion_equals_autodiff_every_layer(kind, layers, heads):
    """``w^l`` from the bridge's derived recursion equals ``∂ŷ^l/∂x_t`` by jax.jacrev of models.predict."""
    data = toy_batch(10 + layers)
    P, Q = scaled_model(kind, 100 + layers, layers, heads, data)
    w = np.asarray(inspector.implicit_states(P, Q, data.X, data.y).w)
    w_ad = inspector.autodiff_weights(P, Q, data.X, data.y, data.x_query)
    assert w.shape == w_ad.shape == (layers + 1, *data.x_query.shape)
    assert max_rel_err(w, w_ad) < RTOL64
    assert np.min(np.max(np.abs(w[1:]), axis=(-2, -1))) > 1e-3  # every layer non-trivial
    # the read-out <w^l, x_t> is the model's prediction after layer l
    reads = models.predict(P, Q, data.X, data.y, data.x_query, all_layers=True)
    assert max_rel_err(np.einsum("lbd,bd->lb", w, np.asarray(data.x_query)), reads) < RTOL64


def test_numpy_backend_equals_jax_backend():
    data = toy_batch(20)
    P, Q = scaled_model("full", 21, 3, 2, data)
    a = inspector.implicit_states(P, Q, data.X, data.y, backend="numpy")
    b = inspector.implicit_states(P, Q, data.X, data.y, backend="jax")
    for f in inspector.States._fields:
        assert max_rel_err(getattr(a, f), getattr(b, f)) < RTOL64, f
    with pytest.raises(ValueError, match="backend must be 'jax' or 'numpy'"):
        inspector.implicit_states(P, Q, data.X, data.y, backend="torch")


@pytest.mark.parametrize("kind", ["full", "diag"])
def test_tokens_are_transfer_matrix_times_original_tokens(kind):
    r"""Theorem 4.1: ``e_i^l = T^l e_i`` with ``T^l = [[M^l, u^l], [−w^{lᵀ}, a^l]]`` for every context
    token and for the query, ``T^l`` from the bridge, ``e_i^l`` from the literal forward pass."""
    data = toy_batch(30)
    P, Q = scaled_model(kind, 31, 7, 1, data)
    Z = np.asarray(models.forward_tokens(P, Q, data.X, data.y, data.x_query))  # (L+1, B, n+1, d+1)
    T = np.asarray(inspector.transfer_matrices(inspector.implicit_states(P, Q, data.X, data.y)))
    TZ = np.einsum("lbij,bkj->lbki", T, Z[0])
    assert max_rel_err(TZ[:, :, :-1], Z[:, :, :-1]) < RTOL64  # context tokens
    assert max_rel_err(TZ[:, :, -1], Z[:, :, -1]) < RTOL64  # query
    assert np.max(np.abs(Z[-1] - Z[0])) > 0.1  # the layers did move the tokens


def test_one_layer_gd_model_has_w1_equal_eta_alpha():
    r"""One layer with ``P = p e_y e_yᵀ``, ``Q = q diag(I_d, 0)`` gives ``c = p q α`` so ``w^1 = −p q α``:
    one GD step from ``0`` with step ``η = −p q`` (an independent, hand-derived route)."""
    data = toy_batch(40)
    d = data.X.shape[-1]
    p, q = 0.5, -0.2
    P, Q = np.zeros((1, 1, d + 1, d + 1)), np.zeros((1, 1, d + 1, d + 1))
    P[0, 0, d, d], Q[0, 0, :d, :d] = p, q * np.eye(d)
    alpha = np.einsum("bn,bni->bi", np.asarray(data.y), np.asarray(data.X))
    st = inspector.implicit_states(jnp.asarray(P), jnp.asarray(Q), data.X, data.y)
    assert max_rel_err(np.asarray(st.w)[1], -p * q * alpha) < RTOL64


def test_ols_and_ridge_reference_solutions():
    data = toy_batch(50)
    X, y, sigma = (np.asarray(a) for a in (data.X, data.y, data.sigma))
    w_ols = np.asarray(inspector.ols(data.X, data.y))
    resid = y - np.einsum("bnd,bd->bn", X, w_ols)
    assert np.max(np.abs(np.einsum("bn,bnd->bd", resid, X))) < 1e-12  # Σ_i r_i x_i = 0
    w_r = np.asarray(inspector.ridge(data.X, data.y, data.sigma))
    for b in range(X.shape[0]):  # ridge = least squares on [X; σ I], [y; 0]
        d = X.shape[-1]
        A = np.vstack([X[b], sigma[b] * np.eye(d)])
        rhs = np.concatenate([y[b], np.zeros(d)])
        np.testing.assert_allclose(
            w_r[b], np.linalg.lstsq(A, rhs, rcond=None)[0], rtol=1e-10, atol=1e-12
        )
    assert np.max(np.abs(w_r - w_ols)) > 1e-3  # σ > 0 does shrink


def test_compare_cosine_and_distance():
    w = jnp.array([[1.0, 2.0, -2.0], [0.0, 0.0, 0.0]])
    ref = np.array([[1.0, 2.0, -2.0], [3.0, 0.0, 4.0]])
    cos, dist = inspector.compare(w, jnp.asarray(ref))
    np.testing.assert_allclose(np.asarray(cos), [1.0, 0.0])
    np.testing.assert_allclose(np.asarray(dist), [0.0, 1.0])
    cos, dist = inspector.compare(jnp.asarray(-2 * ref), jnp.asarray(ref))
    np.testing.assert_allclose(np.asarray(cos), [-1.0, -1.0])
    np.testing.assert_allclose(np.asarray(dist), [3.0, 3.0])


def test_inspect_summary_base_case_and_errors():
    data = toy_batch(60)
    P, Q = scaled_model("diag", 61, 3, 2, data)
    ins = inspector.inspect(P, Q, data.X, data.y, data.x_query, data.sigma, data.y_query)
    assert ins.max_rel_diff < RTOL64
    rows = inspector.summary(ins)
    assert [r["layer"] for r in rows] == [0, 1, 2, 3]
    base = rows[0]  # M^0 = I, u^0 = 0, a^0 = 1, w^0 = 0 (Theorem 4.1 base case)
    assert (base["w_norm"], base["u_norm"], base["M_minus_I"], base["a"]) == (0.0, 0.0, 0.0, 1.0)
    assert base["dist_ols"] == 1.0 and base["dist_ridge"] == 1.0
    np.testing.assert_allclose(
        base["loss"], 0.5 * np.mean(np.asarray(data.y_query) ** 2), rtol=1e-12
    )
    with pytest.raises(ValueError, match="sigma must have shape \\(B,\\)"):
        inspector.inspect(P, Q, data.X, data.y, data.x_query, np.asarray(data.sigma)[:-1])
    few = toy_batch(61, n=2)  # n < d: no OLS reference
    # one layer, one head: the n < d shapes compile the recursion and autodiff programs anew, and a
    # single layer is the cheapest model that has a row past the base case
    ins = inspector.inspect(*scaled_model("diag", 62, 1, 1, few), few.X, few.y, few.x_query)
    assert ins.w_ols is None and "dist_ols" not in inspector.summary(ins)[1]


def _numpy_cos_dist(w: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """Batch means of the cosine (0 for a zero ``w``) and relative distance, by a NumPy loop."""
    cos, dist = [], []
    for wb, rb in zip(w, ref):
        nw, nr = np.linalg.norm(wb), np.linalg.norm(rb)
        cos.append(float(wb @ rb) / (nw * nr) if nw > 0 else 0.0)
        dist.append(np.linalg.norm(wb - rb) / nr)
    return float(np.mean(cos)), float(np.mean(dist))


def test_summary_compares_each_layer_with_least_squares_and_with_ridge():
    """``cos_ols``/``dist_ols`` against ``np.linalg.lstsq`` and ``cos_ridge``/``dist_ridge`` against the normal
    equations with ``σ² I`` (NumPy, per sequence), on a ``σ`` large enough that the two references differ."""
    data = toy_batch(62)
    P, Q = scaled_model("full", 63, 3, 2, data)  # the shapes of CASES' (3, 2): compiled once
    sigma = 1.0 + 4.0 * np.asarray(data.sigma)
    rows = inspector.summary(inspector.inspect(P, Q, data.X, data.y, data.x_query, sigma))
    X, y, s = (np.asarray(a, np.float64) for a in (data.X, data.y, sigma))
    d = X.shape[-1]
    ols = np.stack([np.linalg.lstsq(Xb, yb, rcond=None)[0] for Xb, yb in zip(X, y)])
    ridge = np.stack(
        [np.linalg.solve(Xb.T @ Xb + sb**2 * np.eye(d), Xb.T @ yb) for Xb, yb, sb in zip(X, y, s)]
    )
    w = np.asarray(inspector.implicit_states(P, Q, data.X, data.y, "numpy").w)
    apart = 0.0
    for l, row in enumerate(rows):
        for name, ref in (("ols", ols), ("ridge", ridge)):
            cos, dist = _numpy_cos_dist(w[l], ref)
            assert row[f"cos_{name}"] == pytest.approx(cos, rel=1e-9, abs=1e-12), (l, name)
            assert row[f"dist_{name}"] == pytest.approx(dist, rel=1e-9), (l, name)
        apart = max(apart, abs(row["dist_ols"] - row["dist_ridge"]))
    assert apart > 0.05  # a summary against the wrong reference could not pass
