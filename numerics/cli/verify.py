"""``lintf verify``: run every proof-check script (the paper's claims) and print a table.

The options are defined here; :mod:`proofs` is imported only when the command runs, so that building the
command line (and importing :mod:`numerics`) never imports :mod:`proofs`.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the results as a JSON list")
    parser.add_argument("--only", metavar="NAMES", help="comma-separated module names or paper refs to run")
    parser.add_argument("--latex", metavar="FILE", help="also write every derived statement as LaTeX/Markdown")
    parser.add_argument("-v", "--verbose", action="store_true", help="print what each claim checked")
    parser.add_argument("--printed", metavar="FILE",
                        help="also check printed GD++ values (CSV or JSON with noise, depth, value and optionally se) "
                             "against ridge at lambda = E sigma^2; the format is in numerics/reproduce/floor.py")


def run(args: argparse.Namespace) -> int:
    import proofs

    return proofs.run(args)
