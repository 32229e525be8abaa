"""Test configuration: float64, Hypothesis profiles, runtime shape checks.

Profiles (select with ``HYPOTHESIS_PROFILE=dev|ci|slow``; ``ci`` is the default when ``CI`` is
set, else ``dev``).  ``deadline=None`` because JAX compiles on the first example.  ``ci`` is
derandomised so a CI run is reproducible; ``--hypothesis-seed=N`` fixes the seed for any profile.
"""

from __future__ import annotations

import os

import jax
from hypothesis import HealthCheck, Phase, settings

# Verification runs in float64; training code states float32 explicitly where it wants it.
jax.config.update("jax_enable_x64", True)

_common = dict(deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=25, **_common)
settings.register_profile("ci", max_examples=25, derandomize=True, **_common)
settings.register_profile("slow", max_examples=200, **_common)
# For checking that a deliberately broken build fails: report the first failure without shrinking.
settings.register_profile("noshrink", max_examples=25, phases=[Phase.explicit, Phase.reuse, Phase.generate], **_common)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)
