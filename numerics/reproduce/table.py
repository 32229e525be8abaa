r"""Table 1: its :class:`Entry` (one adjusted loss ± SE, with the paired gap to the Bayes
floor), the :data:`Table` built from the sweep's records and baselines, the lookups every output
shares, and the table as CSV and Markdown.

Every entry is an adjusted loss (method − oracle ridge, docs/model.md) on the same evaluation
sequences, with its paired standard error; ``minus_Bayes`` is the paired gap to the Bayes-optimal
floor (docs/model.md).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Any

from numerics.data import Noise

MODEL_NAMES = {"gdpp": "GD++", "diag": "DIAG", "full": "FULL"}
BASE_NAMES = ("ConstRR", "AdaRR", "TunedRR", "Bayes")


@dataclass(frozen=True)
class Entry:
    """One table entry: adjusted loss ± SE and the paired gap to Bayes (``None`` where not
    computed)."""

    loss: float
    se: float = 0.0
    minus_bayes: float | None = None
    minus_bayes_se: float | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.loss) or not (self.se >= 0):
            raise ValueError(
                f"an entry needs a finite loss and se >= 0, got {self.loss}, {self.se}"
            )

    @classmethod
    def of(cls, e: dict[str, Any]) -> Entry:
        """The entry of a record's ``eval``, a baseline's method or a floor: ``loss``, ``se`` and,
        where paired, ``minus_Bayes`` and ``minus_Bayes_se``."""
        return cls(e["loss"], e["se"], e.get("minus_Bayes"), e.get("minus_Bayes_se"))


Key = tuple[str, int, str]
#: ``(method, L, noise) → Entry``; baselines have ``L = 0``.
Table = dict[Key, Entry]


def by_key(cells: dict[str, Any]) -> dict[Key, Any]:
    """The sweep's cell records (:class:`numerics.reproduce.record.Record`) keyed like a table."""
    return {(m.model, int(m.layers), m.noise): m for m in cells.values()}


def build_table(cells: dict[str, Any], base: dict[str, dict[str, Any]]) -> Table:
    """Table from the sweep's cell records (:class:`numerics.reproduce.record.Record`) and baseline
    results; a failed cell is never an entry."""
    t = {k: Entry.of(m.eval) for k, m in by_key(cells).items() if not m.failed}
    return t | {
        (name, 0, nz): Entry.of(r) for nz, b in base.items() for name, r in b["methods"].items()
    }


def fmt(x: float | None, signed: bool = False) -> str:
    """Fixed point, or scientific from 1e4 on (a heavy-tailed entry's 2.3e31 stays readable)."""
    if x is None:
        return "–"
    sign = "+" if signed else ""
    return f"{x:{sign}.3e}" if abs(x) >= 1e4 else f"{x:{sign}.4f}"


def pm(e: Entry | None) -> str:
    return "–" if e is None else f"{fmt(e.loss)} ± {fmt(e.se)}"


def difference(a: Entry, b: Entry) -> tuple[float, float]:
    """``a − b`` and its standard error.  Where both entries carry their paired gap to Bayes (the
    same sequences), ``a − b = gap_a − gap_b`` exactly and the SE is that of the gaps, which no
    longer carry the sequences' common variance (at ``uniform:5``: 0.0065 against 0.0101 unpaired
    for DIAG-7 − TunedRR).  The two gaps' covariance is not stored, so their SEs add in quadrature
    (``hypot``)."""
    if None not in (a.minus_bayes, a.minus_bayes_se, b.minus_bayes, b.minus_bayes_se):
        return a.minus_bayes - b.minus_bayes, math.hypot(a.minus_bayes_se, b.minus_bayes_se)
    return a.loss - b.loss, math.hypot(a.se, b.se)


def noises_of(t: Table | dict[Key, Any]) -> list[str]:
    """The noise settings of a table (or of anything keyed like one), by kind (categorical, then
    uniform) and level, as Table 1's columns run."""
    return sorted({k[2] for k in t}, key=lambda s: (Noise.parse(s).kind, Noise.parse(s).values))


def depths_of(t: Table | dict[Key, Any], model: str, noise: str) -> list[int]:
    """The depths of ``model`` at ``noise`` in a table (or in anything keyed like one)."""
    return sorted(k[1] for k in t if k[0] == model and k[2] == noise)


def table_csv(t: Table) -> str:
    """Every entry, models by depth then the baselines, as CSV (``table1.csv``)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        ["method", "layers", "noise", "adjusted_loss", "se", "minus_bayes", "minus_bayes_se"]
    )
    for (m, L, nz), e in sorted(t.items(), key=lambda kv: (kv[0][1] == 0, *kv[0])):
        numbers = zip((e.loss, e.se, e.minus_bayes, e.minus_bayes_se), (".6g", ".3g", ".6g", ".3g"))
        w.writerow(
            [
                MODEL_NAMES.get(m, m),
                L or "",
                nz,
                *("" if x is None else format(x, f) for x, f in numbers),
            ]
        )
    return buf.getvalue()


def gap_pm(e: Entry) -> str:
    """The paired gap to Bayes ± its SE."""
    return fmt(e.minus_bayes) + ("" if e.minus_bayes_se is None else f" ± {fmt(e.minus_bayes_se)}")


def table_markdown(t: Table, gap: bool = False) -> str:
    """Rows: each model × depth, then ConstRR, AdaRR, TunedRR and the Bayes row; columns: noise
    settings. ``gap``: the paired gap to Bayes instead of the adjusted loss."""
    noises = noises_of(t)
    rows = sorted(
        {(m, L) for m, L, _ in t if L > 0}, key=lambda r: (list(MODEL_NAMES).index(r[0]), r[1])
    )
    rows += [(b, 0) for b in BASE_NAMES if any((b, 0, nz) in t for nz in noises)]
    out = ["| method | " + " | ".join(noises) + " |", "|---|" + "--:|" * len(noises)]
    for m, L in rows:
        es = [t.get((m, L, nz)) for nz in noises]
        cells = ["–" if e is None else gap_pm(e) if gap else pm(e) for e in es]
        name = f"{MODEL_NAMES[m]}-{L}" if L else (f"**{m}** (floor)" if m == "Bayes" else m)
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"
