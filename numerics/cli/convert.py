r"""``lintf convert IN.npz --out OUT.npz``: attention weights to a lintf model, or a lintf model to weights.

``IN.npz`` holding ``W_Q, W_K, W_V, W_O`` (see :mod:`numerics.models.convert` for the accepted shapes) is
converted to a model file (universal ``P, Q`` plus a JSON ``meta`` that records the source and,
if given, the data setting ``--noise`` / ``--x`` that ``lintf inspect`` then uses by default).
``IN.npz`` holding ``P, Q`` (a lintf model) is converted to weights with key size ``D = d+1``,
``W_K = W_V = I``, in ``--convention``.  ``OUT.npz`` must not exist: nothing is overwritten.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from fractions import Fraction

from numerics.cli import validate
from numerics.errors import LintfError

#: ``--value-scale`` lies in ``[1/SCALE_MAX, SCALE_MAX]``: the conversions divide by it and square it.
SCALE_MAX = 1e100


def _scale(text: str) -> float:
    """``S`` or ``A/B``, exactly rounded to float64; each part is first read as a float, so that a part outside
    float64's range (``1e999999999``) is refused at once instead of being expanded as an exact fraction."""
    parts = text.strip().split("/")
    try:
        floats = [float(t) for t in parts] if len(parts) <= 2 else []
        ok = (
            bool(floats)
            and all(math.isfinite(f) and f != 0 for f in floats[1:])
            and math.isfinite(floats[0])
        )
        v = (
            float(Fraction(*(Fraction(t.strip()) for t in parts)))
            if ok and floats[0] != 0
            else None
        )
    except (ValueError, ZeroDivisionError, OverflowError):
        v = None
    if v is None or not 1 / SCALE_MAX <= v <= SCALE_MAX:
        raise argparse.ArgumentTypeError(
            f"must be a number > 0 such as 0.05 or 1/20, between {1 / SCALE_MAX:g} and "
            f"{SCALE_MAX:g}, got {text[:40]!r}"
        )
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "source",
        metavar="IN.npz",
        help="attention weights W_Q, W_K, W_V, W_O, or a lintf model (P, Q)",
    )
    p.add_argument("--out", required=True, metavar="OUT.npz", help="file to write (must not exist)")
    p.add_argument(
        "--convention",
        choices=("row", "column"),
        default="row",
        help="row: h @ W (Haiku, Flax, torch.nn.Linear weights transposed); column: W h (default row)",
    )
    p.add_argument(
        "--value-scale",
        type=_scale,
        default=1.0,
        metavar="S",
        help="factor on the value path, e.g. 1/20 for code that divides by n = 20 (default 1)",
    )
    p.add_argument(
        "--y-only", action="store_true", help="the attention output updates only the y coordinate"
    )
    p.add_argument(
        "--heads",
        type=int,
        default=None,
        help="number of heads fused along the key axis of 2-D / 3-D weights (default 1)",
    )
    p.add_argument(
        "--layers", type=int, default=None, help="repeat one weight-tied layer this many times"
    )
    p.add_argument(
        "--noise", default=None, help="record this noise spec in meta (inspect's default)"
    )
    p.add_argument(
        "--x", default=None, help="record this input distribution in meta: normal or uniform:a,b"
    )


def _load(path: str) -> dict:
    """The arrays of ``path`` that the conversion uses (``W_Q, W_K, W_V, W_O`` or ``P, Q``, as
    :func:`numerics.cli.validate.convert_input` chose them), and no other (:func:`numerics.archive.read_npz`)."""
    from numerics.archive import read_npz  # lazy: start-up

    return read_npz(
        path,
        f"input file {path!r}",
        validate.convert_input(path),
        max_bytes=validate.available_memory(),
    )


