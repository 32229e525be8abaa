r"""The linear-attention family as model kinds: causal linear attention, RetNet, Mamba-2, GLA,
DeltaNet and gated DeltaNet (docs/family.md).  The family's non-causal member is the paper's layer,
the kind FULL.

One residual layer, per head ``h``, on the context tokens ``e_1 … e_n`` and then the query ``e_t =
(x_t, 0)``:

.. math::

    k_i = W_K e_i,\quad q_i = W_Q e_i,\quad v_i = W_V e_i,\qquad S_i = \mathcal{A}_i(S_{i-1}) +
    c_i\, v_i k_i^\top, \qquad o_i = S_i q_i,\qquad e_i \leftarrow e_i + \textstyle\sum_h o_i^{(h)}

with ``S_0 = 0`` and, per member,

=================  ==========================================================  ===============
member             ``𝒜_i(S)``                                                  ``c_i``
=================  ==========================================================  ===============
``causal``         ``S``                                                       1
``retnet``         ``γ S``, ``γ = sigmoid(gamma_logit)`` per head               1
``mamba2``         ``α_i S``, ``α_i = sigmoid(w_αᵀ e_i + b_α)``                 1
``gla``            ``S diag(α_i)``, ``α_i = sigmoid(W_α e_i + b_α)``            1
``deltanet``       ``S (I − β_i k_i k_iᵀ)``, ``β_i = sigmoid(w_βᵀ e_i + b_β)``   ``β_i``
``gated-deltanet`` ``α_i S (I − β_i k_i k_iᵀ)``                                 ``β_i``
=================  ==========================================================  ===============

Conventions (docs/family.md): keys are not normalised; context token ``i`` reads its own state
``S_i``; the query reads the context's state, ``o_t = S_n q_t``, so its own gate is unused; with
``query_self=True`` it reads ``S_t = 𝒜_t(S_n) + c_t v_t k_tᵀ`` instead.  The prediction is ``ŷ =
−y_t^L``, as for the paper's layer.

Parameters.  The output map is folded into the values (``W_O W_V`` is stored as ``W_V``, ``W_O =
I``): ``S`` is linear in the values, so this is the same function.  For the scalar-gate members
(``causal``, ``retnet``, ``mamba2``) the output depends on the keys and queries only through ``W_Kᵀ
W_Q``, so they store ``W_Q`` alone with ``W_K = I`` (``k_i = e_i``): ``2(d+1)²`` numbers per head,
FULL's count, plus the gate.  GLA and the delta rules use the keys themselves, so they store ``W_K,
W_Q`` of shape ``(r, d+1)`` (key dimension ``r``, ``d+1`` by default: the state is ``(d+1)×(d+1)``).
:func:`parameter_count` gives the numbers.

Every pass keeps the dtype of its inputs; the positions run in ``lax.scan``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from numerics.models.base import Kind
from numerics.models.family_params import Causal, Deltanet, GatedDeltanet, Gla, Mamba2, Retnet

#: Initial gate bias of the forgetting gates (``γ``, ``α``): ``sigmoid(4) = 0.982``, so a fresh
#: model keeps most of its context over ``n = 20`` tokens (``0.982²⁰ = 0.70``).  The writing
#: strength ``β`` starts at ``sigmoid(0)``.
ALPHA_BIAS = 4.0


class Streams(NamedTuple):
    """One layer's per-token streams, each ``(B, N, H, ·)``; ``alpha``/``beta`` are ``None`` where
    unused."""

    k: jax.Array  # (B, N, H, r)
    q: jax.Array  # (B, N, H, r)
    v: jax.Array  # (B, N, H, D)
    alpha: jax.Array | None  # (B, N, H) scalar gate, (B, N, H, r) vector gate
    beta: jax.Array | None  # (B, N, H)


def update(S: jax.Array, s: Streams, vector_gate: bool) -> jax.Array:
    r"""``S_i = 𝒜_i(S_{i−1}) + c_i v_i k_iᵀ`` for one position: ``S (B, H, D, r)``, ``s`` the
    position's streams ``(B, H, ·)``."""
    vk = s.v[..., :, None] * s.k[..., None, :]
    if s.beta is not None:  # delta rule: S (I − β k kᵀ) + β v kᵀ
        Sk = jnp.einsum("bhvr,bhr->bhv", S, s.k)
        S = S - s.beta[..., None, None] * Sk[..., :, None] * s.k[..., None, :]
        vk = s.beta[..., None, None] * vk
    if s.alpha is not None:
        S = S * (s.alpha[..., None, :] if vector_gate else s.alpha[..., None, None])
    return S + vk


def _affine(w: jax.Array, b: jax.Array, Z: jax.Array) -> jax.Array:
    """``sigmoid(w e + b)`` for every token: ``w (H, [r,] D)``, ``b (H[, r])``, ``Z (B, N, D)``."""
    return jax.nn.sigmoid(jnp.einsum("h...D,bnD->bnh...", w, Z) + b)


