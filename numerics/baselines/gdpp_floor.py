r"""The GD++ floor: ridge at ``λ = E σ²`` (ConstRR at the noise prior's mean variance,
:data:`numerics.baselines.FLOOR`), the rule that calls an entry below it impossible, and a table of
printed GD++ values checked against it (``lintf verify --printed FILE``).

A GD++ model predicts ``x_tᵀ p_L(Σ) α``, a spectral filter, and no spectral filter has a lower
expected loss than ridge with ``λ = E σ²`` (:mod:`lintf_theory._gdpp_floor`; checked by
``lintf verify --only gdpp_ridge_floor``).  So a GD++ entry clearly below that ridge is impossible:
an evaluation or bookkeeping error, whoever printed it.  The reproduction report applies the same
rule to its own GD++ cells (:func:`numerics.reproduce.floor.claim_gdpp_floor`).

**Printed table format.**  CSV with a header row holding ``noise``, ``depth``, ``value`` and
optionally ``se``, or JSON: a list of objects with those keys; any other column or key is refused.
``noise`` is a noise spec (``uniform:5``, ``categorical:1,3``, ``fixed:1``), ``depth`` the number
of layers (an integer ≥ 1), ``value`` the printed adjusted loss (method minus oracle ridge, the
paper's metric) and ``se`` its standard error if known (0 otherwise).  The file is read as
:mod:`numerics.io` reads a file lintf did not write: a regular file of UTF-8 text (a leading
byte-order mark, as spreadsheets write one, dropped) of bounded size, strict JSON nested a bounded
number of levels.  The floor is evaluated at the paper's ``n = 20, d = 10``.

=================  ===============================================================================
``Z_IMPOSSIBLE``   an entry is flagged when ``value < floor − Z_IMPOSSIBLE · SE − ATOL``
``ATOL``           float64 rounding of an adjusted loss that is 0 at ``σ = 0``
``PRINTED_SEQ``    evaluation sequences for the floor of printed values (the paper evaluates on
                   100 000)
=================  ===============================================================================
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from numerics.baselines.ridge import FLOOR, table
from numerics.data import Noise
from numerics.errors import LintfError
from numerics.io import parse_json, read_text

Z_IMPOSSIBLE = 3.0
ATOL = 1e-9
PRINTED_SEQ = 100_000
PRINTED_N, PRINTED_D = 20, 10
COMMAND = "lintf verify --only gdpp_ridge_floor"
#: What a printed table's row holds, as its errors say.
NEEDS = "each row needs noise, depth, value and optionally se"
#: Largest noise level a printed row may name (its square and sums stay finite), as on the command
#: line.
SIGMA_MAX = 1e6
#: Largest integer a printed row's number may be (float64 holds every integer up to it).
INT_MAX = 2**53


def floor_of(
    noise: str | Noise, n: int, d: int, sequences: int, seed: int = 0, paired: bool = True
) -> dict[str, Any]:
    r"""Ridge at ``λ = E σ²`` on the evaluation sequences of :func:`numerics.baselines.table` (seed
    ``seed``): its ``loss`` and ``se``, and if ``paired`` its gap to Bayes ``minus_Bayes`` ±
    ``minus_Bayes_se``."""
    methods = (FLOOR, "Bayes") if paired else (FLOOR,)
    r = table(noise, n=n, d=d, sequences=sequences, seed=seed, tune_sequences=2, methods=methods)
    return r[FLOOR]


def impossible(diff: float, se: float) -> bool:
    """An entry ``diff ± se`` above the floor (negative: below) lies below it by more than
    ``Z_IMPOSSIBLE`` SEs (and ``ATOL``)."""
    return diff < -(Z_IMPOSSIBLE * se + ATOL)


def verdict_text(flag: bool, diff: float, se: float) -> str:
    """What an entry ``diff ± se`` above the floor means, ``flag`` its :func:`impossible`."""
    if not flag:
        return "at or above the floor"
    return (
        f"IMPOSSIBLE: below the lambda = E sigma^2 floor by {-diff / max(se, 1e-300):.1f} SE; no "
        f"GD++ model can beat ridge at lambda = E sigma^2 (`{COMMAND}`), so the entry is an "
        "evaluation or bookkeeping error"
    )


@dataclass(frozen=True)
class Printed:
    """One printed GD++ value: noise spec, depth, adjusted loss and its SE (0 if unknown)."""

    noise: str
    depth: int
    value: float
    se: float = 0.0


def _row(i: int, rec: dict[str, Any], path: str) -> Printed:
    where = f"--printed {path}: row {i}"
    unknown = sorted(set(rec) - {"noise", "depth", "value", "se"}, key=str)
    if unknown:  # a misspelt "se" would otherwise read as se = 0
        raise ValueError(
            f"{where} has {', '.join(map(repr, unknown))}; the fields are noise, depth, value "
            "and se"
        )
    missing = [k for k in ("noise", "depth", "value") if rec.get(k) in (None, "")]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)}; {NEEDS}")
    for k in ("depth", "value", "se"):  # JSON: true would read as 1, and 10**400 as inf
        v = rec.get(k)
        if isinstance(v, bool):
            raise ValueError(f"{where}: {k} is {str(v).lower()}, not a number")
        if isinstance(v, int) and abs(v) > INT_MAX:
            raise ValueError(
                f"{where}: {k} is an integer of {len(str(abs(v)))} digits, more than {INT_MAX} = "
                "2**53"
            )
    try:
        noise = str(Noise.parse(str(rec["noise"])))
        if Noise.parse(noise).sigma_max > SIGMA_MAX:
            raise ValueError(
                f"noise levels must be in [0, {SIGMA_MAX:g}], got {Noise.parse(noise).sigma_max:g}"
            )
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    try:
        depth, value, se = int(rec["depth"]), float(rec["value"]), float(rec.get("se") or 0.0)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(
            f"{where}: depth must be an integer and value, se numbers; got depth={rec['depth']!r}, "
            f"value={rec['value']!r}, se={rec.get('se')!r}"
        ) from None
    if depth < 1 or str(rec["depth"]).strip() not in (str(depth), f"{depth}.0"):
        raise ValueError(f"{where}: depth must be an integer >= 1, got {rec['depth']!r}")
    if not math.isfinite(value) or not (math.isfinite(se) and se >= 0):
        raise ValueError(
            f"{where}: value must be finite and se finite and >= 0, got value={value}, se={se}"
        )
    return Printed(noise, depth, value, se)


def _csv_rows(text: str, path: str) -> list[dict[str, str]]:
    """The rows of a printed table's CSV ``text``, keys and values stripped."""
    reader = csv.DictReader(io.StringIO(text))
    cols = [c.strip() for c in reader.fieldnames or []]
    if not {"noise", "depth", "value"} <= set(cols):
        raise ValueError(
            f"--printed {path}: CSV header must name noise, depth, value (and optionally se), "
            f"got {cols}"
        )
    recs = []
    for r in reader:
        if None in r:
            raise ValueError(
                f"--printed {path}: line {reader.line_num} has more fields than the header; "
                'quote a noise spec that contains commas ("categorical:1,3")'
            )
        recs.append({k.strip(): (v or "").strip() for k, v in r.items()})
    return recs


