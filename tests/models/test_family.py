"""The family's forward passes (docs/family.md) against a literal per-token recurrence, and the
reductions between
members that hold exactly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics import models
from numerics.models import family
from tests.strategies import RTOL32, max_rel_err, member_data, member_params

RTOL = 1e-12  # float64 round-off over a few layers of O(1) tokens


def sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def literal_tokens(name, params, X, y, xq, query_self=False):
    """Every layer's tokens, following the member's formulas token by token (plain NumPy loops)."""
    p = {k: np.asarray(v, np.float64) for k, v in params._asdict().items()}
    B, n, d = X.shape
    D = d + 1
    Z = np.concatenate(
        [
            np.concatenate([X, y[..., None]], -1),
            np.concatenate([xq, np.zeros((B, 1))], -1)[:, None],
        ],
        axis=1,
    )
    out = [Z]
    L, H = p["W_V"].shape[:2]
    for l in range(L):
        new = Z.copy()
        for b in range(B):
            for h in range(H):
                W_V, W_Q = p["W_V"][l, h], p["W_Q"][l, h]
                W_K = p["W_K"][l, h] if "W_K" in p else np.eye(D)
                S = np.zeros((D, W_K.shape[0]))

                def step(S, e):
                    k, v = W_K @ e, W_V @ e
                    if name == "causal":
                        return S + np.outer(v, k)
                    if name == "retnet":
                        return sig(p["gamma_logit"][l, h]) * S + np.outer(v, k)
                    if name == "mamba2":
                        alpha = sig(p["w_alpha"][l, h] @ e + p["b_alpha"][l, h])
                        return alpha * S + np.outer(v, k)
                    if name == "gla":
                        alpha = sig(p["W_alpha"][l, h] @ e + p["b_alpha"][l, h])
                        return S @ np.diag(alpha) + np.outer(v, k)
                    beta = sig(p["w_beta"][l, h] @ e + p["b_beta"][l, h])
                    kept = S @ (np.eye(len(k)) - beta * np.outer(k, k)) + beta * np.outer(v, k)
                    if name == "deltanet":
                        return kept
                    alpha = sig(p["w_alpha"][l, h] @ e + p["b_alpha"][l, h])
                    return alpha * (S @ (np.eye(len(k)) - beta * np.outer(k, k))) + beta * np.outer(
                        v, k
                    )

                for i in range(n):
                    S = step(S, Z[b, i])
                    new[b, i] += S @ (W_Q @ Z[b, i])
                S_t = step(S, Z[b, n]) if query_self else S
                new[b, n] += S_t @ (W_Q @ Z[b, n])
        Z = new
        out.append(Z)
    return np.stack(out)


def _data(seed=3):
    return member_data(seed)


@pytest.mark.parametrize("query_self", [False, True])
@pytest.mark.parametrize("name", family.MEMBERS)
def test_forward_equals_literal_recurrence(name, query_self):
    X, y, xq = _data()
    params = member_params(name, 11)
    kind = models.kind_of(name)
    want = literal_tokens(name, params, X, y, xq, query_self)
    Z = np.asarray(kind.forward_tokens(params, X, y, xq, query_self))
    assert Z.shape == want.shape and Z.dtype == np.float64
    assert max_rel_err(Z, want) < RTOL
    yhat = np.asarray(kind.forward(params, X, y, xq, query_self=query_self))
    assert max_rel_err(yhat, -want[-1, :, -1, -1]) < RTOL
    assert np.max(np.abs(Z[-1] - Z[0])) > 1e-2  # the layers do something


@pytest.mark.parametrize("name", family.MEMBERS)
def test_float32_stays_float32_and_matches_float64(name):
    X, y, xq = _data(4)
    params = member_params(name, 12, scale=0.2)
    kind = models.kind_of(name)
    p32 = jax.tree_util.tree_map(lambda a: a.astype(jnp.float32), params)
    f32 = kind.forward(p32, *(jnp.asarray(a, jnp.float32) for a in (X, y, xq)))
    assert f32.dtype == jnp.float32
    assert max_rel_err(f32, kind.forward(params, X, y, xq)) < RTOL32


@pytest.mark.parametrize("name", family.MEMBERS)
def test_guarded_pass_of_training_is_the_plain_pass_on_ordinary_data(name):
    """Training runs the guarded pass: where no token overflows it is the evaluated (plain) pass,
    query convention included, so what trains is what the literal recurrence above checks."""
    X, y, xq = _data(9)
    params = member_params(name, 18)
    kind = models.kind_of(name)
    yhat, alive = kind.forward(params, X, y, xq, guard=True)
    assert bool(np.all(alive))
    assert max_rel_err(yhat, -literal_tokens(name, params, X, y, xq)[-1, :, -1, -1]) < RTOL


def test_guard_freezes_overflowing_sequences_with_finite_gradient():
    X, y, xq = _data(5)
    X = X.copy()
    X[0] *= 1e80
    params = member_params("deltanet", 13)
    kind = models.kind_of("deltanet")
    yhat, alive = kind.forward(params, X, y, xq, guard=True)
    assert not bool(alive[0]) and bool(np.all(alive[1:]))
    # the gradient as training takes it, under jit: one program, not autodiff op by op
    g = jax.jit(jax.grad(lambda p: jnp.sum(kind.forward(p, X, y, xq, guard=True)[0])))(params)
    assert all(bool(np.all(np.isfinite(np.asarray(a)))) for a in g)


def _as(name, src, **changes):
    kind = models.kind_of(name)
    # shapes only (no jax.random program to compile): the fields ``src`` lacks start at zero
    base = family.parameter_shapes(kind, src.W_V.shape[0], src.W_V.shape[-1] - 1, src.W_V.shape[1])
    fields = {
        f: getattr(src, f) if hasattr(src, f) else jnp.zeros(getattr(base, f).shape, jnp.float64)
        for f in kind.params_type._fields
    }
    return kind.params_type(**(fields | changes))


ONE = 40.0  # sigmoid(40) = 1 - 4e-18: exactly 1 in float64


@pytest.mark.parametrize("other", ["retnet", "mamba2", "gla"])
def test_gates_at_one_reduce_to_causal_linear_attention(other):
    X, y, xq = _data(6)
    c = member_params("causal", 14)
    L, H, D = c.W_V.shape[0], c.W_V.shape[1], c.W_V.shape[-1]
    change = {
        "retnet": {"gamma_logit": jnp.full((L, H), ONE)},
        "mamba2": {"w_alpha": jnp.zeros((L, H, D)), "b_alpha": jnp.full((L, H), ONE)},
        "gla": {
            "W_K": jnp.broadcast_to(jnp.eye(D), (L, H, D, D)),
            "W_alpha": jnp.zeros((L, H, D, D)),
            "b_alpha": jnp.full((L, H, D), ONE),
        },
    }[other]
    o = _as(other, c, **change)
    want = models.kind_of("causal").forward_tokens(c, X, y, xq)
    assert max_rel_err(models.kind_of(other).forward_tokens(o, X, y, xq), want) < RTOL
    # a gate below one is a different model
    o2 = o._replace(
        **{k: v - 2 * ONE if k in ("gamma_logit", "b_alpha") else v for k, v in change.items()}
    )
    assert max_rel_err(models.kind_of(other).forward_tokens(o2, X, y, xq), want) > 1e-3


def test_gated_deltanet_with_alpha_one_is_deltanet():
    X, y, xq = _data(7)
    dn = member_params("deltanet", 15)
    L, H, D = dn.W_V.shape[0], dn.W_V.shape[1], dn.W_V.shape[-1]
    g = _as("gated-deltanet", dn, w_alpha=jnp.zeros((L, H, D)), b_alpha=jnp.full((L, H), ONE))
    want = models.kind_of("deltanet").forward_tokens(dn, X, y, xq)
    assert max_rel_err(models.kind_of("gated-deltanet").forward_tokens(g, X, y, xq), want) < RTOL


def test_causal_query_reads_the_paper_layer_at_depth_one_only():
    """At depth 1 the query reads ``S_n = W_V E`` (keys ``e_j``): the paper's layer with ``P =
    W_V``, ``Q = W_Q``. From depth 2 the context tokens differ (each read its own prefix), and so
    does the prediction."""
    X, y, xq = _data(8)
    # the first two layers of a default (3-layer) draw: no new parameter shapes to draw
    c = jax.tree_util.tree_map(lambda a: a[:2], member_params("causal", 16))
    kind = models.kind_of("causal")
    one = jax.tree_util.tree_map(lambda a: a[:1], c)
    assert (
        max_rel_err(kind.forward(one, X, y, xq), models.predict(one.W_V, one.W_Q, X, y, xq)) < RTOL
    )
    assert max_rel_err(kind.forward(c, X, y, xq), models.predict(c.W_V, c.W_Q, X, y, xq)) > 1e-3
    # the query reading itself adds v_t k_tᵀ q_t: another model already at depth 1
    assert (
        max_rel_err(kind.forward(one, X, y, xq, query_self=True), kind.forward(one, X, y, xq))
        > 1e-3
    )


def test_parameter_counts_against_full():
    d = 10
    full = 2 * (d + 1) ** 2
    counts = {m: family.parameter_count(m, d) for m in family.MEMBERS}
    assert counts["causal"] == full
    assert counts["retnet"] == full + 1 and counts["mamba2"] == full + d + 2
    assert counts["deltanet"] == 3 * (d + 1) ** 2 + d + 2


def test_member_kinds_refuse_the_universal_form():
    p = member_params("retnet", 17)
    with pytest.raises(ValueError, match="retnet model has no universal P, Q"):
        models.universal(p, 3)
    assert models.kind_of(p).name == "retnet"
