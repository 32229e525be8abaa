"""``numerics.testing.theorem``: lintf's own passes satisfy it; implementations that break Theorem 4.1 are rejected."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given, settings

from lintf_theory import attention_weights, weighted_layer_forward
from numerics import models, testing
from tests.fakes import near_miss
from tests.strategies import scaled_model, toy_batch


@pytest.fixture(scope="module")
def model():
    b = toy_batch(90)
    return tuple(np.asarray(v) for v in scaled_model("full", 91, 2, 2, b))


def variant_tokens(P, Q, kind: str, gamma: float = 0.5):
    """Every layer's tokens ``(L+1, B, n+1, d+1)`` of a row-weighted variant of the layer (NumPy, float64)."""

    def forward(X, y, xq):
        B, n, _ = X.shape
        W = attention_weights(kind, n, gamma).astype(np.float64)
        Z = np.concatenate(
            [
                np.concatenate([X, y[..., None]], -1),
                np.concatenate([xq, np.zeros((B, 1))], -1)[:, None],
            ],
            axis=1,
        )
        out = [Z]
        for l in range(P.shape[0]):
            Z = np.stack([weighted_layer_forward(P[l], Q[l], Z[b], n, W) for b in range(B)])
            out.append(Z)
        return np.stack(out)

    return forward


@pytest.mark.parametrize("output", ["tokens", "predict"])
def test_lintf_forward_passes_follow_theorem_4_1(model, output):
    P, Q = model
    # the token pass jitted: each context length compiles it (and, under jax.grad, its gradient)
    # as one program, where op by op it would compile its many einsums one by one; the prediction
    # pass stays op by op (a program per length costs it more than its few operations)
    forward = {
        "tokens": jax.jit(lambda X, y, q: models.forward_tokens(P, Q, X, y, q)),
        "predict": lambda X, y, q: models.predict(P, Q, X, y, q),
    }[output]
    # contexts of one to four tokens (d = 3: fewer, as many and more tokens than inputs): each new
    # length compiles the passes and their gradients anew, and six lengths cost half as much again
    testing.assert_follows_theorem_4_1(forward, P, Q, max_n=4, max_examples=10)


def test_numpy_callable_is_differentiated_by_finite_differences(model):
    P, Q = model
    testing.assert_follows_theorem_4_1(variant_tokens(P, Q, "standard"), P, Q, max_examples=5)
    with pytest.raises(Exception, match="TracerArrayConversionError|numpy|__array__"):  # noqa: PT011
        testing.check_theorem_4_1(
            variant_tokens(P, Q, "standard"), P, Q, *_batch(), differentiate="jax"
        )


def _batch(seed: int = 92, n: int = 5):
    b = toy_batch(seed, n=n)
    return tuple(np.asarray(v) for v in (b.X, b.y, b.x_query))


def test_query_in_the_key_sum_is_rejected_with_a_shrunk_example(model):
    P, Q = model
    tokens = jax.jit(lambda X, y, q: models.forward_tokens(P, Q, X, y, q))  # cheap to shrink over

    def leaky(X, y, xq):  # the query joins the context in the key sum: n+1 keys
        B, n, d = X.shape
        Xq = np.concatenate([X, xq[:, None]], axis=1)
        yq = np.concatenate([y, np.zeros((B, 1))], axis=1)
        return np.delete(np.asarray(tokens(Xq, yq, xq)), n, axis=2)  # one copy of the query

    # contexts of at most two tokens: the failing example shrinks over two shapes, not six
    with pytest.raises(AssertionError) as info:
        testing.assert_follows_theorem_4_1(leaky, P, Q, max_n=2)
    msg = str(info.value)
    assert msg.split(":")[0] in testing.PROPERTIES and "shrunk example (B=2, n=1, d=3)" in msg, msg


@pytest.mark.parametrize(
    ("kind", "first"), [("causal", "token form"), ("key_decay", "implicit weight")]
)
def test_each_broken_layer_fails_its_property_first(model, kind, first):
    P, Q = model
    tokens = variant_tokens(P, Q, kind)
    forward = (
        tokens if kind == "causal" else (lambda X, y, q: -tokens(X, y, q)[-1, :, -1, -1])
    )  # predictions only
    with pytest.raises(AssertionError, match=f"^{first}"):
        testing.check_theorem_4_1(forward, P, Q, *_batch())
    if kind == "key_decay":  # position-dependent keys: permuting the context changes the prediction
        with pytest.raises(AssertionError, match="^permutation invariance"):
            testing.check_permutation_invariance(forward, P, Q, *_batch())


def test_prediction_nonlinear_in_the_query_fails_query_isolation(model):
    P, Q = model
    X, y, xq = _batch()
    bent = lambda X_, y_, q: models.predict(P, Q, X_, y_, q) + 0.1 * (q[:, 0] ** 2 - xq[:, 0] ** 2)  # noqa: E731
    testing.check_implicit_weight(lambda X_, y_, q: models.predict(P, Q, X_, y_, q), P, Q, X, y, xq)
    with pytest.raises(AssertionError, match="^query isolation: y_hat\\(s q1"):
        testing.check_theorem_4_1(bent, P, Q, X, y, xq)


