r"""The linear-attention family against the paper's layer: every member at depths 1-7 beside DIAG
and FULL, with ConstRR, AdaRR, TunedRR and the Bayes floor (docs/family.md).

Each cell (model, depth, noise) trains with :func:`numerics.train.rundir.run` into
``runs/family/<cell>/`` (a checkpoint per chunk: an interrupted cell resumes) and is then evaluated
on its own: the mean adjusted loss on ``--sequences`` fresh float64 sequences, paired with the
oracle, with the tail check of every cell (:func:`numerics.evaluate.losses.tail_stats`).  The
evaluation sequences are the same for every cell of a noise setting (key ``--eval-seed``), so two
models' losses are paired too.  A finished cell is ``OUT/<cell>/model.npz`` and
``OUT/<cell>/metrics.json``; a cell with its ``metrics.json`` is skipped, so rerunning the command
resumes the grid cell by cell.  ``OUT/baselines-<noise>.json`` holds the baselines
(:func:`numerics.baselines.table`), ``OUT/table.md`` (every cell, the baselines, each model's
best depth and its best at a matched parameter count) and ``OUT/family.png`` (loss against depth and
against parameters) are rewritten after every cell and at the end of a run.
``--table-only`` rewrites those two from the finished cells and exits; ``--explain CELL ...``
prints a finished cell's largest per-sequence losses with the spectra of their contexts (where a
cell that fails the tail check fails) and exits.

    nice -n 10 .venv/bin/python benchmarks/family_grid.py --depths 1 2 3 --steps 300 --batch 256

Cells run depth by depth (every model and noise setting at depth 1, then depth 2, ...).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from numerics import models  # noqa: E402
from numerics.baselines import table as baseline_table  # noqa: E402
from numerics.baselines.scoring import batches, oracle_predict, per_sequence_loss  # noqa: E402
from numerics.evaluate.losses import FAIL_MAX, evaluate  # noqa: E402
from numerics.io import atomic_write_bytes, atomic_write_json, read_json  # noqa: E402
from numerics.models.family import MEMBERS, parameter_count  # noqa: E402
from numerics.models.family_io import load_any  # noqa: E402
from numerics.models.forward import predict_fast  # noqa: E402
from numerics.train.config import TrainConfig  # noqa: E402
from numerics.train.loop import clear_caches  # noqa: E402
from numerics.train.rundir import run as run_dir  # noqa: E402

MODELS = ("full", "diag", *MEMBERS)
D = 10  # the grid's dimension: TrainConfig's default, and the evaluation's
NOISES = ("uniform:5", "categorical:1,3")
BASELINES = ("ConstRR", "AdaRR", "TunedRR", "Bayes")
#: The parameter budgets of the matched comparison: FULL's numbers at these depths, a model
#: within :data:`OVER` of one counting as matched (RetNet and Mamba-2 carry 1 and d + 2 numbers
#: per layer more than FULL).
BUDGET_DEPTHS = (1, 2, 4, 7)
OVER = 1.05


def tag(noise: str) -> str:
    return noise.replace(":", "").replace(",", "_")


def cell_name(model: str, layers: int, noise: str) -> str:
    return f"{model}-{layers}-{tag(noise)}"


def predictor(path: Path):  # noqa: ANN201
    """``(batch, spectra) ↦ {"model": ŷ}`` of the saved model at ``path``, in float64, by its kind's
    own pass."""
    saved = load_any(path)
    params = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), saved.params)
    fwd = saved.kind.forward if saved.kind.own_forward else predict_fast
    f = jax.jit(lambda p, X, y, xq: fwd(p, X, y, xq))
    return lambda b, sp: {"model": f(params, b.X, b.y, b.x_query)}


def baselines(out: Path, noise: str, sequences: int, seed: int) -> dict:
    path = out / f"baselines-{tag(noise)}.json"
    if not path.exists():
        res = baseline_table(noise, n=20, d=D, sequences=sequences, seed=seed, methods=BASELINES)
        atomic_write_json(
            path,
            {
                "noise": noise,
                "sequences": sequences,
                "seed": seed,
                "methods": {m: {"loss": res[m]["loss"], "se": res[m]["se"]} for m in BASELINES},
            },
        )
    return read_json(path)


def run_cell(args: argparse.Namespace, model: str, layers: int, noise: str) -> dict:
    name = cell_name(model, layers, noise)
    cfg = TrainConfig(
        model=model,
        layers=layers,
        noise=noise,
        steps=args.steps,
        batch=args.batch,
        seeds=args.seeds,
        seed=args.seed,
        lr=args.lr,
        eval_sequences=args.train_eval,
        select_sequences=args.train_eval,
    )
    rundir = Path(args.runs) / name
    t0 = time.perf_counter()
    train = run_dir(cfg, rundir, progress=False, baselines=False)
    seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    res = evaluate(
        predictor(rundir / "model.npz"),
        noise,
        args.sequences,
        20,
        D,
        jax.random.PRNGKey(args.eval_seed),
        tails=True,
    )["model"]
    cell = Path(args.out) / name
    cell.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(cell / "model.npz", (rundir / "model.npz").read_bytes())
    metrics = {
        "model": model,
        "layers": layers,
        "noise": noise,
        "adjusted_loss": res["loss"],
        "se": res["se"],
        "loss": res["raw"],
        "sequences": res["count"],
        "tail": res["tail"],
        "recipe": {
            "steps": args.steps,
            "batch": args.batch,
            "seeds": args.seeds,
            "seed": args.seed,
            "lr": cfg.peak_lr,
        },
        "train_seconds": seconds,
        "eval_seconds": time.perf_counter() - t1,
        "train_steps_per_s": train.get("steps_per_s"),
        "rollbacks": len(train.get("rollbacks", [])),
        "eval_seed": args.eval_seed,
    }
    atomic_write_json(cell / "metrics.json", metrics)
    return metrics


def explain(out: Path, name: str, sequences: int, eval_seed: int, top: int = 5) -> list[str]:
    """Lines on the tail of the finished cell ``name``: its evaluation sequences of largest adjusted
    loss, each with its noise level, the largest eigenvalue ``μ_max`` of its context's ``XᵀX`` and
    that eigenvalue's rank among the ``sequences`` contexts.  The sequences are the cell's own
    (``eval_seed``); the mean of the losses recomputed here must be the cell's."""
    m = read_json(out / name / "metrics.json")
    predict = predictor(out / name / "model.npz")
    adj, mu, sigma = [], [], []
    for batch, sp in batches(jax.random.PRNGKey(eval_seed), m["noise"], sequences, 20, 10):
        lo = per_sequence_loss(oracle_predict(sp, batch.sigma), batch.y_query)
        adj.append(np.asarray(per_sequence_loss(predict(batch, sp)["model"], batch.y_query) - lo))
        mu.append(np.asarray(sp.mu[:, -1]))
        sigma.append(np.asarray(batch.sigma))
    adj, mu, sigma = (np.concatenate(a) for a in (adj, mu, sigma))
    if not np.isclose(adj.mean(), m["adjusted_loss"], rtol=1e-9):
        raise SystemExit(f"{name}: recomputed mean {adj.mean():.6g} is not the cell's")
    rank = np.argsort(np.argsort(mu))  # 0 for the smallest μ_max
    lines = [
        f"{name}: {int(np.sum(adj > FAIL_MAX))} of {len(adj)} sequences above {FAIL_MAX:g}; "
        f"μ_max median {np.median(mu):.1f}, largest {mu.max():.1f}"
    ]
    for i in np.argsort(adj)[::-1][:top]:
        lines.append(
            f"  adjusted {adj[i]:.3g}: σ {sigma[i]:.2f}, μ_max {mu[i]:.1f} "
            f"(rank {len(mu) - rank[i]} from the top)"
        )
    return lines


