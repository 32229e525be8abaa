"""Discover every proof-check script, run them, and print a table (or JSON)."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys

from numerics.io import strict_json

from ._check import REGISTRY, Claim, Result


def discover() -> list[Claim]:
    """Import every public module of :mod:`proofs` (sorted by name) and return their claims."""
    import proofs

    for info in sorted(pkgutil.iter_modules(proofs.__path__), key=lambda m: m.name):
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
            raise ValueError(f"--only {only!r} names no claim; give comma-separated module names in proofs/ or "
                             "paper refs")
        def hit(k: str, c: Claim) -> bool:  # a whole name or a whole part of the paper ref, never a substring
            return k.removeprefix("proofs.") == c.module.removeprefix("proofs.") or _words(k) in ref_parts(c.ref)

        unmatched = [k for k in keys if not any(hit(k, c) for c in claims)]
        if unmatched:
            raise ValueError(f"--only {only!r}: {', '.join(map(repr, unmatched))} matches no claim; give whole "
                             "module names in proofs/ (lemma_4_4) or paper refs (Theorem 5.1)")
        claims = [c for c in claims if any(hit(k, c) for k in keys)]
    return [c.run() for c in claims]


def print_table(results: list[Result]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="lintf verify: claims of Vladymyrov et al. (NeurIPS 2024)", show_lines=False)
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


def run(args: argparse.Namespace) -> int:
    from . import _printed

    printed = _printed.load(args.printed) if args.printed else None  # bad input fails here, before any work
    results = run_all(args.only) + ([printed.run()] if printed else [])
    if args.latex:
        from lintf_theory import render_markdown
        from numerics.io import atomic_write_text

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
    from numerics.cli.verify import add_arguments

    parser = argparse.ArgumentParser(prog="python -m proofs", description="Run every proof-check script.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except ValueError as exc:
        print(f"python -m proofs: error: {exc}", file=sys.stderr)
        return 2
