r"""One set of names for the symbolic half, shared with the numeric half.

Block-level symbols are SymPy ``MatrixSymbol`` objects of symbolic size ``d``; scalars that
enter matrix products (``a``, ``delta``, ``lam``, ``rho``, ``y``) are ``1 \times 1`` matrices so
that every product is a ``MatMul``.  A symbol that shadows a numeric quantity carries ``_sym``
where both appear in one module (STYLE.md, habit 4).

=============  ==============================================  ==================
symbol         meaning (docs/model.md)                              shape
=============  ==============================================  ==================
``M, u, a, w`` implicit state of Theorem 4.1 at layer ``l``     d×d, d×1, 1×1, d×1
``A, b, c``    blocks of ``G = Σ_k P_k E Q_k``                 d×d, d×1, d×1
``delta``      bottom-right block of ``G``                     1×1
``x, y``       a context token ``(x_i, y_i)`` at layer 0       d×1, 1×1
``E``          context Gram ``Σ_j e_j e_jᵀ``                    (d+1)×(d+1)
=============  ==============================================  ==================
"""

from __future__ import annotations

import sympy as sp

d = sp.Symbol("d", integer=True, positive=True)

M = sp.MatrixSymbol("M", d, d)
u = sp.MatrixSymbol("u", d, 1)
a = sp.MatrixSymbol("a", 1, 1)
w = sp.MatrixSymbol("w", d, 1)

A = sp.MatrixSymbol("A", d, d)
b = sp.MatrixSymbol("b", d, 1)
c = sp.MatrixSymbol("c", d, 1)
delta = sp.MatrixSymbol("delta", 1, 1)

x = sp.MatrixSymbol("x", d, 1)
y = sp.MatrixSymbol("y", 1, 1)

STATE = (M, u, a, w)
BLOCKS = (A, b, c, delta)
