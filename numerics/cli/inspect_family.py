r"""``lintf inspect`` on a family member's model file (docs/family.md): the implicit weight ``w^l``
of every layer.

The query's read-out after layer ``l`` is linear in ``x_t`` (the query reads the context's state
only), so ``ŷ^l = ⟨w^l, x_t⟩``.  ``w^l`` comes by two routes: the product of the query's transfer
matrices built from the context's states (:func:`numerics.models.family_weights.transfer_weights`)
and autodiff ``∂ŷ^l/∂x_t`` of the member's token pass; the command also measures the linearity
itself (``ŷ^l(x)`` against ``⟨w^l, x⟩`` at random ``x``) and compares ``w^l`` with OLS and ridge.
Exit status 1 when a route or the linearity disagrees beyond ``--tol``.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

from numerics.cli.layer_table import print_layers
from numerics.io import strict_json


def run(  # noqa: ANN001
    args: argparse.Namespace, saved, data: dict, source: str, setting: str | None
) -> int:
    from numerics.evaluate.inspector import compare, ols, ridge  # lazy: start-up
    from numerics.models.family_weights import (  # lazy: start-up
        autodiff_weights,
        linearity_gap,
        transfer_weights,
    )

    params, kind = saved.params, saved.kind
    L, H, d = params.W_V.shape[0], params.W_V.shape[1], params.W_V.shape[2] - 1
    with jax.enable_x64(True):
        X, y, xq = (jax.numpy.asarray(data[k], jax.numpy.float64) for k in ("X", "y", "x_query"))
        B, n = X.shape[:2]
        # each route compiled as one program: run op by op, every scan of the token pass (and of
        # its gradients) is a program of its own
        w = jax.jit(transfer_weights)(params, X, y, xq)
        wad = jax.jit(autodiff_weights)(params, X, y, xq)
        key = jax.random.PRNGKey(args.seed or 0)
        gap = np.asarray(jax.jit(linearity_gap)(params, X, y, w, key))
        sigma = jax.numpy.full((B,), args.sigma) if args.sigma is not None else data.get("sigma")
        refs = {
            "ols": ols(X, y) if n >= d else None,
            "ridge": ridge(X, y, sigma)
            if sigma is not None and (n >= d or bool(np.all(sigma > 0)))
            else None,
        }
        rows = []
        for l in range(L + 1):
            row = {
                "layer": l,
                "w_norm": float(np.mean(np.linalg.norm(w[l], axis=-1))),
                "linearity_gap": float(gap[l]),
            }
            for k, r in refs.items():
                if r is not None:
                    cos, dist = compare(w[l], r)
                    row[f"cos_{k}"], row[f"dist_{k}"] = float(np.mean(cos)), float(np.mean(dist))
            if "y_query" in data:
                row["loss"] = float(
                    0.5
                    * np.mean((np.asarray(data["y_query"]) - np.einsum("bd,bd->b", w[l], xq)) ** 2)
                )
            rows.append(row)
    w, wad = np.asarray(w), np.asarray(wad)
    if not (np.all(np.isfinite(w)) and np.all(np.isfinite(wad))):
        from numerics.errors import LintfError  # lazy: start-up

        raise LintfError(
            f"the implicit weights w^l are not finite on {source} (the model overflows in float64)"
        )
    diff = float(np.max(np.abs(w - wad)))
    rel = diff / max(float(np.max(np.abs(w))), 1e-300)
    agree = rel <= args.tol and float(np.max(gap)) <= args.tol
    if args.json:
        print(
            strict_json(
                {
                    "model": args.model,
                    "kind": kind.name,
                    "source": source,
                    "setting": setting,
                    "L": L,
                    "H": H,
                    "d": d,
                    "B": B,
                    "autodiff_max_abs_diff": diff,
                    "autodiff_max_rel_diff": rel,
                    "linearity_gap": float(np.max(gap)),
                    "agree": agree,
                    "layers": rows,
                }
            )
        )
        return 0 if agree else 1
    print(f"model {args.model}: {kind.name}, L={L} layers, H={H} heads, d={d}; {source} (B={B})")
    if setting:
        print(setting)
    print_layers(rows)
    print(
        "(batch means; w^l from the query's transfer matrices; "
        "linearity = max |y_hat^l(x) - <w^l, x>| relative, "
        "at random x)"
    )
    verdict = "agree" if agree else f"DISAGREE (tolerance {args.tol:g})"
    print(
        f"autodiff check: max_l,b |w^l(transfer) - d y_hat^l / d x_t (autodiff)| = {diff:.3g} "
        f"(relative {rel:.3g}); "
        f"largest linearity gap {float(np.max(gap)):.3g}: {verdict}"
    )
    return 0 if agree else 1
