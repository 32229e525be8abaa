r"""The base class of every model kind: :class:`Kind`, what a kind is and what differs between
kinds.

The universal kinds FULL, DIAG and GD++ (:mod:`numerics.models.kinds`) and the members of the
linear-attention family (:mod:`numerics.models.family`) subclass it; :mod:`numerics.models.kinds`
registers them all (:data:`numerics.models.kinds.KIND_OBJECTS`).  This module imports neither, so
both import it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

#: A kind's native parameters: an instance of its ``params_type``, a NamedTuple of arrays
#: (:data:`numerics.models.kinds.Params` for the universal kinds).
Native = Any


def _check_sizes(layers: int, d: int, heads: int) -> None:
    if int(layers) < 1:
        raise ValueError(f"layers L must be >= 1, got {layers}")
    if int(heads) < 1:
        raise ValueError(f"heads H must be >= 1, got {heads}")
    if int(d) < 1:
        raise ValueError(f"input dimension d must be >= 1, got {d}")


class Kind:
    """A model kind: its name, native parameter type and everything that differs between kinds.

    Training properties: ``default_lr`` (peak learning rate), ``default_y_step`` (``plain`` or
    ``scaled`` step of ``q_y``), ``diag_phase`` (trains its DIAG sub-family first),
    ``spectral_init`` (can start from the exact spectral fit) and ``one_head`` (exactly one head per
    layer)."""

    name: str = ""
    params_type: type = tuple
    one_head: bool = False
    diag_phase: bool = False
    spectral_init: bool = False
    default_lr: float = 0.0
    default_y_step: str = "plain"
    #: the kind computes its predictions with its own ``forward(params, X, y, x_query, guard)`` (the
    #: family members)
    own_forward: bool = False

    def __repr__(self) -> str:
        return self.name.upper()

    def check_heads(self, heads: int) -> None:
        """One-line error when the kind cannot have ``heads`` heads per layer."""
        if self.one_head and int(heads) != 1:
            raise ValueError(f"GD++ has one head per layer; heads must be 1, got {heads}")

    def init(
        self,
        key: jax.Array,
        layers: int,
        d: int,
        heads: int = 1,
        scale: float = 0.0,
        dtype: Any = jnp.float32,
    ) -> Native:
        r"""Initial parameters: entries ``N(0, scale²)`` (``scale = 0``: all zero)."""
        _check_sizes(layers, d, heads)
        self.check_heads(heads)
        return self._init(key, int(layers), int(d), int(heads), scale, dtype)

    def _init(
        self, key: jax.Array, layers: int, d: int, heads: int, scale: float, dtype: Any
    ) -> Native:
        raise NotImplementedError

    def universal(self, params: Native, d: int) -> tuple[jax.Array, jax.Array]:
        """Universal ``(P, Q)`` of shape ``(L, H, d+1, d+1)``."""
        raise NotImplementedError

    def from_universal(self, P: Any, Q: Any, atol: float = 0.0) -> Native:
        """Native parameters from universal ``P, Q``; a one-line ``ValueError`` if they are not of
        this kind."""
        raise NotImplementedError

    def layer_g(self, params: Native, d: int) -> tuple[int, Callable[[int, jax.Array], jax.Array]]:
        """``(L, g)`` with ``g(l, E) = G^l = Σ_k P_k^l E Q_k^l`` for a batch of symmetric
        ``E (B, d+1, d+1)``."""
        raise NotImplementedError

    def scale_y_step(self, updates: Native, c: jax.Array, d: int) -> Native:
        """The step ``updates`` with its ``q_y`` (FULL: ``Q_yy``) entries divided by ``c``."""
        return updates

    def project(self, params: Native, free: bool) -> Native:
        """The training constraint of the kind (GD++: ``ω_xx ≤ 0`` unless ``free``); others
        unchanged."""
        return params
