"""Lemma A.2 / A.3 (second-order analysis): derived objects against independent numeric routes."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from lintf_theory import (
    SECOND_ORDER_SYMBOLS,
    derive_lemma_a2,
    derive_lemma_a3,
    kappa_next_rule,
    layer_count,
    layer_count_exact,
)
from lintf_theory.certify import nonnegative_on, positive_on, positive_on_ray

eps_sym = SECOND_ORDER_SYMBOLS.eps

s = sp.Symbol("s")


def test_certificates_reject_false_claims():
    assert positive_on(s**2 + 1, s, -3, 3)
    assert not positive_on(s**2 - sp.Rational(1, 4), s, 0, 1)
    assert nonnegative_on(s**2 * (1 - s), s, 0, 1).holds
    assert not nonnegative_on(s * (s - sp.Rational(1, 2)), s, 0, 1).holds
    assert not positive_on_ray(s - 3, s, 0)


@given(st.floats(1.0, 1e4), st.floats(1e-3, 0.33))
def test_kappa_next_is_the_condition_number_of_the_mapped_spectrum(kap, t_rel):
    """Derived kappa' (gamma nu = 1/3) equals f(nu)/f(mu) computed from the eigenvalue map numerically."""
    kn, f = (r.numpy for r in kappa_next_rule())
    om = -1.0 / (3.0 * kap)
    lam = np.linspace(1.0, kap, 7)
    img = f(lam, om)
    assert np.all(np.diff(img) >= -1e-12 * img.max())  # monotone on [0, nu]
    assert img[-1] / img[0] == pytest.approx(float(kn(kap)), rel=1e-12)


def test_lemma_a3_constants():
    L = derive_lemma_a3()
    kn = kappa_next_rule()[0].numpy
    e = np.geomspace(1e-6, 10, 200)
    assert np.all(
        kn(1 + e) - 1 <= float(L.leading) * e**2 + 1e-15
    )  # float64 cancellation in kappa' - 1
    assert np.all(kn(1 + e[e <= 0.1]) - 1 <= 2 * e[e <= 0.1] ** 2)
    k = np.geomspace(1.1, 1e8, 500)
    assert np.all(kn(k) <= float(L.c) * k * (1 + 1e-14)) and float(L.c) < 1
    assert (
        L.monotone.holds and L.bound_printed.holds and L.bound_sharp_all_eps and L.ratio_decreasing
    )


def test_lemma_a2_bound_and_best_step():
    A2 = derive_lemma_a2()
    rng = np.random.default_rng(1)
    for eps in (0.5, 0.1, 1e-3):
        lam = np.concatenate([[1.0, 1.0 + eps], rng.uniform(1, 1 + eps, 3)])
        V, _ = np.linalg.qr(rng.standard_normal((5, 5)))
        Sigma = V @ np.diag(lam) @ V.T
        w = V[:, 1]  # worst case: top eigenvector
        assert np.linalg.norm(Sigma @ w - w) == pytest.approx(
            float(A2.sup_unit_step.subs(eps_sym, eps)), rel=1e-12
        )
        eta = float(A2.best_step.subs(eps_sym, eps))
        worst = max(abs(1 - eta * lam.min()), abs(1 - eta * lam.max()))
        assert worst == pytest.approx(float(A2.best_error.subs(eps_sym, eps)), rel=1e-12)


def test_layer_counts_are_consistent():
    for kap in (1.0, 1.05, 2.0, 100.0):
        for eps in (0.5, 1e-2, 1e-9):
            assert layer_count_exact(kap, eps) <= layer_count(kap, eps).total
    with pytest.raises(ValueError, match="kappa"):
        layer_count(0.5, 0.1)
    with pytest.raises(ValueError, match="eps"):
        layer_count(2.0, 0.0)
