"""Statements of the diagonal form, Lemma 4.4, GD++ and Sections 5.2 / 5.3 for rendering."""

from __future__ import annotations

import sympy as sp

from ._diagonal import derive_diagonal, omegas_as_sums, one_head_residual
from ._gdpp import derive_gdpp, derive_rescaling
from ._lemma44 import alpha_l_in_g, derive_alpha_l, derive_lemma44
from ._render import Statement
from ._step_size import derive_step_size


def diagonal_statements() -> list[Statement]:

    r = derive_diagonal(1)
    ref = "Section 5 (diagonal reparametrisation)"
    names = ("\\omega_{xx}", "\\omega_{xy}", "\\omega_{yx}", "\\omega_{yy}")
    out = [
        Statement(ref, f"${n}$ as a sum over heads", n, s)
        for n, s in zip(names, omegas_as_sums(), strict=True)
    ]
    out += [
        Statement(ref, "Diagonal layer, x-part", "x'", r.x_next),
        Statement(ref, "Diagonal layer, y-part", "y'", r.y_next),
        Statement(
            ref,
            "One head",
            "\\omega_{xx}\\omega_{yy} - \\omega_{xy}\\omega_{yx}",
            one_head_residual(1),
        ),
        Statement(
            ref,
            "Two heads",
            "\\omega_{xx}\\omega_{yy} - \\omega_{xy}\\omega_{yx}",
            one_head_residual(2),
            "Not identically zero: two heads reach parameters one head cannot.",
        ),
    ]
    return out


def lemma44_statements() -> list[Statement]:

    r = derive_lemma44()
    ref = "Lemma 4.4 / A.1"
    note = (
        "Grouping: every term containing $g = \\Sigma(a w^* - w)$, including the bilinear "
        "$u\\,(w^{*T} g)$, is put in $\\Gamma$ / $\\Pi$, as in the paper. The paper prints "
        "$\\Gamma, \\Pi$ with $a\\,u\\,w^{*T}$ where the derivation gives $u\\,w^{*T}$."
    )
    return [
        Statement(ref, "Context moment at layer l", "\\alpha^l", derive_alpha_l()),
        Statement(ref, "Context moment with g", "\\alpha^l", alpha_l_in_g()),
        Statement(ref, "Lambda", "\\Lambda^l", r.Lambda),
        Statement(ref, "Gamma", "\\Gamma^l", r.Gamma),
        Statement(ref, "s", "s^l", r.s),
        Statement(ref, "Pi", "\\Pi^l", r.Pi),
        Statement(ref, "Phi", "\\Phi^l", r.Phi, note),
    ]


def gdpp_statements() -> list[Statement]:

    g = derive_gdpp()
    s = derive_rescaling()
    return [
        Statement("GD++", "GD++ layer, x-part", "x'", g.x_next),
        Statement("GD++", "GD++ layer, y-part", "y'", g.y_next),
        Statement("GD++", "Covariance map", "\\Sigma'", g.Sigma_next),
        Statement("GD++", "Eigenvalue map", "\\mu'", g.eigen_map),
        Statement("Section 5.2", "omega_yy-only layer", "y'", s.factor * sp.Symbol("y")),
        Statement("Section 5.2", "Implicit weight", "w^{l+1}", s.w_next),
    ]


def step_size_statements() -> list[Statement]:

    s = derive_step_size()
    ref = "Section 5.3"
    return [
        Statement(ref, "Exact prediction", "\\hat y", s.exact_lam),
        Statement(ref, "Exact prediction (OLS variables)", "\\hat y", s.exact),
        Statement(
            ref,
            "Neglected multiplicative part of layer 1",
            "x_i^1 - x_i - \\omega_{xy} r_i \\alpha",
            s.multiplicative,
        ),
        Statement(ref, "Approximate prediction", "\\hat y_{approx}", s.approx),
        Statement(ref, "Effective step size", "\\eta", s.step),
        Statement(ref, "Neglected term", "\\hat y - \\hat y_{approx}", s.neglected),
    ]
