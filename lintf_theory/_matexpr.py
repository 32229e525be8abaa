r"""Small, exact manipulations of SymPy matrix expressions used by the derivations.

Each helper is a mechanical operation (substitution, coefficient extraction, summing a bilinear
form over tokens); none knows a formula of the paper.
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy as sp


def _scalar_transposes(expr: sp.Basic) -> sp.Basic:
    """A ``1×1`` matrix symbol equals its transpose (``a``, ``δ``, ``λ`` are scalars in disguise)."""
    return expr.replace(
        lambda e: isinstance(e, sp.Transpose) and isinstance(e.arg, sp.MatrixSymbol) and e.arg.shape == (1, 1),
        lambda e: e.arg,
    )


def simplify_matexpr(expr: sp.MatrixExpr) -> sp.MatrixExpr:
    """Expand and evaluate a matrix expression into a canonical sum of products."""
    return _scalar_transposes(sp.expand(_scalar_transposes(expr.doit())).doit())


def is_zero(expr: sp.MatrixExpr) -> bool:
    """Exact test that a block-level matrix expression vanishes identically."""
    e = simplify_matexpr(expr)
    return bool(e == 0 or isinstance(e, sp.ZeroMatrix) or e.is_ZeroMatrix)


def coefficient(expr: sp.MatrixExpr, var: sp.MatrixSymbol, others: tuple[sp.MatrixSymbol, ...]) -> sp.MatrixExpr:
    r"""Coefficient ``C`` of ``var`` in an expression linear in ``(var, *others)``: ``expr = C var + …``.

    Found by setting every other linear variable to zero and ``var`` to the identity of its
    row size, i.e. by evaluating the linear map on a basis.
    """
    repl: dict[sp.Basic, sp.Basic] = {o: sp.ZeroMatrix(*o.shape) for o in others}
    repl[var] = sp.Identity(var.shape[0])
    return simplify_matexpr(expr.xreplace(repl))


def replace_adjacent(expr: sp.Basic, rules: Mapping[tuple[sp.Basic, sp.Basic], sp.Basic]) -> sp.Basic:
    r"""Replace adjacent factor pairs inside every product, e.g. ``(xᵀ, x) ↦ Σ``.

    SymPy's ``xreplace`` matches whole nodes only; a sum over tokens ``Σ_i x_i x_iᵀ`` appears as
    the pair ``x, xᵀ`` inside a longer ``MatMul``, which this helper rewrites.
    """
    expr = simplify_matexpr(expr)

    def rewrite(node: sp.Basic) -> sp.Basic:
        if isinstance(node, sp.MatAdd) or isinstance(node, sp.Add):
            return node.func(*[rewrite(t) for t in node.args]).doit()
        if isinstance(node, sp.MatMul):
            scalars = [f for f in node.args if not getattr(f, "is_Matrix", False)]
            mats = [f for f in node.args if getattr(f, "is_Matrix", False)]
            changed = True
            while changed:
                changed = False
                for k in range(len(mats) - 1):
                    key = (mats[k], mats[k + 1])
                    if key in rules:
                        mats = mats[:k] + [rules[key]] + mats[k + 2 :]
                        changed = True
                        break
            return sp.MatMul(*scalars, *mats).doit()
        return node

    return simplify_matexpr(rewrite(expr))
