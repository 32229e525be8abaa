r"""GD++ at ``fixed:0`` per depth from the spectral fit: is the decline super-exponential, and
is ``L = 7`` below ``1e-9``?

Does GD++ at noise fixed:0 show the second-order behaviour?  An analysis, not a test.

1. :func:`numerics.baselines.gdpp_fit.fit_gdpp` fits ``L = 1..7`` by continuation (the
   per-eigenvalue loss is the derived bridge export of :mod:`lintf_theory._gdpp_spectral`); the
   depth-``L`` parameters are what ``lintf train --init spectral --layers L`` starts from (same
   seed, same fit).
2. Independent route: ``½ mean (ŷ − y_t)²`` with :func:`numerics.models.predict` on ``--sequences``
   fresh float64 sequences (key ``PRNGKey(2024)``, disjoint from the fit's numpy stream).
3. Tail-aware route: the exact per-sequence expected loss given ``Σ``
   (:func:`numerics.baselines.gdpp_fit.sequence_losses`) averaged over ``--spectra``
   importance-sampled spectra (fresh seed), with standard errors, restricted to ``μ_max ≤ T`` for
   caps ``T`` (with ``P(μ_max > T)``) and uncapped; and over ``--plain`` spectra drawn from
   ``W_d(n, I)`` without importance sampling.  Why caps: for ``L ≥ 2`` the residual ``r_L`` is a
   polynomial
   of degree ``(3^L − 1)/2`` and grows without bound beyond the spectrum it was fitted on, so the
   uncapped expectation over Gaussian data is set by ever rarer, ever larger ``μ_max`` (Theorem 5.1
   assumes a bounded spectrum ``[μ, ν]``); an uncapped estimate is only as good as the proposal's
   reach.
4. The log-loss step ``Δ_L = log10 ℒ_L − log10 ℒ_{L−1}``: super-exponential decline means ``Δ_L``
   keeps falling.
5. The small-eigenvalue floor: ``E #{j: μ_j < ε}`` (importance-sampled) and the share of the
   ``L = 7`` loss from eigenvalues below ``ε``: since ``r_L(0) = 1``, the mass of tiny ``μ`` bounds
   any
   GD++'s loss from below unless ``r_L`` is already small there.

    python benchmarks/gdpp_spectral_fit.py   # 224 s (load ~3) to 454 s (load ~5) on 2 shared cores

``--spectra`` / ``--plain`` / ``--sequences`` scale the three estimates (time roughly linear)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from numerics.baselines import gdpp_fit as gf  # noqa: E402
from numerics.baselines import wishart  # noqa: E402
from numerics.data import sample  # noqa: E402
from numerics.models import Gdpp, predict, universal  # noqa: E402

N, D = 20, 10


def predict_loss(params: Gdpp, sequences: int, chunk: int = 50_000) -> tuple[float, float]:
    """``½ mean (ŷ − y_t)²`` ± SE on fresh float64 sequences through the model's own pass."""
    P, Q = universal(Gdpp(*(jnp.asarray(p) for p in params)), D)
    per = []
    for i in range(0, sequences, chunk):
        b = sample(
            jax.random.fold_in(jax.random.PRNGKey(2024), i),
            "fixed:0",
            min(chunk, sequences - i),
            N,
            D,
            jnp.float64,
        )
        per.append(np.asarray(0.5 * (predict(P, Q, b.X, b.y, b.x_query) - b.y_query) ** 2))
    v = np.concatenate(per)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))


