"""FULL from its own random start: recipes, the climb away from the DIAG start, FULL-4's weights.
docs/experiments/full-own-start.md reports what each command writes.

    python benchmarks/full_own_start.py launch NAME [NAME ...]  # lintf train, resumable
    python benchmarks/full_own_start.py probe --variants full:1e-4 diag:1e-4 ...
    python benchmarks/full_own_start.py kick --scales 0.002 0.005 0.01
    python benchmarks/full_own_start.py weights L4-c13-lr1e-3-b512
    python benchmarks/full_own_start.py report

``launch`` trains each named recipe of :data:`RECIPES` into ``runs/full-own-start/NAME`` (the same
command resumes it).  ``probe`` starts FULL-4 (or DIAG-4) at ``categorical:1,3`` from the paper
grid's DIAG-4 cell with the sweep's stage (3000 steps of batch 2048) and evaluates it every
``--every`` steps on the same held-out sequences; a variant is ``MODEL:LR[:KEY=VALUE...]`` with
keys ``warmup``, ``stop``, ``every``.  ``kick`` moves that cell along random directions off and
on DIAG's pattern.  ``weights`` reads a recipe's FULL-4 model; ``report`` the finished runs.
Logs go to ``benchmarks/logs/full-own-start/``, figures to ``docs/experiments/full-own-start/``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from numerics.io import atomic_write_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.full_own_start_pattern import (  # noqa: E402  # noqa: E402
    HELD_OUT,
    gradient,
    held_out,
    kick,
    off_diag_share,
    weights,
)

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "runs" / "full-own-start"
LOGS = ROOT / "benchmarks" / "logs" / "full-own-start"
FIGS = ROOT / "docs" / "experiments" / "full-own-start"
CELLS = ROOT / "results" / "paper" / "models"
DIAG4 = CELLS / "diag-L4-categorical1_3" / "model.npz"
LINTF = str(ROOT / ".venv" / "bin" / "lintf")
C13, C135 = "categorical:1,3", "categorical:1,3,5"
#: The paper's printed Table 1 values the study aims at (Vladymyrov et al., 2024).
PRINTED = {
    ("full", 3, C13): 0.076,
    ("full", 4, C13): 0.032,
    ("diag", 3, C13): 0.098,
    ("diag", 4, C13): 0.043,
    ("full", 5, C13): 0.016,
    ("diag", 5, C13): 0.026,
    ("full", 4, C135): 0.061,
    ("diag", 4, C135): 0.062,
}
#: FULL from its own random start (no DIAG phase), two seeds (master seed 0 unless ``seed`` says),
#: 100 000 evaluation sequences.
RECIPES = {
    "L4-c13-lr1e-3-b512": dict(layers=4, noise=C13, lr=1e-3, batch=512, steps=16000),
    "L4-c13-lr3e-3-b512": dict(layers=4, noise=C13, lr=3e-3, batch=512, steps=16000),
    "L4-c13-lr1e-4-b512-s8000": dict(layers=4, noise=C13, lr=1e-4, batch=512, steps=8000),
    "L4-c13-lr1e-3-b2048": dict(layers=4, noise=C13, lr=1e-3, batch=2048, steps=4000),
    "L4-c13-lr1e-3-b512-s8000": dict(layers=4, noise=C13, lr=1e-3, batch=512, steps=8000),
    "L4-c13-lr1e-3-b512-s32000": dict(layers=4, noise=C13, lr=1e-3, batch=512, steps=32000),
    "L3-c13-lr1e-3-b512": dict(layers=3, noise=C13, lr=1e-3, batch=512, steps=16000),
    "L3-c13-lr1e-3-b512-seed1": dict(layers=3, noise=C13, lr=1e-3, batch=512, steps=16000, seed=1),
    "L4-c135-lr1e-3-b512": dict(layers=4, noise=C135, lr=1e-3, batch=512, steps=16000),
    "L5-c13-lr1e-3-b512": dict(layers=5, noise=C13, lr=1e-3, batch=512, steps=16000),
}


#: The runs whose model the report keeps under ``docs/experiments/full-own-start/models/``.
KEEP = (
    "L4-c13-lr1e-3-b512",
    "L4-c13-lr1e-3-b512-s32000",
    "L3-c13-lr1e-3-b512",
    "L3-c13-lr1e-3-b512-seed1",
    "L4-c135-lr1e-3-b512",
)


#: The probe's variants in the report's table, in its order.
PROBE_ROWS = (
    "diag:1e-4",
    "full:1e-5",
    "full:1e-4",
    "full:1e-4:stop=3000:every=100",
    "full:1e-4:warmup=1000",
    "diag:1e-3",
    "full:1e-3",
)


def launch(names: list[str]) -> None:
    """``lintf train`` for each recipe in turn, niced, on one XLA device, its output in a log."""
    env = {**os.environ, "LINTF_HOST_DEVICES": "1"}
    RUNS.mkdir(parents=True, exist_ok=True)
    for name in names:
        r = RECIPES[name]
        cmd = [
            LINTF,
            "train",
            "--model",
            "full",
            "--layers",
            str(r["layers"]),
            "--noise",
            r["noise"],
            "--diag-steps",
            "0",
            "--lr",
            str(r["lr"]),
            "--batch",
            str(r["batch"]),
            "--steps",
            str(r["steps"]),
            "--seeds",
            "2",
            "--seed",
            str(r.get("seed", 0)),
            "--eval-sequences",
            "100000",
            "--json",
            "--out",
            str(RUNS / name),
        ]
        with open(RUNS / f"{name}.log", "a") as log:
            subprocess.run(["nice", "-n", "10", *cmd], env=env, stdout=log, stderr=log, check=True)


def probe(every: int, stop: int, variants: list[str]) -> None:
    """FULL-4 / DIAG-4 from the DIAG-4 cell, held out every ``every`` steps (``probe.json``)."""
    import jax

    from numerics.models.kinds import kind_of
    from numerics.train.config import TrainConfig
    from numerics.train.loop import init_state, train
    from numerics.train.step import lr_at

    path = LOGS / "probe.json"
    out = json.loads(path.read_text()) if path.exists() else {}
    for v in (v for v in variants if v not in out):
        model, lr, *rest = v.split(":")
        extra = {k: int(x) for k, x in (kv.split("=") for kv in rest)}
        until, chunk = extra.pop("stop", stop), extra.pop("every", every)
        cfg = TrainConfig(
            model=model,
            layers=4,
            noise=C13,
            seeds=1,
            steps=3000,
            batch=2048,
            lr=float(lr),
            diag_steps=0 if model == "full" else None,
            chunk=chunk,
            warm_start=str(DIAG4),
            **extra,
        )
        rows: list[dict] = []
        first: list[np.ndarray] = []

        def record(state, res) -> bool:  # noqa: ANN001
            one = jax.tree_util.tree_map(lambda a: a[0], state.params)
            P, Q = (np.asarray(a)[:, 0] for a in kind_of(model).universal(one, cfg.d))
            first.extend([] if first else [P, Q])
            drift = np.sqrt(np.sum((P - first[0]) ** 2) + np.sum((Q - first[1]) ** 2))
            rows.append(
                {
                    "step": int(state.step),
                    "lr": float(lr_at(cfg, state.step)),
                    "held_out": held_out(cfg, state.params),
                    "off_P": [off_diag_share(p) for p in P],
                    "off_Q": [off_diag_share(q) for q in Q],
                    "drift": float(drift),
                }
            )
            print(v, rows[-1]["step"], f"{rows[-1]['held_out']:.5f}", flush=True)
            return int(state.step) >= until

        t0 = time.time()
        record(init_state(cfg), None)
        train(cfg, on_chunk=record, stop_at=until)
        out[v] = {
            "rows": rows,
            "seconds": round(time.time() - t0, 1),
            "warmup_steps": cfg.warmup_steps,
        }
        LOGS.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, out)


def diag_cell(layers: int, noise: str) -> float:
    """The adjusted loss of the paper grid's DIAG cell of this depth and setting."""
    name = f"diag-L{layers}-{noise.replace(':', '').replace(',', '_')}"
    return float(json.loads((CELLS / name / "metrics.json").read_text())["eval"]["loss"])


