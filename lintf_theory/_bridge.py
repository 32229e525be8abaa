r"""The bridge: every derived rule, exported once through ``sympy.lambdify`` to NumPy and JAX.

The numeric half (``numerics``), the tests and the implicit-weight inspector call these exports;
none of them carries its own copy of a derived formula.

Shape conventions of the raw exports (what lambdify sees): ``d``-vectors are columns ``(d, 1)``
and scalars that enter matrix products are ``(1, 1)``.  The wrappers below take natural shapes
(``u, w: (d,)``, ``a, delta: ()``) and work for one sequence; batch with ``jax.vmap``.  The NumPy
export also runs on ``object`` arrays of :class:`fractions.Fraction`, which gives exact rational
evaluation for the property tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any, NamedTuple

import numpy as np
import sympy as sp

from ._recursion import derive_gram_update, derive_recursion
from .symbols import BLOCKS, STATE, E_sym, G_sym


@dataclass(frozen=True)
class Exported:
    """One derived rule and its lambdified NumPy and JAX versions."""

    name: str
    args: tuple[sp.Basic, ...]
    outputs: tuple[sp.Basic, ...]

    @property
    def numpy(self) -> Callable[..., Any]:
        return _lambdify(self, "numpy")

    @property
    def jax(self) -> Callable[..., Any]:
        return _lambdify(self, "jax")


#: Lambdified rules keyed by the rule itself (its arguments and outputs, compared structurally) and the backend:
#: two different rules exported under the same name never share an entry.
_CACHE: dict[tuple[tuple[sp.Basic, ...], tuple[sp.Basic, ...], str], Callable[..., Any]] = {}


def _lambdify(rule: Exported, backend: str) -> Callable[..., Any]:
    key = (rule.args, rule.outputs, backend)
    if key not in _CACHE:
        modules = backend  # SymPy's NumPyPrinter / JaxPrinter
        out = rule.outputs[0] if len(rule.outputs) == 1 else list(rule.outputs)
        _CACHE[key] = sp.lambdify(rule.args, out, modules=modules, cse=True, docstring_limit=0)
    return _CACHE[key]


def export(name: str, args: Sequence[sp.Basic], outputs: Sequence[sp.Basic]) -> Exported:
    """Register a derived rule for lambdification (the one door from SymPy to numbers).

    Every argument must be named by a Python identifier: ``lambdify`` silently replaces a
    ``MatrixSymbol`` with another name (``"Sigma^l"``) by a *commutative* dummy, which reorders
    matrix products.
    """
    for arg in args:
        label = str(getattr(arg, "name", arg))
        if not label.isidentifier():
            raise ValueError(
                f"export {name!r}: argument name {label!r} must be a Python identifier"
            )
    return Exported(name, tuple(args), tuple(outputs))


@cache
def recursion_rule() -> Exported:
    """Lemma 4.3: ``(M, u, a, w, A, b, c, δ) ↦ (M', u', a', w')``."""
    r = derive_recursion()
    return export("recursion_step", (*STATE, *BLOCKS), (r.M_next, r.u_next, r.a_next, r.w_next))


@cache
def gram_rule() -> Exported:
    """Context Gram map ``(E, G) ↦ E'``."""
    return export("gram_update", (E_sym, G_sym), (derive_gram_update(),))


# ---------------------------------------------------------------------------------------------
# Natural-shape wrappers.
# ---------------------------------------------------------------------------------------------
class State(NamedTuple):
    r"""Implicit state of Theorem 4.1 at one layer: ``M (d,d)``, ``u (d,)``, ``a ()``, ``w (d,)``."""

    M: Any
    u: Any
    a: Any
    w: Any


def _xp(backend: str) -> Any:
    if backend == "jax":
        import jax.numpy as jnp  # lazy: start-up

        return jnp
    if backend == "numpy":
        return np
    raise ValueError(f"backend must be 'numpy' or 'jax', got {backend!r}")


def split_blocks(G: Any) -> tuple[Any, Any, Any, Any]:
    r"""Split ``G`` ``(d+1, d+1)`` into ``A (d,d)``, ``b (d,)``, ``c (d,)``, ``δ ()`` (``c`` is the row, transposed)."""
    return G[:-1, :-1], G[:-1, -1], G[-1, :-1], G[-1, -1]


