r"""Attention weights from other code bases to lintf's universal ``P, Q``, and back.

One softmax-free head with value scale ``s`` and output mask ``Π`` is ``Δh_i = P E Q h_i`` with
``E = Σ_{j≤n} h_j h_jᵀ``; the map from the weights to ``(P, Q)`` is derived in
:mod:`lintf_theory._attention` and used here through its bridge export (never retyped):

==========  ============================  ============================  ==========================
convention  weight shapes (one head)      ``P``                         ``Q``
==========  ============================  ============================  ==========================
``row``     ``W_{Q,K,V}: (D, K)``,        ``s Πᵀ W_Oᵀ W_Vᵀ``            ``W_K W_Qᵀ``
            ``W_O: (K, D)``
``column``  ``W_{Q,K,V}: (K, D)``,        ``s Π W_O W_V``               ``W_Kᵀ W_Q``
            ``W_O: (D, K)``
==========  ============================  ============================  ==========================

``D = d+1`` is the token size and ``K`` the key size; ``Π = I``, or ``Π = e_y e_yᵀ`` for a layer that
updates only ``y`` (``y_only``).  Arrays for a whole model (``row``; ``column`` swaps the last two
axes of each):

* 4-D ``W_{Q,K,V}: (L, H, D, K)``, ``W_O: (L, H, K, D)``: layer, head, then the head's matrix;
* 3-D ``W_{Q,K,V}: (L, D, H·K)``, ``W_O: (L, H·K, D)``: heads fused as in multi-head code (head
  ``k`` is columns ``kK..(k+1)K−1`` of ``W_{Q,K,V}`` and the same rows of ``W_O``), split by ``heads``;
* 2-D: one layer of the 3-D form.

A weight-tied model stores one layer and gives ``layers``: the layer is repeated.
:func:`model_meta` is the ``meta`` a converted model file carries.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lintf_theory import attention_inverse_rule, attention_rule, check_parameters
from numerics.data import Noise, XDist
from numerics.io import check_real_finite

CONVENTIONS = ("row", "column")
NAMES = ("W_Q", "W_K", "W_V", "W_O")


def check_convention(convention: str) -> str:
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {', '.join(CONVENTIONS)}; got {convention!r}")
    return convention


def check_value_scale(value_scale: Any, nonzero: bool = False) -> float:
    s = float(value_scale)
    if not np.isfinite(s) or (nonzero and s == 0):
        raise ValueError(
            f"value scale must be a finite{' non-zero' if nonzero else ''} number, got {value_scale}"
        )
    return s


def _layout(name: str, convention: str) -> str:
    inner = name != "W_O"
    if convention == "row":
        return (
            "(L, H, D, K), (L, D, H*K) or (D, H*K)"
            if inner
            else "(L, H, K, D), (L, H*K, D) or (H*K, D)"
        )
    return (
        "(L, H, K, D), (L, H*K, D) or (H*K, D)"
        if inner
        else "(L, H, D, K), (L, D, H*K) or (D, H*K)"
    )


def _to_4d(name: str, arr: np.ndarray, convention: str, heads: int | None) -> np.ndarray:
    """One weight array as ``(L, H, ·, ·)`` in ``convention``'s per-head orientation."""
    inner = name != "W_O"
    flip = (convention == "column") == inner  # True: the fused head axis is the second-to-last
    a = (
        np.swapaxes(arr, -1, -2) if flip and arr.ndim >= 2 else arr
    )  # now (..., other, H*K) or (..., H, other, K)
    if a.ndim == 2:
        a = a[None]
    if a.ndim == 3:
        HK = a.shape[-1]
        H = 1 if heads is None else int(heads)
        if H < 1 or HK % H:
            raise ValueError(
                f"{name} has shape {arr.shape}: its fused head axis of size {HK} does not split into "
                f"heads={H} equal parts (layouts for {convention} convention: {_layout(name, convention)})"
            )
        a = np.moveaxis(a.reshape(a.shape[0], a.shape[1], H, HK // H), 2, 1)
    elif a.ndim == 4:
        if heads is not None and a.shape[1] != int(heads):
            raise ValueError(
                f"{name} has shape {arr.shape} with H={a.shape[1]} heads, but heads={heads} was given"
            )
    else:
        raise ValueError(
            f"{name} must be 2-D, 3-D or 4-D, got shape {arr.shape} "
            f"(layouts for {convention} convention: {_layout(name, convention)})"
        )
    return np.swapaxes(a, -1, -2) if flip else a


def weights_as_heads(
    weights: dict[str, Any],
    convention: str = "row",
    heads: int | None = None,
    layers: int | None = None,
) -> dict[str, np.ndarray]:
    """``W_Q, W_K, W_V, W_O`` as 4-D ``(L, H, ·, ·)`` arrays in ``convention`` (see the module docstring)."""
    check_convention(convention)
    missing = [k for k in NAMES if k not in weights]
    if missing:
        raise ValueError(
            f"attention weights must hold {', '.join(NAMES)}; missing: {', '.join(missing)}"
        )
    W = {k: _to_4d(k, check_real_finite(k, weights[k]), convention, heads) for k in NAMES}
    L, H = W["W_Q"].shape[:2]
    D, Kq = (
        (W["W_Q"].shape[2], W["W_Q"].shape[3])
        if convention == "row"
        else (W["W_Q"].shape[3], W["W_Q"].shape[2])
    )
    want_in = (D, Kq) if convention == "row" else (Kq, D)
    want = {"W_Q": want_in, "W_K": want_in, "W_V": want_in, "W_O": want_in[::-1]}
    for k in NAMES:
        if W[k].shape != (L, H, *want[k]):
            raise ValueError(
                f"{k} has shape {np.shape(weights[k])}, read as (L, H, ...) = {W[k].shape}; with W_Q it must be "
                f"{(L, H, *want[k])} ({convention} convention: {_layout(k, convention)}, D = d+1 = {D})"
            )
    if D < 2:
        raise ValueError(
            f"token size D = d+1 must be >= 2, got D={D} (from W_Q of shape {np.shape(weights['W_Q'])})"
        )
    if Kq < 1 or L < 1:
        raise ValueError(
            f"W_Q of shape {np.shape(weights['W_Q'])} holds no attention: the key size K and the layers L "
            f"must be >= 1, got K={Kq}, L={L}"
        )
    if layers is not None:
        if int(layers) < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        if L == 1:
            W = {k: np.repeat(v, int(layers), axis=0) for k, v in W.items()}
        elif L != int(layers):
            raise ValueError(
                f"layers={layers} repeats one weight-tied layer, but the weights hold L={L} layers"
            )
    return W


def output_mask(D: int, y_only: bool) -> np.ndarray:
    r"""``Π``: the identity, or ``e_y e_yᵀ`` (only the last coordinate, ``y``, is updated)."""
    if not y_only:
        return np.eye(D)
    Pi = np.zeros((D, D))
    Pi[-1, -1] = 1.0
    return Pi


def to_universal(
    weights: dict[str, Any],
    convention: str = "row",
    value_scale: float = 1.0,
    y_only: bool = False,
    heads: int | None = None,
    layers: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Universal ``(P, Q)``, each ``(L, H, D, D)`` float64, of attention weights (see the module docstring)."""
    s = check_value_scale(value_scale)
    W = weights_as_heads(weights, convention, heads, layers)
    L, H = W["W_Q"].shape[:2]
    D = W["W_Q"].shape[2 if convention == "row" else 3]
    rule, Pi = attention_rule(convention).numpy, output_mask(D, y_only)
    P, Q = np.empty((L, H, D, D)), np.empty((L, H, D, D))
    for l in range(L):
        for k in range(H):
            P[l, k], Q[l, k] = rule(*(W[n][l, k] for n in NAMES), s, Pi)
    return P, Q


def from_universal(
    P: Any, Q: Any, convention: str = "row", value_scale: float = 1.0
) -> dict[str, np.ndarray]:
    r"""Attention weights ``W_Q, W_K, W_V, W_O`` of shape ``(L, H, D, D)`` (key size ``K = D``) with
    ``to_universal(...) == (P, Q)``: ``W_K = W_V = I`` and ``W_Q, W_O`` from the derived inverse."""
    check_convention(convention)
    s = check_value_scale(value_scale, nonzero=True)
    P, Q = check_real_finite("P", P), check_real_finite("Q", Q)
    L, H, d = check_parameters(P, Q)
    rule = attention_inverse_rule(convention).numpy
    WQ, WO = np.empty_like(P), np.empty_like(P)
    for l in range(L):
        for k in range(H):
            WQ[l, k], WO[l, k] = rule(P[l, k], Q[l, k], s)
    eye = np.broadcast_to(np.eye(d + 1), P.shape).copy()
    return {"W_Q": WQ, "W_K": eye, "W_V": eye.copy(), "W_O": WO}


def model_meta(
    source: dict[str, Any], noise: str | Noise | None = None, x: str | XDist | None = None
) -> dict[str, Any]:
    """The ``meta`` of a model converted from attention weights: ``kind`` ``full``, the ``source``
    record and, when given, the data setting ``lintf inspect`` then uses by default, in canonical
    spelling with every level (``categorical:1,3,5`` keeps all three)."""
    meta: dict[str, Any] = {"kind": "full", "source": source}
    if noise is not None:
        meta["noise"] = str(Noise.parse(noise))
    if x is not None:
        meta["x"] = str(XDist.parse(x))
    return meta
