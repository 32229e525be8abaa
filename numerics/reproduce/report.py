r"""Table 1 and the automatic check of the paper's qualitative claims (docs/model.md).

Every entry is an adjusted loss (method − oracle ridge, docs/model.md) on the same evaluation
sequences, with its paired standard error; ``minus_Bayes`` is the paired gap to the Bayes-optimal
floor (docs/model.md).  A claim check reads a :data:`Table` (``(method, L, noise) → Entry``; baselines
have ``L = 0``) and, for extrapolation, per-variance profiles, and returns a :class:`Claim` whose
verdict is ``"holds"``, ``"does not hold"``, ``"undecided"`` (nothing contradicts it, but some comparison is
too noisy to call: an entry's SE exceeds the match scale) or ``"not evaluated"`` (cells missing from the budget).

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

import numpy as np

from numerics.io import read_json
from numerics.reproduce.budgets import FOCUS
from numerics.reproduce.timing import by_device, layers_to_train, machine_seconds, machine_shares, runs
from numerics.reproduce.claims import (BASE_NAMES, Claim, MODEL_NAMES, Table, _f, _noises, build_table,
                                      complete_series, judged_claims, pm)


def table_csv(t: Table) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["method", "layers", "noise", "adjusted_loss", "se", "minus_bayes", "minus_bayes_se"])
    for (m, L, nz), e in sorted(t.items(), key=lambda kv: (kv[0][1] == 0, kv[0][0], kv[0][1], kv[0][2])):
        w.writerow([MODEL_NAMES.get(m, m), L or "", nz, f"{e.loss:.6g}", f"{e.se:.3g}",
                    "" if e.minus_bayes is None else f"{e.minus_bayes:.6g}",
                    "" if e.minus_bayes_se is None else f"{e.minus_bayes_se:.3g}"])
    return buf.getvalue()


def table_markdown(t: Table, gap: bool = False) -> str:
    """Rows: each model × depth, then ConstRR, AdaRR, TunedRR and the Bayes row; columns: noise settings.
    ``gap``: the paired gap to Bayes instead of the adjusted loss."""
    noises = _noises(t)
    rows = sorted({(m, L) for m, L, _ in t if L > 0}, key=lambda r: (list(MODEL_NAMES).index(r[0]), r[1]))
    rows += [(b, 0) for b in BASE_NAMES if any((b, 0, nz) in t for nz in noises)]
    out = ["| method | " + " | ".join(noises) + " |", "|---|" + "--:|" * len(noises)]
    for m, L in rows:
        cells = []
        for nz in noises:
            e = t.get((m, L, nz))
            if e is None:
                cells.append("–")
            elif gap:
                cells.append(_f(e.minus_bayes) + ("" if e.minus_bayes_se is None else f" ± {_f(e.minus_bayes_se)}"))
            else:
                cells.append(pm(e))
        name = f"{MODEL_NAMES[m]}-{L}" if L else (f"**{m}** (floor)" if m == "Bayes" else m)
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------------------- outputs


def command(budget: str, out: str, part: str) -> str:
    """The command that regenerates a part (finished cells are reused; a deleted cell is retrained exactly)."""
    return f"python -m numerics.cli reproduce --budget {budget} --out {out} --only {part}"


def profiles_of(cells: dict[str, dict[str, Any]]) -> dict[tuple[str, int, str], dict[str, list[float]]]:
    """Final-layer per-variance profiles keyed like the table."""
    return {(m["model"], int(m["layers"]), m["noise"]): {"sigma": m["profile"]["sigma"], "loss": m["profile"]["loss"][-1]}
            for m in cells.values()}


def claims_markdown(claims: list[Claim], cmd: str, cells: dict[str, dict[str, Any]] | None = None,
                    checked: dict[str, dict[str, Any]] | None = None) -> str:
    """The verdict table, then each claim's evidence; for a claim that does not hold, how each failing cell was
    trained (:func:`training_reason`, from ``cells``' metrics and the convergence check's entries ``checked``)."""
    out = ["| claim (docs/reproduce.md, 'The report') | verdict | regenerate |", "|---|---|---|"]
    out += [f"| {c.text} | **{c.status()}** | `{cmd}` |" for c in claims]
    by_key = {(m["model"], int(m["layers"]), m["noise"]): m for m in (cells or {}).values()}
    for c in claims:
        out += ["", f"**{c.text}: {c.status()}.**", ""] + [f"- {e}" for e in c.evidence]
        why = [training_reason(by_key[k], (checked or {}).get(by_key[k].get("cell"))) for k in c.failing
               if "train" in by_key.get(k, {})]
        if c.verdict == "does not hold" and why:
            out += ["", "Why, from how the failing cells were trained:", ""] + [f"- {w}" for w in why]
    return "\n".join(out) + "\n"


def training_reason(m: dict[str, Any], check: dict[str, Any] | None = None) -> str:
    """How a cell was trained, as the reason a comparison with it failed: its steps and stages, whether doubling the
    steps still moved its held-out loss, the scale its update was given against a tail (the stage's scale fit and
    the rescue) and the convergence check's rerun when there is one."""
    st = m["train"]["stages"]  # the last stage went on from the best earlier one that was not blown
    prev = min((s for s in st[:-1] if not s.get("blown")), key=lambda s: s["held_out"], default=st[-2]) \
        if len(st) > 1 else None
    moved = ("its last stage diverged" if st[-1]["held_out"] is None else
             f"the last doubling of its steps moved its held-out loss by "
             f"{st[-1]['held_out'] / prev['held_out'] - 1:+.1%}" if prev and prev["held_out"] else "")
    text = (f"{MODEL_NAMES[m['model']]}-{m['layers']} at {m['noise']}: {m['train']['steps']} steps in {len(st)} "
            + ("stages, stopped by the convergence rule (" + moved + ")" if m["train"]["converged"] else
               "stages, stopped at the last stage it was allowed while still moving (" + moved + "): undertrained "
               "at this budget"))
    chosen = m["train"].get("chosen_stage", len(st))
    if chosen == 0:  # numerics.reproduce.deeper: FULL kept the DIAG model it started from
        text += (f"; it keeps its start, the DIAG model of its depth ({m['train']['start_check']['held_out']:.4g} "
                 f"held out, below every stage's)")
    fit = (st[chosen - 1].get("scale") or {}) if chosen else {}
    if fit.get("searched"):
        text += (f"; its update is scaled by c = {fit['scale']:.3g} against a tail of the stage's pool (largest loss "
                 f"{fit['pool_max']:.3g} at c = 1; the pool's mean {fit['mean_unscaled']:.3g} at c = 1, "
                 f"{fit['mean']:.3g} at c)")
    last = st[-1].get("scale") or {}
    if len(st) > 1 and chosen != len(st) and last.get("searched"):
        text += f"; the last stage's update needed c = {last['scale']:.3g} against a tail of its pool"
    if (m.get("rescue") or {}).get("scale", 1.0) < 1.0:
        text += f"; rescued with a further c = {m['rescue']['scale']:.3g} against a tail its stages' pools missed"
    if m.get("adopted"):
        a = m["adopted"]
        text += (f"; it holds its convergence check's run, every stage {a['factor']}× the budget's, which ended "
                 f"{a['check']['relative']:+.1%} from the {a['replaced']['steps']}-step model it replaced")
    if check and not check.get("failed"):
        text += (f"; retrained with twice the steps it moves by {check['relative']:+.1%} "
                 f"({'within' if check['holds'] else 'beyond'} the convergence tolerance)")
    return text


