r"""The model kinds FULL, DIAG and GD++ (docs/model.md), one class each, and their universal ``P``/``Q`` form.

Every kind converts its native parameters to universal arrays ``P, Q`` of shape ``(L, H, d+1, d+1)``
(:meth:`Kind.universal`); all forward passes run on those or on the kind's ``G`` (:meth:`Kind.layer_g`).

* **FULL** (:data:`FULL`, parameters :class:`Full`): unconstrained ``P, Q``.
* **DIAG** (:data:`DIAG`, :class:`Diag`): per head ``P_k = diag(p_x I, p_y)``, ``Q_k = diag(q_x I, q_y)``;
  arrays ``px, py, qx, qy`` of shape ``(L, H)``.
* **GD++** (:data:`GDPP`, :class:`Gdpp`): one head per layer with ``q_y = 0``, parametrised directly by
  ``omega_xx, omega_yx`` of shape ``(L,)``.  Universal form: ``P = diag(ω_xx I, ω_yx)``,
  ``Q = diag(I, 0)`` (a choice; any factorisation with the same products is the same model).

Conversions back (:meth:`Kind.from_universal`): FULL always; DIAG when every ``P_k, Q_k`` is
``diag(s I_d, t)``; GD++ when, in addition, every layer has ``ω_xy = ω_yy = 0``.  Otherwise a one-line
``ValueError``.  The ``ω`` of a DIAG layer come from the derived rule :func:`lintf_theory.omega_rule`.

A fourth kind is one more subclass of :class:`Kind` (:mod:`numerics.models.base`) here and one entry in
:data:`KIND_OBJECTS`.  The members of the linear-attention family (:mod:`numerics.models.family`, which
subclasses the same base) are registered there too; they have their own forward pass (``own_forward``) and no
universal form.

Precision: every function keeps the dtype of its inputs (float32 for training, float64 for
verification); mixed inputs follow JAX type promotion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lintf_theory import check_parameters, omega_rule
from numerics.models.base import Kind as Kind
from numerics.models.family import MEMBER_OBJECTS


class Full(NamedTuple):
    P: jax.Array  # (L, H, d+1, d+1)
    Q: jax.Array  # (L, H, d+1, d+1)


class Diag(NamedTuple):
    px: jax.Array  # (L, H)
    py: jax.Array
    qx: jax.Array
    qy: jax.Array


class Gdpp(NamedTuple):
    omega_xx: jax.Array  # (L,)
    omega_yx: jax.Array  # (L,)


Params = Full | Diag | Gdpp
Omegas = tuple[jax.Array, jax.Array, jax.Array, jax.Array]


def diag_matrix(x_part: jax.Array, y_part: jax.Array, d: int) -> jax.Array:
    """``diag(x_part I_d, y_part)`` for arrays of leading shape ``S``: returns ``S + (d+1, d+1)``."""
    vec = jnp.concatenate([jnp.repeat(x_part[..., None], d, axis=-1), y_part[..., None]], axis=-1)
    return vec[..., :, None] * jnp.eye(d + 1, dtype=vec.dtype)


def upper(E: jax.Array) -> jax.Array:
    """The upper triangle (diagonal included) of each ``(D, D)`` matrix, row by row: ``(..., D(D+1)/2)``."""
    i, j = np.triu_indices(E.shape[-1])
    return E[..., i, j]


def full_g(P: jax.Array, Q: jax.Array) -> Callable[[jax.Array], jax.Array]:
    r"""``E ↦ G = Σ_k P_k E Q_k`` for symmetric ``E (B, D, D)``, given one layer's ``P, Q (H, D, D)``.

    ``G_{af} = Σ_{c,e} E_{ce} M_{ce,af}`` with ``M_{ce,af} = Σ_k (P_k)_{ac} (Q_k)_{ef}``; pairing ``(c,e)``
    with ``(e,c)`` (``E`` symmetric) leaves the ``D(D+1)/2`` entries ``c ≤ e`` with weights
    ``K_{ce} = M_{ce} + [c<e] M_{ec}``, so ``G`` is one GEMM ``upper(E) @ K``.  ``E`` must be symmetric
    (a Gram matrix; the Gram map keeps it so); ``tests/models/test_forward.py`` checks ``G`` against ``P E Q``."""
    D = P.shape[-1]
    i, j = np.triu_indices(D)
    M = jnp.einsum("hac,hef->ceaf", P, Q)
    K = (M[i, j] + jnp.where((i != j)[:, None, None], M[j, i], 0)).reshape(i.size, D * D)
    return lambda E: (upper(E) @ K).reshape(E.shape)


class FullKind(Kind):
    # Peak rate 3e-3: from the random start, 1e-4 leaves FULL-4 at 1.08 after 3000 steps (docs/training.md).
    name, params_type, diag_phase, default_lr, default_y_step = "full", Full, True, 3e-3, "scaled"

    def _init(self, key, layers, d, heads, scale, dtype):  # noqa: ANN001, ANN202
        kp, kq = jax.random.split(key)
        shape = (layers, heads, d + 1, d + 1)
        return Full(
            scale * jax.random.normal(kp, shape, dtype), scale * jax.random.normal(kq, shape, dtype)
        )

    def universal(self, params, d):  # noqa: ANN001, ANN202
        return params.P, params.Q

    def from_universal(self, P, Q, atol=0.0):  # noqa: ANN001, ANN202
        P, Q = jnp.asarray(P), jnp.asarray(Q)
        check_parameters(P, Q)
        return Full(P, Q)

    def layer_g(self, params, d):  # noqa: ANN001, ANN202
        gs = [full_g(params.P[l], params.Q[l]) for l in range(params.P.shape[0])]
        return len(gs), lambda l, E: gs[l](E)

    def scale_y_step(self, updates, c, d):  # noqa: ANN001, ANN202
        return updates._replace(Q=updates.Q.at[..., d, d].divide(c))


class DiagKind(Kind):
    name, params_type, default_lr, default_y_step = "diag", Diag, 1e-2, "plain"

    def _init(self, key, layers, d, heads, scale, dtype):  # noqa: ANN001, ANN202
        return Diag(
            *(
                scale * jax.random.normal(k, (layers, heads), dtype)
                for k in jax.random.split(key, 4)
            )
        )

    def universal(self, params, d):  # noqa: ANN001, ANN202
        return diag_matrix(params.px, params.py, d), diag_matrix(params.qx, params.qy, d)

    def from_universal(self, P, Q, atol=0.0):  # noqa: ANN001, ANN202
        P, Q = jnp.asarray(P), jnp.asarray(Q)
        L, H, d = check_parameters(P, Q)
        parts = []
        for name, Mx in (("P", P), ("Q", Q)):
            dg = jnp.diagonal(Mx, axis1=-2, axis2=-1)
            off = Mx - dg[..., None] * jnp.eye(d + 1, dtype=Mx.dtype)
            xs = dg[..., :d]
            if (
                float(jnp.max(jnp.abs(off))) > atol
                or float(jnp.max(jnp.abs(xs - xs[..., :1]))) > atol
            ):
                raise ValueError(f"{name} is not of DIAG form diag(p_x I, p_y) within atol={atol}")
            parts.append((dg[..., 0], dg[..., d]))
        (px, py), (qx, qy) = parts
        return Diag(px, py, qx, qy)

    def layer_vectors(self, params: Diag, d: int) -> tuple[jax.Array, jax.Array]:
        """Per-layer, per-head diagonals ``p, q`` of shape ``(L, H, d+1)``."""
        vec = lambda x, y: jnp.concatenate([jnp.repeat(x[..., None], d, -1), y[..., None]], -1)  # noqa: E731
        return vec(params.px, params.py), vec(params.qx, params.qy)

    def layer_g(self, params, d):  # noqa: ANN001, ANN202
        p, qv = self.layer_vectors(params, d)
        omega = jnp.einsum("lha,lhc->lac", p, qv)  # Ω^l = Σ_k p_k q_kᵀ, so G^l = Ω^l ⊙ E^l
        return omega.shape[0], lambda l, E: omega[l] * E

    def omegas(self, params: Diag) -> Omegas:
        r"""Per-layer ``(ω_xx, ω_xy, ω_yx, ω_yy)``, each ``(L,)``, by the derived rule ``omega_rule(H)``."""
        H = params.px.shape[-1]
        heads = [a[..., k] for a in params for k in range(H)]
        return tuple(
            jnp.broadcast_to(jnp.asarray(w), params.px.shape[:-1])
            for w in omega_rule(H).jax(*heads)
        )

    def scale_y_step(self, updates, c, d):  # noqa: ANN001, ANN202
        return updates._replace(qy=updates.qy / c)


class GdppKind(DiagKind):
    name, params_type, one_head, spectral_init, default_lr, default_y_step = (
        "gdpp",
        Gdpp,
        True,
        True,
        1e-2,
        "plain",
    )

    def __repr__(self) -> str:
        return "GD++"

    def _init(self, key, layers, d, heads, scale, dtype):  # noqa: ANN001, ANN202
        k1, k2 = jax.random.split(key)
        return Gdpp(
            scale * jax.random.normal(k1, (layers,), dtype),
            scale * jax.random.normal(k2, (layers,), dtype),
        )

    def as_diag(self, params: Gdpp) -> Diag:
        """The one-head DIAG parameters of the same model: ``p = (ω_xx, ω_yx)``, ``q = (1, 0)``."""
        px, py = params.omega_xx[:, None], params.omega_yx[:, None]
        return Diag(px, py, jnp.ones_like(px), jnp.zeros_like(py))

    def universal(self, params, d):  # noqa: ANN001, ANN202
        return DIAG.universal(self.as_diag(params), d)

    def layer_vectors(self, params, d):  # noqa: ANN001, ANN202
        return DIAG.layer_vectors(self.as_diag(params), d)

    def omegas(self, params: Gdpp) -> Omegas:
        z = jnp.zeros_like(params.omega_xx)
        return params.omega_xx, z, params.omega_yx, z

    def from_universal(self, P, Q, atol=0.0):  # noqa: ANN001, ANN202
        r"""``ω_xx = Σ_k p_{x,k} q_{x,k}``, ``ω_yx = Σ_k p_{y,k} q_{x,k}`` of DIAG-form ``P, Q``.

        Needs every layer to have ``ω_xy = ω_yy = 0`` within ``atol`` (for example ``q_y = 0`` in every head,
        the definition of GD++).  A DIAG layer depends on its parameters only through the four ``ω``
        (docs/model.md, diagonal reparametrisation), so the result is the same function of the data
        whatever the number of heads ``H``."""
        wxx, wxy, wyx, wyy = DIAG.omegas(DIAG.from_universal(P, Q, atol))
        for name, om in (("omega_xy", wxy), ("omega_yy", wyy)):
            if float(jnp.max(jnp.abs(om))) > atol:
                raise ValueError(
                    f"not a GD++ model: {name} = sum_k p q must be 0 in every layer (within "
                    f"atol={atol}), got max |{name}| = {float(jnp.max(jnp.abs(om))):.3g}"
                )
        return Gdpp(wxx, wyx)

    def scale_y_step(self, updates, c, d):  # noqa: ANN001, ANN202
        return updates  # GD++ has no q_y (its y column of Q is 0)

    def project(self, params, free):  # noqa: ANN001, ANN202
        return params if free else params._replace(omega_xx=jnp.minimum(params.omega_xx, 0))


FULL, DIAG, GDPP = FullKind(), DiagKind(), GdppKind()
#: The kinds with a universal ``P, Q`` form.
KINDS: tuple[str, ...] = ("full", "diag", "gdpp")

#: Every kind by name, in the order the command line lists them: the universal kinds, then the family's members.
KIND_OBJECTS: dict[str, Kind] = {k.name: k for k in (FULL, DIAG, GDPP, *MEMBER_OBJECTS.values())}


def kind_of(x: str | Kind | Params) -> Kind:
    """The kind named ``x`` (a key of :data:`KIND_OBJECTS`), or the kind of native parameters ``x``."""
    if isinstance(x, Kind):
        return x
    if isinstance(x, str):
        if x not in KIND_OBJECTS:
            raise ValueError(f"model kind must be one of {', '.join(KIND_OBJECTS)}; got {x!r}")
        return KIND_OBJECTS[x]
    for k in KIND_OBJECTS.values():
        if type(x) is k.params_type:
            return k
    raise ValueError(
        f"unknown parameter type {type(x).__name__}; expected one of "
        f"{', '.join(k.params_type.__name__ for k in KIND_OBJECTS.values())}"
    )


def check_kind(kind: str) -> str:
    """``kind`` if it names a model kind; a one-line ``ValueError`` otherwise."""
    return kind_of(str(kind) if not isinstance(kind, str) else kind).name


def universal(params: Params, d: int) -> tuple[jax.Array, jax.Array]:
    """Universal ``(P, Q)`` of shape ``(L, H, d+1, d+1)`` for any parametrisation."""
    return kind_of(params).universal(params, d)


def from_universal(kind: str | Kind, P: Any, Q: Any, atol: float = 0.0) -> Params:
    """Native parameters of ``kind`` from universal ``P, Q``; the inverse of :func:`universal`."""
    return kind_of(kind).from_universal(P, Q, atol)


def diag_from_universal(P: Any, Q: Any, atol: float = 0.0) -> Diag:
    """DIAG parameters from universal ``P, Q``; a clear error if they are not of DIAG form."""
    return DIAG.from_universal(P, Q, atol)


def gdpp_from_universal(P: Any, Q: Any, atol: float = 0.0) -> Gdpp:
    """GD++ parameters from universal ``P, Q`` (:meth:`GdppKind.from_universal`)."""
    return GDPP.from_universal(P, Q, atol)


def omegas(params: Diag | Gdpp) -> Omegas:
    r"""Per-layer ``(ω_xx, ω_xy, ω_yx, ω_yy)``, each ``(L,)``: sums over heads of ``p·q`` (docs/model.md)."""
    return kind_of(params).omegas(params)


def init(
    kind: str | Kind,
    key: jax.Array,
    layers: int,
    d: int,
    heads: int = 1,
    scale: float = 0.0,
    dtype: Any = jnp.float32,
) -> Params:
    r"""Initial parameters of ``kind``: small random entries of standard deviation ``scale``."""
    return kind_of(kind).init(key, layers, d, heads, scale, dtype)