def spectral_losses(
    path,
    sequences: int,
    seed: int,
    importance: bool,
    eps: tuple[float, ...],
    tops: tuple[float, ...],
    share_cap: int = 0,
    chunk: int = 500_000,
) -> dict[str, np.ndarray]:
    r"""Per depth and per cap ``T`` (``tops``): mean and SE of the weighted per-sequence loss
    restricted to ``μ_max ≤ T``; ``P(μ_max > T)``; ``E #{μ < ε}`` and the share of the last depth's
    loss (capped at ``tops[share_cap]``) from eigenvalues ``μ < ε``.  Overflow (``r_L`` beyond the
    fitted range) reads as inf/nan."""
    vals = [[] for _ in path]
    tail, count, share = np.zeros(len(tops)), np.zeros(len(eps)), np.zeros(len(eps))
    for k, start in enumerate(range(0, sequences, chunk)):
        S = wishart.sample_spectra(
            seed * 1000 + k, min(chunk, sequences - start), N, D, "fixed:0", importance
        )
        keep = np.stack([S.mu[:, -1] <= T for T in tops])  # (T, chunk)
        tail += ((~keep) * S.weight).sum(-1)
        for i, (_, p) in enumerate(path):
            with np.errstate(over="ignore", invalid="ignore"):
                v = gf.sequence_losses(p, S)
                vals[i].append(np.where(keep, v, 0.0))
        with np.errstate(over="ignore", invalid="ignore"):
            s, r = gf.factors(*(np.asarray(q) for q in path[-1][1]), S.mu, np)
        for j, e in enumerate(eps):
            below = S.mu < e
            count[j] += np.sum(below.sum(-1) * S.weight)
            share[j] += np.sum(
                np.where(keep[share_cap], 0.5 * (np.where(below, r, 0.0) ** 2).sum(-1), 0.0)
                * S.weight
            )
    v = [np.concatenate(x, axis=1) for x in vals]  # each (T, sequences)
    with np.errstate(over="ignore", invalid="ignore"):
        mean = np.array([x.mean(-1) for x in v])  # (L, T)
        se = np.array([x.std(-1, ddof=1) / np.sqrt(x.shape[-1]) for x in v])
    return {
        "mean": mean,
        "se": se,
        "tail": tail / sequences,
        "count": count / sequences,
        "share": share / sequences / mean[-1, share_cap],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0, help="fit seed (as lintf train --seed)")
    ap.add_argument(
        "--sequences", type=int, default=100_000, help="fresh sequences for the predict route"
    )
    ap.add_argument("--spectra", type=int, default=2_000_000, help="importance-sampled spectra")
    ap.add_argument("--plain", type=int, default=1_000_000, help="plain W_d(n, I) spectra")
    a = ap.parse_args()
    print("reproduce: python benchmarks/gdpp_spectral_fit.py " + " ".join(sys.argv[1:]), flush=True)
    t0 = time.perf_counter()
    fit = gf.fit_gdpp(a.layers, seed=a.seed)
    print(
        f"fit L=1..{a.layers}: {fit.seconds:.0f} s "
        f"({gf.FIT_SEQUENCES} importance-sampled spectra, thinned)",
        flush=True,
    )
    eps, tops = (0.01, 0.03, 0.1, 0.3), (100.0, 150.0, 200.0, np.inf)
    t = time.perf_counter()
    IS = spectral_losses(fit.path, a.spectra, 7 + a.seed, True, eps, tops, share_cap=1)
    PL = spectral_losses(fit.path, a.plain, 8 + a.seed, False, (), (np.inf,))
    print(f"spectral estimates: {time.perf_counter() - t:.0f} s", flush=True)
    print(
        "mu_max > T (importance-sampled): "
        + ", ".join(f"P(T={T:g}) = {p:.1e}" for T, p in zip(tops, IS["tail"]))
    )
    hdr = "".join(f" {'IS, mu_max<=' + format(T, 'g'):>22}" for T in tops)
    print(f"{'L':>2} {'fit points':>10} {'predict':>20} {'plain spectral':>20}{hdr} {'Δlog10':>7}")
    prev = None
    for i, (lf, p) in enumerate(fit.path):
        pm, ps = predict_loss(p, a.sequences)
        cap = IS["mean"][i, 1]  # the cap T = 150: P(μ_max > 150) is ~1e-17
        dl = "" if prev is None else f"{np.log10(cap) - prev:+.2f}"
        prev = np.log10(cap)
        cols = "".join(f" {m:>11.3e} ± {e:.1e}" for m, e in zip(IS["mean"][i], IS["se"][i]))
        print(
            f"{i + 1:>2} {lf:>10.3e} {pm:>11.3e} ± {ps:.1e} "
            f"{PL['mean'][i, 0]:>11.3e} ± {PL['se'][i, 0]:.1e}{cols} {dl:>7}",
            flush=True,
        )
    print(
        f"columns: loss on the fit points; predict on {a.sequences} fresh float64 sequences; "
        f"{a.plain} plain W(n, I) spectra; {a.spectra} importance-sampled spectra restricted to "
        f"mu_max <= T; Δlog10 at T={tops[1]:g}"
    )
    print(
        f"L={a.layers} parameters: omega_xx = {np.array2string(fit.params.omega_xx, precision=5)}"
    )
    print(f"{'':>14}omega_yx = {np.array2string(fit.params.omega_yx, precision=5)}")
    for e, c, sh in zip(eps, IS["count"], IS["share"]):
        print(
            f"eigenvalues below {e:<5}: E #{{mu_j < eps}} = {c:.2e} per sequence; "
            f"share of the L={a.layers} loss (mu_max <= {tops[1]:g}) {sh:.1%}"
        )
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
