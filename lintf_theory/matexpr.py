r"""Small, exact manipulations of SymPy matrix expressions used by the derivations.

Each helper is a mechanical operation (substitution, coefficient extraction, summing a bilinear
form over tokens); none knows a formula of the paper.
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy as sp


def simplify_matexpr(expr: sp.MatrixExpr) -> sp.MatrixExpr:
    """Expand and evaluate a matrix expression into a canonical sum of products."""
    return sp.expand(expr.doit()).doit()


def is_zero(expr: sp.MatrixExpr) -> bool:
    """Exact test that a block-level matrix expression vanishes identically."""
    e = simplify_matexpr(expr)
    return bool(e == 0 or isinstance(e, sp.ZeroMatrix) or e.is_ZeroMatrix)


def coefficient(
    expr: sp.MatrixExpr, var: sp.MatrixSymbol, others: tuple[sp.MatrixSymbol, ...]
) -> sp.MatrixExpr:
    r"""Coefficient ``C`` of ``var`` in an expression linear in ``(var, *others)``: ``expr = C var + …``.

    Found by setting every other linear variable to zero and ``var`` to the identity of its
    row size, i.e. by evaluating the linear map on a basis.
    """
    repl: dict[sp.Basic, sp.Basic] = {o: sp.ZeroMatrix(*o.shape) for o in others}
    repl[var] = sp.Identity(var.shape[0])
    return simplify_matexpr(expr.xreplace(repl))


def replace_adjacent(
    expr: sp.Basic, rules: Mapping[tuple[sp.Basic, sp.Basic], sp.Basic]
) -> sp.Basic:
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


def scalarize(expr: sp.Basic, mapping: Mapping[sp.MatrixSymbol, sp.Expr]) -> sp.Basic:
    r"""Replace ``1 \times 1`` matrix symbols by commuting scalars, e.g. ``a ↦ a`` (a ``Symbol``).

    A ``1 \times 1`` factor commutes with everything it multiplies, so it may leave its product:
    ``u a wᵀ ↦ a · u wᵀ``.  Products made only of such factors become scalars; a sum that mixes
    scalars and ``1 \times 1`` matrices keeps the scalars as ``s · I_1``.
    """
    for k in mapping:
        if tuple(k.shape) != (1, 1):
            raise ValueError(f"scalarize: {k} must be 1x1, got shape {k.shape}")

    def is_mat(e: sp.Basic) -> bool:
        return bool(getattr(e, "is_Matrix", False))

    def rec(node: sp.Basic) -> sp.Basic:
        if node in mapping:
            return mapping[node]
        if not node.args or isinstance(node, sp.MatrixSymbol):
            return node
        args = [rec(t) for t in node.args]
        if isinstance(node, (sp.Transpose, sp.Inverse, sp.MatPow)):
            base = args[0]
            if not is_mat(base):
                if isinstance(node, sp.Transpose):
                    return base
                if isinstance(node, sp.Inverse):
                    return 1 / base
                return base ** args[1]
            return node.func(*args)
        if isinstance(node, sp.MatMul):
            scalars = [t for t in args if not is_mat(t)]
            mats = [t for t in args if is_mat(t)]
            coeff = sp.Mul(*scalars)
            return sp.MatMul(coeff, *mats).doit() if mats else coeff
        if isinstance(node, sp.MatAdd):
            if any(is_mat(t) for t in args):
                one = sp.Identity(1)
                return sp.MatAdd(*[t if is_mat(t) else t * one for t in args]).doit()
            return sp.Add(*args)
        return node.func(*args)

    out = rec(simplify_matexpr(expr) if is_mat(expr) else expr)
    return simplify_matexpr(out) if is_mat(out) else sp.expand(out)


def scalar_coefficient(expr: sp.MatrixExpr, mat: sp.MatrixExpr) -> sp.Expr:
    r"""The scalar ``s`` with ``expr = s · mat`` exactly; :class:`ValueError` if there is none.

    Every term of the expanded ``expr`` must be ``mat`` times scalars; the scalars are summed.
    """
    e = simplify_matexpr(expr)
    mat = simplify_matexpr(mat)
    terms = e.args if isinstance(e, sp.MatAdd) else (e,)
    total = sp.Integer(0)
    for t in terms:
        if t == mat:
            total += 1
            continue
        if isinstance(t, sp.MatMul):
            scalars = [f for f in t.args if not getattr(f, "is_Matrix", False)]
            mats = [f for f in t.args if getattr(f, "is_Matrix", False)]
            if mats and (mats[0] if len(mats) == 1 else sp.MatMul(*mats)) == mat:
                total += sp.Mul(*scalars)
                continue
        raise ValueError(f"scalar_coefficient: term {t} is not a scalar multiple of {mat}")
    if not is_zero(e - total * mat):
        raise ValueError(f"scalar_coefficient: {e} != ({total}) {mat}")
    return sp.expand(total)


def split_terms(expr: sp.MatrixExpr, var: sp.Basic) -> tuple[sp.MatrixExpr, sp.MatrixExpr]:
    r"""Split an expanded sum into ``(terms containing var, the other terms)``; each part may be zero."""
    e = simplify_matexpr(expr)
    terms = e.args if isinstance(e, sp.MatAdd) else (e,)
    zero = sp.ZeroMatrix(*e.shape)
    with_v = [t for t in terms if t.has(var)]
    without = [t for t in terms if not t.has(var)]
    return (sp.MatAdd(*with_v).doit() if with_v else zero), (
        sp.MatAdd(*without).doit() if without else zero
    )
