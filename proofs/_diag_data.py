"""Exact rational data and the literal DIAG forward pass shared by the diagonal-form proof scripts."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from lintf_theory.exact import diag_universal, rational_array, tokens
from lintf_theory.layer import layer_forward


class Context(NamedTuple):
    X: Any  # (n, d) Fraction
    y: Any  # (n,)
    x_query: Any  # (d,)


def context(rng: np.random.Generator, n: int, d: int) -> Context:
    return Context(
        rational_array(rng, (n, d)), rational_array(rng, (n,)), rational_array(rng, (d,))
    )


def forward_all(P: Any, Q: Any, ctx: Context) -> list[Any]:
    """Token matrices ``Z^0..Z^L`` by the literal layer rule (exact)."""
    n, d = ctx.X.shape
    Z = tokens(ctx.X, ctx.y, ctx.x_query)
    out = [Z]
    for l in range(P.shape[0]):
        Z = layer_forward(list(P[l]), list(Q[l]), Z, n)
        out.append(Z)
    return out


def stats(Z: Any, n: int) -> tuple[Any, Any, Any]:
    """``(Σ, α, λ)`` of the context rows of ``Z``; ``α`` is ``(d,1)``, ``λ`` is ``(1,1)``."""
    d = Z.shape[1] - 1
    X, y = Z[:n, :d], Z[:n, d:]
    return X.T @ X, X.T @ y, y.T @ y


def diag_model(
    heads: list[list[tuple[Fraction, Fraction, Fraction, Fraction]]], d: int
) -> tuple[Any, Any]:
    """``P, Q`` from per-layer lists of heads ``(p_x, p_y, q_x, q_y)`` (equal head count per layer)."""
    arr = np.array([[list(h) for h in layer] for layer in heads], dtype=object)  # (L, H, 4)
    return diag_universal(arr[..., 0], arr[..., 1], arr[..., 2], arr[..., 3], d)


def col(v: Any) -> Any:
    return np.asarray(v, dtype=object).reshape(-1, 1)


def one(s: Any) -> Any:
    return np.asarray(s, dtype=object).reshape(1, 1)


def F(p: int, q: int = 1) -> Fraction:
    return Fraction(p, q)
