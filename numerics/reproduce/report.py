r"""The reproduction's outputs: Table 1 (:mod:`numerics.reproduce.table`), the figures whose cells
are all finished (:mod:`numerics.reproduce.plots`), the study beyond the paper
(:mod:`numerics.reproduce.beyond`), and ``report.md``: every claim's verdict
(:mod:`numerics.reproduce.claims`, :mod:`numerics.reproduce.reads`) with its evidence, and how the
cells were made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from numerics.io import atomic_write_text
from numerics.model_file import load_model
from numerics.reproduce import beyond, floor, plots
from numerics.reproduce.claims import Claim
from numerics.reproduce.grid import CATEGORICAL, FOCUS, PARTS, Budget, Cell, cells_for
from numerics.reproduce.reads import judged_claims
from numerics.reproduce.rules import RULES
from numerics.reproduce.table import (
    MODEL_NAMES,
    Key,
    Table,
    build_table,
    by_key,
    table_csv,
    table_markdown,
)

#: How the report names the starts of records that are not a plan's cells.
EARLIER = {
    "diag": "were trained from the DIAG start (FULL starts as DIAG)",
    "shallower": "continued from the finished cell one layer shallower",
}
#: The figures' captions in the report.
CAPTIONS = {
    "fig1": "gap to the Bayes floor against depth per noise setting (log axis)",
    "fig2": "per-variance profiles",
    "fig3": "categorical noise, unseen σ included",
    "fig4": "P^l, Q^l of FULL-4 on categorical:1,3",
    "fig5": "read-out after each layer, spread over seeds",
    "fig7": "per-variance profiles of the read-outs",
}


def training_reason(m: Any) -> str:
    """How a cell was trained, as the reason a comparison with it failed: steps, stages, the
    stopping rule."""
    t = m.training
    text = (
        f"{MODEL_NAMES[m.model]}-{m.layers} at {m.noise}: {t['steps']} steps in "
        f"{len(t['stages'])} stages, "
        + (
            "stopped by the stopping rule"
            if t["converged"]
            else "stopped at the last stage allowed while still moving: undertrained at this budget"
        )
    )
    return text + "".join(f"; {n}" for n in m.provenance.get("notes") or [])


def claims_markdown(claims: list[Claim], cmd: str, rec: dict[Key, Any]) -> str:
    """The verdict table, then each claim's evidence; for a claim that does not hold, how each
    failing cell of ``rec`` (records keyed like the table) was trained (:func:`training_reason`)."""
    out = ["| claim (docs/reproduce.md, 'The report') | verdict | regenerate |", "|---|---|---|"]
    out += [f"| {c.text} | **{c.status()}** | `{cmd}` |" for c in claims]
    for c in claims:
        out += ["", f"**{c.text}: {c.status()}.**", ""] + [f"- {e}" for e in c.evidence]
        why = [training_reason(rec[k]) for k in c.failing if k in rec]
        if c.verdict == "does not hold" and why:
            out += ["", "Why, from how the failing cells were trained:", ""]
            out += [f"- {w}" for w in why]
    return "\n".join(out) + "\n"


def write_outputs(
    sw: Any, budget: Budget, parts: tuple[str, ...], out: str | Path
) -> dict[str, Any]:
    """Write the parts' tables and figures whose cells are all finished, and ``report.md``, from a
    :class:`numerics.reproduce.sweep.Sweep`.  Returns ``{"files": [...], "claims": [Claim,
    ...]}``."""
    out = Path(out)
    # the command that regenerates a part (finished cells are reused)
    cmd = lambda part: (  # noqa: E731
        f"python -m numerics.cli reproduce --budget {budget.name} --out {out} --only {part}"
    )
    cells, base, L, missing = sw.cells, sw.baselines, budget.max_depth, set(sw.missing)
    grid_cells = {
        k: v for k, v in cells.items() if v.layers in budget.depths and v.noise in budget.noises
    }
    rec, grid_rec = by_key(cells), by_key(grid_cells)  # the records keyed like the table
    noises = [nz for nz in budget.noises if nz in base]
    drawn = [
        p
        for p in parts
        if p != "table1" and not any(c.name in missing for c in cells_for(budget, (p,)))
    ]
    table = build_table(grid_cells, {nz: base[nz] for nz in noises})

    def model_of(c: Cell) -> tuple[Any, Any] | None:  # a failed cell has no model
        m = cells.get(c.name)
        return (
            None if m is None or m.failed else load_model(out / "models" / c.name / "model.npz")[:2]
        )

    # every file the outputs read (the models of Fig. 4 and of the beyond section, the GD++ floors)
    # is read before any output is written: one that is refused leaves the outputs as they were
    c4, cw = Cell("full", 4, CATEGORICAL), Cell("diag", L, FOCUS)
    PQ = model_of(c4) if "fig4" in drawn else None
    PQ_beyond = model_of(cw) if "beyond" in drawn else None
    floors = floor.floor_entries(out, budget, noises)
    files: list[str] = []
    if "table1" in parts:
        atomic_write_text(out / "table1.csv", table_csv(table))
        gap = "\nGap to the Bayes floor (paired):\n\n" + table_markdown(table, gap=True)
        atomic_write_text(out / "table1.md", table_markdown(table) + gap)
        files += ["table1.csv", "table1.md"]
    figs = {
        "fig1": lambda p: plots.fig1(table, noises, p),
        "fig2": lambda p: plots.fig2(rec, base, noises, L, FOCUS, p),
        "fig3": lambda p: plots.fig3(rec, base, noises, L, p),
        "fig5": lambda p: plots.fig5(grid_rec, base, FOCUS, L, p),
        "fig7": lambda p: plots.fig7(rec, base, FOCUS, L, p),
    }
    for part in (p for p in figs if p in drawn):
        figs[part](out / f"{part}.png")
        files.append(f"{part}.png")
    if PQ is not None:  # only where Fig. 4 is drawn
        title = f"Fig. 4: FULL-4 on {CATEGORICAL}, P^l and Q^l ({c4.name}/model.npz)"
        plots.fig4(*PQ, title, out / "fig4.png")
        files.append("fig4.png")
    beyond_md = ""
    if "beyond" in drawn:
        deep = [nz for nz in (FOCUS, CATEGORICAL) if nz in base]
        got, beyond_md = beyond.write(
            build_table(cells, base),
            deep,
            budget,
            PQ_beyond,
            cells[cw.name].failed,
            out,
            cmd("beyond"),
        )
        files += got
    to_come = {
        c.name: (c.model, c.layers, c.noise)
        for c in cells_for(budget, ("table1",))
        if c.name in missing
    }
    from_diag = frozenset(k for k, m in grid_rec.items() if m.start == "diag")
    extra = [floor.claim_gdpp_floor(table, floors)]
    # the claims read the final-layer per-variance profiles of the passing cells
    profiles = {
        k: {"sigma": m.profile["sigma"], "loss": m.profile["loss"][-1]}
        for k, m in rec.items()
        if not m.failed
    }
    claims = judged_claims(table, budget.depths, profiles, extra, to_come, from_diag)
    claims_md = claims_markdown(claims, cmd("table1"), rec)
    report = _report_markdown(sw, budget, table, claims_md, beyond_md, cmd, out)
    atomic_write_text(out / "report.md", report)
    files.append("report.md")
    return {"files": files, "claims": claims}


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
        "**Heavy-tailed entries** (SE above a quarter of the loss: a few sequences dominate the "
        "mean, the model is undertrained or unstable at this budget; no claim counts them as a "
        "match): " + "; ".join(bad) + ".\n\n"
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
            f"- {len(moving)} of {n} cells stopped at their last stage while doubling their steps "
            f"still moved their held-out loss: {', '.join(moving)}."
        )
    again = f"`python -m numerics.cli reproduce --budget {budget.name} --out {out}`"
    for start, what in EARLIER.items():
        old = sorted(k for k in sw.due if cells[k].start == start)
        if old:
            lines.append(
                f"- {len(old)} of {n} cells {what}, an earlier recipe: they are not this "
                f"plan's cells, and {again} retrains them: {', '.join(old)}."
            )
    other = sorted(k for k in sw.due if cells[k].start not in EARLIER)
    if other:
        lines.append(
            f"- {len(other)} of {n} cells were made under another plan and are retrained by the "
            f"same command: {', '.join(other)}."
        )
    return lines


def _report_markdown(
    sw: Any, budget: Budget, table: Table, claims_md: str, beyond_md: str, cmd: Any, out: Path
) -> str:
    s = budget.schedule
    secs = sum(float(m.provenance.get("seconds") or 0.0) for m in sw.cells.values())
    lines = [
        f"# Reproduction report: budget `{budget.name}`",
        "",
        f"Regenerate everything: `{cmd(','.join(PARTS))}` (finished cells in `{out}/models/` are "
        f"reused; delete a cell's directory there and under `runs/reproduce/{budget.name}/` to "
        "retrain it: training and evaluation are deterministic by seed on one kind of device).",
        "",
        f"- Grid: models {', '.join(MODEL_NAMES[m] for m in budget.models)} (single head), "
        f"depths {', '.join(map(str, budget.depths))}, noise {', '.join(budget.noises)}; beyond "
        "the paper: DIAG/FULL at depths "
        f"{', '.join(map(str, budget.beyond_depths)) or 'none'}.",
        "- Training: every cell from its own start (the random start, FULL included; GD++ at "
        "σ_max = 0 the spectral fit of `numerics.baselines.gdpp_fit`), in stages: "
        f"{s.steps} steps of batch {s.batch} ({s.seeds} seed(s)) first, then from the best "
        "stage so far with the steps spent doubled at half the rate, until doubling moves the "
        f"held-out loss by less than {RULES.stop_rel:.0%} or {RULES.stop_se:g} SE (at most "
        f"{s.most} stages; `numerics.reproduce.cell`); the Fig. 5 cells are trained "
        f"{budget.seeds} times, each with its own master seed; n = {budget.n}, d = {budget.d}.",
        f"- Evaluation: {budget.eval_sequences} fresh float64 sequences per cell, the same "
        f"sequences as the baselines (tuned on {budget.tune_sequences} others), so every "
        f"difference is paired; profiles: {budget.profile_points} σ values × "
        f"{budget.profile_sequences} sequences.",
        f"- {len(sw.cells)} cells, {secs / 3600:.2f} h of cell time (training + evaluation, "
        "summed over cells)"
        + (
            f"; **{len(sw.missing)} of {len(sw.cells) + len(sw.missing)} cells are not trained "
            "yet** (`–` in the tables; a claim that reads one gives its verdict so far, and a "
            "figure that needs one is not drawn)."
            if sw.missing
            else "."
        ),
        *provenance_lines(sw, budget, out),
        "",
        "Every number is an adjusted loss: the method's `½(y_t − ŷ)²` minus that of ridge with "
        "the true σ, ± the paired SE. **Bayes** is the Bayes-optimal floor (posterior mean under "
        "the noise prior): no method can beat it on average.",
        "",
        "## The paper's claims, checked",
        "",
        _heavy_tails(table),
        claims_md,
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
    for part, cap in CAPTIONS.items():
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
