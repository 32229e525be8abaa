"""Shared fakes: stand-ins for a user's code or for a long computation, the one place test modules
import them from.

Each area keeps its fakes in its own section below; test modules never import each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

# --- Implementations under test (numerics.evaluate.testing)
# ------------------------------------------------------

Forward = Callable[[Any, Any, Any], Any]


def near_miss(forward: Forward, rel: float, tokens: bool) -> Forward:
    """``forward`` with every layer's output off by the relative ``rel``: the tokens past the input
    (``tokens``: ``forward`` returns ``(L+1, B, n+1, d+1)``) or the predictions ``(B,)``."""

    def off(X: Any, y: Any, x_query: Any) -> np.ndarray:
        out = np.asarray(forward(X, y, x_query))
        return np.concatenate([out[:1], out[1:] * (1 + rel)]) if tokens else out * (1 + rel)

    return off


# --- end of the implementations under test
# ------------------------------------------------------------------------