def capped_lines(cells: dict[str, dict[str, Any]], budget: Any) -> list[str]:
    """The report's lines naming the cells whose training reached its last stage still moving: at the budget's cap,
    and at a smaller one that they were trained under, which the sweep goes on from (none: no line)."""
    from numerics.reproduce.budgets import goes_on

    stopped = sorted(n for n, m in cells.items() if "train" in m and not m["train"].get("converged"))
    later = [n for n in stopped if goes_on(cells[n], budget)]
    capped = [n for n in stopped if n not in later]
    return ([f"- {len(capped)} of {len(cells)} cells stopped at the budget's last stage ({budget.stages.most} stages) "
             f"while doubling their steps still moved their held-out loss: {', '.join(capped)}."] if capped else []) + \
        ([f"- {len(later)} of {len(cells)} cells stopped still moving at a smaller cap on their stages than the "
          f"budget's {budget.stages.most}; they go on the next time the sweep trains: {', '.join(later)}."]
         if later else [])


def adopted_lines(cells: dict[str, dict[str, Any]]) -> list[str]:
    """The report's line naming the cells that hold their convergence check's longer run (none: no line)."""
    took = {n: m for n, m in sorted(cells.items()) if m.get("adopted")}
    verb = "holds its" if len(took) == 1 else "hold their"
    return [f"- {len(took)} of {len(cells)} cells {verb} convergence check's longer run, which ended lower than the "
            "check allows, in place of the budget's: " + ", ".join(
                f"{n} ({m['adopted']['replaced']['loss']:.4g} after the budget's stages, "
                f"{m['adopted']['replaced']['steps']} steps; {m['eval']['loss']:.4g} after stages "
                f"{m['adopted']['factor']}× longer, {m['train']['steps']} steps)" for n, m in took.items()) + "."
            ] if took else []


