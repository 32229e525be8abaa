r"""Implicit-weight inspector: the per-layer state ``(M^l, u^l, a^l, w^l)`` of Theorem 4.1, two ways.

Theorem 4.1 (docs/model.md): for any parameters there are ``M^l (d×d)``, ``u^l, w^l ∈ R^d`` and
``a^l ∈ R``, functions of the context only, with

.. math::

    \begin{pmatrix} x_i^l \\ y_i^l \end{pmatrix}
      = T^l \begin{pmatrix} x_i \\ y_i \end{pmatrix},\qquad
    T^l = \begin{pmatrix} M^l & u^l \\ -(w^l)^\top & a^l \end{pmatrix},

for every context token and for the query ``(x_t, 0)``, so that ``ŷ^l = ⟨w^l, x_t⟩``.

Two independent routes give ``w^l``:

1. **Recursion** (:func:`implicit_states`): the Lemma 4.3 rule *derived* by SymPy and exported by
   the bridge (``lintf_theory.run_recursion``, backend ``"jax"`` vmapped over the batch, or
   ``"numpy"``).  It never sees the query.
2. **Autodiff** (:func:`autodiff_weights`): ``w^l = ∂ŷ^l / ∂x_t`` by ``jax.jacrev`` of the model's
   own forward pass :func:`numerics.models.predict` (``all_layers=True``).  ``ŷ^l`` is linear in
   ``x_t``, so the Jacobian is ``w^l`` exactly, whatever ``x_t``.

Reference solutions (computed here with ``jnp.linalg.solve``, docs/model.md):
``w* = Σ^{-1} α`` (OLS) and ``w*_{σ²} = (Σ + σ² I)^{-1} α`` (ridge with the true ``σ``), where
``Σ = Σ_i x_i x_iᵀ`` and ``α = Σ_i y_i x_i``.

=========  ==========================  ===========================================
symbol     argument / field            shape
=========  ==========================  ===========================================
``P, Q``   ``P, Q``                    ``(L, H, d+1, d+1)`` universal parameters
``x_i``    ``X``                       ``(B, n, d)``
``y_i``    ``y``                       ``(B, n)``
``x_t``    ``x_query``                 ``(B, d)``
``σ``      ``sigma``                   ``(B,)`` (optional; ridge needs it)
``M^l``    ``States.M``                ``(L+1, B, d, d)``
``u^l``    ``States.u``                ``(L+1, B, d)``
``a^l``    ``States.a``                ``(L+1, B)``
``w^l``    ``States.w``                ``(L+1, B, d)``
=========  ==========================  ===========================================
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lintf_theory import run_recursion
from numerics.baselines.ridge import oracle_weights
from numerics.models import check_data, predict


class States(NamedTuple):
    """Per-layer implicit states for a batch; leading axis ``l = 0..L`` (see the module table)."""

    M: jax.Array
    u: jax.Array
    a: jax.Array
    w: jax.Array


def implicit_states(P: Any, Q: Any, X: Any, y: Any, backend: str = "jax") -> States:
    r"""``(M^l, u^l, a^l, w^l)`` for ``l = 0..L`` by the derived recursion (Lemma 4.3) through the bridge.

    ``backend="jax"`` vmaps ``lintf_theory.run_recursion`` over the batch; ``backend="numpy"``
    runs the NumPy export sequence by sequence (the NumPy lambdification, an independent code path).
    """
    P, Q = jnp.asarray(P), jnp.asarray(Q)
    X, y = jnp.asarray(X), jnp.asarray(y)
    check_data(P, Q, X, y, X[:, 0, :])
    if backend == "jax":
        return _states_jax(P, Q, X, y)
    if backend == "numpy":
        Pn, Qn, Xn, yn = (np.asarray(v) for v in (P, Q, X, y))
        runs = [run_recursion(Pn, Qn, Xn[b], yn[b], "numpy") for b in range(Xn.shape[0])]
        return States(
            *(
                jnp.asarray(np.stack([[getattr(s, f) for s in r] for r in runs], axis=1))
                for f in States._fields
            )
        )
    raise ValueError(f"backend must be 'jax' or 'numpy', got {backend!r}")


@jax.jit
def _states_jax(P: jax.Array, Q: jax.Array, X: jax.Array, y: jax.Array) -> States:
    per_seq = jax.vmap(lambda Xb, yb: tuple(run_recursion(P, Q, Xb, yb, "jax")))(X, y)
    return States(*(jnp.stack([getattr(s, f) for s in per_seq]) for f in States._fields))


def autodiff_weights(P: Any, Q: Any, X: Any, y: Any, x_query: Any) -> jax.Array:
    r"""``w^l = ∂ŷ^l/∂x_t`` for ``l = 0..L`` by ``jax.jacrev`` of :func:`models.predict`; ``(L+1, B, d)``."""
    P, Q = jnp.asarray(P), jnp.asarray(Q)
    X, y, x_query = jnp.asarray(X), jnp.asarray(y), jnp.asarray(x_query)
    check_data(P, Q, X, y, x_query)
    return _autodiff_jax(P, Q, X, y, x_query)


@jax.jit
def _autodiff_jax(
    P: jax.Array, Q: jax.Array, X: jax.Array, y: jax.Array, x_query: jax.Array
) -> jax.Array:
    def reads(xt: jax.Array, Xb: jax.Array, yb: jax.Array) -> jax.Array:  # (L+1,) for one sequence
        return predict(P, Q, Xb[None], yb[None], xt[None], all_layers=True)[:, 0]

    jac = jax.vmap(jax.jacrev(reads), in_axes=(0, 0, 0))(x_query, X, y)  # (B, L+1, d)
    return jnp.swapaxes(jac, 0, 1)


def transfer_matrices(states: States) -> jax.Array:
    r"""``T^l = [[M^l, u^l], [−(w^l)ᵀ, a^l]]``, ``(L+1, B, d+1, d+1)``: maps original tokens to layer ``l``."""
    top = jnp.concatenate([states.M, states.u[..., :, None]], axis=-1)
    bottom = jnp.concatenate([-states.w, states.a[..., None]], axis=-1)[..., None, :]
    return jnp.concatenate([top, bottom], axis=-2)


def ols(X: Any, y: Any) -> jax.Array:
    r"""``w* = Σ^{-1} α`` per sequence, ``(B, d)`` (needs ``n ≥ d`` and ``Σ`` invertible)."""
    return ridge(X, y, jnp.zeros(jnp.shape(X)[0], dtype=jnp.asarray(X).dtype))


def ridge(X: Any, y: Any, sigma: Any) -> jax.Array:
    r"""``w*_{σ²} = (Σ + σ² I)^{-1} α`` per sequence, ``(B, d)``; ``sigma`` is ``(B,)`` or a scalar
    (:func:`numerics.baselines.ridge.oracle_weights`)."""
    X, y = jnp.asarray(X), jnp.asarray(y)
    return oracle_weights(X, y, jnp.broadcast_to(jnp.asarray(sigma, dtype=X.dtype), X.shape[:1]))


def compare(w: jax.Array, ref: jax.Array) -> tuple[jax.Array, jax.Array]:
    r"""Cosine ``⟨w, r⟩/(‖w‖‖r‖)`` and relative distance ``‖w − r‖/‖r‖`` along the last axis.

    The cosine of a zero vector (``w^0 = 0``) is reported as ``0``.
    """
    nw, nr = jnp.linalg.norm(w, axis=-1), jnp.linalg.norm(ref, axis=-1)
    dot = jnp.sum(w * ref, axis=-1)
    cos = jnp.where(nw * nr > 0, dot / jnp.where(nw * nr > 0, nw * nr, 1), 0)
    return cos, jnp.linalg.norm(w - ref, axis=-1) / nr


class Inspection(NamedTuple):
    """Everything :func:`inspect` computes; per-layer arrays have leading axis ``l = 0..L``."""

    states: States  # recursion route
    w_autodiff: jax.Array  # (L+1, B, d), autodiff route
    w_ols: jax.Array | None  # (B, d); None where Σ is singular on a sequence (n < d, all-zero X)
    w_ridge: (
        jax.Array | None
    )  # (B, d); None without sigma, or where σ = 0 on a sequence whose Σ is singular
    loss: jax.Array | None  # (L+1,) read-out loss ½ mean (y_t − ⟨w^l, x_t⟩)²; None without y_query
    max_abs_diff: float  # max_{l,b,i} |w^l_recursion − w^l_autodiff|
    max_rel_diff: float  # the same divided by max |w^l| (or by 1 if all w^l = 0)


def inspect(
    P: Any,
    Q: Any,
    X: Any,
    y: Any,
    x_query: Any,
    sigma: Any = None,
    y_query: Any = None,
    backend: str = "jax",
) -> Inspection:
    """Run both routes and the reference solutions on one batch (``sigma``, ``y_query``: ``(B,)``, optional)."""
    P, Q, X, y, x_query = (jnp.asarray(v) for v in (P, Q, X, y, x_query))
    B, n, d = check_data(P, Q, X, y, x_query)
    for name, v in (("sigma", sigma), ("y_query", y_query)):
        if v is not None and jnp.shape(v) != (B,):
            raise ValueError(f"{name} must have shape (B,) = ({B},), got shape {jnp.shape(v)}")
    st = implicit_states(P, Q, X, y, backend)
    wad = autodiff_weights(P, Q, X, y, x_query)
    diff = float(jnp.max(jnp.abs(st.w - wad)))
    scale = float(jnp.max(jnp.abs(st.w)))
    loss = None
    if y_query is not None:
        loss = 0.5 * jnp.mean(
            (jnp.asarray(y_query) - jnp.einsum("lbd,bd->lb", st.w, x_query)) ** 2, axis=-1
        )
    # Σ = XᵀX is singular on a sequence whose inputs span fewer than d directions (n < d, all-zero inputs): there
    # OLS, and ridge at σ = 0, are 0/0, so those references are left out rather than reported as overflows
    invertible = n >= d and bool(jnp.all(jnp.linalg.matrix_rank(X) == d))
    ridge_ok = sigma is not None and (invertible or bool(jnp.all(jnp.asarray(sigma) > 0)))
    return Inspection(
        st,
        wad,
        ols(X, y) if invertible else None,
        ridge(X, y, sigma) if ridge_ok else None,
        loss,
        diff,
        diff / scale if scale > 0 else diff,
    )


def summary(ins: Inspection) -> list[dict[str, float]]:
    r"""Per-layer batch means: ``‖w^l‖``, cosine / relative distance to ``w*`` and to ridge, ``a^l``,
    ``‖u^l‖``, ``‖M^l − I‖_F`` and the read-out loss.  One dict per layer ``l = 0..L``; keys whose
    reference is missing are left out."""
    st = ins.states
    d = st.M.shape[-1]
    refs = {k: r for k, r in (("ols", ins.w_ols), ("ridge", ins.w_ridge)) if r is not None}
    rows = []
    for l in range(st.w.shape[0]):
        row: dict[str, float] = {
            "layer": l,
            "w_norm": float(jnp.mean(jnp.linalg.norm(st.w[l], axis=-1))),
            "a": float(jnp.mean(st.a[l])),
            "u_norm": float(jnp.mean(jnp.linalg.norm(st.u[l], axis=-1))),
            "M_minus_I": float(
                jnp.mean(jnp.linalg.norm(st.M[l] - jnp.eye(d, dtype=st.M.dtype), axis=(-2, -1)))
            ),
        }
        for k, r in refs.items():
            cos, dist = compare(st.w[l], r)
            row[f"cos_{k}"], row[f"dist_{k}"] = float(jnp.mean(cos)), float(jnp.mean(dist))
        if ins.loss is not None:
            row["loss"] = float(ins.loss[l])
        rows.append(row)
    return rows
