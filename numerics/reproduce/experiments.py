r"""The paper's sweep (docs/model.md) as resumable cells: train, select the best seed, evaluate.

A *cell* is one ``(model, L, noise)`` with ``model ∈ {gdpp, diag, full}`` (single head), ``n = 20``,
``d = 10``.  Its number is the adjusted loss (docs/model.md)

.. math::

    \ell^{\rm adj} = \frac1N \sum_\tau \tfrac12(y_{t,\tau} - \hat y_\tau)^2
                   - \tfrac12\bigl(y_{t,\tau} - x_{t,\tau}^\top(\Sigma_\tau + \sigma_\tau^2 I)^{-1}\alpha_\tau\bigr)^2

of the best of ``seeds`` seeds (vmapped in one program by :func:`numerics.train.train`; the
best is chosen on the training code's held-out selection stream), on ``eval_sequences`` fresh
float64 sequences drawn with the key ``split(PRNGKey(0))[1]``: the *same* sequences
:func:`numerics.baselines.table` (seed 0) evaluates the baselines on, so model − baseline and
model − Bayes are paired differences.  Alongside: the read-out after every layer
(``models.predict(..., all_layers=True)``) and a per-variance profile on ``σ ∈ [0, σ_max + 1]``
(key ``fold_in(PRNGKey(0), 2)``, shared with the baselines' profiles).

=================  ===========================================================================
file               content
=================  ===========================================================================
``RUNS/<budget>/<cell>/``   the training run directory (:func:`numerics.train.rundir.run`: checkpoint, loss curve); git-ignored
``OUT/models/<cell>/``      ``model.npz`` (universal ``P, Q`` of the best seed), ``metrics.json``, and for the
                            Fig. 5 cells ``seeds.npz`` (every seed's ``P, Q``); a cell is finished when its
                            ``metrics.json`` exists, and a rerun skips it
``OUT/baselines/<noise>.json``  ConstRR, AdaRR, TunedRR, Bayes on the same sequences, plus profiles
=================  ===========================================================================

Departures from the paper: training uses :class:`numerics.train.TrainConfig`'s recipe (warm-up +
cosine Adam, clipping, divergence guard), not constant ``1e-4`` for 200 000 steps; ``quick`` is a
reduced grid (see :data:`BUDGETS`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from numerics import baselines, models
from numerics.evaluate import losses as evaluation
from numerics.train.continuation import (RESCUE_STREAM, Stages, fit_scale, rescue_constants, start_for,
                                         train_stages)
from numerics.data import PAPER_NOISES, Noise
from numerics.errors import LintfError
from numerics.io import atomic_savez, atomic_write_bytes, atomic_write_json, load_model, save_model
from numerics.train.loop import clear_caches
from numerics.reproduce.budgets import (BASELINES, BUDGETS, Budget, CATEGORICAL, Cell, EVAL_SEED, FOCUS, MODELS,
    PARTS, TAIL_DEPTH, cell_signature, cells_for, get_budget, noises_for, parse_noises, parse_parts, slug,
    stage_seeds, tail_sequences, train_config)  # noqa: F401  (re-exported)


def eval_key() -> jax.Array:
    return jax.random.split(jax.random.PRNGKey(EVAL_SEED))[1]


def profile_key() -> jax.Array:
    return jax.random.fold_in(jax.random.PRNGKey(EVAL_SEED), 2)


@jax.jit
def _reads(P: jax.Array, Q: jax.Array, X: jax.Array, y: jax.Array, x_query: jax.Array) -> jax.Array:
    return models.predict(P, Q, X, y, x_query, all_layers=True)


def _reads_fn(P: Any, Q: Any) -> Callable:
    """``predict(batch, spectra) -> {"layers": (L+1, B)}``; compiled once per shape, not per model."""
    P, Q = jnp.asarray(P, jnp.float64), jnp.asarray(Q, jnp.float64)
    return lambda batch, sp: {"layers": _reads(P, Q, batch.X, batch.y, batch.x_query)}


def evaluate_model(P: Any, Q: Any, noise: str, budget: Budget, sequences: int | None = None) -> dict[str, Any]:
    """Adjusted loss of every read-out ``l = 0..L`` (``L`` is the model's output) and its paired gap to Bayes."""
    bayes_pred = baselines.predictor(baselines.Tuned(), noise, ("Bayes",))
    with jax.enable_x64(True):
        reads = _reads_fn(P, Q)
        res = evaluation.evaluate(lambda b, sp: reads(b, sp) | bayes_pred(b, sp), noise,
                                  sequences or budget.eval_sequences, budget.n, budget.d, eval_key(),
                                  against="Bayes", tails=True)
    lay = res["layers"]
    out = {k: np.asarray(lay[k]).tolist() for k in ("loss", "se", "raw", "minus_Bayes", "minus_Bayes_se")}
    final = {k: v[-1] for k, v in out.items()}
    tail = {k: (_json(float(np.ravel(v)[-1])) if isinstance(v, np.ndarray) else v) for k, v in lay["tail"].items()}
    return final | {"layers": out, "sequences": int(lay["count"]), "Bayes": res["Bayes"]["loss"], "tail": tail}


def profile_model(P: Any, Q: Any, noise: str, budget: Budget) -> dict[str, Any]:
    """Per-variance profile of every read-out: ``loss``/``se`` are ``(L+1, points)`` lists."""
    sig = evaluation.sigma_grid(noise, budget.profile_points)
    with jax.enable_x64(True):
        pr = evaluation.profile(_reads_fn(P, Q), sig, budget.n, budget.d, budget.profile_sequences, profile_key())
    return {"sigma": sig.tolist(), "loss": pr["layers"]["loss"].tolist(), "se": pr["layers"]["se"].tolist()}


def baseline_results(noise: str, budget: Budget, out: Path) -> dict[str, Any]:
    """ConstRR, AdaRR, TunedRR and Bayes on the cells' evaluation sequences, plus their profiles (cached)."""
    path = out / "baselines" / f"{slug(noise)}.json"
    want = {"noise": noise, "eval_sequences": budget.eval_sequences, "tune_sequences": budget.tune_sequences,
            "profile_sequences": budget.profile_sequences, "profile_points": budget.profile_points}
    if path.exists():
        have = json.loads(path.read_text())
        if all(have.get(k) == v for k, v in want.items()):
            return have
    tab = baselines.table(noise, n=budget.n, d=budget.d, sequences=budget.eval_sequences, seed=EVAL_SEED,
                          tune_sequences=budget.tune_sequences, methods=BASELINES)
    tuned = baselines.Tuned(lam_const=tab["ConstRR"]["lam_const"], cap=tab["TunedRR"]["cap"],
                            mult=tab["TunedRR"]["mult"])
    sig = evaluation.sigma_grid(noise, budget.profile_points)
    with jax.enable_x64(True):
        pr = evaluation.profile(baselines.predictor(tuned, noise, BASELINES), sig, budget.n, budget.d,
                                budget.profile_sequences, profile_key())
    res = want | {"methods": {m: {k: _json(v) for k, v in tab[m].items()} for m in BASELINES},
                  "profile": {"sigma": sig.tolist()} | {m: {"loss": pr[m]["loss"].tolist(), "se": pr[m]["se"].tolist()}
                                                        for m in BASELINES}}
    atomic_write_json(path, res)
    return res


def _json(v: Any) -> Any:
    v = np.asarray(v).tolist() if isinstance(v, (np.ndarray, np.generic)) else v
    return None if isinstance(v, float) and not np.isfinite(v) else v


# ----------------------------------------------------------------------------------------------- cells


def cell_dir(out: Path, cell: Cell) -> Path:
    return out / "models" / cell.name


def load_cell(out: Path, cell: Cell, budget: Budget) -> dict[str, Any] | None:
    """The finished cell's metrics, ``None`` if it is not finished; a one-line error if it was made differently."""
    path = cell_dir(out, cell) / "metrics.json"
    if not path.exists():
        return None
    m = json.loads(path.read_text())
    rescued = m.get("rescue")
    same_rescue = rescued is not None and rescued.get("constants") == rescue_constants(budget.rescue_pool)
    if m.get("failed") and not m["train"].get("dropped_final") and not same_rescue:
        return None  # a failed cell without this rescue: rescue it (its training resumes from its run directory)
    if m.get("signature") != cell_signature(cell, budget) or (rescued is not None and not same_rescue):
        raise LintfError(f"{path} was made with another configuration (budget {m.get('budget')!r}); "
                         f"use another --out or delete {cell_dir(out, cell)}")
    return m


def _seed_params(cfg: Any, run: Path) -> tuple[np.ndarray, np.ndarray]:
    """Every seed's universal ``P, Q`` ``(K, L, H, d+1, d+1)`` from the run's final checkpoint."""
    from numerics.train import rundir
    from numerics import train as training

    payload = rundir.prepare(run, cfg)
    template = training.init_state(cfg)
    state = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(template), list(payload["leaves"]))
    P, Q = jax.vmap(lambda p: models.universal(p, cfg.d))(state.params)
    return np.asarray(P, np.float64), np.asarray(Q, np.float64)


