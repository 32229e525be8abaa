"""The fast Gram-form pass that training differentiates: the derived Gram map, the literal token pass and autodiff
of it, and the flat draw it is fed."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy as sp

from numerics import models
from numerics.models.forward import predict_fast
from tests.strategies import draw_params, toy_batch


def _model_and_data(kind: str, heads: int, seed: int, L: int, d: int, n: int, batch: int):
    """A ``kind`` model with entries ``N(0, 0.03²)`` and a float64 batch, both drawn with NumPy: no
    ``jax.random`` program to compile per shape (what the passes compute does not depend on how the
    numbers were drawn).  At four layers, seven tokens and three inputs its predictions and gradients
    are of order 0.01 to 10³ for every kind: each layer's update is cubic in the context's Gram matrix,
    and entries ten times larger give predictions of 10²⁰ to 10⁴⁶, where a tolerance relative to the
    largest gradient entry checks only the few largest."""
    params = jax.tree_util.tree_map(lambda a: 0.03 * a, draw_params(kind, seed, L, d, heads))
    return params, toy_batch(seed + 1, n=n, d=d, batch=batch)


# --- the fast pass is exact ----------------------------------------------------------------------
def test_factored_gram_map_is_the_derived_rule() -> None:
    """(I+G) E (I+G)^T expands to the bridge's derived Gram map E + E G^T + G E + G E G^T."""
    from lintf_theory import derive_gram_update
    from lintf_theory.symbols import E_sym, G_sym

    eye = sp.Identity(E_sym.shape[0])
    factored = (eye + G_sym) * E_sym * (eye + G_sym).T
    residual = sp.expand(factored - derive_gram_update())
    assert sp.simplify(residual.doit()) == sp.ZeroMatrix(*E_sym.shape) or residual.doit() == 0


