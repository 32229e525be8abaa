r"""The data model's invariants (docs/model.md), one test each, on :func:`numerics.data.sample`.

Each sequence ``τ`` draws ``w_τ ~ N(0, I_d)`` and one noise level ``σ_τ``; every context token gets
``y_i = ⟨w_τ, x_i⟩ + σ_τ ξ_i`` with ``x_i ~ N(0, I_d)``, ``ξ_i ~ N(0, 1)``; the query target is noiseless.
Samples are deterministic by key, so the statistical checks below give the same verdict on every run;
their thresholds are set so that a scale of 1.2 on ``x`` or ``w`` fails by a wide margin (see each test).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from numerics.data import Batch, Noise, XDist, sample

B, N, D = 4000, 8, 3  # 96 000 context inputs, 12 000 weights, 12 000 query inputs
NOISES = ("uniform:5", "categorical:1,3")
# A KS p-value below this rejects: N(0, 1.2²) against N(0, 1) differs by 0.044 in CDF, which on 12 000
# draws gives p ≈ 1e-20 (and on 96 000 far less); a correct sampler gives p ~ U(0, 1).
P_MIN = 1e-6
# Moment checks: |estimate − value| <= Z_SE standard errors.
Z_SE = 5.0


def _batch(noise: str, seed: int = 0) -> Batch:
    return sample(jax.random.PRNGKey(seed), noise, B, N, D, jnp.float64)


def _residuals(b: Batch) -> np.ndarray:
    """``y_i − ⟨w_τ, x_i⟩`` ``(B, n)``: the noise that the sampler added to every context target."""
    return np.asarray(b.y) - np.einsum("bnd,bd->bn", np.asarray(b.X), np.asarray(b.w))


@pytest.mark.parametrize("noise", NOISES)
def test_query_target_is_noiseless(noise: str) -> None:
    """``y_t = ⟨w_τ, x_t⟩`` to rounding, while the context targets carry noise of size ``σ_τ``."""
    b = _batch(noise)
    exact = np.einsum("bd,bd->b", np.asarray(b.x_query), np.asarray(b.w))
    # float64 dot products of 3 O(1) terms: rounding is a few 1e-16; noise would be O(σ) = O(1).
    assert np.max(np.abs(np.asarray(b.y_query) - exact)) < 1e-12 * np.max(np.abs(exact))
    assert np.median(np.abs(_residuals(b))) > 0.1


@pytest.mark.parametrize("noise", NOISES)
def test_sigma_is_drawn_per_sequence(noise: str) -> None:
    """Sequences of one batch get different ``σ_τ`` (all distinct under ``uniform:``, both levels under
    ``categorical:1,3`` in about equal shares), and ``σ_τ`` is the level of that sequence's noise."""
    b = _batch(noise)
    sigma = np.asarray(b.sigma)
    if noise.startswith("uniform"):
        assert np.unique(sigma).size == B
    else:
        assert set(np.unique(sigma)) == {1.0, 3.0}
        share = np.mean(sigma == 1.0)
        assert abs(share - 0.5) < Z_SE * np.sqrt(0.25 / B), share
    r2 = np.mean(_residuals(b) ** 2, axis=1)  # per-sequence noise power, E = σ_τ²
    slope = np.sum(r2 * sigma**2) / np.sum(sigma**4)  # least-squares fit r2 ≈ k σ_τ²
    assert abs(slope - 1) < 0.05, slope


@pytest.mark.parametrize("noise", NOISES)
def test_context_tokens_of_a_sequence_share_sigma(noise: str) -> None:
    """``(y_i − ⟨w_τ, x_i⟩) / σ_τ`` is standard normal over all tokens: one ``σ_τ`` per sequence, not per token.

    Noise drawn per token with the same marginal law would make the ratio a scale mixture (heavy-tailed)
    and fail the KS test; a shared level other than ``σ_τ`` would move its variance off 1.
    """
    b = _batch(noise)
    sigma = np.asarray(b.sigma)
    keep = sigma > 0.05  # σ_τ ≈ 0 divides rounding by almost nothing
    z = (_residuals(b)[keep] / sigma[keep, None]).ravel()
    assert stats.kstest(z, "norm").pvalue > P_MIN
    assert abs(z.var() - 1) < Z_SE * np.sqrt(2 / z.size), z.var()


@pytest.mark.parametrize("field", ["X", "x_query", "w"])
def test_inputs_and_weights_are_standard_normal(field: str) -> None:
    """Every coordinate ``~ N(0, 1)``, coordinates uncorrelated: KS, mean, variance and covariance.

    Smallest sample is 12 000 draws: the variance has standard error ``√(2/12000) ≈ 0.013``, so a
    scale of 1.2 (variance 1.44) is 34 standard errors away; ``Z_SE = 5`` leaves a correct sampler
    room and a wrong scale none.
    """
    v = np.asarray(getattr(_batch("uniform:1"), field)).reshape(-1, D)
    m = v.shape[0]
    assert stats.kstest(v.ravel(), "norm").pvalue > P_MIN
    assert np.all(np.abs(v.mean(0)) < Z_SE / np.sqrt(m))
    cov = np.cov(v, rowvar=False)
    se = np.where(np.eye(D) > 0, np.sqrt(2 / m), np.sqrt(1 / m))  # of a variance, of a covariance
    assert np.all(np.abs(cov - np.eye(D)) < Z_SE * se), cov


@pytest.mark.parametrize(
    "spec, label",
    [
        ("fixed:-0", "fixed:0"),
        ("uniform:-0.0", "uniform:0"),
        ("categorical:-0,1", "categorical:0,1"),
    ],
)
def test_a_negative_zero_level_is_zero(spec: str, label: str) -> None:
    """``-0`` is a valid level (it is not below 0); it is stored as ``0``, so labels never read ``-0``."""
    nz = Noise.parse(spec)
    assert str(nz) == label and nz == Noise.parse(label)
    assert all(np.copysign(1.0, v) == 1.0 for v in nz.values)


@pytest.mark.parametrize(
    "spec",
    [
        "uniform:2.71828182",
        "fixed:1e-07",
        "categorical:0.1,0.30000000000000004",
        "fixed:123456789",
        "uniform:5",
    ],
)
def test_a_settings_label_reads_back_as_the_same_setting(spec: str) -> None:
    """``str`` of a setting names every level exactly, so a label (in a model's meta, a file name) is the setting."""
    nz = Noise.parse(spec)
    assert Noise.parse(str(nz)) == nz and str(nz) == spec
    x = XDist.parse("uniform:1,1.0000001")
    assert XDist.parse(str(x)) == x and str(x) == "uniform:1,1.0000001"


def test_inputs_too_small_to_square_are_refused_and_minus_zero_is_zero() -> None:
    """``uniform:0,1e-300`` squares to 0 in float64 (nothing to regress): refused; ``-0`` as an end is ``0``."""
    with pytest.raises(ValueError, match=r"max\(\|a\|, \|b\|\) >= 1e-100"):
        XDist.parse("uniform:0,1e-300")
    assert str(XDist.parse("uniform:-1e-100,0")) == "uniform:-1e-100,0"
    assert (
        str(XDist.parse("uniform:-0,0.5")) == "uniform:0,0.5"
        and XDist.parse("uniform:-0.0,1").low == 0.0
    )
