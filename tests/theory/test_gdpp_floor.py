"""GD++ is a spectral filter; ridge at λ = E σ² is its floor (the theory, and the floor among the
baselines).

Independent routes: the literal exact forward pass against the derived polynomial ``p_L``; the
floor's predictor against ridge solved in NumPy.  The report's check of the floor is
``tests/reproduce/test_floor.py``, the printed tables' ``tests/baselines/test_gdpp_floor.py``.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from lintf_theory import (
    GDPP_FLOOR_SYMBOLS,
    GDPP_SYMBOLS,
    derive_pointwise_optimum,
    filter_polynomials,
)
from lintf_theory.exact import fraction_eye
from numerics import baselines
from numerics.cli import main
from numerics.data import Noise
from proofs import Context
from proofs.gdpp_ridge_floor import RTOL, counterexample, exact_prediction, float_gap, matrix_horner
from tests.strategies import property_settings, rational_arrays, rationals

mu, v_s = GDPP_SYMBOLS.mu, GDPP_FLOOR_SYMBOLS.v_s

U5, C13 = "uniform:5", "categorical:1,3"


@st.composite
def gdpp_problems(draw: st.DrawFn):  # noqa: ANN201
    """A one-head GD++ model (``q_y = 0``) with ``L ≤ 3`` layers and exact data, ``d ≤ 2``, ``n ≤ 4``."""
    L, d, n = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 4))
    heads = [[(draw(rationals), draw(rationals), draw(rationals), Fraction(0))] for _ in range(L)]
    ctx = Context(
        draw(rational_arrays((n, d))), draw(rational_arrays((n,))), draw(rational_arrays((d,)))
    )
    return heads, ctx


@property_settings(10)
@given(gdpp_problems())
def test_gdpp_prediction_is_the_derived_filter_exactly(problem) -> None:  # noqa: ANN001
    heads, ctx = problem
    L, d = len(heads), ctx.X.shape[1]
    wxx = tuple(h[0][0] * h[0][2] for h in heads)
    wyx = tuple(h[0][1] * h[0][2] for h in heads)
    p = filter_polynomials(L, (wxx, wyx)).p[-1]
    coeffs = [Fraction(str(c)) for c in reversed(sp.Poly(p, mu).all_coeffs())] or [Fraction(0)]
    spec = ctx.x_query @ matrix_horner(coeffs, ctx.X.T @ ctx.X, fraction_eye(d)) @ (ctx.X.T @ ctx.y)
    assert exact_prediction(heads, d, ctx) == spec


def test_filter_degree_and_float_route() -> None:
    for L in (1, 2, 3):
        fp = filter_polynomials(L)
        assert sp.degree(fp.residual, mu) == (3**L - 1) // 2
        assert fp.p[-1].free_symbols - {mu} <= set(fp.omegas[0]) | set(fp.omegas[1])
        assert float_gap(L, L) < RTOL


def test_pointwise_optimum_is_ridge_at_the_mean_variance() -> None:
    po = derive_pointwise_optimum()
    assert sp.simplify(po.f_star - 1 / (mu + v_s)) == 0 and po.excess == 0 and po.ridge_gap == 0
    assert po.sigma2_degree == 1


def test_diag_with_omega_yy_or_omega_xy_is_not_linear_in_y() -> None:
    for kind in ("omega_yy", "omega_xy"):
        y1, y2 = counterexample(kind)
        assert y2 != 2 * y1


# ----------------------------------------------------------------------------------------------- baselines


def test_baselines_json_carries_the_floor_at_the_prior_mean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # as many evaluation as tuning sequences, and as the printed tables' check below evaluates
    # (4000): every chunk of the module is cut to one size, and its programs compile once
    assert (
        main(
            [
                "baselines",
                "--noise",
                U5,
                "--noise",
                C13,
                "--json",
                "--eval-sequences",
                "4000",
                "--tune-sequences",
                "4000",
                "--methods",
                "ConstRR,ConstRR_Esigma2,Oracle",
            ]
        )
        == 0
    )
    res = json.loads(capsys.readouterr().out)["results"]
    assert Fraction(res[U5][baselines.FLOOR]["lam"]).limit_denominator(100) == Fraction(25, 3)
    assert res[C13][baselines.FLOOR]["lam"] == 5.0
    for r in res.values():
        assert r["ConstRR"]["lam_const"] > 0 and np.isfinite(r[baselines.FLOOR]["loss"])


def test_floor_predictor_is_ridge_at_the_prior_mean() -> None:
    import jax

    from numerics.baselines.scoring import batches

    # a chunk as the evaluation draws it, of the sizes of the command's above and of the printed
    # tables' check below (4000 sequences, n = 20, d = 10): the programs that draw it and its
    # spectra are theirs
    b, sp = next(batches(jax.random.PRNGKey(0), U5, 4000, 20, 10))
    pred = baselines.predictor(baselines.Tuned(lam_const=1.0), U5, (baselines.FLOOR,))
    got = np.asarray(pred(b, sp)[baselines.FLOOR])
    X, y, xq = (np.asarray(a) for a in (b.X, b.y, b.x_query))
    w = np.linalg.solve(
        np.einsum("bni,bnj->bij", X, X) + 25 / 3 * np.eye(10),
        np.einsum("bni,bn->bi", X, y)[..., None],
    )[..., 0]
    np.testing.assert_allclose(got, np.einsum("bi,bi->b", xq, w), rtol=1e-10)


@pytest.mark.slow
def test_tuned_constrr_agrees_with_the_prior_mean_within_tuning_noise() -> None:
    import jax

    lams = [
        baselines.tune(jax.random.PRNGKey(s), U5, 20_000, 20, 10, ("ConstRR",)).lam_const
        for s in range(6)
    ]
    mean, se = np.mean(lams), np.std(lams, ddof=1) / np.sqrt(len(lams))
    assert abs(mean - Noise.parse(U5).mean_sigma2) < 4 * se + 1e-3, (lams, mean, se)