def write_outputs(sw: Any, budget: Any, parts: tuple[str, ...], out: str | Path, out_arg: str | None = None,
                  shown: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Write the requested parts (tables, figures) and ``report.md`` from a finished :func:`experiments.sweep`.
    ``shown`` (default ``parts``; the cells of ``sw`` cover them) are the parts whose sections the report
    carries: a part not redrawn keeps its section, with the figures it drew before.

    Returns ``{"files": [...], "claims": [Claim, ...]}``."""
    import jax

    from numerics.reproduce import beyond
    from numerics.reproduce import experiments as ex
    from numerics.reproduce import plots
    from numerics.io import atomic_write_text, load_model

    out, arg = Path(out), out_arg or str(out)
    cmd = lambda part: command(budget.name, arg, part)  # noqa: E731
    cells, base, L = sw.cells, sw.baselines, budget.max_depth
    grid_cells = {k: v for k, v in cells.items() if v["layers"] in budget.depths and v["noise"] in budget.noises}
    noises = [nz for nz in budget.noises if nz in base]
    files: list[str] = []
    missing = set(getattr(sw, "missing", ()))
    parts = tuple(p for p in parts if p == "table1" or not any(c.name in missing for c in ex.cells_for(budget, (p,))))
    shown = tuple(p for p in (shown or parts) if not any(c.name in missing for c in ex.cells_for(budget, (p,))))
    table = build_table(grid_cells, {nz: base[nz] for nz in noises})
    if "table1" in parts:
        atomic_write_text(out / "table1.csv", table_csv(table))
        atomic_write_text(out / "table1.md", table_markdown(table) + "\nGap to the Bayes floor (paired):\n\n"
                          + table_markdown(table, gap=True))
        files += ["table1.csv", "table1.md"]
    figs = {"fig1": lambda p: plots.fig1(grid_cells, base, noises, p),
            "fig2": lambda p: plots.fig2(cells, base, noises, L, ex.FOCUS, p),
            "fig3": lambda p: plots.fig3(cells, base, noises, L, p),
            "fig5": lambda p: plots.fig5(grid_cells, base, ex.FOCUS, L, p),
            "fig7": lambda p: plots.fig7(cells, base, ex.FOCUS, L, p)}
    for part, draw in figs.items():
        if part in parts:
            draw(out / f"{part}.png")
            files.append(f"{part}.png")
    def model_of(cell: Any) -> tuple[Any, Any] | None:  # a failed cell has no model
        return None if cells[cell.name].get("failed") else load_model(ex.cell_dir(out, cell) / "model.npz")[:2]

    c4 = ex.Cell("full", 4, ex.CATEGORICAL)
    if "fig4" in parts and (PQ := model_of(c4)) is not None:
        plots.fig4(*PQ, f"Fig. 4: FULL-4 on {ex.CATEGORICAL}, P^l and Q^l (results/models/{c4.name}/model.npz)",
                   out / "fig4.png")
        files.append("fig4.png")
    beyond_md = ""
    if "beyond" in parts or "beyond" in shown:
        deep = [nz for nz in (ex.FOCUS, ex.CATEGORICAL) if nz in base]
        cw = ex.Cell("diag", L, ex.FOCUS)
        PQ = model_of(cw)
        tr = None if PQ is None else beyond.trajectories(*PQ, ex.FOCUS, 1000, budget.n, budget.d,
                                                         jax.random.fold_in(jax.random.PRNGKey(0), 3))
        if "beyond" in parts:
            plots.fig_depth(cells, base, deep, out / "fig_beyond_depth.png")
            files.append("fig_beyond_depth.png")
            if tr is not None:
                plots.fig_weights(tr, f"DIAG-{L} on {ex.FOCUS}: implicit weights w^l (Theorem 4.1) vs the ridge path",
                                  out / "fig_beyond_weights.png")
                files.append("fig_beyond_weights.png")
        beyond_md = _beyond_markdown(cells, deep, L, tr, cmd("beyond"), cells[cw.name].get("failed"))
    from numerics.reproduce import floor  # GD++ against ridge at λ = E σ² (a theorem, not a claim of the paper)

    to_come = {c.name: (c.model, c.layers, c.noise) for c in ex.cells_for(budget, ("table1",))
               if c.name in missing}  # the cells Table 1, and so the claims, read
    claims = judged_claims(table, budget.depths, profiles_of(cells), floor.floor_entries(out, budget, noises), to_come)
    atomic_write_text(out / "report.md", _report_markdown(sw, budget, table, claims, beyond_md, cmd, out))
    files.append("report.md")
    return {"files": files, "claims": claims}


def _beyond_markdown(cells: dict, noises: list[str], L: int, tr: dict | None, cmd: str, failed: str | None = None) -> str:
    from numerics.reproduce import beyond

    out = [f"Gap to the Bayes floor against depth (paired ± SE), and the fraction of the depth-{L} gap that "
           f"deeper models close. Regenerate: `{cmd}`.", "", "| model | noise | layers | loss − Bayes | gap closed vs "
           f"L={L} |", "|---|---|--:|--:|--:|"]
    for nz in noises:
        for m in ("diag", "full"):
            for Lk, g, s, f in beyond.depth_gap(cells, m, nz, L):
                out.append(f"| {MODEL_NAMES[m]} | {nz} | {Lk} | {_f(g)} ± {_f(s)} | "
                           f"{'–' if Lk <= L or not math.isfinite(f) else f'{f:.0%}'} |")
    if tr is None:
        out += ["", "![gap to Bayes vs depth](fig_beyond_depth.png)", "",
                f"No implicit weights: DIAG-{L} at {FOCUS} is a failed cell ({failed})."]
        return "\n".join(out) + "\n"
    last = tr["dist"][-1]
    rho = np.corrcoef(np.log(np.maximum(tr["sigma"], 1e-3) ** 2), np.log(np.maximum(tr["s_best"], 1e-5)))[0, 1]
    out += ["", "![gap to Bayes vs depth](fig_beyond_depth.png)", "",
            f"Implicit weights of DIAG-{L} on 1000 sequences: median relative distance of `w^{L}` to the ridge path "
            f"{np.median(last):.3f}, to oracle ridge {np.median(tr['to_oracle'][-1]):.3f}, to OLS "
            f"{np.median(tr['to_ols'][-1]):.3f}; correlation of log(nearest ridge s) with log σ² {rho:.2f}. "
            f"Regenerate: `{cmd}`.", "", "![implicit weights vs ridge path](fig_beyond_weights.png)"]
    return "\n".join(out) + "\n"


def _checked(out: Path) -> dict[str, dict[str, Any]]:
    """The convergence check's entries (``OUT/convergence.json``), if it ran."""
    path = out / "convergence.json"
    return read_json(path)["cells"] if path.exists() else {}


def _heavy_tails(t: Table) -> str:
    """A note on entries whose SE exceeds a quarter of the loss (a few sequences dominate the mean)."""
    bad = [f"{MODEL_NAMES[m]}-{L} {nz} ({e.loss:.3g} ± {e.se:.3g})" for (m, L, nz), e in sorted(t.items())
           if L > 0 and e.se > 0.25 * abs(e.loss) and abs(e.loss) > 0.1]
    if not bad:
        return ""
    return ("**Heavy-tailed entries** (SE above a quarter of the loss: a few sequences dominate the mean, the model "
            "is undertrained or unstable at this budget; no claim counts them as a match): " + "; ".join(bad) + ".\n\n")


def attempts_lines(cells: Any, attempts: int) -> list[str]:
    """Bullets for the cells that passed only at a later attempt, and for those whose every attempt failed
    (never a table entry), each with why its attempts failed; none when every cell passed at once."""
    cells = list(cells)

    def why(m: dict[str, Any]) -> str:
        runs = [*m.get("attempts", ()), *([{"attempt": m.get("attempt", 1), "failed": m["failed"]}] if m.get("failed")
                                          else [])]
        return "; ".join(f"attempt {r['attempt']}: {r['failed']}" for r in runs)

    later = [m for m in cells if m.get("attempts") and not m.get("failed")]
    failed = [m for m in cells if m.get("failed")]
    out = []
    if later:
        out.append(f"- {len(later)} of {len(cells)} cells passed at a later attempt, trained again with the next "
                   "master seed after failing even with the rescue: " + ", ".join(f"{m['cell']} ({why(m)})" for m in later) + ".")
    if failed:
        out.append(f"- **{len(failed)} of {len(cells)} cells failed** every attempt (`–` in the tables; at most "
                   f"{attempts} attempts a cell): " + ", ".join(f"{m['cell']} ({why(m)})" for m in failed) + ".")
    return out


def _left(sw: Any, budget: Any) -> str:
    """An estimate of the machine time the cells not trained yet need: the machine time per layer of the deepest
    cells trained so far (:func:`numerics.reproduce.timing.deepest_rate`, each cell's
    :func:`numerics.reproduce.timing.machine_shares`) times their layers
    (:func:`numerics.reproduce.timing.layers_to_train`)."""
    from numerics.reproduce.budgets import PARTS, cells_for, train_layers
    from numerics.reproduce.timing import deepest_rate

    named = {c.name: c for c in cells_for(budget, PARTS)}
    names = list(sw.cells)
    shares = machine_shares(sw.cells[n] for n in names)
    got = deepest_rate((named[n].layers, train_layers(named[n], budget), t) for n, t in zip(names, shares))
    if got is None:
        return ""
    depth, rate = got
    deep = sum(named[n].layers == depth for n in names)
    return (f"At the {rate / 60:.1f} min of machine time per layer of its {deep} depth-{depth} cells, the deepest "
            f"trained so far, they need about {rate * layers_to_train(sw.missing, budget) / 3600:.1f} h more.")


def _report_markdown(sw: Any, budget: Any, table: Table, claims: list[Claim], beyond_md: str, cmd: Any,
                     out: Path) -> str:
    secs = sum(r.get("seconds", 0.0) for r in runs(sw.cells.values()))
    busy, devices = machine_seconds(sw.cells.values()), by_device(sw.cells.values())
    st = budget.stages
    steps = (("by continuation over depth" if budget.continuation else "each cell from the random start"
              + (", FULL from the finished DIAG cell of its depth" if budget.full_from_diag else ""))
             + f", in stages of {st.steps} steps of batch {st.batch} ({st.seeds} seeds in the first) and more until doubling "
             f"the steps moves the held-out loss by less than {st.rel:.0%} or {st.se:g} SE (`numerics.train.continuation`)"
             + ("; every stage at the peak rate" if st.decay == 1 else "")
             + ("; a stage that blows up after one that did not does not end a cell" if st.retry_blown else "")
             + ("; a cell never ends above a model it holds: one the rule would stop above the cell one layer "
                "shallower restarts from it, and FULL keeps its DIAG start where its stages end above it "
                "(`numerics.reproduce.deeper`)" if st.floor else ""))
    from numerics.reproduce.experiments import Cell, train_config

    from dataclasses import replace

    diag_steps = replace(train_config(Cell("full", 1, budget.noises[0]), budget), steps=st.steps).phase1_steps
    lines = [
        f"# Reproduction report: budget `{budget.name}`", "",
        f"Regenerate everything: `{cmd('table1,fig1,fig2,fig3,fig4,fig5,fig7,beyond')}` (finished cells in "
        f"`{out}/models/` are reused; delete a cell's directory there and under `runs/reproduce/{budget.name}/` to retrain "
        "it, which gives the same numbers on the same kind of device (each cell's `metrics.json` names its own): "
        "training and evaluation are deterministic by seed).", "",
        f"- Grid: models {', '.join(MODEL_NAMES[m] for m in budget.models)} (single head), depths "
        f"{', '.join(map(str, budget.depths))}, noise {', '.join(budget.noises)}; beyond the paper: DIAG/FULL at depths "
        f"{', '.join(map(str, budget.beyond_depths)) or 'none (up to 7 only; the paper budget has 8-12)'}.",
        f"- Training: {steps}; the Fig. 5 cells are trained {budget.seeds} times, each with its own master seed "
        "(`numerics.train.TrainConfig` recipe: warm-up + cosine Adam, clipping, divergence guard; FULL without a "
        f"start trains its DIAG sub-family for the first {diag_steps} steps"
        + ("; GD++ at σ_max = 0 starts from the spectral fit of `numerics.baselines.gdpp_fit`, `--init spectral`, seed 0 frozen "
           "at the fit, where the paper trains GD++ with Adam alone" if budget.gdpp_spectral else "")
        + f"), n = {budget.n}, d = {budget.d}.",
        f"- Evaluation: {budget.eval_sequences} fresh float64 sequences per cell, the same sequences as the baselines "
        f"(tuned on {budget.tune_sequences} others), so every difference is paired; profiles: {budget.profile_points} "
        f"σ values × {budget.profile_sequences} sequences.",
        f"- {len(sw.cells)} cells, {secs / 60:.1f} min of cell time (training + evaluation, summed over cells), "
        f"{busy / 3600:.2f} h of machine time (cells that ran at the same time, in processes side by side, "
        "count once)"
        + ("; by device: " + ", ".join(f"{n} cells in {t / 3600:.2f} h on {k}" for k, (n, t) in devices.items())
           if len(devices) > 1 else "")
        + (f"; **{len(sw.missing)} of {len(sw.cells) + len(sw.missing)} cells are not trained yet** (`–` in the "
           "tables; a claim that reads one gives its verdict so far, on the finished cells, and a figure that needs "
           "one is not drawn). " + _left(sw, budget)
           if getattr(sw, "missing", None) else "."),
        *attempts_lines(sw.cells.values(), budget.attempts), *capped_lines(sw.cells, budget),
        *adopted_lines(sw.cells), "",
        "Every number is an adjusted loss: the method's `½(y_t − ŷ)²` minus that of ridge with the true σ, ± the "
        "paired SE. **Bayes** is the Bayes-optimal floor (posterior mean under the noise prior): no method can beat it "
        "on average.", "", "## The paper's claims, checked", "", _heavy_tails(table),
        claims_markdown(claims, cmd("table1"), sw.cells, _checked(out)),
        "## Table 1", "", f"Regenerate: `{cmd('table1')}` (also `table1.csv`).", "", table_markdown(table), "",
        "Gap to the Bayes floor (method − Bayes, paired):", "", table_markdown(table, gap=True), "", "## Figures", ""]
    caps = {"fig1": "adjusted loss against depth per noise setting", "fig2": "per-variance profiles",
            "fig3": "categorical noise, unseen σ included", "fig4": "P^l, Q^l of FULL-4 on categorical:1,3",
            "fig5": "read-out after each layer, spread over seeds", "fig7": "per-variance profiles of the read-outs"}
    for part, cap in caps.items():
        if (out / f"{part}.png").exists():
            lines += [f"**{part}**: {cap}. Regenerate: `{cmd(part)}`.", "", f"![{part}]({part}.png)", ""]
    if beyond_md:
        lines += ["## Beyond the paper", "", beyond_md]
    if (out / "convergence.json").exists():
        from numerics.reproduce import convergence

        res = read_json(out / "convergence.json")
        why = [training_reason(sw.cells[n], e) for n, e in res["cells"].items() if not e["holds"] and n in sw.cells]
        lines += ["## Convergence", "", f"Regenerate: `python -m numerics.cli reproduce --budget {budget.name} "
                  f"--out {out} --convergence`.", "", convergence.markdown(res)] + [f"- **no**: {w}" for w in why]
    return "\n".join(lines) + "\n"