def collect(out: Path) -> dict[tuple[str, int, str], dict]:
    """The finished cells under ``out`` by ``(model, layers, noise)``, their numbers as computed,
    each with ``parameters``: how many numbers its model trains (:func:`per_layer` × depth)."""
    cells = {}
    for p in sorted(out.glob("*/metrics.json")):
        m = restored(read_json(p))
        m["parameters"] = per_layer(m["model"]) * m["layers"]
        cells[(m["model"], m["layers"], m["noise"])] = m
    return cells


def per_layer(model: str) -> int:
    """The numbers one layer of ``model`` trains at the grid's ``d`` with one head: a member's
    (:func:`numerics.models.family.parameter_count`), or those FULL's and DIAG's start draws
    (DIAG: four, though its saved file holds them as FULL's two matrices)."""
    if model in MEMBERS:
        return parameter_count(model, D)
    start = models.init(model, jax.random.PRNGKey(0), layers=1, d=D, heads=1, scale=0.0)
    return int(sum(np.size(a) for a in jax.tree_util.tree_leaves(start)))


def restored(m: dict) -> dict:
    """A cell's metrics with each number that strict JSON wrote as ``null`` (``inf`` or ``nan``:
    an exploding cell's SE) back as the float its ``null_reasons`` names."""
    for path, why in m.pop("null_reasons", {}).items():
        *parents, key = path.split(".")
        if "[" not in path:  # the cells' null numbers sit in objects (se, tail.se), not in lists
            node = m
            for k in parents:
                node = node[k]
            node[key] = float(why)
    return m


