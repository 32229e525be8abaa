r"""How the testing kit reads and compares the code under test: the checks of
:mod:`numerics.testing.theorem` (Theorem 4.1) and of :mod:`numerics.testing.family` (the
family's members) share them.

* :func:`outputs` reads a callable ``forward(X, y, x_query)``: its predictions ``ŷ (B,)`` or every
  layer's tokens ``(L+1, B, n+1, d+1)`` (the query last, ``ŷ = −y_{n+1}^L``);
* :func:`query_gradient` differentiates ``ŷ`` with respect to the query, by ``jax.grad`` or central
  differences;
* :func:`assert_query_isolation` checks that the context ignores the query and ``ŷ`` is linear
  in it;
* :func:`assert_close` compares two arrays relative to the largest value compared, and names what
  failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

#: The code under test: ``forward(X (B, n, d), y (B, n), x_query (B, d))``, float64 arrays.
Forward = Callable[[np.ndarray, np.ndarray, np.ndarray], Any]


def assert_close(what: str, got: Any, want: Any, rtol: float, *scales: Any) -> None:
    """``max |got − want| ≤ rtol · max(|got|, |want|, |scales|)``, else
    ``AssertionError(what ...)``."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {got.shape}, expected {want.shape}")
    scale = max([1e-200] + [float(np.max(np.abs(a), initial=0)) for a in (got, want, *scales)])
    err = float(np.max(np.abs(got - want), initial=0)) / scale
    if not err <= rtol:
        raise AssertionError(f"{what}: relative difference {err:.3g} > rtol {rtol:g}")


def outputs(
    forward: Forward, X: Any, y: Any, xq: Any, L: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(ŷ (B,), tokens (L+1, B, n+1, d+1) or None)`` from the callable's output."""
    out = np.asarray(forward(X, y, xq), dtype=np.float64)
    B, n, d = X.shape
    if out.shape == (B,):
        return out, None
    if out.shape == (L + 1, B, n + 1, d + 1):
        return -out[-1, :, -1, -1], out
    raise AssertionError(
        f"output: forward must return predictions ({B},) or tokens {(L + 1, B, n + 1, d + 1)}, "
        f"got shape {out.shape}"
    )


def assert_query_isolation(
    forward: Forward,
    L: int,
    X: Any,
    y: Any,
    x_query: Any,
    rtol: float,
    seed: int,
    s: float,
    t: float,
    x_query_alt: Any,
    detail: str,
) -> None:
    """The context's tokens ignore the query (when ``forward`` returns tokens), and ``ŷ`` is linear
    in it: ``ŷ(s q_1 + t q_2) = s ŷ(q_1) + t ŷ(q_2)`` with ``q_1 = x_query`` and ``q_2 =
    x_query_alt`` (drawn from ``seed`` if ``None``); ``detail`` ends the failure's message."""
    q1 = x_query
    q2 = (
        np.random.default_rng(seed).standard_normal(x_query.shape)
        if x_query_alt is None
        else x_query_alt
    )
    with jax.enable_x64(True):
        f1, Z1 = outputs(forward, X, y, q1, L)
        f2, Z2 = outputs(forward, X, y, q2, L)
        if Z1 is not None:
            assert_close(
                "query isolation: context tokens with two different queries",
                Z2[:, :, :-1],
                Z1[:, :, :-1],
                rtol,
            )
        f12, _ = outputs(forward, X, y, s * q1 + t * q2, L)
    assert_close(
        f"query isolation: y_hat(s q1 + t q2) vs s y_hat(q1) + t y_hat(q2) {detail}",
        f12,
        s * f1 + t * f2,
        rtol,
        s * f1,
        t * f2,
    )


def prediction(out: Any) -> Any:
    """``ŷ (B,)`` of the callable's output: the predictions, or ``−y_{n+1}^L`` of its tokens."""
    return -out[-1, :, -1, -1] if out.ndim == 4 else out


def query_gradient(
    forward: Forward, X: np.ndarray, y: np.ndarray, xq: np.ndarray, differentiate: str
) -> tuple[np.ndarray, str]:
    r"""``(∂ŷ_b/∂x_t (B, d), route)``: ``jax.grad`` (``"jax"``), central differences
    (``"fd"``), or ``"auto"``: JAX, else differences when the callable cannot be traced."""
    if differentiate in ("jax", "auto"):
        try:
            total = lambda q: jnp.sum(  # noqa: E731
                prediction(forward(jnp.asarray(X), jnp.asarray(y), q))
            )
            return np.asarray(jax.grad(total)(jnp.asarray(xq))), "jax.grad"
        # a NumPy, PyTorch, ... callable; a real bug reappears below
        except Exception:  # noqa: BLE001
            if differentiate == "jax":
                raise
    elif differentiate != "fd":
        raise ValueError(f"differentiate must be 'auto', 'jax' or 'fd', got {differentiate!r}")
    cols = []
    for i in range(xq.shape[1]):
        step = np.zeros_like(xq)
        step[:, i] = 1.0
        plus = prediction(np.asarray(forward(X, y, xq + step), np.float64))
        minus = prediction(np.asarray(forward(X, y, xq - step), np.float64))
        cols.append((plus - minus) / 2)
    return np.stack(cols, axis=-1), "central differences, step 1"


def assert_implicit_weight(
    f: Any, grad: Any, route: str, w: Any, x_query: Any, rtol: float, source: str, short: str
) -> None:
    """``ŷ = ⟨w^L, x_t⟩`` and ``∂ŷ/∂x_t = w^L`` (by ``route``), ``w^L`` from ``source`` (named
    ``short`` beside the gradient)."""
    want = np.einsum("bd,bd->b", w, x_query)
    assert_close(f"implicit weight: y_hat vs <w^L, x_t> ({source})", f, want, rtol)
    assert_close(f"implicit weight: d y_hat / d x_t ({route}) vs w^L ({short})", grad, w, rtol)
