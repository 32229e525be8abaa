"""FULL from its own random start: the recipes, the climb away from the DIAG start, and FULL-4's weights.
docs/experiments/full-own-start.md reports what it writes.

    python benchmarks/full_own_start.py launch NAME [NAME ...]   # train recipes (resumable) into runs/full-own-start
    python benchmarks/full_own_start.py probe                    # the first steps from the DIAG cell, held out
    python benchmarks/full_own_start.py report                   # tables, curves and weights from the run folders

``launch`` runs ``lintf train`` for each named recipe of :data:`RECIPES` into ``runs/full-own-start/NAME``; the same
command again resumes it.  ``probe`` starts FULL-4 (and DIAG-4, the control) at ``categorical:1,3`` from the
paper grid's DIAG-4 cell with the sweep's stage (3000 steps of batch 2048, its warm-up) and evaluates every
``--every`` steps on the same held-out sequences.  ``report`` writes ``benchmarks/logs/full-own-start/*.json`` and
the figures under ``docs/experiments/full-own-start/``.
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

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "runs" / "full-own-start"
LOGS = ROOT / "benchmarks" / "logs" / "full-own-start"
FIGS = ROOT / "docs" / "experiments" / "full-own-start"
CELLS = ROOT / "results" / "paper" / "models"
C13 = "categorical:1,3"
C135 = "categorical:1,3,5"
#: The paper's printed FULL and DIAG values of Table 1 that the study aims at.
PRINTED = {("full", 3, C13): 0.076, ("full", 4, C13): 0.032, ("full", 5, C13): 0.016,
           ("diag", 3, C13): 0.098, ("diag", 4, C13): 0.043, ("diag", 5, C13): 0.026,
           ("full", 3, C135): 0.113, ("full", 4, C135): 0.061, ("diag", 3, C135): 0.119,
           ("diag", 4, C135): 0.062}
#: Each recipe: FULL from its own random start (no DIAG phase), two seeds, 100 000 evaluation sequences.
RECIPES = {
    "L4-c13-lr1e-3-b512": dict(layers=4, noise=C13, lr=1e-3, batch=512, steps=16000),
    "L4-c13-lr3e-3-b512": dict(layers=4, noise=C13, lr=3e-3, batch=512, steps=16000),
    "L4-c13-lr1e-4-b512": dict(layers=4, noise=C13, lr=1e-4, batch=512, steps=16000),
    "L4-c13-lr1e-3-b2048": dict(layers=4, noise=C13, lr=1e-3, batch=2048, steps=4000),
    "L4-c13-lr3e-3-b2048": dict(layers=4, noise=C13, lr=3e-3, batch=2048, steps=4000),
    "L4-c13-lr1e-3-b512-s8000": dict(layers=4, noise=C13, lr=1e-3, batch=512, steps=8000),
    "L3-c13-lr1e-3-b512": dict(layers=3, noise=C13, lr=1e-3, batch=512, steps=16000),
    "L3-c135-lr1e-3-b512": dict(layers=3, noise=C135, lr=1e-3, batch=512, steps=16000),
    "L4-c135-lr1e-3-b512": dict(layers=4, noise=C135, lr=1e-3, batch=512, steps=16000),
}


def train_command(name: str) -> list[str]:
    r = RECIPES[name]
    return [str(ROOT / ".venv" / "bin" / "lintf"), "train", "--model", "full", "--layers", str(r["layers"]),
            "--noise", r["noise"], "--diag-steps", "0", "--lr", str(r["lr"]), "--batch", str(r["batch"]),
            "--steps", str(r["steps"]), "--seeds", "2", "--eval-sequences", "100000", "--json",
            "--out", str(RUNS / name)]


def launch(names: list[str]) -> None:
    env = {**os.environ, "LINTF_HOST_DEVICES": "1"}
    for name in names:
        if name not in RECIPES:
            raise SystemExit(f"recipe must be one of {', '.join(RECIPES)}, got {name!r}")
    for name in names:
        RUNS.mkdir(parents=True, exist_ok=True)
        with open(RUNS / f"{name}.log", "a") as log:
            subprocess.run(["nice", "-n", "10", *train_command(name)], env=env, stdout=log, stderr=log, check=True)


def off_diag_share(M: np.ndarray) -> float:
    """``‖M − D(M)‖_F / ‖M‖_F``, with ``D(M) = diag(p_x I_d, p_y)`` the projection of ``M`` on DIAG's pattern
    (``p_x`` the mean of the first ``d`` diagonal entries, ``p_y`` the last)."""
    rest = M - diag_part(M)
    return float(np.linalg.norm(rest) / np.linalg.norm(M))


def diag_part(M: np.ndarray) -> np.ndarray:
    d = M.shape[-1] - 1
    dia = np.diagonal(M, axis1=-2, axis2=-1)
    vec = np.concatenate([np.repeat(dia[..., :d].mean(-1, keepdims=True), d, axis=-1), dia[..., d:]], axis=-1)
    return vec[..., :, None] * np.eye(d + 1)


def probe(every: int, stop: int, variants: list[str]) -> None:
    """Held-out adjusted loss of FULL-4 / DIAG-4 started from the paper grid's DIAG-4 cell, every ``every`` steps."""
    import jax

    from numerics.models.kinds import kind_of
    from numerics.train import TrainConfig, adjusted_losses, init_state, train
    from numerics.train.step import lr_at

    start = CELLS / "diag-L4-categorical1_3" / "model.npz"
    path = LOGS / "probe.json"
    out = json.loads(path.read_text()) if path.exists() else {}
    for v in variants:
        model, lr, *rest = v.split(":")
        if v in out:
            continue
        extra = {k: (x if k == "y_step" else int(x)) for k, x in (kv.split("=") for kv in rest)}
        until, chunk = extra.pop("stop", stop), extra.pop("every", every)
        cfg = TrainConfig(model=model, layers=4, noise=C13, seeds=1, steps=3000, batch=2048, lr=float(lr),
                          diag_steps=0 if model == "full" else None, chunk=chunk, warm_start=str(start), **extra)
        rows: list[dict] = []
        first: list[np.ndarray] = []

        def record(state, res) -> bool:  # noqa: ANN001
            m, o = adjusted_losses(cfg, state.params, stream=2, sequences=16384)
            one = jax.tree_util.tree_map(lambda a: a[0], state.params)
            P, Q = (np.asarray(a)[:, 0] for a in kind_of(model).universal(one, cfg.d))
            if not first:
                first.extend((P, Q))
            rows.append({"step": int(state.step), "lr": float(lr_at(cfg, state.step)),
                         "held_out": float(np.mean(m[0] - o)),
                         "off_P": [off_diag_share(p) for p in P], "off_Q": [off_diag_share(q) for q in Q],
                         "drift": float(np.sqrt(np.sum((P - first[0]) ** 2) + np.sum((Q - first[1]) ** 2)))})
            print(v, rows[-1]["step"], f"{rows[-1]['held_out']:.5f}", flush=True)
            return int(state.step) >= until

        t0 = time.time()
        record(init_state(cfg), None)
        train(cfg, on_chunk=record, stop_at=until)
        out[v] = {"rows": rows, "seconds": round(time.time() - t0, 1), "warmup_steps": cfg.warmup_steps}
        LOGS.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, out)