def write_table(
    out: Path, cells: dict, depths: list[int], noises: list[str], models: list[str]
) -> None:
    atomic_write_bytes(out / "table.md", table_text(out, cells, depths, noises, models).encode())


def num(x: float) -> str:
    """A table entry's number: four decimals, or three significant digits where a failing cell's
    mean or SE is past 10⁴ (an exploding tail can reach 10⁴⁶)."""
    return f"{x:.4f}" if abs(x) < 1e4 else f"{x:.3g}"


def table_text(
    out: Path, cells: dict, depths: list[int], noises: list[str], models: list[str]
) -> str:
    """``table.md``: a table of every cell per noise setting, the baselines, and the best depth of
    each model."""
    lines = [
        "# The linear-attention family: adjusted loss (mean ± SE)",
        "",
        "Written by `benchmarks/family_grid.py` from `results/family/*/metrics.json` "
        "(100 000 float64 sequences per cell, paired with the oracle); `-` is a cell not run "
        "yet, `!` marks a cell that fails the tail check.  Each cell's recipe is in its "
        "`metrics.json` (`recipe`).",
        "",
    ]
    for noise in noises:
        lines += [
            f"## {noise}",
            "",
            "| model | " + " | ".join(f"L={l}" for l in depths) + " |",
            "|---|" + "---|" * len(depths),
        ]
        for m in models:
            row = []
            for l in depths:
                c = cells.get((m, l, noise))
                mark = " !" if c is not None and c["tail"]["failed"] else ""
                entry = None if c is None else f"{num(c['adjusted_loss'])} ± {num(c['se'])}{mark}"
                row.append(entry or "-")
            lines.append(f"| {m} | " + " | ".join(row) + " |")
        bpath = out / f"baselines-{tag(noise)}.json"
        if bpath.exists():
            b = read_json(bpath)["methods"]
            shown = ", ".join(f"{k} {b[k]['loss']:.4f} ± {b[k]['se']:.4f}" for k in BASELINES)
            lines += ["", f"Baselines (any depth): {shown}."]
        lines.append("")
    lines += [
        "## The best depth of each model",
        "",
        "Each model's lowest adjusted loss over the depths whose cell passes the tail check, and "
        "its ratio to ConstRR (ridge with one penalty for every sequence, tuned to the noise "
        "distribution) and to TunedRR (ridge whose penalty follows the noise level it estimates "
        "from the context, tuned).  A model below ConstRR adapts its prediction to the noise level "
        "of the context.",
        "",
        "| noise | model | L | adjusted loss | ÷ ConstRR | ÷ TunedRR |",
        "|---|---|--:|--:|--:|--:|",
        *best_rows(out, cells, noises, models),
        "",
        "## At a matched parameter count",
        "",
        "Each model's lowest adjusted loss over its passing cells that hold at most the numbers of "
        f"FULL at depth L (a cell up to {OVER - 1:.0%} over counts), with the depth that reaches "
        "it; `-` where one layer already holds more.",
        "",
    ]
    for noise in noises:
        lines += [f"### {noise}", "", *matched_rows(cells, noise, models), ""]
    return "\n".join(lines)


def budgets() -> list[int]:
    """FULL's numbers at :data:`BUDGET_DEPTHS`."""
    return [per_layer("full") * l for l in BUDGET_DEPTHS]


