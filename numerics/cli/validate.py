r"""The ``lintf`` command's validation layer: every argument and input file is checked here before work starts.

One function per kind of input; each failure is one line naming the argument, the value and the
accepted range (:class:`numerics.errors.LintfError`, exit status 2 in :mod:`numerics.cli`).
:func:`check` runs every check of one sub-command; the checks live with what they check:

=================  =====================================================================================
kind               what is checked
=================  =====================================================================================
integers           :data:`numerics.cli.ranges.INT_ARGS` (argparse ``type=``, installed by :func:`install`):
                   an integer in ``[lo, SIZE_MAX]``; seeds in ``[0, SEED_MAX]`` (:mod:`numerics.cli.ranges`)
floats             :data:`numerics.cli.ranges.FLOAT_ARGS`: a finite number in the argument's range
noise specs        :func:`numerics.cli.ranges.noise`: :meth:`numerics.data.Noise.parse` plus ``σ <= SIGMA_MAX``
memory             :func:`numerics.cli.footprint.memory` with the estimates of :mod:`numerics.cli.footprint`
                   against :func:`numerics.cli.footprint.available_memory`
paths              :mod:`numerics.cli.paths`: :func:`input_file`, :func:`output_file` (never an input),
                   :func:`output_dir`: visible names of at most :data:`NAME_MAX` bytes
``.npz`` files     :mod:`numerics.cli.npzfiles`: :func:`npz_headers` reads every array's dtype and shape from
                   its header, before loading; :func:`model_file` and :func:`data_file` check them, then the
                   values' finiteness
run directories    :func:`numerics.train.rundir.prepare` (config, checkpoint, writability)
=================  =====================================================================================

The command line installs the checked types with :func:`install`; the sub-commands and the tests
import the limits, :func:`seed`, :func:`bounded`, :func:`convert_input`, :func:`available_memory`
and :func:`model_bytes` from here.
"""

from __future__ import annotations

import argparse

from numerics.cli.environment import free_space
from numerics.cli.footprint import available_memory as available_memory
from numerics.cli.footprint import baselines_bytes, itemsize, memory, train_bytes
from numerics.cli.footprint import model_bytes as model_bytes
from numerics.cli.npzfiles import convert_input as convert_input
from numerics.cli.npzfiles import data_file, model_file
from numerics.cli.paths import input_file, output_dir, output_file
from numerics.cli.ranges import FLOAT_ARGS as FLOAT_ARGS
from numerics.cli.ranges import INT_ARGS as INT_ARGS
from numerics.cli.ranges import SEED_MAX as SEED_MAX
from numerics.cli.ranges import SIGMA_MAX as SIGMA_MAX
from numerics.cli.ranges import SIZE_MAX as SIZE_MAX
from numerics.cli.ranges import bounded as bounded
from numerics.cli.ranges import install as install
from numerics.cli.ranges import noise
from numerics.cli.ranges import seed as seed
from numerics.errors import LintfError


def _train(a: argparse.Namespace) -> None:
    noise(a.noise)
    if a.out is not None:
        output_dir(a.out, "--out")
    memory(
        train_bytes(
            a.seeds,
            a.batch,
            a.layers,
            a.heads,
            a.n,
            a.d,
            itemsize(a.dtype),
            min(8192, a.eval_sequences),
        ),
        f"training {a.seeds} seed(s), batch {a.batch}, {a.layers} layer(s), n={a.n}, d={a.d}",
        "--batch, --seeds, --layers, --n or --d",
    )


def _baselines(a: argparse.Namespace) -> None:
    from numerics.baselines.ridge import TUNE_SEQUENCES  # lazy: start-up
    from numerics.data import PAPER_NOISES  # lazy: start-up

    for s in a.noise:
        for spec in PAPER_NOISES if s.strip().lower() in ("paper", "all") else [s]:
            noise(spec)
    tune = TUNE_SEQUENCES if a.tune_sequences is None else a.tune_sequences
    memory(
        baselines_bytes(a.n, a.d, a.eval_sequences, tune, a.chunk_sequences, a.nodes or 256),
        f"baselines with n={a.n}, d={a.d}, chunks of {min(a.chunk_sequences, max(a.eval_sequences, tune))} sequences",
        "--chunk-sequences, --nodes, --d or --n",
    )


def _predict(a: argparse.Namespace) -> None:
    L, _, d = model_file(a.model)
    data_file(a.data, d, L)
    if a.out is not None:
        output_file(a.out, "--out", {"the model file": a.model, "the data file": a.data})


def _inspect(a: argparse.Namespace) -> None:
    L, _, d = model_file(a.model)
    if a.data:
        given = [
            f"--{k}" for k in ("noise", "x", "n", "sequences", "seed") if getattr(a, k) is not None
        ]
        if given:
            these = "this sets" if len(given) == 1 else "these set"
            raise LintfError(
                f"{', '.join(given)}: {these} the sequences inspect samples; the data file {a.data!r} "
                "holds its own, so give one or the other"
            )
        data_file(a.data, d, L)
    elif (
        a.noise is not None
    ):  # unset: the model's meta, checked where inspect reads it (with the memory it needs)
        noise(a.noise)
    if a.plot is not None:
        output_file(a.plot, "--plot", {"the model file": a.model, "the data file": a.data})
        if not a.plot.lower().endswith(".png"):
            raise LintfError(
                f"--plot {a.plot!r}: the plot is a PNG image; give a file name ending in .png"
            )


def _convert(a: argparse.Namespace) -> None:
    from numerics.data import XDist  # lazy: start-up

    input_file(a.source, "IN.npz")
    output_file(a.out, "--out", {"IN.npz": a.source})
    convert_input(a.source)
    if a.noise is not None:
        noise(a.noise)
    if a.x is not None:
        try:
            XDist.parse(a.x)
        except ValueError as exc:
            raise LintfError(f"--x: {exc}") from None


def _reproduce(a: argparse.Namespace) -> None:
    from numerics.reproduce import grid  # lazy: start-up

    budget = grid.get_budget(a.budget)
    grid.parse_parts(a.only)
    grid.parse_noises(budget, a.noise or ())
    grid.parse_cells(budget, a.cell or ())
    output_dir(a.out or f"results/{a.budget}", "--out")
    output_dir(a.runs, "--runs")
    free_space(a.out, "--out")
    free_space(a.runs, "--runs")


def _bench(a: argparse.Namespace) -> None:
    if (
        a.noise is not None
    ):  # unset: time-to-quality's default, or no --ttq (bench refuses --noise without it)
        noise(a.noise)
    memory(
        train_bytes(1, a.batch, a.layers, 1, 20, 10, 4),
        f"bench with batch {a.batch}, {a.layers} layer(s)",
        "--batch or --layers",
    )


def _verify(a: argparse.Namespace) -> None:
    if a.latex is not None:
        output_file(a.latex, "--latex")
    if a.printed is not None:
        input_file(a.printed, "--printed")


CHECKS = {
    "train": _train,
    "baselines": _baselines,
    "predict": _predict,
    "inspect": _inspect,
    "reproduce": _reproduce,
    "bench": _bench,
    "verify": _verify,
    "convert": _convert,
}


def check(command: str, args: argparse.Namespace) -> None:
    """Every check of ``command``'s arguments and input files (nothing is written, nothing is computed)."""
    if command in CHECKS:
        CHECKS[command](args)
