r"""How a trained cell is judged: its evaluation on the paper's sequences, the tail and spectral checks, the
failed-cell rule (:func:`failure`) and the rescue of a cell whose tail its stages' pools missed (:func:`rescue`).

:func:`assess` is everything a finished model is measured on; :func:`failure` reads it and says why the cell
fails, or ``None``.  The keys of the sequences are fixed (:func:`eval_key`, :func:`profile_key`,
:func:`tail_key`), so every cell and every baseline of a noise setting meets the same sequences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from numerics import baselines, models
from numerics.data import Noise
from numerics.evaluate import losses as evaluation
from numerics.reproduce.budgets import EVAL_SEED, Budget, Cell, tail_sequences
from numerics.train.continuation import RESCUE_STREAM, fit_scale, rescue_constants


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
    return lambda batch, sp: {"layers": evaluation.sliced(lambda *a: _reads(P, Q, *a), batch.X, batch.y, batch.x_query)}


#: Bayes' predictions on the evaluation sequences of each ``(noise, sequences, n, d)``, chunk by chunk
#: (:func:`bayes_fn`): they do not depend on the model, and a sweep evaluates model after model of a setting.
#: 8 bytes a sequence.
BAYES_CACHE: dict[tuple, list] = {}


def bayes_fn(noise: str, sequences: int, n: int, d: int) -> Callable:
    """``predict(batch, spectra) -> {"Bayes": (B,)}`` for :func:`evaluate_model`'s chunks, in their order: computed
    on a setting's first whole evaluation, then read from :data:`BAYES_CACHE`."""
    key = (str(Noise.parse(noise)), int(sequences), int(n), int(d))
    done, made = BAYES_CACHE.get(key), []
    bayes = baselines.predictor(baselines.Tuned(), noise, ("Bayes",)) if done is None else None

    def predict(batch: Any, sp: Any) -> dict[str, Any]:
        out = done[len(made)] if done is not None else bayes(batch, sp)
        made.append(out)
        if done is None and len(made) == len(evaluation.chunks(sequences)):
            BAYES_CACHE[key] = made
        return out

    return predict


def evaluate_model(P: Any, Q: Any, noise: str, budget: Budget, sequences: int | None = None) -> dict[str, Any]:
    """Adjusted loss of every read-out ``l = 0..L`` (``L`` is the model's output) and its paired gap to Bayes."""
    sequences = sequences or budget.eval_sequences
    bayes_pred = bayes_fn(noise, sequences, budget.n, budget.d)
    with jax.enable_x64(True):
        reads = _reads_fn(P, Q)
        res = evaluation.evaluate(lambda b, sp: reads(b, sp) | bayes_pred(b, sp), noise,
                                  sequences, budget.n, budget.d, eval_key(), against="Bayes", tails=True)
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

def _json(v: Any) -> Any:
    v = np.asarray(v).tolist() if isinstance(v, (np.ndarray, np.generic)) else v
    return None if isinstance(v, float) and not np.isfinite(v) else v


def tail_key() -> jax.Array:
    return jax.random.fold_in(jax.random.PRNGKey(EVAL_SEED), 3)


def failure(metrics: dict[str, Any]) -> str | None:
    """Why a cell fails the paper's evaluation (``None`` if it passes): tail rules on the evaluation sequences
    (:func:`numerics.evaluate.losses.tail_stats`), the tail check, the spectral check (:func:`spectral_check`), or
    sequences excluded in the final phase.

    Where the evaluation fails the SE rule alone (every loss finite and at most ``FAIL_MAX``), the evaluation pooled
    with a larger estimate of the same mean judges the SE rule instead (:func:`pooled`), when the cell has one: the
    tail check's 10⁶ sequences, or for GD++ at σ = 0 :func:`spectral_check`.  At σ = 0 a good model's mean is near
    zero and its per-sequence losses are heavy-tailed but bounded, so 10⁵ sequences may not pin the mean to a tenth
    where the larger estimate does.  The evaluation's own sequences stay in the estimate: a model that is huge on one
    of them, a context the larger sample happened to miss, still has its tail carry the mean, and fails."""
    ev, tc = metrics["eval"]["tail"], metrics.get("tail_check")
    only_se = ev["max"] is not None and bool(np.isfinite(ev["max"])) and ev["max"] <= evaluation.FAIL_MAX
    settled = only_se and any(e is not None and e.get("se") is not None and evaluation.se_settles(*pooled(ev, e))
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


def pooled(ev: dict[str, Any], other: dict[str, Any]) -> tuple[float, float]:
    """Mean ± SE of two independent estimates of one mean, each weighted by its count: the evaluation's tail
    statistics ``ev`` (``"sequences"``) and a check's (``"sequences"``, or ``"spectra"`` for :func:`spectral_check`).
    An evaluation of 10⁵ sequences with one at 560 and a mean of 10⁻⁴ elsewhere pools with a tail check of 10⁶
    sequences at 1.2·10⁻⁴ ± 5·10⁻⁶ to 6·10⁻⁴ ± 5·10⁻⁴: the one sequence carries the mean."""
    a, b = int(ev["sequences"]), int(other.get("sequences") or other["spectra"])
    mean = (a * ev["mean"] + b * other["mean"]) / (a + b)
    return float(mean), float(np.hypot(a * ev["se"], b * other["se"]) / (a + b))


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
    and its :func:`checks`."""
    out = {"eval": evaluate_model(P, Q, cell.noise, budget), "profile": profile_model(P, Q, cell.noise, budget)}
    return out | checks(P, Q, cell, budget)


def check_names(cell: Cell, budget: Budget) -> tuple[str, ...]:
    """The checks :func:`checks` runs for the cell: ``"tail_check"`` from depth
    :data:`numerics.reproduce.budgets.TAIL_DEPTH`, and for GD++ there at σ_max = 0 also ``"spectral"``."""
    if not tail_sequences(cell, budget):
        return ()
    return ("tail_check", "spectral") if cell.model == "gdpp" and Noise.parse(cell.noise).sigma_max == 0 \
        else ("tail_check",)


def checks(P: Any, Q: Any, cell: Cell, budget: Budget, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The checks beyond the evaluation (:func:`check_names`, less those named in ``skip``): the tail check on
    ``budget.tail_sequences`` fresh sequences and :func:`spectral_check`."""
    run = {"tail_check": lambda: evaluation.tail_check(P, Q, cell.noise, budget.n, budget.d, tail_key(),
                                                       tail_sequences(cell, budget)),
           "spectral": lambda: spectral_check(P, Q, cell, budget)}
    return {k: run[k]() for k in check_names(cell, budget) if k not in skip}


def rescue(P: Any, Q: Any, cell: Cell, budget: Budget, metrics: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
    """The scale fit (:func:`numerics.train.scale_fit.fit_scale`) again, on ``budget.rescue_pool`` sequences of its
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


__all__ = ["SPECTRAL_SEED", "assess", "check_names", "checks", "eval_key", "evaluate_model", "failure", "profile_key",
           "profile_model", "rescue", "spectral_check", "tail_key"]
