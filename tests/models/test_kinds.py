"""Models (docs/model.md: the layer, the diagonal form): two forward passes, precisions, conversions, bad input."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics import models
from tests.strategies import RTOL32, RTOL64, draw_params, max_rel_err, scaled_model, toy_batch


@pytest.mark.parametrize(
    ("kind", "layers", "heads"), [("full", 4, 2), ("diag", 4, 3), ("gdpp", 4, 1)]
)
def test_forward_tokens_readout_equals_predict_all_layers(kind, layers, heads):
    """Literal token pass (reference) vs the Gram-form pass through the derived Gram map."""
    data = toy_batch(1)
    P, Q = scaled_model(kind, 7, layers, heads, data)
    Z = models.forward_tokens(P, Q, data.X, data.y, data.x_query)
    assert Z.shape == (layers + 1, *data.X.shape[:1], data.X.shape[1] + 1, data.X.shape[2] + 1)
    reads = models.predict(P, Q, data.X, data.y, data.x_query, all_layers=True)
    assert reads.shape == (layers + 1, data.X.shape[0])
    assert max_rel_err(reads, models.readout(Z)) < RTOL64
    assert float(jnp.max(jnp.abs(reads[-1]))) > 1e-3  # the check is not vacuous
    last = models.predict(P, Q, data.X, data.y, data.x_query)
    np.testing.assert_array_equal(np.asarray(last), np.asarray(reads[-1]))


def test_float32_runs_in_float32_and_matches_float64():
    d64 = toy_batch(2)
    # the sizes of the first test's FULL model: the float64 reference passes are compiled already
    P, Q = scaled_model("full", 3, 4, 2, d64)
    d32 = jax.tree_util.tree_map(lambda v: v.astype(jnp.float32), d64)
    P32, Q32 = P.astype(jnp.float32), Q.astype(jnp.float32)
    r32 = models.predict(P32, Q32, d32.X, d32.y, d32.x_query, all_layers=True)
    z32 = models.forward_tokens(P32, Q32, d32.X, d32.y, d32.x_query)
    assert r32.dtype == jnp.float32 and z32.dtype == jnp.float32
    r64 = models.predict(P, Q, d64.X, d64.y, d64.x_query, all_layers=True)
    assert max_rel_err(r32, r64) < RTOL32
    assert max_rel_err(models.readout(z32), r64) < RTOL32

    def init32(key, kind):
        params = models.init(kind, key, 1, 1, 1, 0.1, jnp.float32)
        return params, models.universal(params, 1)

    for kind in models.KINDS:
        # traced, not run: a dtype is fixed when the program is traced (jax.random would compile a
        # program per kind)
        params, PQ = jax.eval_shape(functools.partial(init32, kind=kind), jax.random.key(0))
        assert all(x.dtype == jnp.float32 for x in jax.tree_util.tree_leaves(params))
        assert all(x.dtype == jnp.float32 for x in PQ)


def test_conversions_round_trip():
    # the sizes of the models of the first test (d = 3, four layers; 3, 1 and 2 heads): their
    # conversions are compiled once for the module
    dg = draw_params("diag", 4, 4, 3, 3)
    back = models.from_universal("diag", *models.universal(dg, 3))
    for a, b in zip(dg, back):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    gd = draw_params("gdpp", 4, 4, 3)
    back = models.from_universal("gdpp", *models.universal(gd, 3))
    for a, b in zip(gd, back):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    full = draw_params("full", 4, 4, 3, 2)
    back = models.from_universal("full", *models.universal(full, 3))
    np.testing.assert_array_equal(np.asarray(back.P), np.asarray(full.P))
    np.testing.assert_array_equal(np.asarray(back.Q), np.asarray(full.Q))
    # omegas of a GD++ model: omega_xy = omega_yy = 0 and the two given ones.
    wxx, wxy, wyx, wyy = models.omegas(gd)
    assert np.all(np.asarray(wxy) == 0) and np.all(np.asarray(wyy) == 0)
    np.testing.assert_array_equal(np.asarray(wxx), np.asarray(gd.omega_xx))
    np.testing.assert_array_equal(np.asarray(wyx), np.asarray(gd.omega_yx))


def test_multihead_qy0_diag_converts_to_gdpp_with_same_predictions():
    data = toy_batch(5)
    P, Q = scaled_model("diag", 11, 4, 3, data)  # the first test's DIAG sizes
    dg = models.diag_from_universal(P, Q)
    dg = dg._replace(qy=jnp.zeros_like(dg.qy))  # the paper's GD++: q_y = 0 in every head
    P0, Q0 = models.universal(dg, 3)
    gd = models.gdpp_from_universal(P0, Q0, atol=1e-14)
    Pg, Qg = models.universal(gd, 3)
    assert Pg.shape[1] == 1
    r_diag = models.predict(P0, Q0, data.X, data.y, data.x_query, all_layers=True)
    r_gdpp = models.predict(Pg, Qg, data.X, data.y, data.x_query, all_layers=True)
    assert max_rel_err(r_gdpp, r_diag) < RTOL64
    assert float(jnp.max(jnp.abs(r_diag))) > 1e-4


def test_diag_model_equals_the_omega_form_of_its_universal_full_pass():
    r"""The diagonal reparametrisation (docs/model.md), typed here as the claim under test:
    ``x' = x + ω_xx Σ x + ω_xy y α``, ``y' = y + ω_yx ⟨α, x⟩ + ω_yy λ y`` on every token, against
    the literal FULL pass of the DIAG model's universal ``P, Q``."""
    data = toy_batch(6)
    P, Q = scaled_model("diag", 13, 4, 3, data)  # the first test's DIAG sizes
    Z = np.asarray(models.forward_tokens(P, Q, data.X, data.y, data.x_query))
    dg = models.diag_from_universal(P, Q)
    wxx, wxy, wyx, wyy = (np.asarray(w) for w in models.omegas(dg))
    n = data.X.shape[1]
    # the claimed form in NumPy (the reference; no per-op JAX programs to compile)
    x = np.concatenate([np.asarray(data.X), np.asarray(data.x_query)[:, None]], axis=1)
    y = np.concatenate([np.asarray(data.y), np.zeros_like(np.asarray(data.y)[:, :1])], axis=1)
    for l in range(P.shape[0]):
        Sigma = np.einsum("bni,bnj->bij", x[:, :n], x[:, :n])
        alpha = np.einsum("bn,bni->bi", y[:, :n], x[:, :n])
        lam = np.sum(y[:, :n] ** 2, axis=1)
        x, y = (
            x
            + wxx[l] * np.einsum("bij,bkj->bki", Sigma, x)
            + wxy[l] * y[..., None] * alpha[:, None],
            y + wyx[l] * np.einsum("bi,bki->bk", alpha, x) + wyy[l] * lam[:, None] * y,
        )
        assert max_rel_err(x, Z[l + 1, ..., :-1]) < RTOL64
        assert max_rel_err(y, Z[l + 1, ..., -1]) < RTOL64


