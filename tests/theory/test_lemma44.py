"""Lemma 4.4 / A.1: the derived preconditioned-GD form against the bridge recursion and forward pass."""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import assume, given

from lintf_theory import alpha_l_rule, derive_lemma44, layer_omegas, lemma44_rule, run_recursion
from lintf_theory.exact import diag_universal, solve, tokens
from lintf_theory.layer import layer_forward
from lintf_theory.matexpr import is_zero
from lintf_theory.symbols import M, a_s, omega_xy, omega_yx, u, w_star
from tests.strategies import diag_problems


def _setup(p: dict):
    d, n = p["d"], p["n"]
    h = p["heads"]
    P, Q = diag_universal(h[..., 0], h[..., 1], h[..., 2], h[..., 3], d)
    X, y = p["X"], p["y"]
    S = X.T @ X
    assume(sp.Matrix(S.tolist()).det() != 0)  # w* needs Σ invertible
    ws = solve(S, (X.T @ y).reshape(-1, 1))
    r = y - (X @ ws).reshape(-1)
    Zs = [tokens(X, y, p["x_query"])]
    for l in range(P.shape[0]):
        Zs.append(layer_forward(list(P[l]), list(Q[l]), Zs[-1], n))
    return P, Q, S, ws, r @ r, Zs


@given(diag_problems(max_d=2, max_n=4, max_H=2, max_L=3, min_n_over_d=1))
def test_lemma44_form_reproduces_recursion(p: dict) -> None:
    d, n = p["d"], p["n"]
    P, Q, S, ws, rho, Zs = _setup(p)
    states = run_recursion(P, Q, p["X"], p["y"], backend="numpy")
    f, fa = lemma44_rule().numpy, alpha_l_rule().numpy
    for l in range(P.shape[0]):
        st, nxt = states[l], states[l + 1]
        Xl, yl = Zs[l][:n, :d], Zs[l][:n, d]
        M_, u_, a_, w_ = st.M, st.u.reshape(-1, 1), st.a.reshape(()).item(), st.w.reshape(-1, 1)
        # α^l of the forward pass equals the derived α^l(M, u, a, w, w*, ρ, Σ).
        assert np.array_equal((Xl.T @ yl).reshape(-1), fa(M_, u_, a_, w_, ws, rho, S).reshape(-1))
        om = layer_omegas(*(p["heads"][l, :, i] for i in range(4)))
        g = S @ (a_ * ws - w_)
        Lu, Gam, s, Pi, Phi = f(M_, u_, a_, ws, rho, Xl.T @ Xl, yl @ yl, *om)
        assert np.array_equal((u_ - Lu + Gam @ g).reshape(-1), nxt.u)
        assert np.array_equal(((1 + s) * w_ - Pi @ g - Phi @ u_).reshape(-1), nxt.w)


def test_corrected_gamma_pi_and_printed_forms_differ() -> None:
    r = derive_lemma44()
    corrected_gamma = a_s * omega_xy * (M + u * w_star.T)
    corrected_pi = omega_yx * M.T * (M + u * w_star.T)
    assert is_zero(r.Gamma - corrected_gamma) and is_zero(r.Pi - corrected_pi)
    assert not is_zero(r.Gamma - a_s * omega_xy * (M + a_s * u * w_star.T))
    assert not is_zero(r.Pi - omega_yx * M.T * (M + a_s * u * w_star.T))