def matched_rows(cells: dict, noise: str, models: list[str]) -> list[str]:
    """The matched-count table of one noise setting: a row per model, a column per budget."""
    caps = budgets()
    rows = [
        "| model | " + " | ".join(f"≤ FULL-{l} ({b})" for l, b in zip(BUDGET_DEPTHS, caps)) + " |",
        "|---|" + "--:|" * len(caps),
    ]
    for m in models:
        entries = []
        for cap in caps:
            ok = [
                c
                for (k, _, z), c in cells.items()
                if k == m
                and z == noise
                and not c["tail"]["failed"]
                and c["parameters"] <= OVER * cap
            ]
            best = min(ok, key=lambda c: c["adjusted_loss"]) if ok else None
            entries.append(f"{best['adjusted_loss']:.4f} (L={best['layers']})" if best else "-")
        rows.append(f"| {m} | " + " | ".join(entries) + " |")
    return rows


def best_rows(out: Path, cells: dict, noises: list[str], models: list[str]) -> list[str]:
    """The rows of ``table.md``'s best-depth table (``docs/experiments/family.md`` quotes them):
    per noise setting and model, the passing cell of lowest adjusted loss."""
    rows = []
    for noise in noises:
        bpath = out / f"baselines-{tag(noise)}.json"
        base = read_json(bpath)["methods"] if bpath.exists() else None
        for m in models:
            ok = [
                c
                for (k, _, z), c in cells.items()
                if k == m and z == noise and not c["tail"]["failed"]
            ]
            if not ok:
                continue
            c = min(ok, key=lambda c: c["adjusted_loss"])
            ratio = (
                [f"{c['adjusted_loss'] / base[b]['loss']:.2f}" for b in ("ConstRR", "TunedRR")]
                if base
                else ["-", "-"]
            )
            rows.append(
                f"| {noise} | {m} | {c['layers']} | {c['adjusted_loss']:.4f} ± {c['se']:.4f} | "
                + " | ".join(ratio)
                + " |"
            )
    return rows


def write_figure(
    out: Path, cells: dict, depths: list[int], noises: list[str], models: list[str]
) -> None:
    """``family.png``: adjusted loss against depth (top) and against the model's parameter count
    (bottom), a panel per noise setting, a line per model, the baselines as horizontal lines."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(noises), figsize=(5.5 * len(noises), 8), squeeze=False)
    for col, noise in enumerate(noises):
        for row, by_depth in enumerate((True, False)):
            ax = axes[row][col]
            panel(ax, out, cells, depths, noise, models, by_depth)
            if by_depth:
                ax.set_xlim(min(depths) - 0.3, max(depths) + 0.3)
                ax.set_xticks(depths)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out / "family.png", buf.getvalue())


def panel(
    ax, out: Path, cells: dict, depths: list[int], noise: str, models: list[str], by_depth: bool
) -> None:  # noqa: ANN001
    """One panel of ``family.png``: each model's passing cells against depth or parameter count."""
    # a cell that fails the tail check is an x on the top edge, off the model's line: its mean
    # is carried by a few sequences and would stretch the axis past every other cell
    passing = [
        c["adjusted_loss"]
        for c in cells.values()
        if c["noise"] == noise and not c["tail"]["failed"]
    ]
    top = 1.5 * max(passing, default=1.0)
    for m in models:
        here = [cells[(m, l, noise)] for l in depths if (m, l, noise) in cells]

        def x(c: dict, shift: float = 0.0) -> float:
            # two failing cells at one place are set apart a little
            return c["layers"] + shift if by_depth else c["parameters"] * (1 + shift)

        ok = [(x(c), c["adjusted_loss"]) for c in here if not c["tail"]["failed"]]
        line = ax.plot(*zip(*ok), "-o", ms=3, label=m) if ok else ax.plot([], [], label=m)
        bad = [c for c in here if c["tail"]["failed"]]
        if bad:
            shift = 0.05 * (models.index(m) - (len(models) - 1) / 2)
            ax.plot(
                [x(c, shift) for c in bad],
                [top] * len(bad),
                "x",
                ms=7,
                mew=2,
                color=line[0].get_color(),
            )
    bpath = out / f"baselines-{tag(noise)}.json"
    if bpath.exists():
        for name, style in zip(BASELINES, (":", "--", "-.", "-")):
            loss = read_json(bpath)["methods"][name]["loss"]
            ax.axhline(loss, color="gray", ls=style, lw=1, label=name)
    ax.plot([], [], "kx", label="fails the tail check")
    ax.set(
        xlabel="layers L" if by_depth else "parameters (numbers the model trains)",
        ylabel="adjusted loss",
        title=noise,
        yscale="log",
        xscale="linear" if by_depth else "log",
    )
    ax.set_ylim(top=top * 1.15)
    if by_depth:  # the lower panels share its colours
        ax.legend(fontsize=6, ncol=2)


