r"""The linear self-attention layer of docs/model.md, in SymPy, at two levels.

.. math::

    e_i^{l+1} = e_i^l + \sum_{k=1}^{H} P_k^l \Big(\sum_{j=1}^{n} e_j^l (e_j^l)^\top\Big) Q_k^l e_i^l

for every context token ``i`` and for the query ``e_{n+1} = (x_t, 0)``.  Keys and values run
over the ``n`` context tokens only.  No softmax, no MLP, no ``1/n``.

* **Entry level** (:func:`layer_forward`): the rule above written literally on a token matrix
  ``Z`` of shape ``(n+1, d+1)`` (context rows, then the query row).  It accepts SymPy matrices
  (every entry its own symbol) and NumPy ``object`` arrays of :class:`fractions.Fraction`
  (exact rational arithmetic), so the same code is the exact forward pass of the tests.
* **Block level** (:func:`apply_layer_block`): the rule on a single token ``(x, y)`` for symbolic
  ``d``, with ``G = Σ_k P_k E Q_k`` split into blocks ``[[A, b], [cᵀ, δ]]``.  ``E`` is shared by all
  tokens, so the layer acts on each token as ``e ↦ e + G e``; this is the only fact taken from
  the entry level, and :mod:`proofs.theorem_4_1` checks it there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from .symbols import A, b, c, delta


def context_gram(Z: Any, n: int) -> Any:
    r"""``E = Σ_{j≤n} e_j e_jᵀ`` from the first ``n`` rows of the token matrix ``Z``."""
    C = Z[:n, :]
    return C.T @ C


def head_sum(P: Any, Q: Any, E: Any) -> Any:
    r"""``G = Σ_k P_k E Q_k`` for sequences of heads ``P = (P_1..P_H)``, ``Q = (Q_1..Q_H)``."""
    terms = [Pk @ E @ Qk for Pk, Qk in zip(P, Q, strict=True)]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def layer_forward(P: Any, Q: Any, Z: Any, n: int) -> Any:
    r"""One layer on every token, written literally (entry level).

    ``Z`` has shape ``(n+1, d+1)``: rows ``0..n-1`` are the context tokens ``e_j = (x_j, y_j)``
    and row ``n`` is the query.  Returns the token matrix after the layer.
    """
    E = context_gram(Z, n)
    rows = []
    for i in range(Z.shape[0]):
        e_i = Z[i, :].T if isinstance(Z, sp.MatrixBase) else Z[i, :]
        update = 0 * e_i
        for Pk, Qk in zip(P, Q, strict=True):
            update = update + Pk @ E @ Qk @ e_i
        rows.append(e_i + update)
    if isinstance(Z, sp.MatrixBase):
        return sp.Matrix.hstack(*rows).T
    return np.stack(rows)


def block_G() -> sp.BlockMatrix:
    r"""``G`` as the block matrix ``[[A, b], [cᵀ, δ]]`` of symbolic size ``d+1``."""
    return sp.BlockMatrix([[A, b], [c.T, delta]])


def apply_layer_block(
    x_l: sp.MatrixExpr, y_l: sp.MatrixExpr
) -> tuple[sp.MatrixExpr, sp.MatrixExpr]:
    r"""Apply ``e ↦ e + G e`` to a token ``(x_l, y_l)`` at block level; returns ``(x_{l+1}, y_{l+1})``."""
    e = sp.BlockMatrix([[x_l], [y_l]])
    new = sp.block_collapse(e + block_G() * e)
    return new.blocks[0, 0], new.blocks[1, 0]
