"""The universal model file: what :func:`save_model` writes :func:`load_model` reads back, and a
file that is not one is a one-line error naming it."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from numerics import model_file
from numerics.errors import LintfError


def test_a_model_saved_is_the_model_loaded(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "sub" / "model.npz"
    P = np.arange(9.0).reshape(1, 1, 3, 3) / 3  # not float32 numbers: stored as float64
    model_file.save_model(path, P, np.eye(3)[None, None], meta={"kind": "full"})
    assert os.listdir(path.parent) == ["model.npz"]
    P2, Q2, meta = model_file.load_model(path)
    assert np.array_equal(P2, P) and np.array_equal(Q2, np.eye(3)[None, None])
    assert meta == {"kind": "full"}


def test_a_model_of_mostly_zeros_is_stored_compressed_and_loads_as_saved(tmp_path) -> None:  # noqa: ANN001
    """A DIAG-7 model's ``P`` and ``Q`` (7 layers of 11 x 11, all but a few entries zero) take
    13.5 KB as float64; the committed grids hold hundreds of them, so the file is compressed."""
    P = np.zeros((7, 1, 11, 11))
    Q = np.zeros((7, 1, 11, 11))
    P[:, 0, 10, 10], Q[:, 0, :10, :10] = 0.3, np.eye(10) * np.arange(1, 8)[:, None, None] / 7
    model_file.save_model(tmp_path / "m.npz", P, Q, meta={"kind": "diag"})
    assert (tmp_path / "m.npz").stat().st_size < (P.nbytes + Q.nbytes) / 4
    P2, Q2, _ = model_file.load_model(tmp_path / "m.npz")
    assert np.array_equal(P2, P) and np.array_equal(Q2, Q)


def test_non_finite_model_is_refused_and_nothing_is_written(tmp_path) -> None:  # noqa: ANN001
    P = np.full((1, 1, 3, 3), np.nan)
    with pytest.raises(LintfError, match="non-finite"):
        model_file.save_model(tmp_path / "m.npz", P, P)
    assert os.listdir(tmp_path) == []


def test_loading_a_non_npz_file_is_a_clear_error(tmp_path) -> None:  # noqa: ANN001
    bad = tmp_path / "m.npz"
    bad.write_text("not a model")
    with pytest.raises(LintfError, match="not an .npz archive"):
        model_file.load_model(bad)


@pytest.mark.parametrize(
    "meta, says",
    [
        ('{"a": ' * 70 + "1" + "}" * 70, "meta is not valid JSON (nested 70 levels deep"),
        ('{"noise": NaN}', "meta is not valid JSON (NaN is not a JSON number"),
        ("[1]", "meta must be a JSON object, got list"),
    ],
)
def test_load_model_reads_meta_as_json_from_a_file_lintf_did_not_write(
    meta: str, says: str, tmp_path
) -> None:  # noqa: ANN001
    path = tmp_path / "m.npz"
    np.savez(path, P=np.zeros((1, 1, 3, 3)), Q=np.zeros((1, 1, 3, 3)), meta=np.asarray(meta))
    with pytest.raises(LintfError, match=f"^model file {str(path)!r}: " + re.escape(says)):
        model_file.load_model(path)
