r"""``lintf baselines --noise SPEC [--n 20 --d 10 --eval-sequences 100000 --seed S] [--json]``.

Prints the adjusted loss (method minus oracle ridge on the same sequences, docs/model.md) ± its
paired standard error for OLS, ConstRR, ConstRR at ``λ = E σ²`` (the floor of every GD++ model),
AdaRR, TunedRR, GD and the Bayes-optimal floor (:mod:`numerics.baselines`). ``--noise paper`` (or
``all``) runs the paper's 10 settings (``uniform:0..7``, ``categorical:1,3``, ``categorical:1,3,5``) in
one table.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from numerics.errors import LintfError
from numerics.io import strict_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--noise",
        required=True,
        action="append",
        help="fixed:S, uniform:SMAX, categorical:S1,S2,... or 'paper'/'all' for the 10 paper settings; "
        "repeat for several",
    )
    p.add_argument("--n", type=int, default=20, help="context length (default 20)")
    p.add_argument("--d", type=int, default=10, help="input dimension (default 10)")
    p.add_argument(
        "--eval-sequences",
        type=int,
        default=100_000,
        help="evaluation sequences per setting (default 100000)",
    )
    p.add_argument(
        "--tune-sequences",
        type=int,
        default=None,
        help="tuning sequences for ConstRR/TunedRR/GD, drawn separately (default 50000)",
    )
    p.add_argument("--seed", type=int, default=0, help="PRNG seed (default 0)")
    p.add_argument(
        "--chunk-sequences",
        type=int,
        default=20_000,
        help="sequences drawn and evaluated at once; bounds memory and fixes the data for a seed (default 20000)",
    )
    p.add_argument(
        "--methods",
        default=None,
        help="comma list out of OLS,ConstRR,ConstRR_Esigma2,AdaRR,TunedRR,GD,Bayes,Oracle (default: "
        "all; n <= d allows only ConstRR,ConstRR_Esigma2,GD,Bayes,Oracle)",
    )
    p.add_argument(
        "--nodes", type=int, default=None, help="Bayes quadrature nodes in log sigma (default 256)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument(
        "--markdown", action="store_true", help="print a Markdown table (for the README)"
    )


def _noises(specs: list[str]) -> list:
    from numerics.data import PAPER_NOISES, Noise  # lazy: start-up

    out: list[Noise] = []
    for s in specs:
        out += (
            [Noise.parse(p) for p in PAPER_NOISES]
            if s.strip().lower() in ("paper", "all")
            else [Noise.parse(s)]
        )
    return out


def run(args: argparse.Namespace) -> int:
    from numerics import baselines  # lazy: start-up
    from numerics.baselines import bayes  # lazy: start-up

    if args.json and args.markdown:
        raise LintfError("--json and --markdown each choose the output; give one of them")
    noises = _noises(args.noise)
    methods = (
        tuple(m.strip() for m in args.methods.split(","))
        if args.methods is not None
        else baselines.NAMES
    )
    try:
        methods = baselines.check_methods(methods, args.n, args.d)
    except ValueError as exc:  # the library names its parameters; the command names its flags
        hint = (
            f"; leave {', '.join(baselines.OLS_BASED)} out with --methods, or make --n larger than --d"
            if "n > d" in str(exc)
            else ""
        )
        raise LintfError(
            f"--methods {'all' if args.methods is None else repr(args.methods)}: {exc}{hint}"
        ) from None
    applies = (
        ("--nodes", args.nodes, ("Bayes",)),
        ("--tune-sequences", args.tune_sequences, baselines.TUNED),
    )
    for flag, given, users in applies:
        if given is not None and not set(users) & set(methods):
            raise LintfError(
                f"{flag} {given} applies to {', '.join(users)}, which --methods leaves out; add "
                f"{'it' if len(users) == 1 else 'one'}, or leave {flag} out"
            )
    tune_sequences = (
        baselines.TUNE_SEQUENCES if args.tune_sequences is None else args.tune_sequences
    )
    nodes = bayes.DEFAULT_NODES if args.nodes is None else args.nodes
    try:
        bayes.quadrature("uniform:1", nodes)  # validates --nodes before any work
    except ValueError as exc:
        raise LintfError(f"--{exc}") from None
    results, seconds = {}, {}
    for nz in noises:
        t0 = time.perf_counter()
        results[str(nz)] = baselines.table(
            nz,
            n=args.n,
            d=args.d,
            sequences=args.eval_sequences,
            seed=args.seed,
            tune_sequences=tune_sequences,
            methods=methods,
            nodes=nodes,
            chunk=args.chunk_sequences,
        )
        seconds[str(nz)] = time.perf_counter() - t0
        bad = [
            f"{m} {k}"
            for m, r in results[str(nz)].items()
            for k in ("loss", "se")
            if isinstance(r.get(k), float) and not math.isfinite(r[k])
        ]
        if bad:
            raise LintfError(
                f"--noise {nz}: {', '.join(bad)} not finite (the noise level's squares overflow); "
                "use smaller noise levels"
            )
    if args.json:
        out = {
            "n": args.n,
            "d": args.d,
            "sequences": args.eval_sequences,
            "tune_sequences": tune_sequences,
            "seed": args.seed,
            "chunk": args.chunk_sequences,
            "seconds": seconds,
            "results": results,
        }
        print(strict_json(out))
        return 0
    header, rows = _rows(results, methods)
    total = f"{sum(seconds.values()):.1f} s for {len(noises)} setting(s)"
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" if j == 0 else "--:" for j in range(len(header))) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
        print(f"\n{_caption(args, tune_sequences)}; {total}.")
        return 0

    from rich.console import Console  # lazy: start-up
    from rich.table import Table  # lazy: start-up

    tab = Table(title=_caption(args, tune_sequences))
    for j, h in enumerate(header):
        tab.add_column(h, justify="left" if j == 0 else "right")
    for r in rows:
        tab.add_row(*r)
    console = Console() if sys.stdout.isatty() else Console(width=200)
    console.print(tab)
    for k, r in results.items():
        if "ConstRR" in r and baselines.FLOOR in r:
            console.print(
                f"{k}: ConstRR's tuned lambda {r['ConstRR']['lam_const']:.4g}, E sigma^2 = "
                f"{r[baselines.FLOOR]['lam']:.4g} ({baselines.FLOOR}, the GD++ floor)"
            )
    console.print(f"{total}; --json adds raw losses and the tuned parameters")
    return 0


def _caption(args: argparse.Namespace, tune_sequences: int) -> str:
    return (
        f"Adjusted loss ± SE (method − oracle ridge, paired), n={args.n}, d={args.d}, {args.eval_sequences} "
        f"sequences, {tune_sequences} tuning sequences, seed {args.seed}"
    )


def _rows(results: dict, methods: tuple[str, ...]) -> tuple[list[str], list[list[str]]]:
    """Header and rows: one row per noise setting; the last column is the smallest paired gap
    ``ℓ_m − ℓ_Bayes`` over the other baselines (positive: Bayes is lower)."""
    shown = [m for m in methods if m != "Oracle"]
    gap = "Bayes" in methods and len(shown) > 1
    header = (
        ["noise"]
        + shown
        + (["Oracle raw"] if "Oracle" in methods else [])
        + (["min gap to Bayes"] if gap else [])
    )
    rows = []
    for k, r in results.items():
        row = [k] + [f"{r[m]['loss']:.4f} ± {r[m]['se']:.4f}" for m in shown]
        if "Oracle" in methods:
            row.append(f"{r['Oracle']['raw']:.4f}")
        if gap:
            m = min((x for x in shown if x != "Bayes"), key=lambda x: r[x]["minus_Bayes"])
            row.append(f"{r[m]['minus_Bayes']:.2g} ± {r[m]['minus_Bayes_se']:.1g} ({m})")
        rows.append(row)
    return header, rows