def recursion_step(state: State, G: Any, backend: str = "numpy") -> State:
    """One layer of the derived recursion (Lemma 4.3), through the lambdified export."""
    xp = _xp(backend)
    A_, b_, c_, dl = split_blocks(G)
    col = lambda v: xp.reshape(v, (-1, 1))  # noqa: E731
    one = lambda s: xp.reshape(s, (1, 1))  # noqa: E731
    f = getattr(recursion_rule(), backend)
    Mn, un, an, wn = f(
        state.M, col(state.u), one(state.a), col(state.w), A_, col(b_), col(c_), one(dl)
    )
    return State(Mn, xp.reshape(un, (-1,)), xp.reshape(an, ()), xp.reshape(wn, (-1,)))


def gram_update(E: Any, G: Any, backend: str = "numpy") -> Any:
    """Context Gram at the next layer, through the lambdified export."""
    return getattr(gram_rule(), backend)(E, G)


def initial_state(d: int, backend: str = "numpy", like: Any = None) -> State:
    r"""Base case of Theorem 4.1: ``M = I, u = 0, a = 1, w = 0`` (dtype of ``like`` if given)."""
    xp = _xp(backend)
    if like is not None and getattr(like, "dtype", None) == object:  # noqa: E721  (a NumPy dtype compares equal to its type)
        eye = np.array([[Fraction(int(i == j)) for j in range(d)] for i in range(d)], dtype=object)
        zero = np.array([Fraction(0)] * d, dtype=object)
        return State(eye, zero, np.array(Fraction(1), dtype=object), zero.copy())
    dtype = getattr(like, "dtype", None)
    return State(
        xp.eye(d, dtype=dtype),
        xp.zeros(d, dtype=dtype),
        xp.ones((), dtype=dtype),
        xp.zeros(d, dtype=dtype),
    )


def check_parameters(P: Any, Q: Any, d: int | None = None) -> tuple[int, int, int]:
    r"""Validate universal parameter arrays ``P, Q`` of shape ``(L, H, d+1, d+1)``; return ``(L, H, d)``.

    Raises :class:`ValueError` with a one-line message naming the argument and the accepted range.
    """
    for name, arr in (("P", P), ("Q", Q)):
        shape = getattr(arr, "shape", None)
        if shape is None or len(shape) != 4:
            raise ValueError(f"{name} must have shape (L, H, d+1, d+1), got shape {shape}")
        if shape[2] != shape[3]:
            raise ValueError(
                f"{name} must hold square (d+1)x(d+1) matrices, got {shape[2]}x{shape[3]}"
            )
        if shape[0] < 1:
            raise ValueError(f"{name}: number of layers L must be >= 1, got {shape[0]}")
        if shape[1] < 1:
            raise ValueError(f"{name}: number of heads H must be >= 1, got {shape[1]}")
        if shape[2] < 2:
            raise ValueError(f"{name}: token size d+1 must be >= 2 (d >= 1), got {shape[2]}")
    if tuple(P.shape) != tuple(Q.shape):
        raise ValueError(
            f"P and Q must have the same shape, got P {tuple(P.shape)} and Q {tuple(Q.shape)}"
        )
    L, H, D1, _ = P.shape
    if d is not None and D1 != d + 1:
        raise ValueError(
            f"P has token size {D1} but the data has d={d}; P must be (L, H, {d + 1}, {d + 1})"
        )
    return int(L), int(H), int(D1 - 1)


def run_recursion(P: Any, Q: Any, X: Any, y: Any, backend: str = "numpy") -> list[State]:
    r"""Per-layer implicit states ``(M^l, u^l, a^l, w^l)``, ``l = 0..L``, from the derived rules.

    ``P, Q``: ``(L, H, d+1, d+1)``; ``X``: ``(n, d)`` context inputs; ``y``: ``(n,)`` targets.
    The layer-``l`` Gram ``E^l`` is carried by the derived Gram map; ``G^l = Σ_k P_k E^l Q_k`` is
    the layer definition.  The prediction after layer ``l`` is ``⟨w^l, x_t⟩``.
    """
    xp = _xp(backend)
    if getattr(X, "ndim", None) != 2:
        raise ValueError(f"X must have shape (n, d), got shape {getattr(X, 'shape', None)}")
    n, d = X.shape
    if getattr(y, "shape", None) != (n,):
        raise ValueError(
            f"y must have shape (n,) = ({n},) to match X, got shape {getattr(y, 'shape', None)}"
        )
    L, H, _ = check_parameters(P, Q, d)
    Z = xp.concatenate([X, xp.reshape(y, (n, 1))], axis=1)
    E = Z.T @ Z
    state = initial_state(d, backend, like=X)
    states = [state]
    for l in range(L):
        G = sum((P[l, k] @ E @ Q[l, k] for k in range(1, H)), P[l, 0] @ E @ Q[l, 0])
        state = recursion_step(state, G, backend)
        E = gram_update(E, G, backend)
        states.append(state)
    return states
