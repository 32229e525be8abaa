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
import signal
import sys

from numerics.errors import LintfError
from numerics.train import devices as hostdevices

COMMANDS: dict[str, tuple[str, str]] = {
    "verify": ("numerics.cli.verify", "run every proof-check script (the paper's claims)"),
    "baselines": (
        "numerics.cli.baselines",
        "adjusted loss of every baseline, Bayes-optimal floor included",
    ),
    "train": ("numerics.cli.train", "train FULL / DIAG / GD++ linear transformers"),
    "predict": ("numerics.cli.predict", "evaluate a saved model on user data"),
    "inspect": ("numerics.cli.inspect", "per-layer implicit weights (M, u, a, w) of a saved model"),
    "convert": (
        "numerics.cli.convert",
        "attention weights (W_Q, W_K, W_V, W_O) to a lintf model, and back",
    ),
    "reproduce": ("numerics.cli.reproduce", "reproduce the paper's table and figures"),
    "bench": ("numerics.cli.bench", "training throughput and time-to-quality benchmark"),
}


class _UsageError(Exception):
    """A command-line error found by argparse; :func:`main` prints it as one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # noqa: ANN201 - argparse's hook; one line instead of usage + message
        head, _, rest = message.partition(": ")
        if head.startswith("argument ") and rest.startswith(
            head[len("argument ") :].split("/")[-1] + " "
        ):
            message = (
                rest  # a checked type's message names the option already (numerics.cli.validate)
            )
        raise _UsageError(f"{self.prog}: error: {' '.join(message.split())}")

    def _print_message(self, message: str, file=None) -> None:  # noqa: ANN001 - argparse's hook, which would
        if message:  # drop a failed write (help into a full disk) and exit 0 having printed nothing
            file = file or sys.stderr
            file.write(message)
            file.flush()


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
    from numerics.cli import validate  # lazy: start-up

    parser = _Parser(
        prog="lintf",
        description="lintf: machine-checked theory and fast numerics for linear transformers as in-context learners.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_) in COMMANDS.items():
        mod = _load(module)
        p = sub.add_parser(
            name, help=help_ if mod else f"{help_} (not available in this build)", description=help_
        )
        if mod is not None:
            mod.add_arguments(p)
            validate.install(p)
        p.set_defaults(_module=module)
    return parser


def _importing(frame: object) -> bool:
    """Whether ``frame`` (a signal handler's) runs inside an import: a frame of importlib on its stack."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


class _Interrupts:
    r"""SIGINT in the console command: the first one raises :class:`KeyboardInterrupt` as Python's own handler
    does, and is raised again every :data:`AGAIN` seconds until :func:`main` catches it, since one raised inside a
    garbage-collector callback (JAX has one) is printed as "Exception ignored" and lost.  It is not raised again
    while an exception is being handled (cleanup code on its way up: a temporary file removed, ``--jobs``'
    processes waited for); later SIGINTs add nothing.  It is never raised inside an import: an extension module
    (NumPy's, jaxlib's) interrupted while it initialises can leave the process to crash (SIGSEGV, SIGABRT) or
    fail with an ImportError, so a SIGINT that lands in an import is raised once the import is done."""

    AGAIN = 0.25
    SOON = 0.005

    def __init__(self) -> None:
        self.pending = False  # a SIGINT was raised and not yet caught
        self.ended = False  # one was caught: the command ends with status 130

    def install(self) -> None:
        signal.signal(signal.SIGINT, self.first)
        signal.signal(signal.SIGALRM, self.again)
        shown = sys.unraisablehook

        def unraisable(info) -> None:  # noqa: ANN001 - the lost interrupt is raised again: no "Exception ignored"
            if not (self.pending and info.exc_type is KeyboardInterrupt):
                shown(info)

        sys.unraisablehook = unraisable

    def first(self, signum: int, frame: object) -> None:
        if self.pending:
            return
        self.pending = True
        if _importing(frame):  # raised within SOON of the import's end, before any work
            signal.setitimer(signal.ITIMER_REAL, self.SOON, self.SOON)
            return
        signal.setitimer(signal.ITIMER_REAL, self.AGAIN, self.AGAIN)
        raise KeyboardInterrupt

    def again(self, signum: int, frame: object) -> None:
        if self.pending and sys.exc_info()[0] is None and not _importing(frame):
            signal.setitimer(signal.ITIMER_REAL, self.AGAIN, self.AGAIN)
            raise KeyboardInterrupt

    def caught(self) -> None:
        self.pending, self.ended = False, True
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(
            signal.SIGINT, signal.SIG_IGN
        )  # the message is printed and the process ends now


def _interrupted(command: str) -> int:
    resumes = command in RESUMABLE
    print(
        f"lintf {command}: interrupted; "
        + (
            "finished work is kept, rerun the same command to resume"
            if resumes
            else "nothing was written"
        ),
        file=sys.stderr,
    )
    return 130


def _end_console(rc: int) -> None:
    """End the console command with ``rc`` at once, skipping the interpreter's shutdown: after an interrupt an XLA
    compilation may still hold the process's state, and tearing it down ends the process with SIGSEGV.  Every file
    lintf writes is complete on disk by now (atomic writes, :mod:`numerics.io`)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(rc)


_INTERRUPTS = _Interrupts()


def main(argv: list[str] | None = None) -> int:
    """Run ``lintf`` with ``argv`` in-process, or (``None``) as the console command: that one also sets up the
    process, and after SIGINT ends with one line and status 130, never through the interpreter's shutdown."""
    if argv is not None:
        return _main(argv)
    command = ""
    try:  # the handler goes in inside the try, so a SIGINT the moment it is in is caught here too
        command = next((a for a in sys.argv[1:] if a in COMMANDS), "")
        _INTERRUPTS.install()
        rc = _main(None)
        signal.signal(
            signal.SIGINT, signal.SIG_IGN
        )  # finished: a SIGINT from here on changes nothing
        if (
            _INTERRUPTS.pending
        ):  # raised where nothing let it through, and the command finished first
            raise KeyboardInterrupt
    except (
        KeyboardInterrupt
    ):  # outside the sub-command (the command line read, its module imported)
        _INTERRUPTS.caught()
        rc = _interrupted(command) if command else 130
    if _INTERRUPTS.ended:
        _end_console(rc)
    return _flushed(command or "", rc)


def _flushed(command: str, rc: int) -> int:
    """``rc``, or 2 with one line where what the command printed cannot be written out (a full disk, ``/dev/full``);
    the output is then sent to ``/dev/null``, so that the interpreter's last flush stays quiet."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(
            f"lintf{' ' + command if command else ''}: error: cannot write the output: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    return rc


def _main(argv: list[str] | None) -> int:
    if (
        argv is None
    ):  # the console command (not an in-process call): one host device per core, before JAX loads
        from numerics.cli.environment import xla_flags  # lazy: start-up

        hostdevices.full_precision()
        try:
            xla_flags(os.environ)
            hostdevices.configure()
        except (ValueError, LintfError) as exc:
            print(f"lintf: error: {exc}", file=sys.stderr)
            return 2
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    except SystemExit as done:  # --help: printed, and nothing else to do
        return int(done.code or 0)
    except BrokenPipeError:  # the reader of the help text left (``| head``)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:  # the help text could not be written
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"lintf: error: cannot write the help text: {exc.strerror or exc}", file=sys.stderr)
        return 2
    args._argv = list(
        sys.argv[1:] if argv is None else argv
    )  # the command line, for "reproduce:" lines
    args._console = argv is None  # the process is the command's own: it may set process-wide state
    mod = _load(args._module)
    if mod is None:
        print(f"lintf {args.command}: error: not available in this build", file=sys.stderr)
        return 2
    from numerics.cli import validate  # lazy: start-up

    try:
        validate.check(args.command, args)
        return int(mod.run(args) or 0)
    except (ValueError, LintfError) as exc:
        print(f"lintf {args.command}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except (
        BrokenPipeError
    ):  # the reader of the output left (``| head``): stop quietly, as other tools do
        os.dup2(
            os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno()
        )  # the flush at exit then stays quiet
        return 141
    except (
        OSError
    ) as exc:  # a file or the output could not be read or written: say which, in one line
        where = f"{exc.filename!r}: " if exc.filename else ""
        print(f"lintf {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"lintf {args.command}: error: out of memory; lower the sizes", file=sys.stderr)
        return 2
    except Exception as exc:
        if "RESOURCE_EXHAUSTED" not in str(exc):
            raise
        print(
            f"lintf {args.command}: error: out of memory ({str(exc).splitlines()[0][:200]}); lower the sizes",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        if args._console:
            _INTERRUPTS.caught()
        return _interrupted(args.command)
