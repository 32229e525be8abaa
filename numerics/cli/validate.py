r"""The ``lintf`` command's validation layer: every argument and input file is checked here before work starts.

One function per kind of input; each failure is one line naming the argument, the value and the
accepted range (:class:`numerics.errors.LintfError`, exit status 2 in :mod:`numerics.cli`).

=================  =====================================================================================
kind               what is checked
=================  =====================================================================================
integers           :data:`INT_ARGS` (argparse ``type=``, installed by :func:`install`): an integer in
                   ``[lo, SIZE_MAX]``; seeds in ``[0, SEED_MAX]``
floats             :data:`FLOAT_ARGS`: a finite number in the argument's range
noise specs        :func:`noise`: :meth:`numerics.data.Noise.parse` plus ``σ <= SIGMA_MAX``
memory             :func:`numerics.cli.footprint.memory` with the estimates of :mod:`numerics.cli.footprint`
                   against :func:`numerics.cli.footprint.available_memory`
paths              :func:`input_file`, :func:`output_file` (never an input), :func:`output_dir`: visible
                   names of at most :data:`NAME_MAX` bytes
``.npz`` files     :func:`npz_headers` reads every array's dtype and shape from its header, before loading;
                   :func:`model_file` and :func:`data_file` check them, then the values' finiteness
run directories    :func:`numerics.train.rundir.prepare` (config, checkpoint, writability)
=================  =====================================================================================

``SEED_MAX = 2**31 − 1``: training passes the seed into its compiled programs as an ``int32``, and
``jax.random.PRNGKey(s)`` keeps ``s`` as the low word of the key with a zero high word for every
``0 <= s <= SEED_MAX``, in 32- and 64-bit mode alike, so two distinct accepted seeds give distinct keys
(``tests/cli/test_fuzz.py`` checks it).  Larger integers would wrap onto smaller seeds.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from numerics.archive import npz_directory, read_npz
from numerics.cli.environment import free_space
from numerics.cli.footprint import (  # noqa: F401
    available_memory,
    baselines_bytes,
    itemsize,
    memory,
    model_bytes,
    train_bytes,  # callers import them here
)
from numerics.errors import LintfError
from numerics.io import parse_json

SEED_MAX = 2**31 - 1
SIZE_MAX = 2**31 - 1
#: Largest noise level accepted: ``σ² = 1e12`` and the ``n``-term sums of ``y²`` built from it stay far from
#: float32's overflow (3.4e38) and keep float64's rounding (1e-16 relative) below the signal's ``d``-sized part.
SIGMA_MAX = 1e6

#: ``dest: (lo, hi)`` of every integer option of the command, whichever sub-command has it.
INT_ARGS: dict[str, tuple[int, int]] = {
    "seed": (0, SEED_MAX),
    "tune_sequences": (2, SIZE_MAX),
    "eval_sequences": (2, SIZE_MAX),  # an SE needs two
    "warmup": (0, SIZE_MAX),
    "diag_steps": (0, SIZE_MAX),
    "jobs": (1, 64),
    **{
        k: (1, SIZE_MAX)
        for k in (
            "n",
            "d",
            "layers",
            "heads",
            "seeds",
            "steps",
            "batch",
            "chunk",
            "chunk_sequences",
            "sequences",
            "nodes",
            "reps",
            "max_steps",
        )
    },
}
#: ``dest: (lo, lo_inclusive)`` of every float option: finite and ``> lo`` (``>= lo`` if inclusive); ``None``: any.
FLOAT_ARGS: dict[str, tuple[float | None, bool]] = {
    "lr": (0.0, False),
    "clip": (0.0, False),
    "huber": (0.0, True),
    "trust": (0.0, True),
    "sigma": (0.0, True),
    "tol": (0.0, False),
    "target": (None, True),
}


def _int_type(flag: str, lo: int, hi: int):  # noqa: ANN202
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            v = None
        if v is None or not lo <= v <= hi:
            raise argparse.ArgumentTypeError(
                f"{flag} must be >= {lo} and <= {hi} (an integer), got {text!r}"
            )
        return v

    return parse


def _float_type(flag: str, lo: float | None, inclusive: bool):  # noqa: ANN202
    rng = "a finite number" if lo is None else f"{'>=' if inclusive else '>'} {lo:g} and finite"

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not math.isfinite(v) or (lo is not None and not (v >= lo if inclusive else v > lo)):
            raise argparse.ArgumentTypeError(f"{flag} must be {rng}, got {text!r}")
        return v

    return parse


def install(parser: argparse.ArgumentParser) -> None:
    """Give every integer / float option of ``parser`` listed in :data:`INT_ARGS` / :data:`FLOAT_ARGS` its checked type."""
    for action in parser._actions:  # noqa: SLF001 - argparse keeps no public list of a parser's actions
        flag = action.option_strings[-1] if action.option_strings else action.dest
        if action.type is int and action.dest in INT_ARGS:
            action.type = _int_type(flag, *INT_ARGS[action.dest])
        elif action.type is float and action.dest in FLOAT_ARGS:
            action.type = _float_type(flag, *FLOAT_ARGS[action.dest])


def seed(value: Any, flag: str = "--seed") -> int:
    """``value`` as a seed in ``[0, SEED_MAX]`` (an integer, not a float that happens to be whole)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not 0 <= int(value) <= SEED_MAX
    ):
        raise LintfError(f"{flag} must be an integer in [0, {SEED_MAX}], got {value!r}")
    return int(value)


