r"""Check any linear-attention implementation against Theorem 4.1.

Theorem 4.1 (Lemma 4.3 gives the recursion): for parameters ``P, Q`` there are context-only
``T^l = [[M^l, u^l], [−(w^l)ᵀ, a^l]]`` with ``e_i^l = T^l e_i`` for every context token and for the
query ``(x_t, 0)``, so ``ŷ = ⟨w^L, x_t⟩``.  ``T^l`` comes from the derived recursion through the
bridge (:func:`numerics.evaluate.inspector.implicit_states`, NumPy backend), never from the code under test.

The code under test is a callable ``forward(X, y, x_query)`` with ``X (B, n, d)``, ``y (B, n)``,
``x_query (B, d)`` (float64 NumPy arrays) returning the predictions ``ŷ (B,)`` or every layer's tokens
``(L+1, B, n+1, d+1)`` (context tokens ``(x_i, y_i)`` first, the query last; ``ŷ = −y_{n+1}^L``).
It runs inside ``jax.enable_x64(True)``, so a JAX callable computes in float64.

Properties, checked in this order (:data:`PROPERTIES`); the first that fails is reported:

1. ``token form``: ``e_i^l = T^l e_i`` at every layer (tokens only);
2. ``query isolation``: no context token depends on ``x_t`` (tokens only), and ``ŷ`` is linear in ``x_t``;
3. ``implicit weight``: ``ŷ = ⟨w^L, x_t⟩`` and ``∂ŷ/∂x_t = w^L``, by ``jax.grad`` of ``forward`` or, for a
   callable JAX cannot trace, by central differences (exact for a linear ``ŷ``);
4. ``permutation invariance``: permuting the context changes no prediction.

:func:`assert_follows_theorem_4_1` draws contexts with Hypothesis (:func:`contexts`), so a failure
comes with a shrunk example.  :func:`check_theorem_4_1` checks one given batch.  Needs Hypothesis
(``pip install lintf[test]``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numerics.evaluate import inspector
from numerics.io import check_real_finite
from numerics.models import check_data
from numerics.models.convert import to_universal
from numerics.testing.compare import (
    Forward,
    assert_close,
    assert_implicit_weight,
    assert_query_isolation,
    outputs,
    query_gradient,
)

PROPERTIES = ("token form", "query isolation", "implicit weight", "permutation invariance")


class Context(NamedTuple):
    """A batch of contexts: ``X (B, n, d)``, ``y (B, n)``, ``x_query (B, d)``, and a second query
    ``x_query_alt (B, d)`` for the linearity check; float64."""

    X: np.ndarray
    y: np.ndarray
    x_query: np.ndarray
    x_query_alt: np.ndarray


def _entries(bound: float) -> st.SearchStrategy[float]:
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def contexts(
    draw: st.DrawFn, d: int, max_n: int = 6, batch: int = 2, bound: float = 2.0
) -> Context:
    """Contexts of ``batch`` sequences, ``1 ≤ n ≤ max_n``, entries in ``[−bound, bound]`` (shrink towards 0)."""
    n = draw(st.integers(1, max_n))
    arr = lambda *shape: draw(hnp.arrays(np.float64, shape, elements=_entries(bound)))  # noqa: E731
    return Context(arr(batch, n, d), arr(batch, n), arr(batch, d), arr(batch, d))


@st.composite
def models(
    draw: st.DrawFn,
    d: int | None = None,
    max_d: int = 4,
    max_layers: int = 3,
    max_heads: int = 2,
    max_n: int = 6,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Universal ``(P, Q)``, ``(L, H, d+1, d+1)``, entries ``U[−1, 1] · scale``.  The default
    ``scale = 1/(2 (d+1) √max_n)`` keeps ``‖G^l‖`` of order ``0.1`` on :func:`contexts` of the same ``max_n``."""
    d = draw(st.integers(1, max_d)) if d is None else int(d)
    L, H = draw(st.integers(1, max_layers)), draw(st.integers(1, max_heads))
    s = 1 / (2 * (d + 1) * np.sqrt(max_n)) if scale is None else scale
    shape = (L, H, d + 1, d + 1)
    return tuple(s * draw(hnp.arrays(np.float64, shape, elements=_entries(1.0))) for _ in range(2))  # type: ignore[return-value]


def check_token_form(
    forward: Forward, P: Any, Q: Any, X: Any, y: Any, x_query: Any, rtol: float = 1e-10
) -> None:
    """Property 1 (returns at once for a callable that gives predictions only)."""
    with jax.enable_x64(True):
        _, Z = outputs(forward, X, y, x_query, P.shape[0])
        if Z is None:
            return
        T = np.asarray(
            inspector.transfer_matrices(inspector.implicit_states(P, Q, X, y, backend="numpy"))
        )
        for l in range(Z.shape[0]):
            assert_close(
                f"token form: layer {l} tokens vs T^l e_i (derived recursion)",
                Z[l],
                np.einsum("bij,bkj->bki", T[l], Z[0]),
                rtol,
            )


