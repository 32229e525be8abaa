r"""The numbers the ``lintf`` command accepts: integer and float options, seeds and noise levels.

Each failure is one line naming the argument, the value and the accepted range
(:class:`numerics.errors.LintfError`, or argparse's own error for an option's type).

* integers: :data:`INT_ARGS` (argparse ``type=``, installed by :func:`install`): an integer in
  ``[lo, SIZE_MAX]``; seeds in ``[0, SEED_MAX]`` (:func:`seed`);
* floats: :data:`FLOAT_ARGS`: a finite number in the argument's range;
* noise specs: :func:`noise`: :meth:`numerics.data.Noise.parse` plus ``σ <= SIGMA_MAX``
  (:func:`bounded`).

``SEED_MAX = 2**31 − 1``: training passes the seed into its compiled programs as an ``int32``, and
``jax.random.PRNGKey(s)`` keeps ``s`` as the low word of the key with a zero high word for every
``0 <= s <= SEED_MAX``, in 32- and 64-bit mode alike, so two distinct accepted seeds give distinct
keys (``tests/cli/test_fuzz.py`` checks it).  Larger integers would wrap onto smaller seeds.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from numerics.errors import LintfError

SEED_MAX = 2**31 - 1
SIZE_MAX = 2**31 - 1
#: Largest noise level accepted: ``σ² = 1e12`` and the ``n``-term sums of ``y²`` built from it stay
#: far from float32's overflow (3.4e38) and keep float64's rounding (1e-16 relative) below the
#: signal's ``d``-sized part.
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
#: ``dest: (lo, lo_inclusive)`` of every float option: finite and ``> lo`` (``>= lo`` if inclusive);
#: ``None``: any.
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
    """Give every integer / float option of ``parser`` listed in :data:`INT_ARGS` /
    :data:`FLOAT_ARGS` its checked type."""
    # argparse keeps no public list of a parser's actions
    for action in parser._actions:  # noqa: SLF001
        flag = action.option_strings[-1] if action.option_strings else action.dest
        if action.type is int and action.dest in INT_ARGS:
            action.type = _int_type(flag, *INT_ARGS[action.dest])
        elif action.type is float and action.dest in FLOAT_ARGS:
            action.type = _float_type(flag, *FLOAT_ARGS[action.dest])


def seed(value: Any, flag: str = "--seed") -> int:
    """``value`` as a seed in ``[0, SEED_MAX]`` (an integer, not a float that happens to be
    whole)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not 0 <= int(value) <= SEED_MAX
    ):
        raise LintfError(f"{flag} must be an integer in [0, {SEED_MAX}], got {value!r}")
    return int(value)


def noise(spec: str, flag: str = "--noise"):  # noqa: ANN201
    """The parsed :class:`numerics.data.Noise`, with every level in ``[0, SIGMA_MAX]``."""
    from numerics.data import Noise  # lazy: start-up

    try:
        nz = Noise.parse(spec)
    except ValueError as exc:
        raise LintfError(f"{flag}: {exc} (noise levels must be in [0, {SIGMA_MAX:g}])") from None
    try:
        return bounded(nz)
    except ValueError as exc:
        raise LintfError(f"{flag} {spec!r}: {exc}") from None


def bounded(nz):  # noqa: ANN001, ANN201
    """The :class:`numerics.data.Noise` ``nz``, or a :class:`ValueError` where a level is above
    ``SIGMA_MAX``."""
    if nz.sigma_max > SIGMA_MAX:
        raise ValueError(
            f"noise levels must be in [0, {SIGMA_MAX:g}] "
            "(their squares and sums must stay finite), "
            f"got {nz.sigma_max:g}"
        )
    return nz
