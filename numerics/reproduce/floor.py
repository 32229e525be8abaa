r"""The GD++ floor: ridge at ``λ = E σ²`` (ConstRR at the noise prior's mean variance), and checks
against it.

A GD++ model predicts ``x_tᵀ p_L(Σ) α``, a spectral filter, and no spectral filter has a lower
expected loss than ridge with ``λ = E σ²`` (:mod:`lintf_theory._gdpp_floor`; checked by
``lintf verify --only gdpp_ridge_floor``).  So a GD++ entry clearly below that ridge is impossible:
an evaluation or bookkeeping error, whoever printed it.

- :func:`claim_gdpp_floor`: the reproduction report's check of every GD++ cell, paired with the
  floor on the same evaluation sequences (:func:`floor_entries`, cached as
  ``OUT/baselines/floor-<noise>.json``).
- :func:`read_printed` and :func:`check_printed`: a user's table of printed GD++ values
  (``lintf verify --printed FILE``).

**Printed table format.**  CSV with a header row holding ``noise``, ``depth``, ``value`` and
optionally ``se``, or JSON: a list of objects with those keys; any other column or key is refused.
``noise`` is a noise spec (``uniform:5``, ``categorical:1,3``, ``fixed:1``), ``depth`` the number
of layers (an integer ≥ 1), ``value`` the printed adjusted loss (method minus oracle ridge, the
paper's metric) and ``se`` its standard error if known (0 otherwise).  The floor is evaluated at
the paper's ``n = 20, d = 10``.

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
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from numerics.data import Noise
from numerics.io import atomic_write_json
from numerics.reproduce.claims import Claim, verdict
from numerics.reproduce.grid import slug
from numerics.reproduce.record import read_floor
from numerics.reproduce.rules import RULES
from numerics.reproduce.table import Entry, Table, difference, pm

Z_IMPOSSIBLE = 3.0
ATOL = 1e-9
PRINTED_SEQ = 100_000
PRINTED_N, PRINTED_D = 20, 10
COMMAND = "lintf verify --only gdpp_ridge_floor"
#: What a printed table's row holds, as its errors say.
NEEDS = "each row needs noise, depth, value and optionally se"
#: The numbers of a floor entry, as the cache ``OUT/baselines/floor-<noise>.json`` names them.
NUMBERS = ("loss", "se", "minus_Bayes", "minus_Bayes_se")
#: Largest noise level a printed row may name (its square and sums stay finite), as on the command
#: line.
SIGMA_MAX = 1e6


def floor_of(
    noise: str | Noise, n: int, d: int, sequences: int, seed: int = 0, paired: bool = True
) -> Entry:
    r"""Ridge at ``λ = E σ²`` on the evaluation sequences of :func:`numerics.baselines.table` (seed
    ``seed``), with its paired gap to Bayes if ``paired``."""
    from numerics import baselines

    methods = (baselines.FLOOR, "Bayes") if paired else (baselines.FLOOR,)
    r = baselines.table(
        noise, n=n, d=d, sequences=sequences, seed=seed, tune_sequences=2, methods=methods
    )
    return Entry.of(r[baselines.FLOOR])


def floor_entries(out: str | Path, budget: Any, noises: list[str]) -> dict[str, Entry]:
    r"""The floor per noise on the cells' evaluation sequences (seed ``RULES.eval_seed``), cached
    under ``OUT/baselines`` (read back by :func:`numerics.reproduce.record.read_floor`: finite
    numbers only; evaluated again where its sizes are not the budget's)."""
    floors = {}
    for nz in noises:
        path = Path(out) / "baselines" / f"floor-{slug(nz)}.json"
        want = {"noise": nz, "eval_sequences": budget.eval_sequences, "n": budget.n, "d": budget.d}
        have = read_floor(path) if path.exists() else {}
        if {k: have.get(k) for k in want} != want:
            e = floor_of(nz, budget.n, budget.d, budget.eval_sequences, RULES.eval_seed)
            numbers = dict(zip(NUMBERS, (e.loss, e.se, e.minus_bayes, e.minus_bayes_se)))
            have = want | numbers | {"lam": Noise.parse(nz).mean_sigma2}
            atomic_write_json(path, have)
        floors[nz] = Entry.of(have)
    return floors


def below_floor(entry: Entry, floor: Entry) -> tuple[bool, float, float]:
    r"""``(flagged, difference, SE)``: the entry minus the floor, flagged when below by more than
    ``Z_IMPOSSIBLE`` SE."""
    diff, se = difference(entry, floor)
    return diff < -(Z_IMPOSSIBLE * se + ATOL), diff, se


def _verdict_text(flag: bool, diff: float, se: float) -> str:
    if not flag:
        return "at or above the floor"
    return (
        f"IMPOSSIBLE: below the lambda = E sigma^2 floor by {-diff / max(se, 1e-300):.1f} SE; no "
        f"GD++ model can beat ridge at lambda = E sigma^2 (`{COMMAND}`), so the entry is an "
        "evaluation or bookkeeping error"
    )


def claim_gdpp_floor(t: Table, floors: dict[str, Entry]) -> Claim:
    r"""Every GD++ cell of the table against ridge at ``λ = E σ²`` of its noise setting."""
    ok, ev = [], []
    for (m, L, nz), e in sorted(t.items()):
        if m != "gdpp" or nz not in floors:
            continue
        flag, diff, se = below_floor(e, floors[nz])
        ok.append(not flag)
        ev.append(
            f"{nz} GD++-{L} {pm(e)} vs ridge at lambda = E sigma^2 = "
            f"{Noise.parse(nz).mean_sigma2:.4g} {pm(floors[nz])}: difference {diff:+.4f} ± "
            f"{se:.4f} → {_verdict_text(flag, diff, se)}"
        )
    return Claim(
        "gdpp_above_floor",
        "No GD++ entry lies below ridge at λ = E σ² (a theorem: GD++ is a spectral filter)",
        verdict(ok),
        tuple(ev),
    )


# ------------------------------------------------------------------------------------------------
# printed tables


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


def read_printed(path: str | Path) -> list[Printed]:
    r"""Parse a printed-values table (CSV or JSON, module docstring); one-line :class:`ValueError`
    on bad input."""
    p = Path(path)
    if not p.exists():
        raise ValueError(f"--printed {path}: no such file")
    if not p.is_file():
        raise ValueError(f"--printed {path}: not a regular file; give a CSV or JSON file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"--printed {path}: not UTF-8 text (byte {exc.start}); give a CSV or JSON file"
        ) from None
    except OSError as exc:
        raise ValueError(f"--printed {path}: cannot be read ({exc.strerror or exc})") from None
    if p.suffix.lower() == ".json":
        try:
            recs = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"--printed {path}: not valid JSON ({exc.msg} at line {exc.lineno})"
            ) from None
        if not isinstance(recs, list) or not all(isinstance(r, dict) for r in recs):
            raise ValueError(
                f"--printed {path}: JSON must be a list of objects with noise, depth, value (and "
                "se)"
            )
    else:
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
    if not recs:
        raise ValueError(f"--printed {path}: no rows; {NEEDS}")
    return [_row(i + 1, r, str(path)) for i, r in enumerate(recs)]


def check_printed(
    rows: list[Printed], sequences: int = PRINTED_SEQ, seed: int = 0
) -> list[tuple[Printed, Entry, bool, str]]:
    r"""Each printed value against the floor of its noise (``n = 20, d = 10``): ``(row, floor,
    flagged, text)``."""
    floors = {
        nz: floor_of(nz, PRINTED_N, PRINTED_D, sequences, seed, paired=False)
        for nz in sorted({r.noise for r in rows})
    }
    out = []
    for r in rows:
        f = floors[r.noise]
        flag, diff, se = below_floor(Entry(r.value, r.se), f)
        text = (
            f"printed GD++-{r.depth} {r.noise}: {r.value:.4f}"
            + (f" ± {r.se:.4f}" if r.se else "")
            + f" vs ridge at lambda = E sigma^2 = {Noise.parse(r.noise).mean_sigma2:.4g}: {pm(f)} "
            f"({sequences} sequences, seed {seed}), difference {diff:+.4f} ± {se:.4f} → "
            f"{_verdict_text(flag, diff, se)}"
        )
        out.append((r, f, flag, text))
    return out
