"""Discover every proof-check script, run them, and print a table (or JSON)."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from lintf_theory import render_markdown
from numerics.io import atomic_write_text, strict_json

from ._check import REGISTRY, Claim, Result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m proofs`` (``lintf verify`` has these and ``--printed``)."""
    parser.add_argument("--json", action="store_true", help="print the results as a JSON list")
    parser.add_argument(
        "--only", metavar="NAMES", help="comma-separated module names or paper refs to run"
    )
    parser.add_argument(
        "--latex", metavar="FILE", help="also write every derived statement as LaTeX/Markdown"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print what each claim checked"
    )


def discover() -> list[Claim]:
    """Import every public module of :mod:`proofs` (sorted by name) and return their claims."""
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"proofs.{info.name}")
    seen: dict[int, Claim] = {}
    for c in REGISTRY:
        seen.setdefault(id(c.fn), c)
    return list(seen.values())


def _words(text: str) -> str:
    return " ".join(text.lower().split())


def ref_parts(ref: str) -> set[str]:
    """What ``--only`` matches of a claim's paper ref: the whole ref and each part between ``,``, ``/`` and
    parentheses, lower case (``"Lemma 4.3 (matrix form), fast forward pass"``: ``"lemma 4.3"``, ``"matrix form"``,
    ...)."""
    return {_words(ref)} | {w for part in re.split(r"[,/()]", ref) if (w := _words(part))}


def run_all(only: str | None = None) -> list[Result]:
    claims = discover()
    if only is not None:
        keys = [k.strip() for k in only.split(",") if k.strip()]
        if not keys:
            raise ValueError(
                f"--only {only!r} names no claim; give comma-separated module names in proofs/ or "
                "paper refs"
            )

        def hit(
            k: str, c: Claim
        ) -> bool:  # a whole name or a whole part of the paper ref, never a substring
            return k.removeprefix("proofs.") == c.module.removeprefix("proofs.") or _words(
                k
            ) in ref_parts(c.ref)

        unmatched = [k for k in keys if not any(hit(k, c) for c in claims)]
        if unmatched:
            raise ValueError(
                f"--only {only!r}: {', '.join(map(repr, unmatched))} matches no claim; give whole "
                "module names in proofs/ (lemma_4_4) or paper refs (Theorem 5.1)"
            )
        claims = [c for c in claims if any(hit(k, c) for k in keys)]
    return [c.run() for c in claims]


def print_table(results: list[Result]) -> None:
    table = Table(
        title="lintf verify: claims of Vladymyrov et al. (NeurIPS 2024)", show_lines=False
    )
    for col in ("claim", "paper", "route(s)", "status", "seconds"):
        table.add_column(col, overflow="fold")
    for r in results:
        status = "[green]pass[/]" if r.status == "pass" else "[red]FAIL[/]"
        if r.findings:
            status += f" ({len(r.findings)} finding{'s' if len(r.findings) > 1 else ''})"
        table.add_row(r.claim, r.ref, ", ".join(r.routes), status, f"{r.seconds:.2f}")
    console = Console(width=max(120, Console().width))
    console.print(table)
    findings = [(r, f) for r in results for f in r.findings]
    if findings:
        console.print("[bold]Statements that do not hold as printed in the paper:[/]")
        for r, f in findings:
            console.print(f"  - {r.ref}: {f}", markup=False)
    for r in results:
        if r.error:
            console.print("[red]FAIL[/]", end=" ")
            console.print(f"{r.module}: {r.error}", markup=False)
    n_fail = sum(r.status != "pass" for r in results)
    console.print(f"{len(results) - n_fail} passed, {n_fail} failed")


def run(args: argparse.Namespace, extra: Sequence[Claim] = ()) -> int:
    """Run the claims ``args.only`` selects, then ``extra`` (claims the caller built, such as
    ``lintf verify --printed``'s), print them as ``args`` says, and return the exit status (0 when
    every claim passes)."""
    results = run_all(args.only) + [c.run() for c in extra]
    if args.latex:
        atomic_write_text(args.latex, render_markdown(), exclusive=True)
    if args.json:
        print(strict_json([r.as_dict() for r in results], indent=2))
    else:
        print_table(results)
        if args.verbose:
            for r in results:
                print(f"\n{r.module}: {r.claim}")
                for line in r.lines:
                    print(f"  checked: {line}")
        if args.latex:
            print(f"wrote {args.latex}")
    return 0 if all(r.status == "pass" for r in results) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m proofs", description="Run every proof-check script."
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except ValueError as exc:
        print(f"python -m proofs: error: {exc}", file=sys.stderr)
        return 2
