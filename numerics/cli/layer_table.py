"""The per-layer table of ``lintf inspect``, for the paper's layer (:mod:`numerics.cli.inspect`)
and for a member of the family (:mod:`numerics.cli.inspect_family`)."""

from __future__ import annotations

from typing import Any

#: ``(key of a row, header, format)``, in the order printed; a table shows the columns its rows
#: hold (the paper's layer: ``a^l``, ``|u^l|``, ``|M^l − I|``; a member: its linearity gap).
COLUMNS = (
    ("layer", "l", "{:d}"),
    ("w_norm", "|w^l|", "{:.4g}"),
    ("cos_ols", "cos(w,w*)", "{:.4f}"),
    ("dist_ols", "|w-w*|/|w*|", "{:.4g}"),
    ("cos_ridge", "cos(w,ridge)", "{:.4f}"),
    ("dist_ridge", "|w-rr|/|rr|", "{:.4g}"),
    ("linearity_gap", "linearity", "{:.2g}"),
    ("a", "a^l", "{:.4g}"),
    ("u_norm", "|u^l|", "{:.4g}"),
    ("M_minus_I", "|M^l-I|_F", "{:.4g}"),
    ("loss", "loss", "{:.4g}"),
)


def print_layers(rows: list[dict[str, Any]]) -> None:
    """Print ``rows`` (one a layer) under the headers of the :data:`COLUMNS` they hold."""
    cols = [c for c in COLUMNS if c[0] in rows[0]]
    print("  ".join(f"{h:>12}" for _, h, _ in cols))
    for r in rows:
        print("  ".join(f"{f.format(r[k]):>12}" for k, _, f in cols))
