"""Shared jaxtyping aliases with the paper's dimension names, as documentation of shapes.

``B`` batch, ``n`` context length, ``d`` input dimension, ``D`` = d+1 token size, ``L`` layers,
``H`` heads.  No runtime check reads them: shapes are validated where data enters (``check_data``
functions), with the one-line errors the command line prints.
"""

from __future__ import annotations

from jaxtyping import Array, Float

Inputs = Float[Array, "B n d"]
Targets = Float[Array, "B n"]
Queries = Float[Array, "B d"]
Scalars = Float[Array, " B"]
Universal = Float[Array, "L H D D"]
