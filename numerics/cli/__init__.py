"""The ``lintf`` console command: one front for verification, training, baselines and reproduction.

Each sub-command lives in its own module ``numerics.cli.<name>`` exposing
``add_arguments(parser)`` and ``run(args) -> int``.  Bad input raises :class:`ValueError` (or
:class:`numerics.errors.LintfError`), which is printed as one line, exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "verify": ("proofs._runner", "run every proof-check script (the paper's claims)"),
    "baselines": ("numerics.cli.baselines", "adjusted loss of every baseline, Bayes-optimal floor included"),
    "train": ("numerics.cli.train", "train FULL / DIAG / GD++ linear transformers"),
    "predict": ("numerics.cli.predict", "evaluate a saved model on user data"),
    "inspect": ("numerics.cli.inspect", "per-layer implicit weights (M, u, a, w) of a saved model"),
    "convert": ("numerics.cli.convert", "attention weights (W_Q, W_K, W_V, W_O) to a lintf model, and back"),
    "reproduce": ("numerics.cli.reproduce", "reproduce the paper's table and figures"),
    "bench": ("numerics.cli.bench", "training throughput and time-to-quality benchmark"),
}


def _load(module: str):  # noqa: ANN202
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lintf", description="lintf: machine-checked theory and fast numerics for linear transformers as in-context learners.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_) in COMMANDS.items():
        mod = _load(module)
        p = sub.add_parser(name, help=help_ if mod else f"{help_} (not available in this build)",
                           description=help_)
        if mod is not None:
            mod.add_arguments(p)
        p.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the console command (not an in-process call): one host device per core, before JAX loads
        from numerics import hostdevices

        try:
            hostdevices.configure()
        except ValueError as exc:
            print(f"lintf: error: {exc}", file=sys.stderr)
            return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    args._argv = list(sys.argv[1:] if argv is None else argv)  # the command line, for "reproduce:" lines
    mod = _load(args._module)
    if mod is None:
        print(f"lintf {args.command}: error: not available in this build", file=sys.stderr)
        return 2
    from numerics.errors import LintfError

    try:
        return int(mod.run(args) or 0)
    except (ValueError, LintfError) as exc:
        print(f"lintf {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"lintf {args.command}: interrupted; finished work is kept, rerun the same command to resume",
              file=sys.stderr)
        return 130
