"""Two host devices split the batch and give the numbers of one device."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# --- sharding ------------------------------------------------------------------------------------
_SHARD_SCRIPT = r"""
import json, jax, numpy as np
from numerics.train.config import TrainConfig
from numerics.train.loop import train
cfg = TrainConfig(model="full", seeds=2, layers=2, noise="uniform:2", n=6, d=3, batch=64, steps=10, chunk=5)
one = train(cfg, devices=jax.devices()[:1])
two = train(cfg)
diff = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / (1e-3 + np.abs(np.asarray(a)))))
           for a, b in zip(jax.tree_util.tree_leaves(one.state.params), jax.tree_util.tree_leaves(two.state.params)))
print(json.dumps({"devices": len(jax.devices()), "rel_diff": diff, "curve_diff":
      float(np.max(np.abs(np.asarray(one.curve) - np.asarray(two.curve))))}))
"""


def test_two_device_sharding_matches_single_device() -> None:
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
        "JAX_PLATFORMS": "cpu",
    }
    out = subprocess.run(
        [sys.executable, "-c", _SHARD_SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["devices"] == 2
    # float32 sums over the batch in a different order: agreement to float32 round-off, amplified by 10 Adam steps.
    assert r["rel_diff"] < 1e-4 and r["curve_diff"] < 1e-5, r
