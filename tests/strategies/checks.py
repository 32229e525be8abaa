r"""Shared checks of one model on one batch, run on random, constructed and trained models alike.

Each check compares the model's literal forward pass (:func:`numerics.models.forward_tokens`) or its
fast Gram-form pass (:func:`numerics.models.predict`) with a route that does not go through it: the
rules derived in :mod:`lintf_theory` (exported through the bridge), the public checks of
:mod:`numerics.testing`, or, for GD++, the layer rule written on its two native parameters.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lintf_theory import alpha_l_rule, diagonal_rule, layer_omegas, lemma44_rule, run_recursion
from numerics import models, testing
from numerics.data import Batch
from numerics.evaluate import inspector
from proofs import state_matrix

# Tolerance of "agree to float64 precision" for two routes through <= 7 layers of O(1) products:
# rounding grows like L·(d+1)·n·eps ≈ 7·4·6·2.2e-16 ≈ 4e-14 relative to the largest entry; 1e-12
# leaves margin, while any formula error changes values by O(g) = O(0.1).
RTOL64 = 1e-12
# float32 against float64 for the same model and data: eps32 ≈ 1.2e-7 times the same growth factor.
RTOL32 = 1e-4


def max_rel_err(a: jax.Array, b: jax.Array) -> float:
    """``max |a − b| / max(max |b|, 1e-30)``: error relative to the largest entry of the reference ``b``."""
    a, b = jnp.asarray(a, jnp.float64), jnp.asarray(b, jnp.float64)
    return float(jnp.max(jnp.abs(a - b)) / jnp.maximum(jnp.max(jnp.abs(b)), 1e-30))


# Theorem 4.1 through numerics.testing, on both of lintf's forward passes --------------------------
def lintf_forwards(P: Any, Q: Any) -> dict[str, Any]:
    """``models.forward_tokens`` (every layer's tokens) and ``models.predict`` as ``forward(X, y, x_query)``."""
    return {
        "tokens": lambda X, y, q: models.forward_tokens(P, Q, X, y, q),
        "predict": lambda X, y, q: models.predict(P, Q, X, y, q),
    }


def _arrays(P: Any, Q: Any, b: Batch) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(v, np.float64) for v in (P, Q, b.X, b.y, b.x_query))


def assert_token_form(P: Any, Q: Any, b: Batch) -> None:
    """Every token at every layer equals ``T^l e_i`` with ``T^l`` from the derived recursion."""
    testing.check_token_form(lintf_forwards(P, Q)["tokens"], *_arrays(P, Q, b), rtol=RTOL64)


def assert_query_isolation(P: Any, Q: Any, b: Batch, seed: int, s: float, t: float) -> None:
    """Context tokens ignore ``x_t``; ``ŷ`` is linear in ``x_t``, equals ``⟨w^L, x_t⟩``, and autodiff gives ``w^L``."""
    for forward in lintf_forwards(P, Q).values():
        testing.check_query_isolation(forward, *_arrays(P, Q, b), rtol=RTOL64, seed=seed, s=s, t=t)
        testing.check_implicit_weight(forward, *_arrays(P, Q, b), rtol=RTOL64, differentiate="jax")
    w = inspector.implicit_states(
        P, Q, b.X, b.y, backend="numpy"
    ).w  # (L+1, B, d): every layer, not only L
    assert max_rel_err(inspector.autodiff_weights(P, Q, b.X, b.y, b.x_query), w) < RTOL64


def assert_permutation_invariance(P: Any, Q: Any, b: Batch, seed: int) -> None:
    """Permuting the context changes neither the read-outs nor the implicit states."""
    testing.check_permutation_invariance(
        lintf_forwards(P, Q)["predict"], *_arrays(P, Q, b), rtol=RTOL64, seed=seed
    )
    perm = np.random.default_rng(seed).permutation(b.X.shape[1])
    y1 = models.predict(P, Q, b.X, b.y, b.x_query, all_layers=True)
    y2 = models.predict(P, Q, b.X[:, perm], b.y[:, perm], b.x_query, all_layers=True)
    assert max_rel_err(y2, y1) < RTOL64
    s1 = inspector.implicit_states(P, Q, b.X, b.y, backend="numpy")
    s2 = inspector.implicit_states(P, Q, b.X[:, perm], b.y[:, perm], backend="numpy")
    for f in ("M", "u", "a", "w"):
        assert max_rel_err(getattr(s2, f), getattr(s1, f)) < RTOL64


def rotation_change(P: Any, Q: Any, b: Batch, seed: int) -> float:
    """Relative change of ``ŷ`` when every ``x`` (context and query) is rotated by one orthogonal matrix."""
    d = b.X.shape[-1]
    R, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    R = jnp.asarray(R)
    return max_rel_err(
        models.predict(P, Q, b.X @ R.T, b.y, b.x_query @ R.T),
        models.predict(P, Q, b.X, b.y, b.x_query),
    )


def assert_readouts(P: Any, Q: Any, b: Batch) -> None:
    """Loss of the read-out after each layer from token states = loss of ``⟨w^l, x_t⟩`` from the recursion."""
    reads = -models.forward_tokens(P, Q, b.X, b.y, b.x_query)[:, :, -1, -1]  # (L+1, B)
    w = inspector.implicit_states(P, Q, b.X, b.y, backend="numpy").w
    loss_tokens = 0.5 * jnp.mean((b.y_query - reads) ** 2, axis=-1)
    loss_weights = 0.5 * jnp.mean(
        (b.y_query - jnp.einsum("lbd,bd->lb", w, b.x_query)) ** 2, axis=-1
    )
    assert max_rel_err(loss_tokens, loss_weights) < RTOL64
    assert max_rel_err(models.predict(P, Q, b.X, b.y, b.x_query, all_layers=True), reads) < RTOL64


