"""The ``lintf`` console command: one front for verification, training, baselines and reproduction.

Each sub-command lives in its own module ``numerics.cli.<name>`` exposing
``add_arguments(parser)`` and ``run(args) -> int``.  Every argument and input file is checked by
:mod:`numerics.cli.validate` before ``run`` starts; bad input raises :class:`ValueError` (or
:class:`numerics.errors.LintfError`), which is printed as one line, exit status 2, as are the parser's own
errors (unknown option, missing argument) and running out of memory.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "verify": ("numerics.cli.verify", "run every proof-check script (the paper's claims)"),
    "baselines": ("numerics.cli.baselines", "adjusted loss of every baseline, Bayes-optimal floor included"),
    "train": ("numerics.cli.train", "train FULL / DIAG / GD++ linear transformers"),
    "predict": ("numerics.cli.predict", "evaluate a saved model on user data"),
    "inspect": ("numerics.cli.inspect", "per-layer implicit weights (M, u, a, w) of a saved model"),
    "convert": ("numerics.cli.convert", "attention weights (W_Q, W_K, W_V, W_O) to a lintf model, and back"),
    "reproduce": ("numerics.cli.reproduce", "reproduce the paper's table and figures"),
    "bench": ("numerics.cli.bench", "training throughput and time-to-quality benchmark"),
}


class _UsageError(Exception):
    """A command-line error found by argparse; :func:`main` prints it as one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # noqa: ANN201 - argparse's hook; one line instead of usage + message
        head, _, rest = message.partition(": ")
        if head.startswith("argument ") and rest.startswith(head[len("argument "):].split("/")[-1] + " "):
            message = rest  # a checked type's message names the option already (numerics.cli.validate)
        raise _UsageError(f"{self.prog}: error: {' '.join(message.split())}")


#: Commands that keep finished work when interrupted and resume from it (the others write their output last,
#: atomically, or not at all).
RESUMABLE = ("train", "reproduce")


def _load(module: str):  # noqa: ANN202
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    from numerics.cli import validate

    parser = _Parser(prog="lintf", description="lintf: machine-checked theory and fast numerics for linear transformers as in-context learners.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_) in COMMANDS.items():
        mod = _load(module)
        p = sub.add_parser(name, help=help_ if mod else f"{help_} (not available in this build)",
                           description=help_)
        if mod is not None:
            mod.add_arguments(p)
            validate.install(p)
        p.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the console command (not an in-process call): one host device per core, before JAX loads
        from numerics.train import devices as hostdevices

        hostdevices.full_precision()
        try:
            hostdevices.configure()
        except ValueError as exc:
            print(f"lintf: error: {exc}", file=sys.stderr)
            return 2
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    args._argv = list(sys.argv[1:] if argv is None else argv)  # the command line, for "reproduce:" lines
    args._console = argv is None  # the process is the command's own: it may set process-wide state
    mod = _load(args._module)
    if mod is None:
        print(f"lintf {args.command}: error: not available in this build", file=sys.stderr)
        return 2
    from numerics.cli import validate
    from numerics.errors import LintfError

    try:
        validate.check(args.command, args)
        return int(mod.run(args) or 0)
    except (ValueError, LintfError) as exc:
        print(f"lintf {args.command}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of the output left (``| head``): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the flush at exit then stays quiet
        return 141
    except OSError as exc:  # a file or the output could not be read or written: say which, in one line
        where = f"{exc.filename!r}: " if exc.filename else ""
        print(f"lintf {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"lintf {args.command}: error: out of memory; lower the sizes", file=sys.stderr)
        return 2
    except Exception as exc:
        if "RESOURCE_EXHAUSTED" not in str(exc):
            raise
        print(f"lintf {args.command}: error: out of memory ({str(exc).splitlines()[0][:200]}); lower the sizes",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        resumes = args.command in RESUMABLE
        print(f"lintf {args.command}: interrupted; "
              + ("finished work is kept, rerun the same command to resume" if resumes else "nothing was written"),
              file=sys.stderr)
        return 130
