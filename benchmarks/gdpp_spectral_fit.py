r"""GD++ at ``fixed:0`` per depth from the spectral fit: is the decline super-exponential, and is ``L = 7`` below ``1e-9``?

Issue 6, target "GD++ at noise fixed:0 shows the second-order behaviour".  An analysis, not a test.

1. :func:`numerics.gdpp_fit.fit_gdpp` fits ``L = 1..7`` by continuation (the per-eigenvalue loss is
   the derived bridge export of :mod:`lintf_theory._gdpp_spectral`); the depth-``L`` parameters are
   what ``lintf train --init spectral --layers L`` starts from (same seed, same fit).
2. Independent route: ``½ mean (ŷ − y_t)²`` with :func:`numerics.models.predict` on ``--sequences``
   fresh float64 sequences (key ``PRNGKey(2024)``, disjoint from the fit's numpy stream).
3. Tail-aware route: the exact per-sequence expected loss given ``Σ`` (:func:`numerics.gdpp_fit.sequence_losses`)
   averaged over ``--spectra`` importance-sampled spectra (fresh seed), with standard errors; and over
   ``--plain`` spectra drawn from ``W_d(n, I)`` without importance sampling.
4. The log-loss step ``Δ_L = log10 ℒ_L − log10 ℒ_{L−1}``: super-exponential decline means ``Δ_L`` keeps falling.
5. The small-eigenvalue floor: ``E #{j: μ_j < ε}`` (importance-sampled) and the share of the ``L = 7``
   loss from eigenvalues below ``ε``: since ``r_L(0) = 1``, the mass of tiny ``μ`` bounds any
   GD++'s loss from below unless ``r_L`` is already small there.

    python benchmarks/gdpp_spectral_fit.py                      # ~4 min on 2 shared cores
    python benchmarks/gdpp_spectral_fit.py --spectra 10000000   # ~8 min
"""

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

from numerics import gdpp_fit as gf  # noqa: E402
from numerics.data import sample  # noqa: E402
from numerics.models import Gdpp, predict, universal  # noqa: E402

N, D = 20, 10


def predict_loss(params: Gdpp, sequences: int, chunk: int = 50_000) -> tuple[float, float]:
    """``½ mean (ŷ − y_t)²`` ± SE on fresh float64 sequences through the model's own pass."""
    P, Q = universal(Gdpp(*(jnp.asarray(p) for p in params)), D)
    per = []
    for i in range(0, sequences, chunk):
        b = sample(jax.random.fold_in(jax.random.PRNGKey(2024), i), "fixed:0", min(chunk, sequences - i), N, D, jnp.float64)
        per.append(np.asarray(0.5 * (predict(P, Q, b.X, b.y, b.x_query) - b.y_query) ** 2))
    v = np.concatenate(per)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))


def spectral_losses(path, sequences: int, seed: int, importance: bool, eps: tuple[float, ...],
                    chunk: int = 500_000) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per depth: mean and SE of the weighted per-sequence loss; ``E #{μ < ε}``; L-max loss share below ``ε``."""
    vals = [[] for _ in path]
    count, share = np.zeros(len(eps)), np.zeros(len(eps))
    for k, start in enumerate(range(0, sequences, chunk)):
        S = gf.sample_spectra(seed * 1000 + k, min(chunk, sequences - start), N, D, "fixed:0", importance)
        for i, (_, p) in enumerate(path):
            vals[i].append(gf.sequence_losses(p, S))
        s, r = gf.factors(*(np.asarray(q) for q in path[-1][1]), S.mu, np)
        for j, e in enumerate(eps):
            below = S.mu < e
            count[j] += np.sum(below.sum(-1) * S.weight)
            share[j] += np.sum(0.5 * (r**2 * below).sum(-1) * S.weight)
    v = [np.concatenate(x) for x in vals]
    mean = np.array([x.mean() for x in v])
    se = np.array([x.std(ddof=1) / np.sqrt(x.size) for x in v])
    return mean, se, count / sequences, share / sequences / mean[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0, help="fit seed (as lintf train --seed)")
    ap.add_argument("--sequences", type=int, default=100_000, help="fresh sequences for the predict route")
    ap.add_argument("--spectra", type=int, default=2_000_000, help="importance-sampled spectra")
    ap.add_argument("--plain", type=int, default=1_000_000, help="plain W_d(n, I) spectra")
    a = ap.parse_args()
    print("reproduce: python benchmarks/gdpp_spectral_fit.py " + " ".join(sys.argv[1:]), flush=True)
    t0 = time.perf_counter()
    fit = gf.fit_gdpp(a.layers, seed=a.seed)
    print(f"fit L=1..{a.layers}: {fit.seconds:.0f} s ({gf.FIT_SEQUENCES} importance-sampled spectra, thinned)", flush=True)
    eps = (0.01, 0.03, 0.1, 0.3)
    t = time.perf_counter()
    m_is, se_is, cnt, share = spectral_losses(fit.path, a.spectra, 7 + a.seed, True, eps)
    m_pl, se_pl, _, _ = spectral_losses(fit.path, a.plain, 8 + a.seed, False, ())
    print(f"spectral estimates: {time.perf_counter() - t:.0f} s", flush=True)
    print(f"{'L':>2} {'fit points':>10} {'predict (' + str(a.sequences) + ')':>24} {'IS spectral (' + str(a.spectra) + ')':>26}"
          f" {'plain spectral (' + str(a.plain) + ')':>26} {'Δlog10 (IS)':>11}")
    prev = None
    for i, (lf, p) in enumerate(fit.path):
        pm, ps = predict_loss(p, a.sequences)
        dl = "" if prev is None else f"{np.log10(m_is[i]) - prev:+.2f}"
        prev = np.log10(m_is[i])
        print(f"{i + 1:>2} {lf:>10.3e} {pm:>13.3e} ± {ps:.1e} {m_is[i]:>15.3e} ± {se_is[i]:.1e}"
              f" {m_pl[i]:>15.3e} ± {se_pl[i]:.1e} {dl:>11}", flush=True)
    print(f"L={a.layers} parameters: omega_xx = {np.array2string(fit.params.omega_xx, precision=5)}")
    print(f"{'':>14}omega_yx = {np.array2string(fit.params.omega_yx, precision=5)}")
    for e, c, sh in zip(eps, cnt, share):
        print(f"eigenvalues below {e:<5}: E #{{mu_j < eps}} = {c:.2e} per sequence; share of the L={a.layers} loss {sh:.1%}")
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