def kick(scales: list[float], directions: int) -> None:
    """Held-out adjusted loss of the DIAG-4 cell, as a FULL model, moved by ``s`` (Frobenius norm over every
    ``P^l, Q^l``) along random directions off DIAG's pattern and along random directions on it."""
    from numerics.io import load_model
    from numerics.models.kinds import Full
    from numerics.train import TrainConfig, adjusted_losses

    P, Q, _ = load_model(str(CELLS / "diag-L4-categorical1_3" / "model.npz"))
    W = np.stack([np.asarray(P, float), np.asarray(Q, float)])  # (2, L, H, d+1, d+1)
    cfg = TrainConfig(model="full", layers=W.shape[1], noise=C13)
    rng = np.random.default_rng(0)

    def held_out(V: np.ndarray) -> float:
        m, o = adjusted_losses(cfg, Full(np.float32(V[0])[None], np.float32(V[1])[None]), stream=2, sequences=16384)
        return float(np.mean(m[0] - o))

    out = {"start": held_out(W), "scales": scales, "off": [], "on": []}
    for _ in range(directions):
        N = rng.standard_normal(W.shape)
        for where, D in (("off", N - diag_part(N)), ("on", diag_part(N))):
            D = D / np.linalg.norm(D)
            out[where].append([held_out(W + s * D) for s in scales])
            print(where, np.round(out[where][-1], 5), flush=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    atomic_write_json(LOGS / "kick.json", out)


def diag_cell(layers: int, noise: str) -> float:
    """The paper grid's DIAG cell of this depth and setting: its adjusted loss on 100 000 sequences."""
    m = json.loads((CELLS / f"diag-L{layers}-{noise.replace(':', '').replace(',', '_')}" / "metrics.json").read_text())
    return float(m["eval"]["loss"])


def summarise(name: str) -> dict:
    """One finished run folder: its recipe, its evaluation, and its training curve less the oracle's loss."""
    run = RUNS / name
    cfg = json.loads((run / "config.json").read_text())
    met = json.loads((run / "metrics.json").read_text())
    ck = np.load(run / "checkpoint.npz", allow_pickle=True)
    seconds = json.loads(str(ck["meta"])).get("seconds")
    L, noise, loss = cfg["layers"], cfg["noise"], met["adjusted_loss"]
    target = PRINTED.get(("full", L, noise))
    rows = np.asarray(met["curve"]["rows"], float)
    best = rows[:, 1 + met["best_seed"]] - met["oracle_loss"]
    return {"name": name, "layers": L, "noise": noise, "lr": cfg["peak_lr"], "batch": cfg["batch"],
            "steps": cfg["steps"], "seeds": cfg["seeds"], "warmup": cfg["warmup_steps"],
            "adjusted_loss": loss, "se": met["se"], "per_seed": met["eval_adjusted_per_seed"],
            "best_seed": met["best_seed"], "rollbacks": len(met["rollbacks"]), "seconds": seconds,
            "steps_per_s": met["steps_per_s"], "printed_full": target, "diag_cell": diag_cell(L, noise),
            "printed_diag": PRINTED.get(("diag", L, noise)),
            "within_printed": None if target is None else bool(loss <= 1.05 * target + 0.003),
            "curve_step": rows[:, 0].astype(int).tolist(), "curve_adjusted": best.tolist()}


def plot_curves(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, (L, noise) in zip(axes, ((4, C13), (3, C13))):
        for r in (r for r in runs if (r["layers"], r["noise"]) == (L, noise)):
            c = np.asarray(r["curve_adjusted"])
            k = 25  # the running median over 25 chunks: one chunk's mean carries a rare sequence's huge loss
            med = np.array([np.median(c[max(0, i - k + 1): i + 1]) for i in range(len(c))])
            seen = np.asarray(r["curve_step"]) * r["batch"] / 1e6
            ax.plot(seen, med, label=f"lr {r['lr']:g}, batch {r['batch']}: {r['adjusted_loss']:.4f}")
        for y, ls, lab in ((PRINTED[("full", L, noise)], "--", "paper FULL"),
                           (PRINTED[("diag", L, noise)], ":", "paper DIAG"),
                           (diag_cell(L, noise), "-.", "lintf DIAG cell")):
            ax.axhline(y, color="k", ls=ls, lw=0.8, label=f"{lab} {y:.4f}")
        ax.set(yscale="log", ylim=(0.02, 5), title=f"FULL-{L}, {noise}, own start",
               xlabel="training sequences (millions)")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("training loss − oracle (running median)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def matrix_parts(M: np.ndarray) -> dict:
    """``M``'s share on DIAG's pattern and where the rest sits: the traceless part of the ``x`` block, the column
    ``x ← y``, the row ``y ← x``; the rest's singular values."""
    d = M.shape[-1] - 1
    rest = M - diag_part(M)
    sv = np.linalg.svd(rest, compute_uv=False)
    return {"norm": float(np.linalg.norm(M)), "diag_share": float(np.linalg.norm(diag_part(M)) / np.linalg.norm(M)),
            "rest_share": off_diag_share(M), "rest_xx": float(np.linalg.norm(rest[:d, :d])),
            "rest_x_from_y": float(np.linalg.norm(rest[:d, d])), "rest_y_from_x": float(np.linalg.norm(rest[d, :d])),
            "rest_sv": sv[:4].tolist(), "rest_rank": int(np.sum(sv >= 0.1 * sv[0]))}


def ablate(P: np.ndarray, Q: np.ndarray, sequences: int) -> dict:
    """Adjusted loss (evaluation stream, ``sequences`` of them) of FULL's ``(P, Q)`` and of its projection on DIAG's
    pattern, on the same sequences."""
    from numerics.models.kinds import Full
    from numerics.train import TrainConfig, adjusted_losses, finite_adjusted

    cfg = TrainConfig(model="full", layers=P.shape[0], noise=C13, eval_sequences=sequences)
    out = {}
    for name, (p, q) in (("full", (P, Q)), ("diag_part", (diag_part(P), diag_part(Q)))):
        m, o = adjusted_losses(cfg, Full(np.float32(p)[None, :, None], np.float32(q)[None, :, None]),
                               stream=3, sequences=sequences)
        mean, se, bad = finite_adjusted(m[0], o)
        out[name] = {"adjusted_loss": mean, "se": se, "nonfinite": bad}
    return out


def plot_weights(P: np.ndarray, Q: np.ndarray, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    L = P.shape[0]
    fig, axes = plt.subplots(2, L, figsize=(2.6 * L, 5.2))
    for row, (name, W) in enumerate((("P", P), ("Q", Q))):
        for l in range(L):
            v = float(np.abs(W[l]).max())
            im = axes[row, l].imshow(W[l], cmap="RdBu_r", vmin=-v, vmax=v)
            axes[row, l].set_title(f"{name}^{l + 1}  (max {v:.2g})", fontsize=8)
            axes[row, l].set_xticks([])
            axes[row, l].set_yticks([])
        fig.colorbar(im, ax=axes[row, -1], fraction=0.046)
    fig.suptitle(title, fontsize=9)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def weights(model: Path, sequences: int) -> dict:
    """FULL's learned ``P^l, Q^l`` (heads 0): parts, ablation, heatmaps, and ``lintf inspect`` per layer."""
    from numerics.io import load_model

    P, Q, _ = load_model(str(model))
    P, Q = np.asarray(P, float)[:, 0], np.asarray(Q, float)[:, 0]
    plot_weights(P, Q, FIGS / "weights.png", f"FULL-{P.shape[0]} at {C13} from its own start ({model.stem})")
    inspect = {}
    for label, path in (("full", model), ("diag_cell", CELLS / "diag-L4-categorical1_3" / "model.npz")):
        out = subprocess.run([str(ROOT / ".venv" / "bin" / "lintf"), "inspect", str(path), "--noise", C13,
                              "--sequences", "4096", "--json"], capture_output=True, text=True, check=True)
        inspect[label] = json.loads(out.stdout)["layers"]
    d = P.shape[-1] - 1
    col = P[:, :d, d]  # the columns x <- y of every P^l: the largest names the direction v the rest shares
    v = col[np.argmax(np.linalg.norm(col, axis=1))]
    v = v / np.linalg.norm(v)

    def along_v(M: np.ndarray) -> dict:
        U, _, Vt = np.linalg.svd((M - diag_part(M))[:d, :d])
        return {"xx_left": float(abs(U[:, 0] @ v)), "xx_right": float(abs(Vt[0] @ v)),
                "x_from_y": float(abs(M[:d, d] @ v) / np.linalg.norm(M[:d, d])),
                "y_from_x": float(abs(M[d, :d] @ v) / np.linalg.norm(M[d, :d]))}

    return {"model": str(model.relative_to(ROOT)),
            "P": [matrix_parts(p) for p in P], "Q": [matrix_parts(q) for q in Q],
            "cos_v": {"P": [along_v(p) for p in P], "Q": [along_v(q) for q in Q]},
            "ablation": ablate(P, Q, sequences), "inspect": inspect}


def report() -> None:
    LOGS.mkdir(parents=True, exist_ok=True)
    FIGS.mkdir(parents=True, exist_ok=True)
    names = [n for n in RECIPES if (RUNS / n / "metrics.json").exists()]
    runs = [summarise(n) for n in names]
    atomic_write_json(LOGS / "runs.json", [{k: v for k, v in r.items() if not k.startswith("curve")}
                                            for r in runs])
    plot_curves(runs, FIGS / "curves.png")
    for r in runs:
        print(f"{r['name']:28s} {r['adjusted_loss']:.4f} ± {r['se']:.4f}  seeds {np.round(r['per_seed'], 4)} "
              f"printed {r['printed_full']} within {r['within_printed']}  {r['seconds']:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    la = sub.add_parser("launch")
    la.add_argument("names", nargs="+")
    pr = sub.add_parser("probe")
    pr.add_argument("--every", type=int, default=25)
    pr.add_argument("--stop", type=int, default=600)
    pr.add_argument("--variants", nargs="+", default=["full:1e-4", "full:1e-3", "diag:1e-4", "diag:1e-3"])
    ki = sub.add_parser("kick")
    ki.add_argument("--scales", type=float, nargs="+", default=[0.01, 0.03, 0.1, 0.3])
    ki.add_argument("--directions", type=int, default=3)
    we = sub.add_parser("weights")
    we.add_argument("run", help="a recipe's name whose FULL-4 model to read (copied to the report's models/)")
    we.add_argument("--sequences", type=int, default=100_000)
    sub.add_parser("report")
    a = ap.parse_args()
    if a.cmd == "launch":
        launch(a.names)
    elif a.cmd == "probe":
        probe(a.every, a.stop, a.variants)
    elif a.cmd == "kick":
        kick(a.scales, a.directions)
    elif a.cmd == "weights":
        keep = FIGS / "models" / f"{a.run}.npz"
        keep.parent.mkdir(parents=True, exist_ok=True)
        if not keep.exists():
            shutil.copyfile(RUNS / a.run / "model.npz", keep)
        atomic_write_json(LOGS / "weights.json", weights(keep, a.sequences))
    else:
        report()


if __name__ == "__main__":
    sys.exit(main())