def shown(done: dict, args: argparse.Namespace) -> tuple[list[int], list[str], list[str]]:
    """The table's depths, noise settings and models: the ones asked for and the ones finished, so
    a run of a few depths or models keeps the rest of the grid in the table."""
    depths = sorted({*args.depths, *(l for _, l, _ in done)})
    noises = [*args.noise, *sorted({z for *_, z in done} - set(args.noise))]
    models = [m for m in MODELS if m in args.models or any(k[0] == m for k in done)]
    return depths, noises, models


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument("--depths", nargs="+", type=int, default=list(range(1, 8)))
    p.add_argument("--noise", nargs="+", default=list(NOISES))
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--lr", type=float, default=None, help="peak learning rate (default: each kind's own)"
    )
    p.add_argument(
        "--sequences", type=int, default=100_000, help="float64 evaluation sequences per cell"
    )
    p.add_argument(
        "--train-eval",
        type=int,
        default=4096,
        help="sequences of the run's own (float32) evaluation",
    )
    p.add_argument("--eval-seed", type=int, default=2024)
    p.add_argument("--out", default="results/family")
    p.add_argument("--runs", default="runs/family")
    p.add_argument(
        "--clean-runs",
        action="store_true",
        help="delete a cell's run directory once it is finished",
    )
    p.add_argument(
        "--table-only",
        action="store_true",
        help="rewrite table.md and family.png from the finished cells and exit",
    )
    p.add_argument(
        "--explain",
        nargs="+",
        metavar="CELL",
        help="print the largest per-sequence losses of these finished cells (e.g. "
        "causal-5-uniform5) with their contexts' spectra, and exit",
    )
    args = p.parse_args(argv)
    if args.explain:
        for name in args.explain:
            if not (Path(args.out) / name / "metrics.json").exists():
                p.error(f"--explain: no finished cell {name!r} in {args.out}")
        for name in args.explain:
            print("\n".join(explain(Path(args.out), name, args.sequences, args.eval_seed)))
        return 0
    if args.sequences < 100_000:
        print(
            f"note: {args.sequences} evaluation sequences (a result cell needs 100000)",
            file=sys.stderr,
        )
    out = Path(args.out)
    if args.table_only:
        done = collect(out)
        if not done:
            p.error(f"--table-only: no finished cell in {args.out}")
        write_table(out, done, *shown(done, args))
        write_figure(out, done, *shown(done, args))
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for noise in args.noise:
        baselines(out, noise, args.sequences, 0)
    done = collect(out)
    for layers in args.depths:
        for noise in args.noise:
            for model in args.models:
                if (model, layers, noise) in done:
                    continue
                t0 = time.perf_counter()
                m = run_cell(args, model, layers, noise)
                tail = m["tail"]["failed"]
                print(
                    f"{cell_name(model, layers, noise)}: adjusted {m['adjusted_loss']:.5f} "
                    f"± {m['se']:.5f} (tail {'fails: ' + tail if tail else 'passes'}), "
                    f"{time.perf_counter() - t0:.0f} s",
                    flush=True,
                )
                clear_caches()  # else a long grid exhausts XLA's code memory
                if args.clean_runs:
                    shutil.rmtree(
                        Path(args.runs) / cell_name(model, layers, noise), ignore_errors=True
                    )
                done = collect(out)
                write_table(out, done, *shown(done, args))
                write_figure(out, done, *shown(done, args))
    write_table(out, done, *shown(done, args))  # a finished grid rewrites them with this code
    write_figure(out, done, *shown(done, args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