def test_wrong_gradient_fails_implicit_weight(model):
    P, Q = model
    frozen = lambda X, y, q: models.predict(P, Q, X, y, jax.lax.stop_gradient(q))  # noqa: E731  (right values)
    with pytest.raises(AssertionError, match="^implicit weight: d y_hat / d x_t \\(jax.grad\\)"):
        testing.check_implicit_weight(frozen, P, Q, *_batch())


def test_sign_and_batch_errors(model):
    P, Q = model
    plus = lambda X, y, q: -models.predict(P, Q, X, y, q)  # noqa: E731  (reads +y instead of -y)
    with pytest.raises(AssertionError, match="^implicit weight: y_hat vs <w\\^L, x_t>"):
        testing.check_theorem_4_1(plus, P, Q, *_batch())
    with pytest.raises(AssertionError, match="^output: forward must return predictions"):
        testing.check_theorem_4_1(lambda X, y, q: np.zeros(3), P, Q, *_batch())
    with pytest.raises(ValueError, match="give either P, Q or weights"):
        testing.assert_follows_theorem_4_1(plus, P, Q, weights={})


@settings(max_examples=10)
@given(testing.models(d=2, max_layers=2), testing.contexts(2))
def test_strategies_draw_valid_models_and_contexts(PQ, ctx):
    P, Q = PQ
    assert P.shape == Q.shape and P.shape[2:] == (3, 3) and P.shape[0] <= 2
    B, n, d = ctx.X.shape
    assert (
        (B, d) == (2, 2) and 1 <= n <= 6 and ctx.y.shape == (B, n) and ctx.x_query.shape == (B, d)
    )
    assert np.all(np.isfinite(np.asarray(models.predict(P, Q, ctx.X, ctx.y, ctx.x_query))))


NEAR_MISS = 1e-6  # one part in a million: far above float64 rounding, far below any visible error


@pytest.mark.parametrize(
    ("output", "first"), [("tokens", "token form"), ("predict", "implicit weight")]
)
def test_a_near_miss_fails_at_the_default_tolerance_and_rounding_does_not(model, output, first):
    """Outputs off by a relative ``1e-6`` fail every entry point at its default ``rtol`` (1e-10), naming the
    property and the difference measured; off by ``1e-13`` (float64 rounding of a few operations) they pass."""
    P, Q = model
    # jitted: the failing example shrinks over a few hundred calls, each one program call, not op by op
    jitted = {
        "tokens": jax.jit(lambda X, y, q: models.forward_tokens(P, Q, X, y, q)),
        "predict": jax.jit(lambda X, y, q: models.predict(P, Q, X, y, q)),
    }[output]

    def exact(X, y, q):
        # on NumPy arrays, as the near miss reads its output: the kit's jax.grad fails at once and
        # it takes differences, instead of first compiling autodiff of the pass for every shape
        return jitted(np.asarray(X), np.asarray(y), np.asarray(q))

    X, y, xq = _batch(93)

    def off_by(rel: float):
        return near_miss(exact, rel, tokens=output == "tokens")

    # contexts of at most two tokens: the failing example shrinks over two shapes, not six
    with pytest.raises(AssertionError, match=f"^{first}: .*relative difference 1e-06 > rtol 1e-10"):
        testing.assert_follows_theorem_4_1(off_by(NEAR_MISS), P, Q, max_n=2, max_examples=2)
    with pytest.raises(AssertionError, match=f"^{first}: .*relative difference 1e-06 > rtol 1e-10"):
        testing.check_theorem_4_1(off_by(NEAR_MISS), P, Q, X, y, xq)
    check = {"tokens": testing.check_token_form, "predict": testing.check_implicit_weight}[output]
    with pytest.raises(AssertionError, match="relative difference 1e-06 > rtol 1e-10"):
        check(off_by(NEAR_MISS), P, Q, X, y, xq)
    testing.check_theorem_4_1(off_by(1e-13), P, Q, X, y, xq)
    testing.assert_follows_theorem_4_1(off_by(1e-13), P, Q, max_n=2, max_examples=2)


def test_a_near_miss_under_permutation_fails_at_the_default_tolerance(model):
    """A prediction that depends on the context's order by a relative ``1e-6`` fails permutation invariance."""
    P, Q = model
    X, y, xq = _batch(94)

    def ordered(X, y, q):
        f = np.asarray(models.predict(P, Q, X, y, q))
        return f * (
            1 + NEAR_MISS * np.tanh(y[:, 0])
        )  # the first context token's target nudges the prediction

    with pytest.raises(
        AssertionError,
        match="^permutation invariance: .* relative difference [0-9.e-]+ > rtol 1e-10",
    ):
        testing.check_permutation_invariance(ordered, P, Q, X, y, xq)
