"""``numerics.testing``'s family checks: lintf's own member passes are accepted, planted wrong ones
rejected."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics import models, testing
from numerics.models import family
from tests.strategies import member_data, member_params


def reference(params, output="tokens", query_self=False):
    kind = models.kind_of(params)
    if output == "tokens":
        return lambda X, y, q: kind.forward_tokens(params, X, y, q, query_self)
    return lambda X, y, q: kind.forward(params, X, y, q, query_self=query_self)


# The prediction pass (``kind.forward``) runs the same layers as the token pass; its cases for the
# members whose gates the two fast ``predict`` cases cover (GLA's vector gate, gated DeltaNet's
# input gate and delta rule) are ``slow``.  Their fast siblings: the same member's ``tokens`` case
# (same checks on the token pass) and the ``gla``/``gated-deltanet`` ``predict`` cases.
_FAST_PREDICT = ("gla", "gated-deltanet")


@pytest.mark.parametrize(
    ("name", "output"),
    [
        pytest.param(
            name,
            output,
            marks=[pytest.mark.slow] if output == "predict" and name not in _FAST_PREDICT else [],
        )
        for name in family.MEMBERS
        for output in ("tokens", "predict")
    ],
)
def test_reference_members_pass_every_check(name, output):
    params = member_params(name, 21, layers=2)
    testing.check_member(reference(params, output), params, *member_data(22))


def _first_layer(params):
    """Depth 1 as the first layer of a 2-layer draw: the shapes the other tests draw already."""
    return jax.tree_util.tree_map(lambda a: a[:1], params)


def test_causal_depth_one_is_order_invariant_and_checked_so():
    params = _first_layer(member_params("causal", 23, layers=2))
    testing.check_context_order(reference(params), params, *member_data(24))
    # an implementation that reads the context in order from depth 1 (RetNet's decay) breaks the
    # invariance
    decayed = _first_layer(member_params("retnet", 23, layers=2))._replace(
        W_V=params.W_V, W_Q=params.W_Q
    )
    with pytest.raises(AssertionError, match="context order: y_hat of causal"):
        testing.check_context_order(reference(decayed), params, *member_data(24))


def test_query_reading_itself_fails_query_isolation():
    params = member_params("mamba2", 25, layers=2)
    with pytest.raises(AssertionError, match="query isolation: y_hat"):
        testing.check_member(
            reference(params, "predict", query_self=True), params, *member_data(26)
        )


def test_context_reading_the_query_fails_query_isolation():
    params = member_params("gla", 27, layers=2)
    inner = reference(params)

    def leaky(X, y, q):  # every context token sees the query's first input
        Z = inner(X, y, q)
        return Z.at[1:, :, :-1, -1].add(1e-3 * jnp.asarray(q)[None, :, None, 0])

    with pytest.raises(AssertionError, match="query isolation: context tokens"):
        testing.check_member(leaky, params, *member_data(28))


def test_wrong_gate_fails_implicit_weight():
    params = member_params("gated-deltanet", 29, layers=2)
    swapped = params._replace(
        w_alpha=params.w_beta, b_alpha=params.b_beta, w_beta=params.w_alpha, b_beta=params.b_alpha
    )  # alpha <-> beta
    with pytest.raises(AssertionError, match="implicit weight: y_hat vs <w"):
        testing.check_member(reference(swapped), params, *member_data(30))


def test_non_causal_pass_for_a_causal_member_fails():
    """The paper's layer (every token reads the whole context) in place of causal linear attention:
    at depth 2 it is another model (implicit weight), and it ignores the order of the context
    (context order)."""
    params = member_params("causal", 31, layers=2)
    full = lambda X, y, q: models.predict(params.W_V, params.W_Q, X, y, q)  # noqa: E731
    X, y, xq = member_data(32)
    with pytest.raises(AssertionError, match="implicit weight"):
        testing.check_member(full, params, X, y, xq)
    with pytest.raises(AssertionError, match="is causal, but permuting the context moves y_hat"):
        testing.check_context_order(full, params, X, y, xq)


def test_numpy_callable_is_checked_by_central_differences():
    params = member_params("deltanet", 33, layers=2)
    kind = models.kind_of(params)
    numpy_forward = lambda X, y, q: np.asarray(kind.forward(params, X, y, q))  # noqa: E731
    testing.check_member(numpy_forward, params, *member_data(34), differentiate="fd", rtol=1e-9)