def read_printed(path: str | Path) -> list[Printed]:
    r"""Parse a printed-values table (CSV or JSON, module docstring); a one-line
    :class:`ValueError` naming ``path`` on bad input."""
    if not Path(path).exists():
        raise ValueError(f"--printed {path}: no such file")
    try:
        text = read_text(path, f"--printed {path}")
        if Path(path).suffix.lower() == ".json":
            recs = parse_json(text, f"--printed {path}")
            if not isinstance(recs, list) or not all(isinstance(r, dict) for r in recs):
                raise ValueError(
                    f"--printed {path}: JSON must be a list of objects with noise, depth, value "
                    "(and se)"
                )
        else:
            recs = _csv_rows(text, str(path))
    except LintfError as exc:
        raise ValueError(str(exc)) from None
    except csv.Error as exc:  # a field past the reader's size limit
        raise ValueError(f"--printed {path}: not a CSV table ({exc})") from None
    if not recs:
        raise ValueError(f"--printed {path}: no rows; {NEEDS}")
    return [_row(i + 1, r, str(path)) for i, r in enumerate(recs)]


def check_printed(
    rows: list[Printed], sequences: int = PRINTED_SEQ, seed: int = 0
) -> list[tuple[Printed, dict[str, Any], bool, str]]:
    r"""Each printed value against the floor of its noise (``n = 20, d = 10``, :func:`floor_of`,
    unpaired): ``(row, floor, flagged, text)``."""
    floors = {
        nz: floor_of(nz, PRINTED_N, PRINTED_D, sequences, seed, paired=False)
        for nz in sorted({r.noise for r in rows})
    }
    out = []
    for r in rows:
        f = floors[r.noise]
        diff, se = r.value - f["loss"], math.hypot(r.se, f["se"])
        flag = impossible(diff, se)
        text = (
            f"printed GD++-{r.depth} {r.noise}: {r.value:.4f}"
            + (f" ± {r.se:.4f}" if r.se else "")
            + f" vs ridge at lambda = E sigma^2 = {Noise.parse(r.noise).mean_sigma2:.4g}: "
            f"{f['loss']:.4f} ± {f['se']:.4f} ({sequences} sequences, seed {seed}), difference "
            f"{diff:+.4f} ± {se:.4f} → {verdict_text(flag, diff, se)}"
        )
        out.append((r, f, flag, text))
    return out
