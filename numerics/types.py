"""Shared jaxtyping aliases with the paper's dimension names (checked at runtime under pytest only).

``B`` batch, ``n`` context length, ``d`` input dimension, ``D`` = d+1 token size, ``L`` layers,
``H`` heads.
"""

from __future__ import annotations

from jaxtyping import Array, Float

Inputs = Float[Array, "B n d"]
Targets = Float[Array, "B n"]
Queries = Float[Array, "B d"]
Scalars = Float[Array, " B"]
Universal = Float[Array, "L H D D"]
