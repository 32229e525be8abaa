"""The saved-model format of the family's members (docs/saved-models.md, docs/family.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from numerics import model_file, models
from numerics.errors import LintfError
from numerics.models import family
from numerics.models.family_io import is_member_file, load_any, load_member, save_member
from tests.strategies import member_params, scaled_model, toy_batch


@pytest.mark.parametrize("name", family.MEMBERS)
def test_member_round_trip_is_exact_and_holds_no_universal_arrays(tmp_path, name):
    params = member_params(name, 41, layers=2)
    path = tmp_path / "m.npz"
    save_member(path, params, {"note": "x"})
    with np.load(path) as z:
        assert "P" not in z and "Q" not in z
        assert json.loads(str(z["meta"])) == {"note": "x", "kind": name}
    saved = load_member(path)
    assert saved.kind is models.kind_of(name) and is_member_file(path)
    for a, b in zip(saved.params, params):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert load_any(path).kind.name == name


def test_universal_files_load_as_before(tmp_path):
    data = toy_batch(42)
    P, Q = scaled_model("diag", 43, 2, 1, data)
    path = tmp_path / "u.npz"
    model_file.save_model(path, P, Q, {"kind": "diag"})
    assert not is_member_file(path)
    P2, Q2, meta = model_file.load_model(path)
    np.testing.assert_array_equal(P2, np.asarray(P))
    saved = load_any(path)
    assert saved.kind.name == "full" and meta == {"kind": "diag"}
    np.testing.assert_array_equal(np.asarray(saved.params.Q), np.asarray(Q))


def test_member_file_errors_are_one_line(tmp_path):
    params = member_params("gla", 44, layers=1)
    path = tmp_path / "m.npz"
    save_member(path, params)
    with pytest.raises(LintfError, match="it is a gla model, which has no universal form"):
        model_file.load_model(path)
    arrays = {k: np.asarray(v) for k, v in params._asdict().items()}
    bad = tmp_path / "bad.npz"
    np.savez(bad, meta=json.dumps({"kind": "gla"}), **(arrays | {"W_K": arrays["W_K"][..., :2]}))
    with pytest.raises(LintfError, match=r"W_K has shape \(1, 2, 4, 2\), expected \(1, 2, 4, 4\)"):
        load_member(bad)
    np.savez(
        bad,
        meta=json.dumps({"kind": "gla"}),
        **(arrays | {"b_alpha": np.full_like(arrays["b_alpha"], np.nan)}),
    )
    with pytest.raises(LintfError, match="b_alpha must be finite"):
        load_member(bad)
    np.savez(
        bad, meta=json.dumps({"kind": "gla"}), **{k: v for k, v in arrays.items() if k != "W_alpha"}
    )
    with pytest.raises(LintfError, match="lacks arrays W_alpha"):
        load_member(bad)
    with pytest.raises(LintfError, match="non-finite W_V"):
        save_member(tmp_path / "n.npz", params._replace(W_V=params.W_V * np.nan))
    with pytest.raises(LintfError, match="save_member saves family members"):
        save_member(tmp_path / "f.npz", models.Full(*scaled_model("full", 1, 1, 1, toy_batch(1))))