class Trained(NamedTuple):
    """What a trainer returns: the run's metrics (:func:`numerics.train.rundir.run`), the best seed's model file,
    and a loader of every seed's universal ``P, Q`` ``(K, L, H, d+1, d+1)``."""

    metrics: dict[str, Any]
    model: Path
    seeds: Callable[[], tuple[np.ndarray, np.ndarray]]


def train_rundir(cfg: Any, run: Path) -> Trained:
    """The default trainer: :func:`numerics.train.rundir.run` (resumes from the run's checkpoint)."""
    from numerics.train import rundir

    tm = rundir.run(cfg, run, progress=False, baselines=False)
    if tm is None:  # pragma: no cover - only with stop_at
        raise LintfError(f"training into {run} did not finish")
    return Trained(tm, run / "model.npz", lambda: _seed_params(cfg, run))


Trainer = Callable[[Any, Path], Trained]


def finished_model(out: Path, cell: Cell) -> Path | None:
    """The committed model file of a finished cell that passed the evaluation, else ``None``."""
    d = cell_dir(out, cell)
    if not (d / "metrics.json").exists() or not (d / "model.npz").exists():
        return None
    return None if json.loads((d / "metrics.json").read_text()).get("failed") else d / "model.npz"


def tail_key() -> jax.Array:
    return jax.random.fold_in(jax.random.PRNGKey(EVAL_SEED), 3)