class MemberKind(Kind):
    """A member of the family: its own forward pass (:meth:`forward`), no universal ``P, Q``
    form."""

    own_forward = True
    #: DIAG's peak rate: 300 steps of batch 256 take causal-1 at uniform:5 to an adjusted loss of
    #: 0.95 with 1e-2 against 2.24 with 1e-3 (docs/family.md gives the commands)
    default_lr = 1e-2
    #: which gates the member has and whether its keys are projections (else ``k_i = e_i``)
    scalar_gate: str = ""  # "", "fixed" (RetNet) or "input" (Mamba-2, gated DeltaNet)
    vector_gate = False
    delta = False
    keys = False

    def _init(self, key, layers, d, heads, scale, dtype):  # noqa: ANN001, ANN202
        D, shapes = d + 1, {}
        for name in self.params_type._fields:
            shapes[name] = {
                "W_V": (D, D),
                "W_K": (D, D),
                "W_Q": (D, D),
                "W_alpha": (D, D),
                "b_alpha": (D,),
                "w_alpha": (D,),
                "w_beta": (D,),
            }.get(name, ())
            if name == "b_alpha" and not self.vector_gate:
                shapes[name] = ()
        keys = jax.random.split(key, len(shapes))
        out = {}
        for k, (name, shp) in zip(keys, shapes.items()):
            out[name] = scale * jax.random.normal(k, (layers, heads, *shp), dtype)
            if name in ("gamma_logit", "b_alpha"):
                out[name] = out[name] + jnp.asarray(ALPHA_BIAS, dtype)
        return self.params_type(**out)

    def universal(self, params, d):  # noqa: ANN001, ANN202
        raise ValueError(
            f"a {self.name} model has no universal P, Q form (docs/family.md); "
            "use its own forward pass"
        )

    def from_universal(self, P, Q, atol=0.0):  # noqa: ANN001, ANN202
        raise ValueError(f"a {self.name} model cannot be read from universal P, Q (docs/family.md)")

    def layer_g(self, params, d):  # noqa: ANN001, ANN202
        raise ValueError(f"a {self.name} model has no layer matrix G (docs/family.md)")

    def order_invariant(self, layers: int) -> bool:
        """Whether the prediction ignores the order of the context: only plain causal attention at
        depth 1 (the query reads ``S_n = Σ_j v_j k_jᵀ``, a sum)."""
        return self.name == "causal" and int(layers) == 1

    def streams(self, p: Any, Z: jax.Array) -> Streams:
        """One layer's streams from its parameters ``p`` (no layer axis) and tokens ``Z (B, N,
        D)``."""
        v = jnp.einsum("hvD,bnD->bnhv", p.W_V, Z)
        q = jnp.einsum("hrD,bnD->bnhr", p.W_Q, Z)
        H = p.W_V.shape[0]
        k = (
            jnp.einsum("hrD,bnD->bnhr", p.W_K, Z)
            if self.keys
            else jnp.broadcast_to(Z[:, :, None], (*q.shape[:2], H, Z.shape[-1]))
        )
        alpha = beta = None
        if self.scalar_gate == "fixed":
            alpha = jnp.broadcast_to(jax.nn.sigmoid(p.gamma_logit), q.shape[:3])
        elif self.scalar_gate == "input":
            alpha = _affine(p.w_alpha, p.b_alpha, Z)
        elif self.vector_gate:
            alpha = _affine(p.W_alpha, p.b_alpha, Z)
        if self.delta:
            beta = _affine(p.w_beta, p.b_beta, Z)
        return Streams(k, q, v, alpha, beta)

    def _context(self, p: Any, Z: jax.Array) -> tuple[Streams, jax.Array, jax.Array]:
        """The streams, the context's state ``S_n (B, H, D, r)`` and its outputs ``o_i = S_i q_i (n,
        B, H, D)``."""
        s = self.streams(p, Z)
        n = Z.shape[1] - 1
        B, H, D, r = Z.shape[0], s.v.shape[2], s.v.shape[3], s.k.shape[3]

        def step(S: jax.Array, xs: Streams) -> tuple[jax.Array, jax.Array]:
            S = update(S, xs, self.vector_gate)
            return S, jnp.einsum("bhvr,bhr->bhv", S, xs.q)

        ctx = jax.tree_util.tree_map(lambda a: jnp.moveaxis(a[:, :n], 1, 0), s)
        S_n, o_ctx = jax.lax.scan(step, jnp.zeros((B, H, D, r), Z.dtype), ctx)
        return s, S_n, o_ctx

    def context_state(self, p: Any, Z: jax.Array) -> jax.Array:
        """The state ``S_n (B, H, D, r)`` the query reads under the default convention, from one
        layer's tokens."""
        return self._context(p, Z)[1]

    def layer(self, p: Any, Z: jax.Array, query_self: bool = False) -> jax.Array:
        """One residual layer on tokens ``Z (B, n+1, D)`` (the query last): returns the new
        tokens."""
        s, S_n, o_ctx = self._context(p, Z)
        n = Z.shape[1] - 1
        at_t = jax.tree_util.tree_map(lambda a: a[:, n], s)
        S_t = update(S_n, at_t, self.vector_gate) if query_self else S_n
        o_t = jnp.einsum("bhvr,bhr->bhv", S_t, at_t.q)
        o = jnp.concatenate([jnp.moveaxis(o_ctx, 0, 1), o_t[:, None]], axis=1)  # (B, n+1, H, D)
        return Z + jnp.sum(o, axis=2)

    def forward_tokens(
        self, params: Any, X: jax.Array, y: jax.Array, x_query: jax.Array, query_self: bool = False
    ) -> jax.Array:
        """Every layer's tokens ``(L+1, B, n+1, d+1)``, context first, the query last."""
        Z = member_tokens(X, y, x_query)
        out = [Z]
        for l in range(params.W_V.shape[0]):
            Z = self.layer(jax.tree_util.tree_map(lambda a: a[l], params), Z, query_self)
            out.append(Z)
        return jnp.stack(out)

    def forward(
        self,
        params: Any,
        X: jax.Array,
        y: jax.Array,
        x_query: jax.Array,
        guard: bool = False,
        query_self: bool = False,
    ) -> jax.Array | tuple[jax.Array, jax.Array]:
        r"""``ŷ = −y_t^L``, ``(B,)``.  ``guard=True`` (training) also returns ``alive (B,)``: a
        sequence whose tokens pass ``t = max_float^{1/4}`` is frozen from that layer on (its layers
        run on zeros and leave its tokens as they are) and its prediction set to 0, so its gradient
        is 0, as :func:`numerics.models.predict_fast` does for the universal kinds.  A state that
        overflows inside one layer (a delta rule with ``β‖k‖² ≫ 2``) gives a non-finite prediction:
        the sequence is dead, and a step whose gradient is not finite is skipped."""
        Z = member_tokens(X, y, x_query)
        alive = jnp.ones(Z.shape[0], bool)
        t = float(jnp.finfo(Z.dtype).max) ** 0.25
        for l in range(params.W_V.shape[0]):
            p = jax.tree_util.tree_map(lambda a: a[l], params)
            if (
                guard
            ):  # a dead sequence runs the layer on zeros (finite residuals) and keeps its tokens
                alive &= jnp.max(jnp.abs(Z), axis=(1, 2)) <= t
                Z = jnp.where(
                    alive[:, None, None],
                    self.layer(p, jnp.where(alive[:, None, None], Z, 0), query_self),
                    Z,
                )
            else:
                Z = self.layer(p, Z, query_self)
        yhat = -Z[:, -1, -1]
        if guard:
            alive &= jnp.isfinite(yhat)
            return jnp.where(alive, yhat, 0), alive
        return yhat


