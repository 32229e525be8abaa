"""``lintf inspect``'s per-layer table: the columns a row holds, in the order of ``COLUMNS``, each
in its format."""

from __future__ import annotations

from numerics.cli.layer_table import print_layers


def test_a_table_shows_the_columns_its_rows_hold_in_their_formats(capsys) -> None:
    rows = [
        {"layer": 1, "loss": 0.123456, "w_norm": 2.0, "linearity_gap": 3.14159e-12},
        {"layer": 2, "loss": 0.5, "w_norm": 1.0e-9, "linearity_gap": 0.0},
    ]
    print_layers(rows)
    head, one, two = capsys.readouterr().out.splitlines()
    assert head.split() == ["l", "|w^l|", "linearity", "loss"]
    assert one.split() == ["1", "2", "3.1e-12", "0.1235"]
    assert two.split() == ["2", "1e-09", "0", "0.5"]
    assert len(head) == len(one) == 4 * 12 + 3 * 2  # right-aligned columns of 12, two spaces apart


def test_the_paper_layers_table_has_its_recursions_numbers(capsys) -> None:
    print_layers([{"layer": 1, "cos_ols": 0.99999, "a": -0.25, "u_norm": 0.0, "M_minus_I": 1.5}])
    head, row = capsys.readouterr().out.splitlines()
    assert head.split() == ["l", "cos(w,w*)", "a^l", "|u^l|", "|M^l-I|_F"]
    assert row.split() == ["1", "1.0000", "-0.25", "0", "1.5"]