def failure(metrics: dict[str, Any]) -> str | None:
    """Why a cell fails the paper's evaluation (``None`` if it passes): tail rules on the evaluation sequences
    (:func:`numerics.evaluate.losses.tail_stats`), the tail check, the spectral check (:func:`spectral_check`), or
    sequences excluded in the final phase.

    Where the evaluation fails the SE rule alone (every loss finite and at most ``FAIL_MAX``), a larger estimate of
    the same mean judges the SE rule instead, when the cell has one: the tail check's 10⁶ sequences, or for GD++ at
    σ = 0 :func:`spectral_check`.  At σ = 0 a good model's mean is near zero and its per-sequence losses are
    heavy-tailed but bounded, so 10⁵ sequences may not pin the mean to a tenth where the larger estimate does.
    A model whose tail carries the mean fails on every estimate."""
    ev, tc = metrics["eval"]["tail"], metrics.get("tail_check")
    only_se = ev["max"] is not None and bool(np.isfinite(ev["max"])) and ev["max"] <= evaluation.FAIL_MAX
    settled = only_se and any(e is not None and e.get("se") is not None and evaluation.se_settles(e["mean"], e["se"])
                              for e in (tc, metrics.get("spectral")))
    if ev["failed"] and not settled:
        return f"evaluation: {ev['failed']}"
    if tc is not None and not tc["passed"]:
        return (f"tail check: {tc['above']} of {tc['sequences']} sequences above {tc['limit']:g} "
                f"(largest {tc['max']})")
    sc = metrics.get("spectral")
    if sc is not None and sc.get("above", 0) > 0:
        return (f"spectral check: {sc['above']} of {sc['spectra']} spectra with expected loss above "
                f"{sc['limit']:g} (largest {sc['max']})")
    if metrics["train"].get("dropped_final"):
        return f"training left {metrics['train']['dropped_final']} sequences out of its final phase"
    return None


