r"""A trained model's verdict: its evaluation on the paper's sequences (every read-out, tails
included, with the paired gap to Bayes), its per-variance profile, the tail check, the GD++ spectral
check, :func:`failure`, the one rule that says why a cell fails (``None`` when it passes), and
:func:`rescue`, the scale fit again on a larger pool for a cell that fails.

Every key comes from :data:`numerics.reproduce.rules.RULES`, so every cell and every baseline of a
setting meets the same sequences.  A failed cell keeps its record but no model, and is never a table
entry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from numerics import baselines, models
from numerics.baselines import gdpp_fit, wishart
from numerics.data import Noise
from numerics.evaluate import losses as evaluation
from numerics.models.kinds import GDPP
from numerics.reproduce.grid import Budget, Cell
from numerics.reproduce.rules import RULES
from numerics.train.scale_fit import fit_scale


@jax.jit
def _reads(P: jax.Array, Q: jax.Array, X: jax.Array, y: jax.Array, x_query: jax.Array) -> jax.Array:
    return models.predict(P, Q, X, y, x_query, all_layers=True)


def _reads_fn(P: Any, Q: Any) -> Callable:
    """``predict(batch, spectra) -> {"layers": (L+1, B)}``; compiled once per shape, not per
    model."""
    P, Q = jnp.asarray(P, jnp.float64), jnp.asarray(Q, jnp.float64)
    return lambda batch, sp: {
        "layers": evaluation.sliced(lambda *a: _reads(P, Q, *a), batch.X, batch.y, batch.x_query)
    }


#: Bayes' predictions on the evaluation sequences of each ``(noise, sequences, n, d)``, chunk by
#: chunk: they do not depend on the model, and a sweep evaluates model after model of a setting.  8
#: bytes a sequence.
BAYES_CACHE: dict[tuple, list] = {}


def _bayes_fn(noise: str, sequences: int, n: int, d: int) -> Callable:
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


def _last(v: np.ndarray) -> float | None:
    """The last entry of ``v`` as a float for JSON, ``None`` where it is not finite."""
    x = float(np.ravel(v)[-1])
    return x if np.isfinite(x) else None


def evaluate_model(P: Any, Q: Any, noise: str, sequences: int, n: int, d: int) -> dict[str, Any]:
    """Adjusted loss of every read-out ``l = 0..L`` on ``sequences`` evaluation sequences, its
    paired gap to Bayes, and the tail statistics of the last read-out; the final read-out's numbers
    at the top level."""
    bayes_pred = _bayes_fn(noise, sequences, n, d)
    with jax.enable_x64(True):
        reads = _reads_fn(P, Q)
        res = evaluation.evaluate(
            lambda b, sp: reads(b, sp) | bayes_pred(b, sp),
            noise,
            sequences,
            n,
            d,
            RULES.eval_key(),
            against="Bayes",
            tails=True,
        )
    lay = res["layers"]
    out = {
        k: np.asarray(lay[k]).tolist()
        for k in ("loss", "se", "raw", "minus_Bayes", "minus_Bayes_se")
    }
    tail = {k: _last(v) if isinstance(v, np.ndarray) else v for k, v in lay["tail"].items()}
    return {k: v[-1] for k, v in out.items()} | {
        "layers": out,
        "sequences": int(lay["count"]),
        "Bayes": res["Bayes"]["loss"],
        "tail": tail,
    }


def profile_model(
    P: Any, Q: Any, noise: str, points: int, sequences: int, n: int, d: int
) -> dict[str, Any]:
    """Per-variance profile of every read-out: ``loss``/``se`` are ``(L+1, points)`` lists."""
    sig = evaluation.sigma_grid(noise, points)
    with jax.enable_x64(True):
        pr = evaluation.profile(_reads_fn(P, Q), sig, n, d, sequences, RULES.profile_key())
    return {
        "sigma": sig.tolist(),
        "loss": pr["layers"]["loss"].tolist(),
        "se": pr["layers"]["se"].tolist(),
    }


def spectral_check(
    P: Any, Q: Any, noise: str, n: int, d: int, chunk: int = 2**18
) -> dict[str, Any]:
    r"""GD++ at σ_max = 0: the mean over ``RULES.spectral_sequences`` draws of ``Σ ~ W_d(n, I)`` of
    the model's exact expected loss given ``Σ``
    (:func:`numerics.baselines.gdpp_fit.sequence_losses`), ± its SE, and the count of spectra above
    :data:`numerics.evaluate.losses.TAIL_MAX`.  The evaluation's mean without the variance that
    ``w`` and ``x_t`` add: at σ = 0 a good model's per-sequence losses are heavy-tailed but
    bounded."""
    g = GDPP.from_universal(np.asarray(P, np.float64), np.asarray(Q, np.float64), atol=1e-12)
    total, parts = int(RULES.spectral_sequences), []
    for k, start in enumerate(range(0, total, chunk)):
        sample = wishart.sample_spectra(
            RULES.spectral_seed + k, min(chunk, total - start), n, d, noise, importance=False
        )
        parts.append(gdpp_fit.sequence_losses(g, sample))
    v = np.concatenate(parts)
    finite = bool(np.all(np.isfinite(v)))
    return {
        "spectra": total,
        "mean": float(v.mean()) if finite else None,
        "se": float(v.std(ddof=1) / np.sqrt(v.size)) if finite else None,
        "max": float(v.max()) if finite else None,
        "above": int(np.sum(~(v <= evaluation.TAIL_MAX))),
        "limit": evaluation.TAIL_MAX,
    }


def checks(P: Any, Q: Any, model: str, layers: int, noise: str, n: int, d: int) -> dict[str, Any]:
    """The checks beyond the evaluation: from depth ``RULES.tail_depth`` the tail check on
    ``RULES.tail_sequences`` fresh sequences, and for GD++ at σ_max = 0 also :func:`spectral_check`;
    ``None`` where a check does not apply."""
    deep = layers >= RULES.tail_depth
    tail = (
        evaluation.tail_check(P, Q, noise, n, d, RULES.tail_key(), RULES.tail_sequences)
        if deep
        else None
    )
    spectral = deep and model == "gdpp" and Noise.parse(noise).sigma_max == 0
    return {"tail_check": tail, "spectral": spectral_check(P, Q, noise, n, d) if spectral else None}


def judge(P: Any, Q: Any, cell: Cell, budget: Budget) -> dict[str, Any]:
    """Everything a finished model of ``cell`` is measured on (``eval``, ``profile``,
    ``tail_check``, ``spectral``), at the sizes of ``budget``."""
    b, nz = budget, cell.noise
    return {
        "eval": evaluate_model(P, Q, nz, b.eval_sequences, b.n, b.d),
        "profile": profile_model(P, Q, nz, b.profile_points, b.profile_sequences, b.n, b.d),
    } | checks(P, Q, cell.model, cell.layers, nz, b.n, b.d)


def pooled(ev: dict[str, Any], other: dict[str, Any]) -> tuple[float, float]:
    """Mean ± SE of two independent estimates of one mean, each weighted by its count
    (``"sequences"``, or ``"spectra"`` for :func:`spectral_check`)."""
    a, b = int(ev["sequences"]), int(other.get("sequences") or other["spectra"])
    mean = (a * ev["mean"] + b * other["mean"]) / (a + b)
    return float(mean), float(np.hypot(a * ev["se"], b * other["se"]) / (a + b))


def failure(judged: dict[str, Any], dropped_final: int | None = None) -> str | None:
    """Why a cell fails (``None``: it passes): the evaluation's tail rules
    (:func:`numerics.evaluate.losses.tail_stats`), the tail check, the spectral check, or sequences
    its training left out of its final phase.  Where the evaluation fails the SE rule alone (every
    loss finite and at most ``FAIL_MAX``), the evaluation pooled with a check's larger sample of the
    same mean (:func:`pooled`) judges the SE rule: at σ = 0 a good model's mean is near zero, and
    10⁵ sequences may not pin it to a tenth where 10⁶ do.  The evaluation's own sequences stay in
    the pool, so one huge sequence still carries the mean."""
    ev, tc, sc = judged["eval"]["tail"], judged.get("tail_check"), judged.get("spectral")
    only_se = (
        ev["max"] is not None and bool(np.isfinite(ev["max"])) and ev["max"] <= evaluation.FAIL_MAX
    )
    settled = only_se and any(
        e is not None and e.get("se") is not None and evaluation.se_settles(*pooled(ev, e))
        for e in (tc, sc)
    )
    if ev["failed"] and not settled:
        return f"evaluation: {ev['failed']}"
    if tc is not None and not tc["passed"]:
        return (
            f"tail check: {tc['above']} of {tc['sequences']} sequences above {tc['limit']:g} "
            f"(largest {tc['max']})"
        )
    if sc is not None and sc.get("above", 0) > 0:
        return (
            f"spectral check: {sc['above']} of {sc['spectra']} spectra with expected loss above "
            f"{sc['limit']:g} (largest {sc['max']})"
        )
    if dropped_final:
        return f"training left {dropped_final} sequences out of its final phase"
    return None


def rescue(
    P: Any, Q: Any, cell: Cell, budget: Budget, dropped_final: int | None
) -> tuple[np.ndarray | None, dict[str, Any] | None, dict[str, Any]]:
    r"""The scale fit (:func:`numerics.train.scale_fit.fit_scale`) again, for a model that fails its
    verdict because of a context rarer than its stages' pools: on ``budget.rescue_pool`` sequences
    of the stream ``RULES.rescue_stream``.  A deep model is a high-degree polynomial of its context,
    and one context in 10⁵–10⁶ beyond those its training and its stages' scale fits met can cost
    10⁴ or more; the larger pool holds such contexts at their true rate.

    The fit's scales are tried in turn until one passes the verdict: the conservative edge of the
    pool's minimum (``"slack"``), then the fit's own scale.  Returns the rescued ``Q`` and its
    verdict (``None, None`` when no scale passes, or the pool holds no context above the fit's
    threshold), and the record of the rescue (the pool, the stream, the fit's summary, every scale
    tried with its failure, the scale kept).  The model stays in its kind: ``c`` multiplies every
    layer's update."""
    c, info = fit_scale(
        P, Q, cell.noise, budget.n, budget.d, budget.rescue_pool, RULES.rescue_stream
    )
    record: dict[str, Any] = {
        "pool": budget.rescue_pool,
        "stream": RULES.rescue_stream,
        "fit": info,
        "tried": [],
        "scale": 1.0,
    }
    for s in dict.fromkeys((info.get("slack", c), c)) if c < 1.0 else ():
        Qs = np.asarray(Q, np.float64) * s
        judged = judge(P, Qs, cell, budget)
        failed = failure(judged, dropped_final)
        record["tried"].append({"scale": s, "failed": failed})
        if failed is None:
            return Qs, judged, record | {"scale": s}
    return None, None, record
