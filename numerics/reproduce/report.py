r"""Table 1 and the automatic check of the paper's qualitative claims (docs/model.md).

Every entry is an adjusted loss (method − oracle ridge, docs/model.md) on the same evaluation
sequences, with its paired standard error; ``minus_Bayes`` is the paired gap to the Bayes-optimal
floor (docs/model.md).  A claim check reads a :data:`Table` (``(method, L, noise) → Entry``;
baselines have ``L = 0``) and, for extrapolation, per-variance profiles, and returns a
:class:`Claim` whose verdict is ``"holds"``, ``"does not hold"``, ``"undecided"`` (nothing
contradicts it, but some comparison is too noisy to call: an entry's SE exceeds the match scale) or
``"not evaluated"`` (cells missing from the budget).

Tolerances (what "matches" means; the paper gives none):

=====================  ========================================================================
``MATCH_REL, _ABS``    ``|a − b| ≤ 3·SE(a,b) + MATCH_REL·max(|a|,|b|) + MATCH_ABS`` counts as a match
``NEAR_REL``           GD++ "near" ConstRR: ``|GD++/ConstRR − 1| ≤ NEAR_REL``
``BEAT_SE``            a model "beats" a baseline when ``a − b < −BEAT_SE·SE(a,b)``; it does not beat it when
                       ``a − b ≥ BEAT_SE·SE(a,b)``; in between it is too close to call
``FLOOR``              adjusted losses below this are at the float32 training floor (no rate computed)
``UNSEEN``             a profile ``σ`` farther than this from every training level counts as unseen
=====================  ========================================================================
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import jax
import numpy as np

from numerics.io import atomic_write_text, load_model
from numerics.reproduce import beyond, floor, plots
from numerics.reproduce.claims import (
    BASE_NAMES,
    MODEL_NAMES,
    Claim,
    Table,
    _f,
    _noises,
    build_table,
    pm,
)
from numerics.reproduce.grid import CATEGORICAL, FOCUS, PARTS, Budget, Cell, cells_for
from numerics.reproduce.reads import judged_claims
from numerics.reproduce.rules import RULES

#: How the report names the starts of records that are not a plan's cells.
EARLIER = {
    "diag": "were trained from the DIAG start (FULL starts as DIAG)",
    "shallower": "continued from the finished cell one layer shallower",
}


def table_csv(t: Table) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        ["method", "layers", "noise", "adjusted_loss", "se", "minus_bayes", "minus_bayes_se"]
    )
    for (m, L, nz), e in sorted(
        t.items(), key=lambda kv: (kv[0][1] == 0, kv[0][0], kv[0][1], kv[0][2])
    ):
        w.writerow(
            [
                MODEL_NAMES.get(m, m),
                L or "",
                nz,
                f"{e.loss:.6g}",
                f"{e.se:.3g}",
                "" if e.minus_bayes is None else f"{e.minus_bayes:.6g}",
                "" if e.minus_bayes_se is None else f"{e.minus_bayes_se:.3g}",
            ]
        )
    return buf.getvalue()


def table_markdown(t: Table, gap: bool = False) -> str:
    """Rows: each model × depth, then ConstRR, AdaRR, TunedRR and the Bayes row; columns: noise
    settings. ``gap``: the paired gap to Bayes instead of the adjusted loss."""
    noises = _noises(t)
    rows = sorted(
        {(m, L) for m, L, _ in t if L > 0}, key=lambda r: (list(MODEL_NAMES).index(r[0]), r[1])
    )
    rows += [(b, 0) for b in BASE_NAMES if any((b, 0, nz) in t for nz in noises)]
    out = ["| method | " + " | ".join(noises) + " |", "|---|" + "--:|" * len(noises)]
    for m, L in rows:
        cells = []
        for nz in noises:
            e = t.get((m, L, nz))
            if e is None:
                cells.append("–")
            elif gap:
                cells.append(
                    _f(e.minus_bayes)
                    + ("" if e.minus_bayes_se is None else f" ± {_f(e.minus_bayes_se)}")
                )
            else:
                cells.append(pm(e))
        name = f"{MODEL_NAMES[m]}-{L}" if L else (f"**{m}** (floor)" if m == "Bayes" else m)
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


# -----------------------------------------------------------------------------------------------
# outputs


def command(budget: str, out: str, part: str) -> str:
    """The command that regenerates a part (finished cells are reused)."""
    return f"python -m numerics.cli reproduce --budget {budget} --out {out} --only {part}"


def profiles_of(cells: dict[str, Any]) -> dict[tuple[str, int, str], dict[str, list[float]]]:
    """Final-layer per-variance profiles of the passing cells, keyed like the table."""
    return {
        (m.model, m.layers, m.noise): {"sigma": m.profile["sigma"], "loss": m.profile["loss"][-1]}
        for m in cells.values()
        if not m.failed
    }


def training_reason(m: Any) -> str:
    """How a cell was trained, as the reason a comparison with it failed: steps, stages, the
    stopping rule."""
    t = m.training
    text = (
        f"{MODEL_NAMES[m.model]}-{m.layers} at {m.noise}: {t['steps']} steps in {len(t['stages'])} stages, "
        + (
            "stopped by the stopping rule"
            if t["converged"]
            else "stopped at the last stage allowed while still moving: undertrained at this budget"
        )
    )
    notes = m.provenance.get("notes") or []
    return text + "".join(f"; {n}" for n in notes)


def claims_markdown(claims: list[Claim], cmd: str, cells: dict[str, Any]) -> str:
    """The verdict table, then each claim's evidence; for a claim that does not hold, how each
    failing cell was trained (:func:`training_reason`)."""
    out = ["| claim (docs/reproduce.md, 'The report') | verdict | regenerate |", "|---|---|---|"]
    out += [f"| {c.text} | **{c.status()}** | `{cmd}` |" for c in claims]
    by_key = {(m.model, m.layers, m.noise): m for m in cells.values()}
    for c in claims:
        out += ["", f"**{c.text}: {c.status()}.**", ""] + [f"- {e}" for e in c.evidence]
        why = [training_reason(by_key[k]) for k in c.failing if k in by_key]
        if c.verdict == "does not hold" and why:
            out += ["", "Why, from how the failing cells were trained:", ""] + [
                f"- {w}" for w in why
            ]
    return "\n".join(out) + "\n"


def from_diag(cells: dict[str, Any]) -> frozenset[tuple[str, int, str]]:
    """The cells trained from the DIAG start (records of an earlier recipe)."""
    return frozenset((m.model, m.layers, m.noise) for m in cells.values() if m.start == "diag")


def write_outputs(
    sw: Any, budget: Budget, parts: tuple[str, ...], out: str | Path, out_arg: str | None = None
) -> dict[str, Any]:
    """Write the parts' tables and figures whose cells are all finished, and ``report.md``, from a
    :class:`numerics.reproduce.sweep.Sweep`.  Returns ``{"files": [...], "claims": [Claim,
    ...]}``."""
    out, arg = Path(out), out_arg or str(out)
    cmd = lambda part: command(budget.name, arg, part)  # noqa: E731
    cells, base, L = sw.cells, sw.baselines, budget.max_depth
    grid_cells = {
        k: v for k, v in cells.items() if v.layers in budget.depths and v.noise in budget.noises
    }
    noises = [nz for nz in budget.noises if nz in base]
    missing = set(sw.missing)
    parts = tuple(
        p
        for p in parts
        if p == "table1" or not any(c.name in missing for c in cells_for(budget, (p,)))
    )
    table = build_table(grid_cells, {nz: base[nz] for nz in noises})
    files: list[str] = []
    if "table1" in parts:
        atomic_write_text(out / "table1.csv", table_csv(table))
        atomic_write_text(
            out / "table1.md",
            table_markdown(table)
            + "\nGap to the Bayes floor (paired):\n\n"
            + table_markdown(table, gap=True),
        )
        files += ["table1.csv", "table1.md"]
    figs = {
        "fig1": lambda p: plots.fig1(grid_cells, base, noises, p),
        "fig2": lambda p: plots.fig2(cells, base, noises, L, FOCUS, p),
        "fig3": lambda p: plots.fig3(cells, base, noises, L, p),
        "fig5": lambda p: plots.fig5(grid_cells, base, FOCUS, L, p),
        "fig7": lambda p: plots.fig7(cells, base, FOCUS, L, p),
    }
    for part, draw in figs.items():
        if part in parts:
            draw(out / f"{part}.png")
            files.append(f"{part}.png")

    def model_of(name: str) -> tuple[Any, Any] | None:  # a failed cell has no model
        return (
            None
            if name not in cells or cells[name].failed
            else load_model(out / "models" / name / "model.npz")[:2]
        )

    c4 = Cell("full", 4, CATEGORICAL)
    if "fig4" in parts and (PQ := model_of(c4.name)) is not None:
        plots.fig4(
            *PQ,
            f"Fig. 4: FULL-4 on {CATEGORICAL}, P^l and Q^l ({c4.name}/model.npz)",
            out / "fig4.png",
        )
        files.append("fig4.png")
    beyond_md = ""
    if "beyond" in parts:
        deep = [nz for nz in (FOCUS, CATEGORICAL) if nz in base]
        cw = Cell("diag", L, FOCUS)
        PQ = model_of(cw.name)
        tr = (
            None
            if PQ is None
            else beyond.trajectories(
                *PQ, FOCUS, 1000, budget.n, budget.d, jax.random.fold_in(jax.random.PRNGKey(0), 3)
            )
        )
        plots.fig_depth(cells, base, deep, out / "fig_beyond_depth.png")
        files.append("fig_beyond_depth.png")
        if tr is not None:
            plots.fig_weights(
                tr,
                f"DIAG-{L} on {FOCUS}: implicit weights w^l (Theorem 4.1) vs the ridge path",
                out / "fig_beyond_weights.png",
            )
            files.append("fig_beyond_weights.png")
        beyond_md = _beyond_markdown(cells, deep, L, tr, cmd("beyond"), cells[cw.name].failed)
    to_come = {
        c.name: (c.model, c.layers, c.noise)
        for c in cells_for(budget, ("table1",))
        if c.name in missing
    }
    extra = [floor.claim_gdpp_floor(table, floor.floor_entries(out, budget, noises))]
    claims = judged_claims(
        table, budget.depths, profiles_of(cells), extra, to_come, from_diag(grid_cells)
    )
    atomic_write_text(
        out / "report.md", _report_markdown(sw, budget, table, claims, beyond_md, cmd, out)
    )
    files.append("report.md")
    return {"files": files, "claims": claims}


def _beyond_markdown(
    cells: dict, noises: list[str], L: int, tr: dict | None, cmd: str, failed: str | None = None
) -> str:
    out = [
        f"Gap to the Bayes floor against depth (paired ± SE), and the fraction of the depth-{L} gap that "
        f"deeper models close. Regenerate: `{cmd}`.",
        "",
        f"| model | noise | layers | loss − Bayes | gap closed vs L={L} |",
        "|---|---|--:|--:|--:|",
    ]
    for nz in noises:
        for m in ("diag", "full"):
            for Lk, g, s, f in beyond.depth_gap(cells, m, nz, L):
                out.append(
                    f"| {MODEL_NAMES[m]} | {nz} | {Lk} | {_f(g)} ± {_f(s)} | "
                    f"{'–' if Lk <= L or not math.isfinite(f) else f'{f:.0%}'} |"
                )
    if tr is None:
        out += [
            "",
            "![gap to Bayes vs depth](fig_beyond_depth.png)",
            "",
            f"No implicit weights: DIAG-{L} at {FOCUS} is a failed cell ({failed}).",
        ]
        return "\n".join(out) + "\n"
    last = tr["dist"][-1]
    rho = np.corrcoef(
        np.log(np.maximum(tr["sigma"], 1e-3) ** 2), np.log(np.maximum(tr["s_best"], 1e-5))
    )[0, 1]
    out += [
        "",
        "![gap to Bayes vs depth](fig_beyond_depth.png)",
        "",
        f"Implicit weights of DIAG-{L} on 1000 sequences: median relative distance of `w^{L}` to the ridge path "
        f"{np.median(last):.3f}, to oracle ridge {np.median(tr['to_oracle'][-1]):.3f}, to OLS "
        f"{np.median(tr['to_ols'][-1]):.3f}; correlation of log(nearest ridge s) with log σ² {rho:.2f}. "
        f"Regenerate: `{cmd}`.",
        "",
        "![implicit weights vs ridge path](fig_beyond_weights.png)",
    ]
    return "\n".join(out) + "\n"


def _heavy_tails(t: Table) -> str:
    """A note on entries whose SE exceeds a quarter of the loss (a few sequences dominate the
    mean)."""
    bad = [
        f"{MODEL_NAMES[m]}-{L} {nz} ({e.loss:.3g} ± {e.se:.3g})"
        for (m, L, nz), e in sorted(t.items())
        if L > 0 and e.se > 0.25 * abs(e.loss) and abs(e.loss) > 0.1
    ]
    if not bad:
        return ""
    return (
        "**Heavy-tailed entries** (SE above a quarter of the loss: a few sequences dominate the mean, the model "
        "is undertrained or unstable at this budget; no claim counts them as a match): "
        + "; ".join(bad)
        + ".\n\n"
    )


def provenance_lines(sw: Any, budget: Budget, out: Path) -> list[str]:
    """The report's lines on cells that failed, stopped still moving, or are not the plan's
    cells."""
    cells, n = sw.cells, len(sw.cells)
    lines = []
    failed = sorted(k for k, m in cells.items() if m.failed)
    if failed:
        lines.append(
            f"- **{len(failed)} of {n} cells failed** their verdict (`–` in the tables): "
            + ", ".join(f"{k} ({cells[k].failed})" for k in failed)
            + "."
        )
    moving = sorted(k for k, m in cells.items() if not m.training["converged"])
    if moving:
        lines.append(
            f"- {len(moving)} of {n} cells stopped at their last stage while doubling their steps still "
            f"moved their held-out loss: {', '.join(moving)}."
        )
    for start, what in EARLIER.items():
        old = sorted(k for k in sw.due if cells[k].start == start)
        if old:
            lines.append(
                f"- {len(old)} of {n} cells {what}, an earlier recipe: they are not this "
                f"plan's cells, and `python -m numerics.cli reproduce --budget {budget.name} --out {out}` "
                f"retrains them: {', '.join(old)}."
            )
    other = sorted(k for k in sw.due if cells[k].start not in EARLIER)
    if other:
        lines.append(
            f"- {len(other)} of {n} cells were made under another plan and are retrained by the same "
            f"command: {', '.join(other)}."
        )
    return lines


def _report_markdown(
    sw: Any, budget: Budget, table: Table, claims: list[Claim], beyond_md: str, cmd: Any, out: Path
) -> str:
    s, rules = budget.schedule, RULES
    secs = sum(float(m.provenance.get("seconds") or 0.0) for m in sw.cells.values())
    lines = [
        f"# Reproduction report: budget `{budget.name}`",
        "",
        f"Regenerate everything: `{cmd(','.join(PARTS))}` (finished cells in `{out}/models/` are reused; delete a "
        f"cell's directory there and under `runs/reproduce/{budget.name}/` to retrain it: training and evaluation "
        "are deterministic by seed on one kind of device).",
        "",
        f"- Grid: models {', '.join(MODEL_NAMES[m] for m in budget.models)} (single head), depths "
        f"{', '.join(map(str, budget.depths))}, noise {', '.join(budget.noises)}; beyond the paper: DIAG/FULL at "
        f"depths {', '.join(map(str, budget.beyond_depths)) or 'none'}.",
        f"- Training: every cell from its own start (the random start, FULL included; GD++ at σ_max = 0 the "
        f"spectral fit of `numerics.baselines.gdpp_fit`), in stages: {s.steps} steps of batch {s.batch} "
        f"({s.seeds} seed(s)) first, then from the best stage so far with the steps spent doubled at half the "
        f"rate, until doubling moves the held-out loss by less than {rules.stop_rel:.0%} or {rules.stop_se:g} SE "
        f"(at most {s.most} stages; `numerics.reproduce.cell`); the Fig. 5 cells are trained {budget.seeds} times, "
        f"each with its own master seed; n = {budget.n}, d = {budget.d}.",
        f"- Evaluation: {budget.eval_sequences} fresh float64 sequences per cell, the same sequences as the "
        f"baselines (tuned on {budget.tune_sequences} others), so every difference is paired; profiles: "
        f"{budget.profile_points} σ values × {budget.profile_sequences} sequences.",
        f"- {len(sw.cells)} cells, {secs / 3600:.2f} h of cell time (training + evaluation, summed over cells)"
        + (
            f"; **{len(sw.missing)} of {len(sw.cells) + len(sw.missing)} cells are not trained yet** (`–` in the "
            "tables; a claim that reads one gives its verdict so far, and a figure that needs one is not drawn)."
            if sw.missing
            else "."
        ),
        *provenance_lines(sw, budget, out),
        "",
        "Every number is an adjusted loss: the method's `½(y_t − ŷ)²` minus that of ridge with the true σ, ± the "
        "paired SE. **Bayes** is the Bayes-optimal floor (posterior mean under the noise prior): no method can beat "
        "it on average.",
        "",
        "## The paper's claims, checked",
        "",
        _heavy_tails(table),
        claims_markdown(claims, cmd("table1"), sw.cells),
        "## Table 1",
        "",
        f"Regenerate: `{cmd('table1')}` (also `table1.csv`).",
        "",
        table_markdown(table),
        "",
        "Gap to the Bayes floor (method − Bayes, paired):",
        "",
        table_markdown(table, gap=True),
        "",
        "## Figures",
        "",
    ]
    caps = {
        "fig1": "adjusted loss against depth per noise setting",
        "fig2": "per-variance profiles",
        "fig3": "categorical noise, unseen σ included",
        "fig4": "P^l, Q^l of FULL-4 on categorical:1,3",
        "fig5": "read-out after each layer, spread over seeds",
        "fig7": "per-variance profiles of the read-outs",
    }
    for part, cap in caps.items():
        if (out / f"{part}.png").exists():
            lines += [
                f"**{part}**: {cap}. Regenerate: `{cmd(part)}`.",
                "",
                f"![{part}]({part}.png)",
                "",
            ]
    if beyond_md:
        lines += ["## Beyond the paper", "", beyond_md]
    return "\n".join(lines) + "\n"


__all__ = ["command", "from_diag", "profiles_of", "table_csv", "table_markdown", "write_outputs"]