#: Seed of the spectra of :func:`spectral_check` (numpy ``PCG64``; chunk ``k`` uses ``SPECTRAL_SEED + k``).
SPECTRAL_SEED = 8_000


def spectral_check(P: Any, Q: Any, cell: Cell, budget: Budget, chunk: int = 2**18) -> dict[str, Any]:
    r"""GD++ at σ_max = 0: the mean adjusted loss over ``budget.spectral_sequences`` draws of ``Σ = XᵀX ~ W_d(n, I)``
    of its exact expectation over ``w`` and ``x_t`` given ``Σ`` (:func:`numerics.baselines.gdpp_fit.sequence_losses`,
    the derived per-eigenvalue rule, no importance weights), ± its SE.  The evaluation's mean (at σ = 0 the oracle's
    loss is 0) without the variance that ``w`` and ``x_t`` add: it pins the mean of a model whose per-sequence
    losses are heavy-tailed but bounded where the sequences cannot (:func:`failure`).  Like the tail check, it
    counts the spectra whose expected loss exceeds :data:`numerics.evaluate.losses.TAIL_MAX`: a context that
    explodes the model once in a few million sequences, which 10⁶ sequences can miss."""
    from numerics.baselines import gdpp_fit
    from numerics.models.kinds import GDPP

    g = GDPP.from_universal(np.asarray(P, np.float64), np.asarray(Q, np.float64), atol=1e-12)
    total, parts = int(budget.spectral_sequences), []
    for k, start in enumerate(range(0, total, chunk)):
        sample = gdpp_fit.sample_spectra(SPECTRAL_SEED + k, min(chunk, total - start), budget.n, budget.d, cell.noise,
                                         importance=False)
        parts.append(gdpp_fit.sequence_losses(g, sample))
    v = np.concatenate(parts)
    finite = bool(np.all(np.isfinite(v)))
    return {"spectra": total, "mean": float(v.mean()) if finite else None,
            "se": float(v.std(ddof=1) / np.sqrt(v.size)) if finite else None,
            "max": float(v.max()) if finite else None, "above": int(np.sum(~(v <= evaluation.TAIL_MAX))),
            "limit": evaluation.TAIL_MAX}


def assess(P: Any, Q: Any, cell: Cell, budget: Budget) -> dict[str, Any]:
    """A model's evaluation (every read-out on the evaluation sequences, tails included), its per-variance profile,
    for depth >= :data:`TAIL_DEPTH` the tail check, and for GD++ there at σ_max = 0 :func:`spectral_check`."""
    out = {"eval": evaluate_model(P, Q, cell.noise, budget), "profile": profile_model(P, Q, cell.noise, budget)}
    n_tail = tail_sequences(cell, budget)
    if n_tail:
        out["tail_check"] = evaluation.tail_check(P, Q, cell.noise, budget.n, budget.d, tail_key(), n_tail)
        if cell.model == "gdpp" and Noise.parse(cell.noise).sigma_max == 0:
            out["spectral"] = spectral_check(P, Q, cell, budget)
    return out