def summarise(name: str) -> dict:
    """A finished run: recipe, evaluation, and the best seed's training curve less the oracle."""
    run = RUNS / name
    cfg = json.loads((run / "config.json").read_text())
    met = json.loads((run / "metrics.json").read_text())
    seconds = json.loads(str(np.load(run / "checkpoint.npz")["meta"])).get("seconds")
    L, noise, loss = cfg["layers"], cfg["noise"], met["adjusted_loss"]
    target = PRINTED.get(("full", L, noise))
    rows = np.asarray(met["curve"]["rows"], float)
    return {
        "name": name,
        "layers": L,
        "noise": noise,
        "lr": cfg["peak_lr"],
        "batch": cfg["batch"],
        "steps": cfg["steps"],
        "seeds": cfg["seeds"],
        "warmup": cfg["warmup_steps"],
        "adjusted_loss": loss,
        "se": met["se"],
        "per_seed": met["eval_adjusted_per_seed"],
        "best_seed": met["best_seed"],
        "rollbacks": len(met["rollbacks"]),
        "seconds": seconds,
        "steps_per_s": met["steps_per_s"],
        "printed_full": target,
        "printed_diag": PRINTED.get(("diag", L, noise)),
        "diag_cell": diag_cell(L, noise),
        "within_printed": None if target is None else bool(loss <= 1.05 * target + 0.003),
        "curve_step": rows[:, 0].astype(int).tolist(),
        "curve_adjusted": (rows[:, 1 + met["best_seed"]] - met["oracle_loss"]).tolist(),
    }