def test_diag_depends_on_heads_only_through_omegas():
    data = toy_batch(7)
    one = models.Diag(
        *(jnp.array([[v]]) for v in (0.3, -0.2, 0.1, 0.4))
    )  # omegas .03, .12, -.02, -.08
    two = models.Diag(
        jnp.array([[0.3, 0.6]]),
        jnp.array([[-0.2, -0.4]]),
        jnp.array([[0.2, -0.05]]),
        jnp.array([[0.0, 0.2]]),
    )
    np.testing.assert_allclose(
        [float(o[0]) for o in models.omegas(two)],
        [float(o[0]) for o in models.omegas(one)],
        rtol=1e-14,
    )
    r1 = models.predict(*models.universal(one, 3), data.X, data.y, data.x_query)
    r2 = models.predict(*models.universal(two, 3), data.X, data.y, data.x_query)
    assert max_rel_err(r2, r1) < RTOL64


def test_conversion_errors_are_one_line():
    # the first test's FULL and DIAG sizes: the conversions' programs are compiled already
    full = models.universal(draw_params("full", 0, 4, 3, 2), 3)
    with pytest.raises(ValueError, match="not of DIAG form"):
        models.diag_from_universal(*full)
    with pytest.raises(ValueError, match="not of DIAG form"):
        models.gdpp_from_universal(*full)
    dg = models.universal(draw_params("diag", 1, 4, 3, 3), 3)
    with pytest.raises(ValueError, match="not a GD\\+\\+ model: omega_xy"):
        models.gdpp_from_universal(*dg)
    with pytest.raises(ValueError, match="model kind must be one of"):
        models.from_universal("softmax", *dg)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("transformer", 1, 3, 1), "model kind must be one of full, diag, gdpp"),
        (("full", 0, 3, 1), "layers L must be >= 1"),
        (("diag", 2, 3, 0), "heads H must be >= 1"),
        (("full", 2, 0, 1), "input dimension d must be >= 1"),
        (("gdpp", 2, 3, 2), "GD\\+\\+ has one head per layer"),
    ],
)
def test_init_rejects_bad_arguments(args, match):
    kind, layers, d, heads = args
    with pytest.raises(ValueError, match=match):
        models.init(kind, jax.random.key(0), layers, d, heads)


def test_bad_shapes_are_one_line_errors():
    data = toy_batch(8)
    P, Q = models.universal(draw_params("full", 0, 2, 3), 3)
    X, y, xq = data.X, data.y, data.x_query
    cases = [
        ((P, Q, X[0], y, xq), "X must have shape \\(B, n, d\\)"),
        ((P, Q, X, y[:, :-1], xq), "y must have shape \\(B, n\\)"),
        ((P, Q, X, y, xq[:-1]), "x_query must have shape \\(B, d\\)"),
        ((P, Q, X[..., :2], y, xq[:, :2]), "data has d=2"),
        ((P[0], Q[0], X, y, xq), "P must have shape \\(L, H, d\\+1, d\\+1\\)"),
        ((P, Q[:, :, :3], X, y, xq), "Q must hold square"),
        ((P[:0], Q[:0], X, y, xq), "number of layers L must be >= 1"),
        ((P[:, :0], Q[:, :0], X, y, xq), "number of heads H must be >= 1"),
    ]
    for fn in (models.predict, models.forward_tokens):
        for args, match in cases:
            with pytest.raises(ValueError, match=match) as exc:
                fn(*args)
            assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match="unknown parameter type"):
        models.universal((P, Q), 3)  # a plain tuple is not a parametrisation
