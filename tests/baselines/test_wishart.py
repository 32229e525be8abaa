"""The spectra the GD++ spectral fit averages over: the importance sampler against the one-layer
closed form (derived from Wishart moments, not from spectra), and the thinning's quadrature."""

from __future__ import annotations

import numpy as np

from lintf_theory import one_step_rule
from numerics.baselines import gdpp_fit as gf
from numerics.baselines import wishart
from numerics.models import Gdpp


def test_importance_sampler_is_unbiased_against_the_one_layer_closed_form() -> None:
    eta, loss = (float(v) for v in one_step_rule()[1].numpy(20, 10, 0.0))
    sample = wishart.sample_spectra(3, 50_000)
    assert sample.weight.max() <= 1 / wishart.PROPOSAL[0][0] + 1e-12  # defensive mixture bound
    est, se = gf.estimate(Gdpp(np.zeros(1), np.array([-eta])), sample)
    assert abs(est - loss) < 4 * se, (est, se, loss)
    plain = wishart.sample_spectra(3, 2_000, importance=False)
    assert np.all(plain.weight == 1.0)