def plot_curves(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, (L, noise) in zip(axes, ((4, C13), (3, C13))):
        for r in (r for r in runs if (r["layers"], r["noise"]) == (L, noise)):
            c, k = np.asarray(r["curve_adjusted"]), 25
            # a running median over 25 chunks: one chunk's mean carries a rare sequence's huge loss
            med = [np.median(c[max(0, i - k + 1) : i + 1]) for i in range(len(c))]
            seen = np.asarray(r["curve_step"]) * r["batch"] / 1e6
            ax.plot(seen, med, label=f"{r['name']}: {r['adjusted_loss']:.4f}")
        for y, ls, lab in (
            (PRINTED[("full", L, noise)], "--", "paper FULL"),
            (PRINTED[("diag", L, noise)], ":", "paper DIAG"),
            (diag_cell(L, noise), "-.", "lintf DIAG cell"),
        ):
            ax.axhline(y, color="k", ls=ls, lw=0.8, label=f"{lab} {y:.4f}")
        ax.set(
            yscale="log",
            ylim=(0.02, 5),
            title=f"FULL-{L}, {noise}, own start",
            xlabel="training sequences (millions)",
        )
        ax.legend(fontsize=7)
    axes[0].set_ylabel("training loss − oracle (running median)")
    probe = json.loads((LOGS / "probe.json").read_text()) if (LOGS / "probe.json").exists() else {}
    for v, r in probe.items():
        rows = [x for x in r["rows"] if x["step"] <= 600]
        axes[2].plot(
            [x["step"] for x in rows],
            [x["held_out"] for x in rows],
            label=v.replace(":", " lr ", 1),
        )
    axes[2].set(
        title=f"from the DIAG-4 cell, held out ({HELD_OUT} sequences)",
        xlabel="step (batch 2048)",
        ylabel="adjusted loss",
    )
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def recipe_row(r: dict) -> str:
    """A row of the report's recipe table, from an entry of ``runs.json``."""
    seeds = ", ".join(f"{x:.4f}" for x in r["per_seed"])
    return (
        f"| `{r['name']}` | {r['layers']} | `{r['noise']}` | {r['lr']:g} | {r['batch']} | "
        f"{r['steps']} | {r['steps'] * r['batch'] / 1e6:.1f} M | {r['adjusted_loss']:.4f} ± "
        f"{r['se']:.4f} | {seeds} | {1.05 * r['printed_full'] + 0.003:.4f} | "
        f"{'yes' if r['within_printed'] else 'no'} | {r['diag_cell']:.4f} | "
        f"{r['seconds'] / 60:.0f} min |"
    )


def probe_row(v: str, r: dict) -> str:
    """A row of the report's probe table, from an entry of ``probe.json``."""
    at = {x["step"]: x for x in r["rows"]}
    mean = np.mean([x["held_out"] for x in r["rows"] if 300 <= x["step"] <= 600])
    end = f"{r['rows'][-1]['held_out']:.5f}" if r["rows"][-1]["step"] == 3000 else "–"
    return (
        f"| `{v}` | "
        + " | ".join(f"{at[k]['held_out']:.4f}" for k in (0, 100, 200, 300, 600))
        + f" | {mean:.4f} ({100 * (mean / at[0]['held_out'] - 1):+.0f} %) | {end} | "
        f"{at[600]['off_P'][0]:.3f} | {at[600]['drift']:.3f} |"
    )


def report() -> None:
    """``runs.json``, ``curves.png``, the kept models, and the Markdown rows of the tables."""
    FIGS.mkdir(parents=True, exist_ok=True)
    runs = [summarise(n) for n in RECIPES if (RUNS / n / "metrics.json").exists()]
    LOGS.mkdir(parents=True, exist_ok=True)
    atomic_write_json(
        LOGS / "runs.json",
        [{k: v for k, v in r.items() if not k.startswith("curve")} for r in runs],
    )
    plot_curves(runs, FIGS / "curves.png")
    (FIGS / "models").mkdir(exist_ok=True)
    for r in (r for r in runs if r["name"] in KEEP):
        if not (FIGS / "models" / f"{r['name']}.npz").exists():
            shutil.copyfile(RUNS / r["name"] / "model.npz", FIGS / "models" / f"{r['name']}.npz")
    print("\n".join(recipe_row(r) for r in json.loads((LOGS / "runs.json").read_text())))
    probe = json.loads((LOGS / "probe.json").read_text())
    print("\n".join(probe_row(v, probe[v]) for v in PROBE_ROWS if v in probe))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("launch").add_argument("names", nargs="+", choices=list(RECIPES), metavar="NAME")
    pr = sub.add_parser("probe")
    pr.add_argument("--every", type=int, default=25)
    pr.add_argument("--stop", type=int, default=600)
    pr.add_argument(
        "--variants", nargs="+", default=["full:1e-4", "full:1e-3", "diag:1e-4", "diag:1e-3"]
    )
    ki = sub.add_parser("kick")
    ki.add_argument("--scales", type=float, nargs="+", default=[0.002, 0.005, 0.01, 0.02, 0.04])
    ki.add_argument("--directions", type=int, default=3)
    sub.add_parser("gradient").add_argument("--batches", type=int, default=32)
    we = sub.add_parser("weights")
    we.add_argument("run", choices=list(RECIPES), help="the recipe whose model to read and keep")
    we.add_argument("--sequences", type=int, default=100_000)
    sub.add_parser("report")
    a = ap.parse_args()
    if a.cmd == "launch":
        launch(a.names)
    elif a.cmd == "probe":
        probe(a.every, a.stop, a.variants)
    elif a.cmd == "kick":
        atomic_write_json(LOGS / "kick.json", kick(DIAG4, a.scales, a.directions))
    elif a.cmd == "gradient":
        atomic_write_json(LOGS / "gradient.json", gradient(DIAG4, a.batches))
    elif a.cmd == "weights":
        keep = FIGS / "models" / f"{a.run}.npz"
        keep.parent.mkdir(parents=True, exist_ok=True)
        if not keep.exists():
            shutil.copyfile(RUNS / a.run / "model.npz", keep)
        out = weights(keep, DIAG4, a.sequences, FIGS / "weights.png", LINTF)
        atomic_write_json(LOGS / "weights.json", out)
    else:
        report()


if __name__ == "__main__":
    main()
