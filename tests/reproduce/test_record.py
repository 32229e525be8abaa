"""The one reader of a cell's record and of a setting's baselines: every tampering is a one-line error that names
the file and the cell, and a record reads back equal to what was written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from numerics.errors import LintfError
from numerics.reproduce.grid import Cell
from numerics.reproduce.record import FORMAT, Corrupt, parse_record, read_baselines, read_record
from tests.fakes import TINY, fake_baselines, fake_record

CELL = Cell("diag", 2, "uniform:1")
METHODS = ("ConstRR", "AdaRR", "TunedRR", "Bayes")


def _write(tmp_path: Path, data: object, raw: str | None = None) -> Path:
    path = tmp_path / "metrics.json"
    path.write_text(raw if raw is not None else json.dumps(data))
    return path


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    rec = fake_record(CELL, TINY)
    path = tmp_path / "metrics.json"
    path.write_bytes(rec.to_json())
    assert read_record(path, CELL.name) == rec


def _set(d: dict, dotted: str, value: object) -> dict:
    *head, last = dotted.split(".")
    node = d
    for k in head:
        node = node[int(k)] if isinstance(node, list) else node[k]
    if isinstance(node, list):
        node[int(last)] = value
    elif value is KeyError:
        del node[last]
    else:
        node[last] = value
    return d


@pytest.mark.parametrize(
    "where, value, says",
    [
        ("eval.loss", "NaN", "eval.loss is nan"),
        ("eval.minus_Bayes", "NaN", "eval.minus_Bayes is nan"),
        ("eval.minus_Bayes_se", "Infinity", "eval.minus_Bayes_se is inf"),
        ("eval.layers.minus_Bayes.1", "NaN", "eval.layers.minus_Bayes[1] is nan"),
        ("profile.loss.0.2", "NaN", "profile.loss[0][2] is nan"),
        ("eval.se", "0.1", "eval.se is a string, not a number"),
        ("layers", 10**400, "layers is an integer of 401 digits"),
        ("eval.sequences", 10**400, "eval.sequences is an integer of 401 digits"),
        ("eval", [], "eval is a list, not an object"),
        ("eval.layers", None, "eval.layers is null, not an object"),
        ("profile.sigma", {"a": 1}, "profile.sigma is an object, not a list"),
        ("eval.loss", KeyError, "eval lacks 'loss'"),
        ("training", KeyError, "the top level lacks 'training'"),
        ("training.converged", 1, "training.converged is a int, not a boolean"),
        ("start", "from_diag_cell", "start is 'from_diag_cell'"),
        ("cell", "diag-L1-uniform1", "it is the record of cell 'diag-L1-uniform1'"),
        ("surprise", 1, "the top level has an unknown key 'surprise'"),
    ],
)
def test_each_tampering_is_a_one_line_error_naming_the_file_and_the_cell(
    tmp_path: Path, where: str, value: object, says: str
) -> None:
    data = json.loads(fake_record(CELL, TINY).to_json())
    text = json.dumps(_set(data, where, value)) if value not in ("NaN", "Infinity") else None
    if (
        text is None
    ):  # NaN and inf are not JSON: written as Python's json writes them, the reader of JSON
        data = _set(
            data, where, float(value.lower().replace("infinity", "inf"))
        )  # refuses them, and the
        text = json.dumps(data)  # record's own check refuses them in a record made in memory
        with pytest.raises(Corrupt, match=re.escape(says)):
            parse_record(data, CELL.name)
        says = f"{value} is not a JSON number"
    path = _write(tmp_path, None, text)
    with pytest.raises(LintfError) as err:
        read_record(path, CELL.name)
    msg = str(err.value)
    assert (
        len(msg.splitlines()) == 1
        and str(path) in msg
        and f"cell {CELL.name}" in msg
        and says in msg
    ), msg
    assert "delete it and rerun" in msg


@pytest.mark.parametrize(
    "raw, says",
    [
        ("null", "the top level is null, not an object"),
        ("[1, 2]", "the top level is a list, not an object"),
        ('{"format": 1}', f"format is 1, this lintf reads format {FORMAT}"),
        ("{not json", "is corrupt ("),
    ],
)
def test_a_file_that_is_no_record_is_refused(tmp_path: Path, raw: str, says: str) -> None:
    with pytest.raises(LintfError, match=None) as err:
        read_record(_write(tmp_path, None, raw), CELL.name)
    assert says in str(err.value) and len(str(err.value).splitlines()) == 1


def test_a_failed_cell_may_hold_null_numbers_but_no_wrong_types(tmp_path: Path) -> None:
    data = json.loads(
        fake_record(CELL, TINY, failed="tail check: 1 of 10 sequences above 1e4").to_json()
    )
    data["eval"]["loss"] = None  # a failed cell is never a table entry
    assert read_record(_write(tmp_path, data), CELL.name).failed.startswith("tail check")
    data["eval"]["loss"] = "low"
    with pytest.raises(LintfError, match="eval.loss is a string"):
        read_record(_write(tmp_path, data), CELL.name)


@pytest.mark.parametrize(
    "where, value, says",
    [
        ("methods.TunedRR.loss", float("nan"), "NaN is not a JSON number"),
        ("methods.AdaRR.minus_Bayes", None, "methods.AdaRR.minus_Bayes is null, not a number"),
        ("profile.Bayes.loss.1", float("nan"), "NaN is not a JSON number"),
        ("profile.Bayes.loss.1", "low", "profile.Bayes.loss[1] is a string"),
        ("profile.sigma", None, "profile.sigma is null, not a list"),
        ("methods", [], "methods is a list, not an object"),
        ("eval_sequences", 10**400, "eval_sequences is an integer of 401 digits"),
    ],
)
def test_each_tampering_of_a_baselines_file_is_a_one_line_error(
    tmp_path: Path, where: str, value: object, says: str
) -> None:
    path = tmp_path / "uniform1.json"
    path.write_text(json.dumps(_set(fake_baselines("uniform:1", TINY), where, value)))
    with pytest.raises(LintfError) as err:
        read_baselines(path, METHODS)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1 and str(path) in msg and says in msg, msg


def test_the_committed_records_all_read() -> None:
    root = Path(__file__).resolve().parents[2] / "results"
    paths = sorted(root.glob("*/models/*/metrics.json"))
    assert len(paths) > 200
    for p in paths:
        assert read_record(p, p.parent.name).cell == p.parent.name
