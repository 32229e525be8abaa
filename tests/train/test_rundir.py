"""Run directories: a killed run resumes to the uninterrupted numbers, a warm start is known by its
content, and a non-finite state is never checkpointed."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from numerics.errors import LintfError
from numerics.model_file import load_model
from numerics.train.checkpoint import save_checkpoint
from numerics.train.config import TrainConfig
from numerics.train.loop import Result, init_state, train
from numerics.train.rundir import prepare
from numerics.train.rundir import run as run_dir
from tests.strategies.training import TINY

#: The run both resume checks train (and evaluate), compiled once: DIAG, two seeds.
RUN = dict(model="diag", seeds=2, **TINY)


def test_resume_after_interrupt_equals_uninterrupted(tmp_path: Path) -> None:
    cfg = TrainConfig(**RUN)
    whole = run_dir(cfg, tmp_path / "whole", progress=False, baselines=False)
    before = time.time()
    assert (
        run_dir(cfg, tmp_path / "cut", progress=False, baselines=False, stop_at=10) is None
    )  # "killed" at step 10
    assert not (tmp_path / "cut" / "model.npz").exists()
    with np.load(
        tmp_path / "cut" / "checkpoint.npz"
    ) as z:  # the checkpoint says when it was written
        assert before <= json.loads(str(z["meta"]))["time"] <= time.time()
    # the checkpoint's run goes on from step 10: only the chunks after it are trained
    held = prepare(tmp_path / "cut", cfg)
    assert held is not None and int(held.state.step) == 10 and len(held.curve) == 2
    chunks: list[int] = []
    train(cfg, resume=held, on_chunk=lambda s, r: chunks.append(int(s.step)))
    assert chunks == [15, 20]
    resumed = run_dir(cfg, tmp_path / "cut", progress=False, baselines=False)  # same command again
    P1, Q1, _ = load_model(tmp_path / "whole" / "model.npz")
    P2, Q2, _ = load_model(tmp_path / "cut" / "model.npz")
    np.testing.assert_array_equal(P1, P2)
    np.testing.assert_array_equal(Q1, Q2)
    assert whole["adjusted_loss"] == resumed["adjusted_loss"] and whole["curve"] == resumed["curve"]
    with pytest.raises(LintfError, match="different config"):
        run_dir(TrainConfig(**{**RUN, "seeds": 3}), tmp_path / "whole", progress=False)


def test_a_run_resumes_from_a_start_moved_elsewhere_but_not_from_another_start(
    tmp_path: Path,
) -> None:
    """The start's content defines a warm-started run, not its path: a run directory whose start
    file now lies elsewhere (a sweep moved or copied, ``--out`` spelled another way) resumes to the
    uninterrupted run's numbers; a start with other content at that path is another run, and is
    refused."""
    import shutil

    first = run_dir(TrainConfig(**RUN), tmp_path / "diag", progress=False, baselines=False)
    assert first is not None
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    shutil.copy(tmp_path / "diag" / "model.npz", here / "start.npz")
    cfg = TrainConfig(**{**RUN, "warm_start": str(here / "start.npz")})  # the first run's program
    whole = run_dir(cfg, tmp_path / "whole", progress=False, baselines=False)
    for cut in ("cut", "other"):
        assert run_dir(cfg, tmp_path / cut, progress=False, baselines=False, stop_at=10) is None
    here.rename(there)
    moved = replace(cfg, warm_start=str(there / "start.npz"))
    resumed = run_dir(moved, tmp_path / "cut", progress=False, baselines=False)
    assert resumed["adjusted_loss"] == whole["adjusted_loss"] and resumed["curve"] == whole["curve"]
    np.testing.assert_array_equal(
        load_model(tmp_path / "cut" / "model.npz")[1],
        load_model(tmp_path / "whole" / "model.npz")[1],
    )

    other = TrainConfig(**{**RUN, "seed": 5})
    run_dir(other, tmp_path / "diag5", progress=False, baselines=False)
    shutil.copy(tmp_path / "diag5" / "model.npz", there / "start.npz")
    with pytest.raises(LintfError, match=r"different config \(warm_start, warm_start_sha256\)"):
        run_dir(moved, tmp_path / "other", progress=False, baselines=False)


def test_checkpoint_refuses_non_finite(tmp_path: Path) -> None:
    cfg = TrainConfig(**RUN)
    s = init_state(cfg)
    bad = s._replace(params=jax.tree_util.tree_map(lambda a: a.at[0].set(jnp.nan), s.params))
    with pytest.raises(LintfError, match="non-finite"):
        save_checkpoint(tmp_path, bad, Result(bad))
