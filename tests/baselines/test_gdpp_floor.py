"""Printed GD++ values against their floor, ridge at λ = E σ²
(:mod:`numerics.baselines.gdpp_floor`).

Independent routes: the floor's numbers recomputed from its own entry (the difference, its unpaired
SE and the flag), and synthetic printed values placed above and below the floor.
"""

from __future__ import annotations

import json
import math
import re

import pytest

from numerics.baselines import gdpp_floor
from numerics.cli import main

U5, C13 = "uniform:5", "categorical:1,3"


def test_the_impossible_rule_is_three_standard_errors_below() -> None:
    se = 0.01
    assert gdpp_floor.impossible(-3 * se - 1e-6, se)
    assert not gdpp_floor.impossible(-3 * se + 1e-6, se)
    assert not gdpp_floor.impossible(-5e-10, 0.0)  # float64 rounding at σ = 0
    assert gdpp_floor.impossible(-2e-9, 0.0)


def test_printed_values_below_the_floor_are_flagged(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "printed.csv"
    path.write_text('noise,depth,value,se\nuniform:5,7,0.3630,0.0157\n"categorical:1,3",4,0.05,\n')
    rows = gdpp_floor.read_printed(path)
    assert rows == [gdpp_floor.Printed(U5, 7, 0.363, 0.0157), gdpp_floor.Printed(C13, 4, 0.05, 0.0)]
    out = gdpp_floor.check_printed(rows, sequences=4000)
    assert [flag for _, _, flag, _ in out] == [False, True] and "IMPOSSIBLE" in out[1][3]
    js = tmp_path / "printed.json"
    js.write_text(json.dumps([{"noise": U5, "depth": 7, "value": 0.363, "se": 0.0157}]))
    assert gdpp_floor.read_printed(js) == rows[:1]


@pytest.mark.parametrize(
    "text,suffix,word",
    [
        ("noise,value\nuniform:5,0.3\n", ".csv", "header"),
        ("noise,depth,value\nuniform:5,0,0.3\n", ".csv", "depth"),
        ("noise,depth,value\nuniform:5,2.5,0.3\n", ".csv", "depth"),
        ("noise,depth,value\nuniform:5,2,nan\n", ".csv", "finite"),
        ("noise,depth,value\ngauss:5,2,0.3\n", ".csv", "noise spec"),
        ("noise,depth,value\ncategorical:1,3,2,0.3\n", ".csv", "quote"),
        ("noise,depth,value\n", ".csv", "no rows"),
        (
            '[{"noise": "uniform:5", "depth": 2.5, "value": 0.3}]',
            ".json",
            "depth must be an integer >= 1",
        ),
        ('{"noise": "uniform:5"}', ".json", "list of objects"),
        ("[{", ".json", "not valid JSON"),
    ],
)
def test_bad_printed_tables_are_one_line_errors(
    text: str,
    suffix: str,
    word: str,
    tmp_path,  # noqa: ANN001
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / f"t{suffix}"
    path.write_text(text)
    with pytest.raises(ValueError, match=word):
        gdpp_floor.read_printed(path)
    assert main(["verify", "--only", "gram_map", "--printed", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lintf verify: error: --printed") and "\n" not in err


def test_missing_printed_file_is_a_one_line_error(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:  # noqa: ANN001
    assert main(["verify", "--printed", str(tmp_path / "none.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"lintf verify: error: --printed {str(tmp_path / 'none.csv')!r} does not exist", (
        err
    )


def test_a_printed_table_that_is_a_directory_or_not_utf8_is_a_one_line_error(
    tmp_path,  # noqa: ANN001
    capsys: pytest.CaptureFixture[str],
) -> None:
    binary = tmp_path / "t.csv"
    binary.write_bytes(b"noise,depth,value\n\xff\xfe,2,0.3\n")
    for path, said in (
        (tmp_path, f"{str(tmp_path)!r} is not a regular file"),
        (binary, f"{binary}: not UTF-8 text"),
    ):
        assert main(["verify", "--only", "gram_map", "--printed", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"lintf verify: error: --printed {said}") and "\n" not in err, err


def test_the_printed_check_reports_the_unpaired_difference_to_the_floor() -> None:
    row = gdpp_floor.Printed(U5, 3, 0.30, 0.02)
    [(_, fl, flag, text)] = gdpp_floor.check_printed([row], sequences=4000)
    diff, se = 0.30 - fl["loss"], math.hypot(0.02, fl["se"])
    said = re.search(r"difference ([+-][0-9.]+) ± ([0-9.]+)", text)
    assert said and float(said[1]) == pytest.approx(diff, abs=5e-5), (text, diff)
    assert float(said[2]) == pytest.approx(se, abs=5e-5), (text, se)
    assert flag == (diff < -3 * se) and fl["loss"] > 0.3
