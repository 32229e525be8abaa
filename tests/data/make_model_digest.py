"""Digest of every committed model file: its sha256 and what it predicts on fixed sequences.

For each ``results/**/model.npz`` this records the file's sha256 and, on ``SEQUENCES`` fresh float64
sequences drawn from the key ``PRNGKey(SEED)`` with the cell's noise (the model's ``meta`` config, else its
``metrics.json``), the mean adjusted loss (model minus the oracle ridge) and the sha256 of the float64
prediction bytes of the Gram-form pass and of the fast training pass.  ``tests/test_model_digest.py``
recomputes every entry whose file is unchanged and requires exact equality (the mean adjusted loss, which
subtracts the oracle's machine-dependent ``eigh``, to a relative 1e-12).

It also records, byte for byte, the JSON of every sweep cell's plan (every budget, every part) and of the
training config dictionaries of a few configs: a stored cell of another plan is retrained.

Regenerate (only after a deliberate change of a committed model)::

    PYTHONPATH=$PWD python tests/data/make_model_digest.py
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "model_digest.json"
SEQUENCES = 500
SEED = 20240
COMMAND = "PYTHONPATH=$PWD python tests/data/make_model_digest.py"


def model_files() -> list[Path]:
    """Every committed model file (tracked by git: a sweep running beside may have written others), sorted by its
    path relative to the repository."""
    import subprocess

    out = subprocess.run(
        ["git", "ls-files", "-z", "results/**/model.npz"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # The family's models (results/family/) are member files without a universal P, Q: the family grid's
    # own table and records are theirs (docs/family.md).
    return sorted(ROOT / f for f in out.split("\0") if f and not f.startswith("results/family/"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cell_setting(path: Path, meta: dict[str, Any]) -> tuple[str, int, int]:
    """``(noise, n, d)`` of the cell: the model's own config, else the run directory's ``metrics.json``."""
    cfg = meta.get("config") or {}
    if "noise" not in cfg:
        cfg = json.loads((path.parent / "metrics.json").read_text())
    return str(cfg["noise"]), int(cfg.get("n", 20)), int(cfg.get("d", 10))


@functools.cache
def sequences(noise: str, n: int, d: int) -> tuple[Any, Any, Any]:
    """The fixed sequences of a setting, the oracle's predictions on them and their targets: the same for every
    model of the setting, so drawn once."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from numerics.baselines.spectral import spectral
    from numerics.data import sample
    from numerics.evaluate.losses import oracle_predict

    b = sample(jax.random.PRNGKey(SEED), noise, SEQUENCES, n, d, jnp.float64)
    oracle = np.asarray(oracle_predict(spectral(b.X, b.y, b.x_query), b.sigma), np.float64)
    return b, oracle, np.asarray(b.y_query, np.float64)


@functools.cache
def passes() -> tuple[Any, Any]:
    """The Gram-form pass and the fast training pass, each jitted as training and evaluation run them: one program
    per depth, so that the digest of hundreds of models does not dispatch every operation of every layer."""
    import jax

    from numerics.models import Full, predict
    from numerics.models.forward import predict_fast

    return jax.jit(predict), jax.jit(
        lambda P, Q, X, y, x_query: predict_fast(Full(P, Q), X, y, x_query)
    )


def digest(path: Path) -> dict[str, Any]:
    """The entry of one model file (float64 throughout; needs ``jax_enable_x64``)."""
    import jax.numpy as jnp
    import numpy as np

    from numerics.model_file import load_model

    P, Q, meta = load_model(path)
    noise, n, d = cell_setting(path, meta)
    b, oracle, yq = sequences(noise, n, d)
    P, Q = jnp.asarray(P, jnp.float64), jnp.asarray(Q, jnp.float64)
    gram, fast_pass = passes()
    pred = np.asarray(gram(P, Q, b.X, b.y, b.x_query), np.float64)
    fast = np.asarray(fast_pass(P, Q, b.X, b.y, b.x_query), np.float64)
    adjusted = 0.5 * (yq - pred) ** 2 - 0.5 * (yq - oracle) ** 2
    return {
        "sha256": sha256(path),
        "noise": noise,
        "n": n,
        "d": d,
        "adjusted_loss": float(adjusted.mean()),
        "predictions_sha256": hashlib.sha256(np.ascontiguousarray(pred).tobytes()).hexdigest(),
        "fast_predictions_sha256": hashlib.sha256(np.ascontiguousarray(fast).tobytes()).hexdigest(),
    }


#: Training configs whose ``config_dict`` JSON is recorded (keyword arguments of ``TrainConfig``).
CONFIGS: tuple[dict[str, Any], ...] = (
    {"model": "full", "layers": 3},
    {"model": "diag", "layers": 2},
    {"model": "gdpp", "layers": 4},
    {"model": "gdpp", "layers": 2, "noise": "fixed:0", "init": "spectral", "gdpp_xx": "free"},
    {
        "model": "diag",
        "layers": 5,
        "noise": "categorical:1,3,5",
        "y_step": "scaled",
        "lr": 3e-3,
        "warmup": 10,
        "trust": 0.0,
        "huber": 0.0,
        "chunk": 50,
        "seeds": 4,
    },
    {"model": "full", "layers": 2, "diag_steps": 0, "y_step": "plain", "final_fraction": 0.5},
)


def signatures() -> dict[str, str]:
    """``budget/cell -> json.dumps(plan_of)`` for every cell of every budget, and ``config/i ->
    json.dumps(config_dict)`` for :data:`CONFIGS`."""
    from numerics.reproduce import grid
    from numerics.train.config import TrainConfig, config_dict

    out = {}
    for name, budget in grid.BUDGETS.items():
        for cell in grid.cells_for(budget, grid.PARTS):
            out[f"{name}/{cell.name}"] = json.dumps(grid.plan_of(cell, budget), sort_keys=True)
    for i, kw in enumerate(CONFIGS):
        out[f"config/{i}"] = json.dumps(config_dict(TrainConfig(**kw)))
    return out


def main() -> int:
    import jax

    jax.config.update("jax_enable_x64", True)
    table = {str(p.relative_to(ROOT)): digest(p) for p in model_files()}
    sigs = signatures()
    OUT.write_text(
        json.dumps(
            {"sequences": SEQUENCES, "seed": SEED, "models": table, "signatures": sigs},
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    print(f"wrote {OUT.relative_to(ROOT)}: {len(table)} models, {len(sigs)} signatures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
