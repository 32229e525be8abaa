r"""Certified sign of a univariate polynomial on a closed interval (no sampling).

Used by the second-order analysis (Lemma A.3) to turn inequalities between rational functions
into polynomial positivity.  The certificate is exact: SymPy's ``Poly.count_roots`` counts the
real roots in a closed rational interval by Sturm sequences, so "no root in ``[lo, hi]`` and
positive at ``lo``" proves positivity on the whole interval.

:func:`nonnegative_on` first divides out the roots that sit exactly at the interval's end
points (``p = (s - lo)^i (hi - s)^j q``) and then certifies ``q > 0`` on ``[lo, hi]``; this is how
inequalities that are tight at an end point (``κ' = 1`` at ``ε = 0``) are proved.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp


@dataclass(frozen=True)
class Certificate:
    """``p >= 0`` (or ``> 0``) on ``[lo, hi]``: ``p = (s-lo)^i (hi-s)^j q`` with ``q`` root-free there."""

    holds: bool
    poly: sp.Expr
    lo: sp.Rational
    hi: sp.Rational
    lo_order: int
    hi_order: int
    q: sp.Expr
    roots_of_q: int
    q_at_lo: sp.Rational

    def __str__(self) -> str:
        return (
            f"p = (s-{self.lo})^{self.lo_order} ({self.hi}-s)^{self.hi_order} q, "
            f"q has {self.roots_of_q} real roots in [{self.lo}, {self.hi}] (Sturm), q({self.lo}) = {self.q_at_lo}"
        )


def _as_poly(p: sp.Expr, s: sp.Symbol) -> sp.Poly:
    poly = sp.Poly(sp.expand(p), s)
    if not all(c.is_rational for c in poly.all_coeffs()):
        raise ValueError(f"polynomial must have rational coefficients, got {p}")
    return poly


def positive_on(p: sp.Expr, s: sp.Symbol, lo: object, hi: object) -> bool:
    r"""``p(s) > 0`` for every ``s`` in ``[lo, hi]``: no real root there (Sturm) and ``p(lo) > 0``."""
    lo_r, hi_r = sp.Rational(lo), sp.Rational(hi)
    if not lo_r <= hi_r:
        raise ValueError(f"interval must have lo <= hi, got [{lo}, {hi}]")
    poly = _as_poly(p, s)
    return bool(poly.count_roots(lo_r, hi_r) == 0 and poly.eval(lo_r) > 0)


def nonnegative_on(p: sp.Expr, s: sp.Symbol, lo: object, hi: object) -> Certificate:
    r"""Certify ``p(s) >= 0`` on ``[lo, hi]`` after dividing out end-point roots (see module doc)."""
    lo_r, hi_r = sp.Rational(lo), sp.Rational(hi)
    if not lo_r < hi_r:
        raise ValueError(f"interval must have lo < hi, got [{lo}, {hi}]")
    q = _as_poly(p, s)
    if q.is_zero:
        return Certificate(True, p, lo_r, hi_r, 0, 0, sp.Integer(0), 0, sp.Integer(0))
    i = j = 0
    while q.eval(lo_r) == 0:
        q, rem = sp.div(q, sp.Poly(s - lo_r, s))
        i += 1
        assert rem.is_zero
    while q.eval(hi_r) == 0:
        q, rem = sp.div(q, sp.Poly(hi_r - s, s))
        j += 1
        assert rem.is_zero
    n_roots = int(q.count_roots(lo_r, hi_r))
    q_lo = q.eval(lo_r)
    return Certificate(n_roots == 0 and q_lo > 0, p, lo_r, hi_r, i, j, q.as_expr(), n_roots, q_lo)


def positive_on_ray(p: sp.Expr, s: sp.Symbol, lo: object) -> bool:
    r"""Sufficient certificate of ``p(s) > 0`` for all ``s >= lo``: after ``s = lo + t`` every
    coefficient in ``t`` is ``>= 0`` and the constant term is ``> 0`` (Descartes: no positive root)."""
    lo_r = sp.Rational(lo)
    t = sp.Dummy("t")
    poly = _as_poly(sp.expand(p).subs(s, lo_r + t), t)
    coeffs = poly.all_coeffs()
    return bool(all(c >= 0 for c in coeffs) and coeffs[-1] > 0)