def rescue(P: Any, Q: Any, cell: Cell, budget: Budget, metrics: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
    """The scale fit (:func:`numerics.train.continuation.fit_scale`) again, on ``budget.rescue_pool`` sequences of its
    own stream: for a model that fails its evaluation because of a context rarer than the stages' pools.

    The fit's scales are tried in turn until one passes the evaluation (:func:`assess`, :func:`failure`): the
    conservative edge of the pool's minimum (``"slack"``), then the fit's own scale, which goes further down until
    the pool predicts an SE below ``SCALE_SE`` of the mean.  Where the mean is near zero (σ = 0), that ratio falls
    only as every sequence gets worse, so the second scale is a last resort.  Returns the rescued ``Q`` (``Q`` itself
    when the larger pool holds no sequence above the fit's threshold either) and the record stored under
    ``"rescue"``: the constants, the fit's summary, every scale tried with its evaluation's verdict, the scale kept,
    the failure it answered, and the kept scale's :func:`assess` under ``"assessed"``."""
    c, info = fit_scale(P, Q, cell.noise, budget.n, budget.d, budget.rescue_pool, RESCUE_STREAM)
    record = {"constants": rescue_constants(budget.rescue_pool), "fit": info, "scale": c, "tried": [],
              "before": {"failed": metrics["failed"], "loss": metrics["eval"]["loss"],
                         "max": metrics["eval"]["tail"].get("max"),
                         "tail_check_max": (metrics.get("tail_check") or {}).get("max")}}
    if c >= 1.0:
        return np.asarray(Q, np.float64), record
    for s in dict.fromkeys((info.get("slack", c), c)):  # distinct, in order
        assessed = assess(P, np.asarray(Q, np.float64) * s, cell, budget)
        failed = failure(metrics | assessed)
        record["tried"].append({"scale": s, "failed": failed})
        record |= {"scale": s, "assessed": assessed}
        if failed is None:
            break
    return np.asarray(Q, np.float64) * record["scale"], record


def run_cell(cell: Cell, budget: Budget, out: Path, runs: Path, trainer: Trainer = train_rundir,
             starts: Path | None = None, least: int = 1) -> dict[str, Any]:
    """Train (resuming; where the budget continues over depth, from the finished cells under ``starts``, default
    ``out``; in at least ``least`` stages), evaluate and store one cell; returns its metrics.  A cell that fails the
    evaluation (:func:`failure`) gets one :func:`rescue`; one that still fails keeps its metrics, with the reason under
    ``"failed"``, but no ``model.npz``."""
    t0, wall0 = time.perf_counter(), time.time()
    evaluation.fix_mmap_threshold()  # the cell's evaluations churn BATCH_CACHE's large chunks
    cfg = train_config(cell, budget)
    start = start_for(cell.model, cell.layers, cell.noise,
                      lambda m, L: finished_model(starts or out, Cell(m, L, cell.noise))) if budget.continuation else None
    st = budget.stages if not cell.keep_seeds else replace(budget.stages, seeds=budget.seeds)
    best, summary = train_stages(cfg, st, start, runs / budget.name / cell.name, trainer, least)
    t_train = time.perf_counter() - t0
    P, Q, meta = load_model(best.model)
    metrics: dict[str, Any] = {
        "cell": cell.name, "model": cell.model, "layers": cell.layers, "noise": cell.noise, "budget": budget.name,
        "signature": cell_signature(cell, budget), "train": summary | {"seconds": t_train},
    } | assess(P, Q, cell, budget)
    metrics["failed"] = failure(metrics)
    rescued = False
    if metrics["failed"] and not summary.get("dropped_final"):
        Q, metrics["rescue"] = rescue(P, Q, cell, budget, metrics)
        rescued = metrics["rescue"]["scale"] < 1.0
        if rescued:
            metrics |= metrics["rescue"].pop("assessed")
            metrics["failed"] = failure(metrics)
    dest = cell_dir(out, cell)
    if cell.keep_seeds:
        Ps, Qs = best.seeds()
        scales = [fit_scale(Ps[k], Qs[k], cell.noise, budget.n, budget.d, st.scale_pool)[0]
                  for k in range(Ps.shape[0])]
        Qs = Qs * np.asarray(scales)[:, None, None, None, None]  # each seed's own fitted scale, as the stages do
        per = [evaluate_model(Ps[k], Qs[k], cell.noise, budget, budget.seed_sequences)["layers"]
               for k in range(Ps.shape[0])]
        metrics["seeds"] = {"sequences": budget.seed_sequences, "stage": best.k, "scale": scales,
                            "loss": [p["loss"] for p in per],
                            "se": [p["se"] for p in per]}
        if metrics["failed"] is None:
            atomic_savez(dest / "seeds.npz", P=Ps, Q=Qs)
    if metrics["failed"] is None and rescued:
        scale = float(meta.get("scale", 1.0)) * metrics["rescue"]["scale"]
        save_model(dest / "model.npz", P, Q, meta | {"scale": scale})
    elif metrics["failed"] is None:
        atomic_write_bytes(dest / "model.npz", best.model.read_bytes())
    metrics["seconds"] = time.perf_counter() - t0
    metrics["wall"] = [wall0, time.time()]  # when it ran (Unix time): cells of parallel sweeps overlap
    metrics["device"] = jax.devices()[0].device_kind  # "cpu", or the accelerator's name
    atomic_write_json(dest / "metrics.json", metrics)  # written last: its presence marks the cell finished
    return metrics


@dataclass
class Sweep:
    """Outcome of :func:`sweep`: metrics per cell name, baselines per noise, cells trained in this call."""

    cells: dict[str, dict[str, Any]]
    baselines: dict[str, dict[str, Any]]
    trained: list[str]
    seconds: float
    missing: list[str] = field(default_factory=list)  # cells not finished (``train=False``)


def sweep(budget: Budget, parts: Iterable[str], out: str | Path, runs: str | Path = "runs/reproduce",
          progress: Callable[[str, dict[str, Any]], None] | None = None, trainer: Trainer = train_rundir,
          train: bool = True, noises: Iterable[str] | None = None) -> Sweep:
    """Run every missing cell the parts need (finished cells are read back), then the baselines; with
    ``train=False`` only read the finished cells back (the others are listed under ``missing``).  With ``noises``
    (settings of the budget, :func:`numerics.reproduce.budgets.parse_noises`) train only the cells of those settings:
    a cell starts from cells of its own setting, so processes given disjoint settings can share one ``out``.

    ``progress(event, info)`` is called with ``("start", {"total", "done"})``, ``("cell", {...})`` after
    each cell and ``("baselines", {"noise"})``."""
    out, runs, t0 = Path(out), Path(runs), time.perf_counter()
    cells = cells_for(budget, parts)
    have = {c.name: load_cell(out, c, budget) for c in cells}
    keep = None if noises is None else set(parse_noises(budget, noises))
    todo = [c for c in cells if have[c.name] is None]
    missing = [c.name for c in todo if not train or (keep is not None and c.noise not in keep)]
    todo = [c for c in todo if c.name not in missing]
    if progress:
        progress("start", {"total": len(cells), "done": len(cells) - len(todo) - len(missing),
                           "todo": [c.name for c in todo]})
    trained = []
    for i, c in enumerate(todo):
        t = time.perf_counter()
        have[c.name] = run_cell(c, budget, out, runs, trainer)
        trained.append(c.name)
        if i + 1 == len(todo) or todo[i + 1].layers != c.layers:
            clear_caches()  # the cells of one depth share their programs (any noise); others only accumulate
        if progress:
            progress("cell", {"name": c.name, "seconds": time.perf_counter() - t,
                              "loss": have[c.name]["eval"]["loss"]})
    base = {}
    for nz in noises_for(cells):
        if progress:
            progress("baselines", {"noise": nz})
        base[nz] = baseline_results(nz, budget, out)
    return Sweep({k: v for k, v in have.items() if v is not None}, base, trained, time.perf_counter() - t0, missing)


__all__ = ["BUDGETS", "Budget", "Cell", "PARTS", "Sweep", "assess", "cells_for", "get_budget", "parse_noises",
           "parse_parts", "rescue", "run_cell", "sweep"]
