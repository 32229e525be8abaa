"""The checkpoint's writer and reader: a saved state reads back leaf for leaf, with its curve,
rollbacks, skipped losses, history and seconds; a meta of the wrong shape is a ValueError naming the
part, and an archive of another config's state names the array."""

from __future__ import annotations

import json
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from numerics.train.checkpoint import read_checkpoint, save_checkpoint
from numerics.train.config import TrainConfig
from numerics.train.loop import train
from tests.strategies.training import TINY, leaves

#: Every check here trains this config (one compiled program).
RUN = dict(model="diag", seeds=2, **TINY)


def test_a_saved_checkpoint_reads_back_as_it_was(tmp_path: Path) -> None:
    cfg = TrainConfig(**RUN)
    res = train(cfg, stop_at=10)
    res = replace(res, seconds=12.5, skipped=3, history=[(res.state, 5, 1)])
    save_checkpoint(tmp_path, res.state, res)
    back = read_checkpoint(tmp_path / "checkpoint.npz", cfg)
    for x, y in zip(leaves(res.state), leaves(back.state)):
        np.testing.assert_array_equal(x, y)
    assert back.curve == res.curve and back.rollbacks == res.rollbacks
    assert (back.seconds, back.skipped) == (12.5, 3)
    assert [(n, k) for _, n, k in back.history] == [(5, 1)]
    for x, y in zip(leaves(res.state), leaves(back.history[0][0])):
        np.testing.assert_array_equal(x, y)


def _with_meta(ck: Path, edit) -> None:  # noqa: ANN001
    with zipfile.ZipFile(ck) as z:
        files = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(np.load(ck)["meta"].item())
    np.savez(
        ck,
        meta=np.asarray(json.dumps(edit(meta))),
        **{n[:-4]: np.load(ck)[n[:-4]] for n in files if n != "meta.npy"},
    )


@pytest.mark.parametrize(
    ("edit", "part"),
    [
        (lambda m: m | {"step": -1}, "step"),
        (lambda m: m | {"leaves": True}, "leaves"),
        (lambda m: m | {"curve": [[1, "x"]]}, "curve"),
        (lambda m: m | {"rollbacks": [1]}, "rollbacks"),
        (lambda m: m | {"history_marks": [[1]]}, "history_marks"),
        (lambda m: m | {"seconds": -1.0}, "training time"),
        (lambda m: [m], "not a JSON object"),
    ],
)
def test_a_meta_of_the_wrong_shape_names_its_part(tmp_path: Path, edit, part: str) -> None:  # noqa: ANN001
    cfg = TrainConfig(**RUN)
    res = train(cfg, stop_at=5)
    save_checkpoint(tmp_path, res.state, res)
    _with_meta(tmp_path / "checkpoint.npz", edit)
    with pytest.raises(ValueError, match=part):
        read_checkpoint(tmp_path / "checkpoint.npz", cfg)


def test_another_configs_checkpoint_names_the_array(tmp_path: Path) -> None:
    res = train(TrainConfig(**RUN), stop_at=5)
    save_checkpoint(tmp_path, res.state, res)
    with pytest.raises(ValueError, match=r"array \d+ is"):
        read_checkpoint(tmp_path / "checkpoint.npz", TrainConfig(**{**RUN, "layers": 3}))
