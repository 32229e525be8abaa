"""The native parameters of the linear-attention family's members (:mod:`numerics.models.family`),
one named tuple per member.  Shapes: ``L`` layers, ``H`` heads, tokens of size ``D = d+1``, key
dimension ``r``."""

from __future__ import annotations

from typing import NamedTuple

import jax


class Causal(NamedTuple):
    W_V: jax.Array  # (L, H, D, D) values, output map folded in
    W_Q: jax.Array  # (L, H, D, D) queries; keys k_i = e_i


class Retnet(NamedTuple):
    W_V: jax.Array
    W_Q: jax.Array
    gamma_logit: jax.Array  # (L, H): γ = sigmoid(gamma_logit)


class Mamba2(NamedTuple):
    W_V: jax.Array
    W_Q: jax.Array
    w_alpha: jax.Array  # (L, H, D)
    b_alpha: jax.Array  # (L, H)


class Gla(NamedTuple):
    W_V: jax.Array
    W_K: jax.Array  # (L, H, r, D)
    W_Q: jax.Array  # (L, H, r, D)
    W_alpha: jax.Array  # (L, H, r, D)
    b_alpha: jax.Array  # (L, H, r)


class Deltanet(NamedTuple):
    W_V: jax.Array
    W_K: jax.Array
    W_Q: jax.Array
    w_beta: jax.Array  # (L, H, D)
    b_beta: jax.Array  # (L, H)


class GatedDeltanet(NamedTuple):
    W_V: jax.Array
    W_K: jax.Array
    W_Q: jax.Array
    w_alpha: jax.Array
    b_alpha: jax.Array
    w_beta: jax.Array
    b_beta: jax.Array
