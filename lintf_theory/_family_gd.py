r"""Optimisation readings of the family: which regression a member's state solves, derived from its
update.

With the regression head of :func:`regression_head` (keys and queries read ``x``, the value is
``−y`` in the target slot) the state is ``S = −e_y sᵀ`` and ``ŷ = ⟨s_n, x_t⟩``:

* ``deltanet``: ``s_i = s_{i-1} − β_i ∇_s ½(y_i − sᵀx_i)²|_{s_{i-1}}``, one Widrow–Hoff (LMS / SGD)
  step per token,
  so one layer is one pass of online least squares over the context (:func:`derive_delta_rule`);
* ``gated_deltanet``: the same step taken from the shrunk iterate ``α_i s_{i-1}``;
* ``linear``, ``causal``, ``retnet``, ``ssd``, ``gla``: ``ŷ = Σ_i Σ_k ω_{ik} y_i x_{ik} x_{tk}``
  with weights read
  off the layer (:func:`derive_context_weights`): one gradient step from ``w = 0`` on a weighted
  least squares (``ω_i = γ^{n-i}`` for RetNet, ``Π_{m>i} α_m`` for SSD), and for GLA a weight per
  coordinate, which is the step on least squares with gated inputs ``D_i x_i``.

On mixed noise (:func:`derive_gate_symmetry`): ``sigmoid(z) + sigmoid(−z) = 1``, so a gate
``sigmoid(wᵀ e_i)`` of a first-layer token, whose distribution is symmetric under ``e ↦ −e``, has
mean ``1/2`` at every noise level.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import sympy as sp

from ._family import FamilyHead, family_layer, family_step, sigmoid
from ._render import Statement

#: Members whose one-layer prediction under :func:`regression_head` is bilinear in ``(y_i x_i,
# x_t)``.
WEIGHTED_MEMBERS = ("linear", "causal", "retnet", "ssd", "gla")


def regression_head(
    d: int,
    *,
    scale: Any = 1,
    gamma: Any = 1,
    w_alpha: Any = None,
    w_beta: Any = None,
    beta: Any = 1,
) -> FamilyHead:
    r"""``W_K = W_Q = diag(scale·I_d, 0)``, ``W_V = −e_y e_yᵀ``: keys and queries read ``x``, the
    value is ``−y``."""
    D = d + 1
    WK = np.zeros((D, D), dtype=object)
    for k in range(d):
        WK[k, k] = scale
    WV = np.zeros((D, D), dtype=object)
    WV[-1, -1] = -1
    return FamilyHead(WK.copy(), WK, WV, gamma=gamma, w_alpha=w_alpha, w_beta=w_beta, beta=beta)


@dataclass(frozen=True)
class DeltaRule:
    r"""The state row ``s' `` after one update, and the SGD step it is compared with."""

    update: sp.Matrix  # s' read off the member's update of S = −e_y sᵀ
    sgd_step: sp.Matrix  # s̃ − β ∇ℓ(s̃) with s̃ = α s (α = 1 for deltanet), ℓ(s) = ½(y − sᵀx)²
    is_sgd: bool


@cache
def derive_delta_rule(member: str = "deltanet", d: int = 2) -> DeltaRule:
    r"""Apply the member's update to ``S = −e_y sᵀ`` with ``k = (x, 0)``, ``v = (0, −y)`` and read
    off ``s'``."""
    s, x = sp.symbols(f"s_0:{d}"), sp.symbols(f"x_0:{d}")
    y, alpha, beta = sp.symbols("y alpha beta")
    D = d + 1
    S = np.zeros((D, D), dtype=object)
    S[-1, :d] = [-v for v in s]
    k = np.array([*x, 0], dtype=object)
    v = np.array([0] * d + [-y], dtype=object)
    a = alpha if member == "gated_deltanet" else 1
    S_next = family_step(member, S, k, v, alpha, beta)
    update = sp.Matrix([sp.expand(-S_next[-1, j]) for j in range(d)])
    shrunk = sp.Matrix([a * v for v in s])
    loss = sp.Rational(1, 2) * (y - sum(si * xi for si, xi in zip(s, x, strict=True))) ** 2
    grad = sp.Matrix([sp.diff(loss, si) for si in s]).subs(
        dict(zip(s, shrunk, strict=True)), simultaneous=True
    )
    step = shrunk - beta * grad
    return DeltaRule(update, step, sp.expand(update - step) == sp.zeros(d, 1))