def check_query_isolation(
    forward: Forward,
    P: Any,
    Q: Any,
    X: Any,
    y: Any,
    x_query: Any,
    rtol: float = 1e-10,
    seed: int = 0,
    s: float = 0.75,
    t: float = -1.5,
    x_query_alt: Any = None,
) -> None:
    """Property 2: the context ignores ``x_t``; ``ŷ(s q_1 + t q_2) = s ŷ(q_1) + t ŷ(q_2)`` with ``q_1 = x_query``
    and ``q_2 = x_query_alt`` (drawn from ``seed`` if not given)."""
    assert_query_isolation(
        forward,
        P.shape[0],
        X,
        y,
        x_query,
        rtol,
        seed,
        s,
        t,
        x_query_alt,
        f"(q1 = x_query, q2 = x_query_alt, s = {s:g}, t = {t:g})",
    )


def check_implicit_weight(
    forward: Forward,
    P: Any,
    Q: Any,
    X: Any,
    y: Any,
    x_query: Any,
    rtol: float = 1e-10,
    differentiate: str = "auto",
) -> None:
    """Property 3: ``ŷ = ⟨w^L, x_t⟩`` and ``∂ŷ/∂x_t = w^L`` with ``w^L`` from the derived recursion."""
    with jax.enable_x64(True):
        w = np.asarray(inspector.implicit_states(P, Q, X, y, backend="numpy").w[-1])
        f, _ = outputs(forward, X, y, x_query, P.shape[0])
        grad, route = query_gradient(forward, X, y, x_query, differentiate)
    assert_implicit_weight(
        f, grad, route, w, x_query, rtol, "derived recursion", "derived recursion"
    )


def check_permutation_invariance(
    forward: Forward,
    P: Any,
    Q: Any,
    X: Any,
    y: Any,
    x_query: Any,
    rtol: float = 1e-10,
    seed: int = 0,
) -> None:
    """Property 4: permuting the context (the same permutation for ``X`` and ``y``) changes no prediction."""
    perm = np.random.default_rng(seed).permutation(X.shape[1])
    with jax.enable_x64(True):
        f, _ = outputs(forward, X, y, x_query, P.shape[0])
        fp, _ = outputs(forward, X[:, perm], y[:, perm], x_query, P.shape[0])
    assert_close("permutation invariance: y_hat with the context permuted", fp, f, rtol)


def check_theorem_4_1(
    forward: Forward,
    P: Any,
    Q: Any,
    X: Any,
    y: Any,
    x_query: Any,
    x_query_alt: Any = None,
    rtol: float = 1e-10,
    differentiate: str = "auto",
    seed: int = 0,
) -> None:
    """All four properties on one batch, in the order of :data:`PROPERTIES`; ``AssertionError`` naming the first failure."""
    P, Q = check_real_finite("P", P), check_real_finite("Q", Q)
    X, y, x_query = (np.asarray(v, np.float64) for v in (X, y, x_query))
    with jax.enable_x64(True):
        check_data(P, Q, X, y, x_query)
    check_token_form(forward, P, Q, X, y, x_query, rtol)
    check_query_isolation(forward, P, Q, X, y, x_query, rtol, seed, x_query_alt=x_query_alt)
    check_implicit_weight(forward, P, Q, X, y, x_query, rtol, differentiate)
    check_permutation_invariance(forward, P, Q, X, y, x_query, rtol, seed)


def assert_follows_theorem_4_1(
    forward: Forward,
    P: Any = None,
    Q: Any = None,
    *,
    weights: dict[str, Any] | None = None,
    convention: str = "row",
    value_scale: float = 1.0,
    y_only: bool = False,
    heads: int | None = None,
    layers: int | None = None,
    max_n: int = 6,
    batch: int = 2,
    max_examples: int = 30,
    rtol: float = 1e-10,
    differentiate: str = "auto",
    seed: int = 0,
) -> None:
    r"""Check ``forward`` against Theorem 4.1 on Hypothesis-drawn contexts; raise ``AssertionError`` with the
    first failing property and the shrunk example.

    The callable's parameters are given as universal ``P, Q`` or as attention ``weights``
    (``W_Q, W_K, W_V, W_O`` with ``convention``, ``value_scale``, ``y_only``, ``heads``, ``layers``; see
    :func:`numerics.models.convert.to_universal`).  ``rtol`` is relative to the largest value compared: ``1e-10``
    suits float64 code of a few layers; float32 code needs about ``1e-4``.  Deterministic by ``seed``.
    """
    if weights is not None:
        if P is not None or Q is not None:
            raise ValueError("give either P, Q or weights, not both")
        P, Q = to_universal(weights, convention, value_scale, y_only, heads, layers)
    elif P is None or Q is None:
        raise ValueError("give the callable's parameters: P and Q, or weights")
    P, Q = check_real_finite("P", P), check_real_finite("Q", Q)
    failure: dict[str, Any] = {}

    @hypothesis_seed(seed)
    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(contexts(P.shape[-1] - 1, max_n, batch))
    def run(ctx: Context) -> None:
        try:
            check_theorem_4_1(
                forward, P, Q, *ctx, rtol=rtol, differentiate=differentiate, seed=seed
            )
        except AssertionError as exc:
            failure["message"], failure["ctx"] = str(exc), ctx
            raise

    try:
        run()
    except AssertionError:
        ctx = failure["ctx"]
        shown = ", ".join(f"{k}={getattr(ctx, k).tolist()}" for k in Context._fields)
        raise AssertionError(
            f"{failure['message']}\nshrunk example (B={ctx.X.shape[0]}, n={ctx.X.shape[1]}, "
            f"d={ctx.X.shape[2]}): {shown}"
        ) from None