@pytest.mark.parametrize("kind,heads", [("full", 2), ("diag", 2), ("gdpp", 1)])
def test_fast_pass_and_its_gradient_match_the_literal_token_pass_and_autodiff_of_it(
    kind: str, heads: int
) -> None:
    """The fast pass predicts what the literal token pass predicts, and the hand-written reverse
    rule of the Gram map (fastforward.sandwich) gives autodiff's gradient of the token pass: one
    model and batch for both checks."""
    d, n, L = 3, 7, 4
    params, b = _model_and_data(kind, heads, 1, L, d, n, 16)

    def ref_loss(p):
        P, Q = models.universal(p, d)
        pred = -models.forward_tokens(P, Q, b.X, b.y, b.x_query)[-1, :, -1, -1]
        return jnp.mean((pred - b.y_query) ** 2), pred

    # the references (the literal token pass and autodiff of it) as one program, not op by op
    (_, ref), want = jax.jit(jax.value_and_grad(ref_loss, has_aux=True))(params)

    # the fast pass and its gradient as training runs them: under jit, here in one program; the
    # prediction goes through the pass itself (the Gram map's primal), the gradient through its
    # hand-written reverse rule
    def fast(p):
        loss = lambda q: jnp.mean((predict_fast(q, b.X, b.y, b.x_query) - b.y_query) ** 2)
        return predict_fast(p, b.X, b.y, b.x_query), jax.grad(loss)(p)

    got, grads = jax.jit(fast)(params)
    np.testing.assert_allclose(
        np.asarray(got), np.asarray(ref), rtol=1e-10, atol=1e-10 * float(jnp.max(jnp.abs(ref)))
    )
    for g, w in zip(jax.tree_util.tree_leaves(grads), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(
            np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-9 * float(jnp.max(jnp.abs(w)))
        )


def test_full_g_on_the_upper_triangle_is_p_e_q_for_symmetric_e() -> None:
    """kinds.full_g (one GEMM on E's upper triangle) against Σ_k P_k E Q_k written out; the
    pairing of (c,e) with (e,c) needs E symmetric, so a non-symmetric E gives something else."""
    from numerics.models.kinds import full_g

    rng = np.random.default_rng(6)  # NumPy draws and a NumPy reference: only full_g runs in JAX
    P, Q, A = (
        rng.standard_normal((2, 5, 5)),
        rng.standard_normal((2, 5, 5)),
        rng.standard_normal((4, 5, 5)),
    )
    E = A @ np.swapaxes(A, -1, -2)
    want = sum(P[h] @ E @ Q[h] for h in range(2))
    g = full_g(jnp.asarray(P), jnp.asarray(Q))
    np.testing.assert_allclose(np.asarray(g(jnp.asarray(E))), want, rtol=1e-12, atol=1e-12)
    assert not np.allclose(np.asarray(g(jnp.asarray(A))), sum(P[h] @ A @ Q[h] for h in range(2)))


def test_flat_normal_draw_equals_shaped_draw() -> None:
    """data.normal draws flat for speed; the numbers must be those of jax.random.normal(key, shape)."""
    from numerics.data import normal

    # both draws in both precisions as one program (four programs op by op); data.normal runs
    # under jit, inside the jitted sampler
    draws = jax.jit(
        lambda k: [
            (normal(k, (8, 6, 3), dt), jax.random.normal(k, (8, 6, 3), dt))
            for dt in (jnp.float32, jnp.float64)
        ]
    )(jax.random.PRNGKey(5))
    for (flat, shaped), dt in zip(draws, (jnp.float32, jnp.float64)):
        assert flat.dtype == shaped.dtype == dt
        np.testing.assert_array_equal(np.asarray(flat), np.asarray(shaped))


def _literal_prediction(
    P: np.ndarray, Q: np.ndarray, X: np.ndarray, y: np.ndarray, xq: np.ndarray
) -> np.ndarray:
    """The layer rule of docs/model.md as a NumPy loop over sequences, layers, heads and tokens:
    ``e_i ← e_i + Σ_h P_h (Σ_{j≤n} e_j e_jᵀ) Q_h e_i`` for every token (query last, ``y = 0``),
    ``ŷ = −y_{n+1}^L``."""
    out = []
    for b in range(X.shape[0]):
        Z = np.concatenate([np.c_[X[b], y[b]], np.r_[xq[b], 0.0][None]])
        n = X.shape[1]
        for l in range(P.shape[0]):
            E = sum(np.outer(Z[j], Z[j]) for j in range(n))
            G = sum(P[l, h] @ E @ Q[l, h] for h in range(P.shape[1]))
            Z = np.stack([Z[i] + G @ Z[i] for i in range(n + 1)])
        out.append(-Z[n, -1])
    return np.array(out)


@pytest.mark.parametrize("kind", ["full", "diag", "gdpp"])
def test_the_plain_and_the_fast_pass_predict_what_a_literal_numpy_loop_predicts(kind: str) -> None:
    """``predict_plain`` and ``predict_fast`` of a random model (its native parameters) against the
    layer rule written as a NumPy loop on the universal ``P, Q``, in float64."""
    d, n, B = 3, 5, 4
    with jax.enable_x64(True):
        params = jax.tree_util.tree_map(lambda a: 0.3 * a, draw_params(kind, 8, 2, d))
        rng = np.random.default_rng(9)
        X, y, xq = (rng.standard_normal(s) for s in ((B, n, d), (B, n), (B, d)))
        P, Q = (np.asarray(a) for a in models.universal(params, d))
        want = _literal_prediction(P, Q, X, y, xq)
        args = (jnp.asarray(X), jnp.asarray(y), jnp.asarray(xq))
        # both passes as one program: the plain pass jitted, as the benchmark runs it, and the
        # fast pass as training runs it
        plain, fast = (
            np.asarray(a)
            for a in jax.jit(lambda p, *a: (models.predict_plain(p, *a), predict_fast(p, *a)))(
                params, *args
            )
        )
    assert np.max(np.abs(want)) > 1e-3  # a model that predicts something
    np.testing.assert_allclose(plain, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fast, want, rtol=1e-10, atol=1e-12)
