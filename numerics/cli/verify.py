"""``lintf verify``: run every proof-check script (the paper's claims) and print a table.

The options are defined here; :mod:`proofs` is imported only when the command runs, so that building the
command line (and importing :mod:`numerics`) never imports :mod:`proofs`.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument(
        "--printed",
        metavar="FILE",
        help="also check printed GD++ values (CSV or JSON with noise, depth, value and optionally se) "
        "against ridge at lambda = E sigma^2; the format is in numerics/baselines/gdpp_floor.py",
    )


def run(args: argparse.Namespace) -> int:
    import proofs  # lazy: start-up

    # bad input fails here, before any work
    printed = printed_claim(args.printed) if args.printed else None
    return proofs.run(args, [printed] if printed else [])


def printed_claim(path: str):  # noqa: ANN201  (a proofs.Claim; proofs is imported when run)
    r"""``--printed FILE``: the printed GD++ values against the ``λ = E σ²`` floor, as one more
    claim row.

    The table is parsed and validated now (a one-line ``ValueError`` before any work) and checked
    when the claim runs; the format and the rule are in :mod:`numerics.baselines.gdpp_floor`, the
    theorem behind it in ``proofs/gdpp_ridge_floor.py``."""
    import proofs  # lazy: start-up
    from numerics.baselines import gdpp_floor  # lazy: start-up

    rows = gdpp_floor.read_printed(path)

    def check(report: proofs.Report) -> None:
        results = gdpp_floor.check_printed(rows)
        for _, _, _, text in results:
            report.ok(text)
        bad = [text for _, _, flag, text in results if flag]
        below = f"{len(bad)} of {len(rows)} printed GD++ values are below the floor: "
        report.require(not bad, below + "; ".join(bad))

    text = f"printed GD++ values in {path} are at or above ridge at lambda = E sigma^2"
    routes = ("printed values", "Monte Carlo floor (n=20, d=10)")
    return proofs.Claim(text, "printed table", routes, check, "numerics.cli.verify")