def noise(spec: str, flag: str = "--noise"):  # noqa: ANN201
    """The parsed :class:`numerics.data.Noise`, with every level in ``[0, SIGMA_MAX]``."""
    from numerics.data import Noise

    try:
        nz = Noise.parse(spec)
    except ValueError as exc:
        raise LintfError(f"{flag}: {exc} (noise levels must be in [0, {SIGMA_MAX:g}])") from None
    try:
        return bounded(nz)
    except ValueError as exc:
        raise LintfError(f"{flag} {spec!r}: {exc}") from None


def bounded(nz):  # noqa: ANN001, ANN201
    """The :class:`numerics.data.Noise` ``nz``, or a :class:`ValueError` where a level is above ``SIGMA_MAX``."""
    if nz.sigma_max > SIGMA_MAX:
        raise ValueError(
            f"noise levels must be in [0, {SIGMA_MAX:g}] (their squares and sums must stay finite), "
            f"got {nz.sigma_max:g}"
        )
    return nz


# ---- paths --------------------------------------------------------------------------------------------------

#: Longest name of one path component, in bytes, that the usual file systems hold (``NAME_MAX``).
NAME_MAX = 255


def _names(path: str, flag: str, kind: str = "file") -> None:
    """``path`` is not blank, holds no control character, and each of its names fits :data:`NAME_MAX` bytes."""
    if not path or not path.strip() or any(ord(c) < 32 for c in path):
        raise LintfError(f"{flag} must name a {kind} in visible characters, got {path!r}")
    for part in Path(path).parts:
        if (size := len(os.fsencode(part))) > NAME_MAX:
            raise LintfError(
                f"{flag} {path[:40]!r}...: the name {part[:20]!r}... has {size} bytes, more than the "
                f"{NAME_MAX} a file name may have"
            )


def _writable_parent(path: str, flag: str) -> None:
    """The nearest existing ancestor of ``path`` is a directory this process may write into."""
    p = Path(os.path.abspath(path)).parent
    while not p.exists():
        p = p.parent
    if not p.is_dir():
        raise LintfError(f"{flag} {path!r}: {str(p)!r} is a file, not a directory")
    if not os.access(p, os.W_OK | os.X_OK):
        raise LintfError(f"{flag} {path!r}: directory {str(p)!r} is not writable")


def input_file(path: str, flag: str) -> None:
    """``path`` is an existing, readable regular file."""
    _names(path, flag)
    if not os.path.exists(path):
        raise LintfError(f"{flag} {path!r} does not exist")
    if not os.path.isfile(path):
        raise LintfError(f"{flag} {path!r} is not a regular file")
    if not os.access(path, os.R_OK):
        raise LintfError(f"{flag} {path!r} is not readable")