def run(args: argparse.Namespace) -> int:
    import numpy as np  # lazy: start-up

    from numerics.data import Noise, XDist  # lazy: start-up
    from numerics.io import atomic_savez  # lazy: start-up
    from numerics.model_file import save_model  # lazy: start-up
    from numerics.models import convert  # lazy: start-up

    if os.path.exists(args.out):
        raise LintfError(
            f"--out {args.out!r} exists; choose a new file name (nothing is overwritten)"
        )
    arrays = _load(args.source)
    if (
        args.layers is not None and args.layers >= 1
    ):  # a weight-tied layer repeated: refuse what cannot fit first
        per_layer = sum(np.asarray(v).size for k, v in arrays.items() if k in convert.NAMES)
        validate.memory(
            3 * 8 * per_layer * args.layers,
            f"repeating the layer of {args.source} {args.layers} times",
            "--layers",
        )
    if {"P", "Q"} <= set(arrays):
        for flag, given in (
            ("--y-only", args.y_only),
            ("--heads", args.heads),
            ("--layers", args.layers),
            ("--noise", args.noise),
            ("--x", args.x),
        ):
            if given:
                raise LintfError(
                    f"{flag} applies to weights -> model; {args.source!r} holds a model (P, Q)"
                )
        with np.errstate(
            over="ignore", invalid="ignore"
        ):  # an overflow is the one-line error below
            W = convert.from_universal(arrays["P"], arrays["Q"], args.convention, args.value_scale)
        bad = [k for k, v in W.items() if not np.all(np.isfinite(v))]
        if bad:
            raise LintfError(
                f"{args.source} with --value-scale {args.value_scale:g} gives non-finite {', '.join(bad)} "
                "(the model's entries over- or underflow at this scale); nothing written"
            )
        meta = {
            "convention": args.convention,
            "value_scale": args.value_scale,
            "key_size": W["W_Q"].shape[-1],
        }
        atomic_savez(args.out, exclusive=True, **W, meta=json.dumps(meta))
        L, H = W["W_Q"].shape[:2]
        print(
            f"{args.source} -> {args.out}: W_Q, W_K, W_V, W_O of shape {W['W_Q'].shape} "
            f"({args.convention} convention, value scale {args.value_scale:g}, W_K = W_V = I); L={L}, H={H}"
        )
        return 0
    noise = Noise.parse(args.noise) if args.noise else None  # bad input fails here, before any work
    x = XDist.parse(args.x) if args.x else None
    try:
        W = convert.weights_as_heads(arrays, args.convention, args.heads)
        with np.errstate(
            over="ignore", invalid="ignore"
        ):  # an overflow is the one-line error below
            P, Q = convert.to_universal(
                W, args.convention, args.value_scale, args.y_only, layers=args.layers
            )
    except (
        ValueError,
        LintfError,
    ) as exc:  # the weights' shapes and values: name the file they came from
        raise LintfError(f"IN.npz {args.source!r}: {exc}") from None
    if not (np.all(np.isfinite(P)) and np.all(np.isfinite(Q))):
        big = max(float(np.max(np.abs(w))) for w in W.values())
        raise LintfError(
            f"the weights of {args.source!r} (largest |W| {big:.3g}) overflow float64 in P, Q; nothing "
            "written"
        )
    L, H, D = P.shape[0], P.shape[1], P.shape[2]
    source = {
        "from": "attention weights",
        "file": os.path.basename(args.source),
        "convention": args.convention,
        "value_scale": args.value_scale,
        "y_only": args.y_only,
        "key_size": W["W_Q"].shape[-1 if args.convention == "row" else -2],
        "heads": H,
        "layers": L,
        "weight_tied": W["W_Q"].shape[0] == 1 and L > 1,
    }
    save_model(args.out, P, Q, convert.model_meta(source, noise, x), exclusive=True)
    print(
        f"{args.source} -> {args.out}: P, Q of shape {P.shape} (L={L} layers, H={H} heads, d={D - 1}; "
        f"{args.convention} convention, value scale {args.value_scale:g}{', y-only' if args.y_only else ''})"
    )
    return 0