# DIAG and GD++ -----------------------------------------------------------------------------------
def omega_form_tokens(
    diag: models.Diag, X: np.ndarray, y: np.ndarray, xq: np.ndarray
) -> np.ndarray:
    r"""Tokens after every layer by the derived ω-form rule (bridge ``diagonal_rule``), one sequence.

    ``x' = x + ω_xx Σ^l x + ω_xy y α^l``, ``y' = y + ω_yx ⟨α^l, x⟩ + ω_yy λ^l y`` with ``ω`` from
    :func:`lintf_theory.layer_omegas`; returns ``(L+1, n+1, d+1)``.
    """
    f = diagonal_rule().numpy
    n, d = X.shape
    Z = np.concatenate([np.c_[X, y], np.r_[xq, 0.0][None]], axis=0)
    out = [Z]
    for l in range(np.shape(diag.px)[0]):
        om = layer_omegas(*(np.asarray(p[l], dtype=np.float64) for p in diag))
        Cx, Cy = Z[:n, :d], Z[:n, d]
        Sigma, alpha, lam = Cx.T @ Cx, (Cx.T @ Cy)[:, None], np.array([[Cy @ Cy]])
        rows = []
        for e in Z:
            xn, yn = f(Sigma, alpha, lam, *om, e[:d, None], np.array([[e[d]]]))
            rows.append(np.r_[np.ravel(xn), np.ravel(yn)])
        Z = np.stack(rows)
        out.append(Z)
    return np.stack(out)


def gdpp_recursion(omega_xx: Any, omega_yx: Any, X: Any, y: Any, xq: Any) -> np.ndarray:
    r"""Read-outs ``−y_t^l`` ``(L+1, B)`` of GD++ written on its two native parameters, per layer ``l``:

    ``x_i ← (I + ω_xx Σ^l) x_i``, ``y_i ← y_i + ω_yx ⟨α^l, x_i⟩`` for every token, the query
    ``(x_t, 0)`` included (docs/model.md).  No universal ``P, Q``, no head sum and no ``ω_xy, ω_yy``:
    an independent route to the predictions of a GD++ model.
    """
    X, y, q = (np.asarray(a, np.float64).copy() for a in (X, y, xq))
    yq = np.zeros(X.shape[0])
    reads = [-yq]
    for wxx, wyx in zip(
        np.asarray(omega_xx, np.float64), np.asarray(omega_yx, np.float64), strict=True
    ):
        Sigma, alpha = np.einsum("bni,bnj->bij", X, X), np.einsum("bni,bn->bi", X, y)
        y, yq = (
            y + wyx * np.einsum("bi,bni->bn", alpha, X),
            yq + wyx * np.einsum("bi,bi->b", alpha, q),
        )
        X, q = (
            X + wxx * np.einsum("bij,bnj->bni", Sigma, X),
            q + wxx * np.einsum("bij,bj->bi", Sigma, q),
        )
        reads.append(-yq)
    return np.stack(reads)


def lemma44_residual(P: Any, Q: Any, diag: models.Diag, X: np.ndarray, y: np.ndarray) -> float:
    r"""Largest relative mismatch of ``u^{l+1}, w^{l+1}`` in the Lemma 4.4 form (bridge ``lemma44_rule``)
    against the derived recursion (bridge ``run_recursion``), over all layers of one sequence."""
    P, Q = np.asarray(P, dtype=np.float64), np.asarray(Q, dtype=np.float64)
    S = X.T @ X
    w_star = np.linalg.solve(S, X.T @ y)[:, None]
    rho = float(np.sum((y - X @ w_star[:, 0]) ** 2))
    states = run_recursion(P, Q, X, y, backend="numpy")
    f, fa = lemma44_rule().numpy, alpha_l_rule().numpy
    worst = 0.0
    for l in range(P.shape[0]):
        st_, nxt = states[l], states[l + 1]
        M_, u_, a_, w_ = st_.M, st_.u[:, None], float(st_.a), st_.w[:, None]
        Zl = (
            np.c_[X, y] @ state_matrix(st_.M, st_.u, st_.a, st_.w).T
        )  # layer-l context tokens (Theorem 4.1 form)
        Xl, yl = Zl[:, :-1], Zl[:, -1]
        om = layer_omegas(*(np.asarray(p[l], dtype=np.float64) for p in diag))
        g = S @ (a_ * w_star - w_)
        alpha_l = np.ravel(fa(M_, u_, a_, w_, w_star, rho, S))
        Lu, Gam, s, Pi, Phi = f(M_, u_, a_, w_star, rho, Xl.T @ Xl, yl @ yl, *om)
        u_next = np.ravel(u_ - Lu + Gam @ g)
        w_next = np.ravel((1 + s) * w_ - Pi @ g - Phi @ u_)
        worst = max(
            worst,
            max_rel_err(alpha_l, Xl.T @ yl),
            max_rel_err(u_next, nxt.u),
            max_rel_err(w_next, nxt.w),
        )
    return worst
