"""``lintf train``: train a FULL / DIAG / GD++ linear transformer, or a member of the linear-attention family
(``causal``, ``retnet``, ``mamba2``, ``gla``, ``deltanet``, ``gated-deltanet``: docs/family.md), into a run directory.

Example (DIAG, 7 layers, σ ~ U(0,5), 3 seeds in one compiled program)::

    python -m numerics.cli train --model diag --layers 7 --noise uniform:5 --seeds 3 --out runs/diag7

Rerunning the same command after an interruption resumes from the last checkpoint.

A gated DeltaNet, 2 layers (its ``model.npz`` holds its native arrays; ``lintf predict`` and ``lintf inspect``
read it)::

    python -m numerics.cli train --model gated-deltanet --layers 2 --steps 300 --batch 256 --out runs/gdn2

GD++ at ``fixed:0`` from the spectral fit (seed 0 = the fit, kept unless Adam improves on it)::

    python -m numerics.cli train --model gdpp --layers 7 --noise fixed:0 --init spectral --dtype float64 \
        --steps 1 --no-baselines --out runs/gdpp7-spectral
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import MISSING, fields

from numerics.io import strict_json
from numerics.train.config import TrainConfig


def _option_type(annotation: str) -> type:
    """The command-line type of a :class:`TrainConfig` field from its annotation (a string: postponed annotations)."""
    base = annotation.replace(" | None", "").strip()
    return {"int": int, "float": float, "str": str}[base]


def flag_of(f) -> str:  # noqa: ANN001
    """The command-line flag of a :class:`TrainConfig` field: its ``"flag"`` metadata, else ``--`` and its name in
    kebab case."""
    return f.metadata.get("flag", "--" + f.name.replace("_", "-"))


def add_arguments(p: argparse.ArgumentParser) -> None:
    """One option per :class:`numerics.train.config.TrainConfig` field that has a help text: its name, type and
    default come from the field, so no default is written twice."""
    for f in fields(TrainConfig):
        help_ = f.metadata.get("help")
        if help_ is None:
            continue
        flag = flag_of(f)
        if f.default is MISSING:
            p.add_argument(flag, dest=f.name, type=_option_type(f.type), required=True, help=help_)
        else:
            shown = "" if f.default is None else f" (default {f.default})"
            p.add_argument(
                flag, dest=f.name, type=_option_type(f.type), default=f.default, help=help_ + shown
            )
    p.add_argument("--out", default=None, help="run directory (default runs/MODEL-L-NOISE-sSEED)")
    p.add_argument(
        "--no-baselines", action="store_true", help="skip the baselines table in metrics.json"
    )
    p.add_argument("--json", action="store_true", help="print metrics as JSON, no progress bar")


def config_from_args(args: argparse.Namespace):  # noqa: ANN201
    """The :class:`TrainConfig` of the parsed options (every field that has an option)."""
    given = [f for f in fields(TrainConfig) if hasattr(args, f.name)]
    try:
        return TrainConfig(**{f.name: getattr(args, f.name) for f in given})
    except ValueError as exc:  # the config names its field; the user typed the flag
        msg = str(exc)
        for f in sorted(given, key=lambda f: -len(f.name)):
            if msg.startswith(f.name + " "):
                raise ValueError(flag_of(f) + msg[len(f.name) :]) from None
        raise


def run(args: argparse.Namespace) -> int:
    import jax  # lazy: start-up

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    from numerics.train.rundir import run as run_dir  # lazy: start-up

    cfg = config_from_args(args)
    out = (
        args.out
        or f"runs/{cfg.model}-{cfg.layers}-{cfg.noise.replace(':', '').replace(',', '_')}-s{cfg.seed}"
    )
    metrics = run_dir(
        cfg, out, progress=not args.json and sys.stderr.isatty(), baselines=not args.no_baselines
    )
    assert metrics is not None
    if args.json:
        print(strict_json({k: v for k, v in metrics.items() if k != "curve"}, indent=2))
    else:
        rate = metrics.get(
            "steps_per_s"
        )  # NaN (null once stored) where a resumed run had no steps left to train
        rate = (
            f"{rate:.1f} steps/s"
            if isinstance(rate, float) and math.isfinite(rate)
            else "no steps left to train"
        )
        print(
            f"{cfg.kind!r}-{cfg.layers} {cfg.noise}: adjusted loss {metrics['adjusted_loss']:.5g} "
            f"± {metrics['se']:.2g} (best of {cfg.seeds} seeds, {metrics['eval_sequences']} sequences, "
            f"{rate}) -> {out}"
        )
    return 0