def output_file(path: str, flag: str, inputs: dict[str, str | None] | None = None) -> None:
    """``path`` does not exist (nothing is overwritten), is none of ``inputs`` and its parent is writable."""
    _names(path, flag)
    if os.path.isdir(path):
        raise LintfError(f"{flag} {path!r} is a directory; give a file name")
    for iflag, ipath in (inputs or {}).items():
        if ipath and (
            os.path.abspath(path) == os.path.abspath(ipath)
            or (os.path.exists(path) and os.path.exists(ipath) and os.path.samefile(path, ipath))
        ):
            raise LintfError(
                f"{flag} {path!r} is {iflag}; writing it would destroy that file, give another path"
            )
    if os.path.lexists(path):
        raise LintfError(f"{flag} {path!r} exists; choose a new file name (nothing is overwritten)")
    _writable_parent(path, flag)


def output_dir(path: str, flag: str) -> None:
    """``path`` is a directory or can be created as one."""
    _names(path, flag, "directory")
    if os.path.exists(path) and not os.path.isdir(path):
        raise LintfError(f"{flag} {path!r} is a file; give a directory")
    _writable_parent(path, flag)


# ---- .npz files ---------------------------------------------------------------------------------------------


def npz_headers(
    path: str, flag: str, needed: tuple[str, ...] | None = None
) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """``{name: (shape, dtype)}`` of every array in the ``.npz`` at ``path``, from its directory and headers only
    (:func:`numerics.archive.npz_directory`); the arrays ``needed`` (default all) must fit in memory."""
    input_file(path, flag)
    out = npz_directory(path, f"{flag} {path!r}")
    total = sum(
        math.prod(s) * dt.itemsize for k, (s, dt) in out.items() if needed is None or k in needed
    )
    memory(total, f"{flag} {path!r}", "the size of the arrays in it")
    return out


def _numeric(path: str, flag: str, heads: dict, names: tuple[str, ...]) -> None:
    for k in names:
        if k in heads and heads[k][1].kind not in "fiu":
            raise LintfError(
                f"{flag} {path!r}: array {k} must hold real numbers (integer or float), "
                f"got dtype {heads[k][1]}"
            )


def model_file(path: str, flag: str = "model file") -> tuple[int, int, int]:
    """``(L, H, d)`` of a universal model file: ``P, Q`` numeric, shape ``(L, H, d+1, d+1)``, finite;
    ``meta`` (if present) a JSON object."""
    heads = npz_headers(path, flag, ("P", "Q", "meta"))
    if (
        "P" not in heads and "meta" in heads
    ):  # a family member's file (docs/family.md): its own loader checks it
        from numerics.models.family_io import is_member_file, load_member  # lazy: start-up

        if is_member_file(path):
            W_V = load_member(path).params.W_V
            return W_V.shape[0], W_V.shape[1], W_V.shape[2] - 1
    if "P" not in heads or "Q" not in heads:
        raise LintfError(f"{flag} {path!r} must hold arrays P and Q of shape (L, H, d+1, d+1)")
    _numeric(path, flag, heads, ("P", "Q"))
    sp, sq = heads["P"][0], heads["Q"][0]
    if len(sp) != 4 or sp != sq or sp[2] != sp[3] or min(sp) < 1 or sp[2] < 2:
        raise LintfError(
            f"{flag} {path!r}: P and Q must both have shape (L, H, d+1, d+1) with L, H, d >= 1, "
            f"got P {sp}, Q {sq}"
        )
    if "meta" in heads and (heads["meta"][1].kind not in "US" or heads["meta"][0] != ()):
        raise LintfError(
            f"{flag} {path!r}: meta must be a JSON string, got dtype {heads['meta'][1]} "
            f"of shape {heads['meta'][0]}"
        )
    z = read_npz(path, f"{flag} {path!r}", ("P", "Q", "meta"), max_bytes=available_memory())
    for k in ("P", "Q"):
        bad = int(z[k].size - np.count_nonzero(np.isfinite(z[k])))
        if bad:
            raise LintfError(
                f"{flag} {path!r}: array {k} must be finite, but {bad} of its {z[k].size} entries are "
                "NaN or inf"
            )
    meta = parse_json(str(z["meta"]), f"{flag} {path!r}: meta") if "meta" in z else {}
    if not isinstance(meta, dict):
        raise LintfError(
            f"{flag} {path!r}: meta must be a JSON object, got {str(z['meta'])[:40]!r}"
        )
    return sp[0], sp[1], sp[2] - 1


