r"""The GD++ floor of the sweep's settings, and the report's claim that no GD++ cell lies below it.

The floor, the rule and the theorem behind them are :mod:`numerics.baselines.gdpp_floor`: ridge at
``λ = E σ²``, which no spectral filter (no GD++ model) beats in expectation.

- :func:`floor_entries`: the floor of each setting on the cells' evaluation sequences, paired with
  Bayes, cached as ``OUT/baselines/floor-<noise>.json``.
- :func:`claim_gdpp_floor`: the reproduction report's check of every GD++ cell against it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from numerics.baselines.gdpp_floor import floor_of, impossible, verdict_text
from numerics.data import Noise
from numerics.io import atomic_write_json
from numerics.reproduce.claims import Claim, verdict
from numerics.reproduce.grid import slug
from numerics.reproduce.record import read_floor
from numerics.reproduce.rules import RULES
from numerics.reproduce.table import Entry, Table, difference, pm

#: The numbers of a floor entry, as the cache ``OUT/baselines/floor-<noise>.json`` names them.
NUMBERS = ("loss", "se", "minus_Bayes", "minus_Bayes_se")


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
            have = want | {k: float(e[k]) for k in NUMBERS} | {"lam": Noise.parse(nz).mean_sigma2}
            atomic_write_json(path, have)
        floors[nz] = Entry.of(have)
    return floors


def claim_gdpp_floor(t: Table, floors: dict[str, Entry]) -> Claim:
    r"""Every GD++ cell of the table against ridge at ``λ = E σ²`` of its noise setting: the entry
    minus the floor (paired where both carry their gap to Bayes,
    :func:`numerics.reproduce.table.difference`), flagged where
    :func:`numerics.baselines.gdpp_floor.impossible`."""
    ok, ev = [], []
    for (m, L, nz), e in sorted(t.items()):
        if m != "gdpp" or nz not in floors:
            continue
        diff, se = difference(e, floors[nz])
        flag = impossible(diff, se)
        ok.append(not flag)
        ev.append(
            f"{nz} GD++-{L} {pm(e)} vs ridge at lambda = E sigma^2 = "
            f"{Noise.parse(nz).mean_sigma2:.4g} {pm(floors[nz])}: difference {diff:+.4f} ± "
            f"{se:.4f} → {verdict_text(flag, diff, se)}"
        )
    return Claim(
        "gdpp_above_floor",
        "No GD++ entry lies below ridge at λ = E σ² (a theorem: GD++ is a spectral filter)",
        verdict(ok),
        tuple(ev),
    )
