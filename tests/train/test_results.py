"""What a finished run writes: the baselines of its own setting in ``metrics.json``."""

from __future__ import annotations

import json
from pathlib import Path

from numerics.train.config import TrainConfig
from numerics.train.loop import Result, init_state
from numerics.train.results import finalize
from tests.strategies.training import TINY


def test_metrics_hold_the_baselines_of_the_same_setting(tmp_path: Path, monkeypatch) -> None:
    """finalize calls numerics.baselines.table for the run's noise, n, d and seed and stores its
    table in metrics.json (table itself is tested in test_baselines.py; a recording stub keeps this
    fast)."""
    import numerics.baselines as nb

    calls = []

    def stub(noise, **kw):
        calls.append((noise, kw))
        return {m: {"loss": 0.125 + i, "se": 0.001} for i, m in enumerate(kw["methods"])}

    monkeypatch.setattr(nb, "table", stub)
    cfg = TrainConfig(model="diag", **{**TINY, "seeds": 2, "steps": 5})
    # the untrained start: what finalize writes does not depend on training (which
    # test_loop.py and test_rundir.py check), and no training program is compiled; two seeds,
    # TINY's n: the evaluation program of the two-seed runs there
    finalize(tmp_path, cfg, Result(init_state(cfg), curve=[[cfg.steps, 1.0]]))
    got = json.loads((tmp_path / "metrics.json").read_text())["baselines"]
    assert len(calls) == 1 and calls[0][0] == cfg.noise
    assert {k: calls[0][1][k] for k in ("n", "d", "seed")} == {
        "n": cfg.n,
        "d": cfg.d,
        "seed": cfg.seed,
    }
    assert {"ConstRR", "AdaRR", "TunedRR", "Bayes"} <= set(got) and got["ConstRR"][
        "loss"
    ] == 0.125 + 1