def data_file(path: str, d: int, layers: int, flag: str = "data file") -> None:
    """Header checks of a data file (:mod:`numerics.cli._userdata`) for a model of input dimension ``d``, and the
    memory of evaluating ``layers`` layers on it; the values are checked where they are loaded."""
    from numerics.cli._userdata import OPTIONAL, REQUIRED

    heads = npz_headers(
        path, flag, (*REQUIRED, *OPTIONAL)
    )  # an array of another name is refused below
    missing = [k for k in REQUIRED if k not in heads]
    if missing:
        raise LintfError(
            f"{flag} {path!r} must hold arrays X (B,n,d), y (B,n), x_query (B,d); "
            f"missing: {', '.join(missing)}"
        )
    unknown = sorted(set(heads) - {*REQUIRED, *OPTIONAL})
    if unknown:  # a misspelt y_query would otherwise go unused, and the loss unreported
        raise LintfError(
            f"{flag} {path!r} holds {', '.join(unknown)}, which no command reads; a data file holds "
            f"{', '.join(REQUIRED)} and optionally {', '.join(OPTIONAL)}"
        )
    _numeric(path, flag, heads, (*REQUIRED, *OPTIONAL))
    X = heads["X"][0]
    if len(X) != 3 or min(X) < 1:
        raise LintfError(f"{flag} {path!r}: X must have shape (B, n, d) with B, n, d >= 1, got {X}")
    B, n, dx = X
    for k, want in {"y": (B, n), "x_query": (B, dx), "y_query": (B,), "sigma": (B,)}.items():
        if k in heads and heads[k][0] != want:
            raise LintfError(
                f"{flag} {path!r}: {k} must have shape {want} to match X {X}, got {heads[k][0]}"
            )
    if dx != d:
        raise LintfError(
            f"model has input dimension d={d} but {flag} {path!r} has d={dx} (X is {X})"
        )
    memory(
        model_bytes(B, n, layers, d),
        f"a model with L={layers}, d={d} on {B} sequences of length {n}",
        f"the number of sequences in {flag}",
    )


# ---- the sub-commands ---------------------------------------------------------------------------------------


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
    from numerics.baselines.ridge import TUNE_SEQUENCES
    from numerics.data import PAPER_NOISES

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
    from numerics.data import XDist

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


def convert_input(path: str, flag: str = "IN.npz") -> tuple[str, ...]:
    """The arrays ``lintf convert`` reads from ``path``: ``W_Q, W_K, W_V, W_O`` or ``P, Q`` (not both), from the
    archive's directory and headers, and only if they fit in memory."""
    from numerics.models.convert import NAMES  # lazy: start-up

    heads = npz_headers(path, flag, needed=())
    has_w, has_pq = set(NAMES) <= set(heads), {"P", "Q"} <= set(heads)
    if has_w == has_pq:
        raise LintfError(
            f"{flag} {path!r} must hold either W_Q, W_K, W_V, W_O or P, Q; "
            f"it holds {', '.join(sorted(heads)) or 'no arrays'}"
        )
    needed = NAMES if has_w else ("P", "Q")
    memory(
        sum(math.prod(heads[k][0]) * heads[k][1].itemsize for k in needed),
        f"{flag} {path!r}",
        "the size of the arrays in it",
    )
    return needed


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