@dataclass(frozen=True)
class ContextWeights:
    r"""``ŷ = Σ_{i,k} ω_{ik} y_i x_{ik} x_{tk}`` for one layer under :func:`regression_head`."""

    weights: sp.Matrix  # (n, d): ω_{ik}
    bilinear: bool  # ŷ equals the weighted sum exactly
    y_hat: sp.Expr
    X: sp.Matrix
    y: tuple[sp.Symbol, ...]
    xt: tuple[sp.Symbol, ...]
    gates: tuple[Any, ...]  # per context token: γ, α_i, or the vector α_i (gla)


@cache
def derive_context_weights(member: str, n: int = 3, d: int = 2) -> ContextWeights:
    r"""Run one literal layer on symbols (data, ``x_t`` and each token's gate) and read off
    ``ω_{ik}``."""
    if member not in WEIGHTED_MEMBERS:
        raise ValueError(f"member must be one of {', '.join(WEIGHTED_MEMBERS)}; got {member!r}")
    X = sp.Matrix(n, d, lambda i, k: sp.Symbol(f"x{i}_{k}"))
    y, xt = sp.symbols(f"y0:{n}"), sp.symbols(f"xt_0:{d}")
    gamma = sp.Symbol("gamma")
    if member == "gla":
        gates: tuple[Any, ...] = tuple(
            np.array(sp.symbols(f"a{i}_0:{d + 1}"), dtype=object) for i in range(n)
        )
    elif member == "ssd":
        gates = sp.symbols(f"a0:{n}")
    else:
        gates = (gamma if member == "retnet" else sp.Integer(1),) * n
    Z = np.array([[*X.row(i), y[i]] for i in range(n)] + [[*xt, 0]], dtype=object)
    pairs = [(g, 1) for g in gates] + [(gates[0], 1)]
    y_hat = sp.expand(
        -family_layer(member, [regression_head(d, gamma=gamma)], Z, n, gates=[pairs])[n, -1]
    )
    W = sp.Matrix(n, d, lambda i, k: y_hat.coeff(y[i]).coeff(X[i, k]).coeff(xt[k]))
    recombined = sum(W[i, k] * y[i] * X[i, k] * xt[k] for i in range(n) for k in range(d))
    return ContextWeights(
        W, sp.expand(y_hat - recombined) == 0, y_hat, X, tuple(y), tuple(xt), tuple(gates)
    )


@cache
def derive_gate_symmetry() -> sp.Expr:
    r"""``sigmoid(z) + sigmoid(−z)``, simplified (it is ``1``): a gate's mean on symmetric tokens
    is ``1/2``."""
    z = sp.Symbol("z", real=True)
    return sp.simplify(sigmoid(z) + sigmoid(-z))


def family_statements() -> list:

    ref = "Linear-attention family (beyond the paper)"
    rule, gated = derive_delta_rule("deltanet"), derive_delta_rule("gated_deltanet")
    retnet, ssd, gla = (derive_context_weights(m) for m in ("retnet", "ssd", "gla"))
    return [
        Statement(
            ref,
            "DeltaNet with the regression head: the state row after one token",
            "s'",
            rule.update,
            "It equals $s - \\beta \\nabla_s \\tfrac12 (y - s^\\top x)^2$: one Widrow-Hoff (SGD) "
            "step.",
        ),
        Statement(
            ref,
            "Gated DeltaNet: the state row after one token",
            "s'",
            gated.update,
            "It equals $\\tilde s - \\beta \\nabla \\tfrac12 (y - \\tilde s^\\top x)^2$ at "
            "$\\tilde s = \\alpha s$.",
        ),
        Statement(
            ref,
            "RetNet: weights of one gradient step on weighted least squares (n = 3)",
            "\\omega",
            retnet.weights,
        ),
        Statement(ref, "SSD: weights of one gradient step (n = 3)", "\\omega", ssd.weights),
        Statement(ref, "GLA: a weight per coordinate (n = 3)", "\\omega", gla.weights),
        Statement(
            ref,
            "Gate symmetry",
            "\\operatorname{sigmoid}(z) + \\operatorname{sigmoid}(-z)",
            derive_gate_symmetry(),
        ),
    ]
