r"""``lintf predict MODEL.npz DATA.npz [--out preds.npy] [--json]``: evaluate a saved model on user data.

The model is the universal ``.npz`` of :mod:`numerics.io` (``P, Q`` of shape ``(L, H, d+1, d+1)``) or a
family member's file (:mod:`numerics.models.family_io`, computed by the member's own forward pass);
the data file holds ``X (B,n,d)``, ``y (B,n)``, ``x_query (B,d)`` and optionally ``y_query (B,)``
(see :mod:`numerics.cli._userdata`).  The prediction is ``ŷ = −y_{n+1}^L`` (docs/model.md), computed
in float64 by :func:`numerics.models.predict`.  With ``y_query`` the loss
``½ mean_τ (y_t − ŷ)²`` (docs/model.md) is printed with its standard error.
"""

from __future__ import annotations

import argparse

import numpy as np

from numerics.errors import LintfError
from numerics.io import strict_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model", metavar="MODEL.npz", help="saved model (universal P, Q, or a family member's file)"
    )
    p.add_argument(
        "data", metavar="DATA.npz", help="arrays X (B,n,d), y (B,n), x_query (B,d) [, y_query (B,)]"
    )
    p.add_argument("--out", metavar="FILE.npy", help="write the B predictions here (atomically)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def loss_with_se(pred: np.ndarray, target: np.ndarray) -> tuple[float, float | None]:
    r"""``½ mean (y_t − ŷ)²`` and its standard error ``std/√B`` (``None`` for ``B = 1``: one sequence has none)."""
    with np.errstate(
        over="ignore", invalid="ignore"
    ):  # a loss past float64: the caller's error, not a warning
        sq = 0.5 * (np.asarray(target) - np.asarray(pred)) ** 2
        se = float(np.std(sq, ddof=1) / np.sqrt(sq.size)) if sq.size > 1 else None
        return float(np.mean(sq)), se


def run(args: argparse.Namespace) -> int:
    import jax  # lazy: start-up

    from numerics.cli._userdata import load_data, save_array  # lazy: start-up
    from numerics.model_file import load_model  # lazy: start-up
    from numerics.models import predict  # lazy: start-up
    from numerics.models.family_io import is_member_file, load_member  # lazy: start-up

    member = (
        load_member(args.model) if is_member_file(args.model) else None
    )  # a family member's own pass
    if member is None:
        P, Q, _meta = load_model(args.model)
        L, H, d = P.shape[0], P.shape[1], P.shape[2] - 1
    else:
        L, H, d = (
            member.params.W_V.shape[0],
            member.params.W_V.shape[1],
            member.params.W_V.shape[2] - 1,
        )
    data = load_data(args.data, d)
    B, n, _ = data["X"].shape
    with jax.enable_x64(True):
        if member is None:
            pred = predict(P, Q, data["X"], data["y"], data["x_query"])
        else:
            pred = member.kind.forward(
                member.params, *(np.asarray(data[k], np.float64) for k in ("X", "y", "x_query"))
            )
        pred = np.asarray(pred, dtype=np.float64)
    pred = (
        pred + 0.0
    )  # ŷ = −y_{n+1}^L is −0.0 where the model leaves the query's y at 0; print and store 0
    bad = np.flatnonzero(~np.isfinite(pred))
    if bad.size:
        shown = ", ".join(map(str, bad[:5])) + (", ..." if bad.size > 5 else "")
        raise LintfError(
            f"{bad.size} of {B} predictions are not finite (the model overflows in float64 on sequences "
            f"{shown} of {args.data}); nothing written"
        )
    loss = loss_with_se(pred, data["y_query"]) if "y_query" in data else None
    if loss is not None and not all(v is None or np.isfinite(v) for v in loss):
        gap = float(np.max(np.abs(data["y_query"] - pred)))
        raise LintfError(
            f"the loss on y_query of {args.data} is not finite in float64 (|y_query - y_hat| reaches "
            f"{gap:.3g}); nothing written"
        )
    if args.out:
        save_array(args.out, pred)
    if args.json:
        out = {
            "model": args.model,
            "data": args.data,
            "L": L,
            "H": H,
            "d": d,
            "B": B,
            "n": n,
            "predictions": pred.tolist(),
            "out": args.out,
        }
        if loss is not None:
            out["loss"], out["loss_se"] = loss
        print(strict_json(out))
        return 0
    named = f"{member.kind.name}, " if member is not None else ""
    print(
        f"model {args.model}: {named}L={L} layers, H={H} heads, d={d}; data {args.data}: B={B} sequences, n={n}"
    )
    if loss is not None:
        se = (
            f"+- {loss[1]:.2g} (standard error)"
            if loss[1] is not None
            else "(one sequence: no standard error)"
        )
        print(f"loss 1/2 mean (y_query - y_hat)^2 = {loss[0]:.6g} {se}")
    if args.out:
        print(f"{B} predictions written to {args.out}")
    else:
        shown = min(B, 20)
        print(
            "predictions: "
            + " ".join(f"{v:.6g}" for v in pred[:shown])
            + (f" ... ({B - shown} more; use --out FILE.npy)" if B > shown else "")
        )
    return 0