def member_tokens(X: jax.Array, y: jax.Array, x_query: jax.Array) -> jax.Array:
    """Token matrix ``(B, n+1, d+1)``: context ``(x_i, y_i)`` then the query ``(x_t, 0)``."""
    ctx = jnp.concatenate([X, y[..., None]], axis=-1)
    q = jnp.concatenate([x_query, jnp.zeros_like(x_query[..., :1])], axis=-1)
    return jnp.concatenate([ctx, q[..., None, :]], axis=-2)


def _kind(name: str, ptype: type, **flags: Any) -> MemberKind:
    cls = type(
        f"{ptype.__name__}Kind", (MemberKind,), {"name": name, "params_type": ptype, **flags}
    )
    return cls()


CAUSAL = _kind("causal", Causal)
RETNET = _kind("retnet", Retnet, scalar_gate="fixed")
MAMBA2 = _kind("mamba2", Mamba2, scalar_gate="input")
GLA = _kind("gla", Gla, vector_gate=True, keys=True)
DELTANET = _kind("deltanet", Deltanet, delta=True, keys=True)
GATED_DELTANET = _kind("gated-deltanet", GatedDeltanet, scalar_gate="input", delta=True, keys=True)
#: The members, in the order the command line lists them.
MEMBER_OBJECTS: dict[str, MemberKind] = {
    k.name: k for k in (CAUSAL, RETNET, MAMBA2, GLA, DELTANET, GATED_DELTANET)
}
MEMBERS: tuple[str, ...] = tuple(MEMBER_OBJECTS)


def parameter_shapes(kind: str | MemberKind, layers: int, d: int, heads: int = 1) -> Any:
    """The member's parameters as ``jax.ShapeDtypeStruct`` leaves (float64): the shapes of its
    ``init``, read without drawing a number."""
    k = MEMBER_OBJECTS[kind] if isinstance(kind, str) else kind
    return jax.eval_shape(lambda: k.init(jax.random.PRNGKey(0), layers, d, heads, 0.0, jnp.float64))


def parameter_count(kind: str | MemberKind, d: int, heads: int = 1) -> int:
    """Numbers per layer of a member with ``heads`` heads and key dimension ``d+1`` (FULL:
    ``2(d+1)²`` per head)."""
    return int(sum(np.prod(a.shape) for a in parameter_shapes(kind, 1, d, heads)))
