"""``lintf verify`` / ``python -m proofs``: table, JSON, exit status, --only, --latex."""

from __future__ import annotations

import json

import pytest

import proofs
from numerics.cli import main


def test_json_lists_claims_with_status_and_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--only", "lemma_4_3,gram_map", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["module"] for r in rows} == {"proofs.lemma_4_3", "proofs.gram_map"}
    for r in rows:
        assert (
            r["status"] == "pass" and r["seconds"] > 0 and r["claim"] and r["ref"] and r["routes"]
        )


def test_a_failing_claim_makes_verify_exit_nonzero(capsys: pytest.CaptureFixture[str]) -> None:
    def broken(report: proofs.Report) -> None:
        report.require(1 == 2, "an identity that does not hold")

    fake = proofs.Claim("deliberately false", "Test", ("none",), broken, "proofs.gram_map")
    proofs.discover()  # register the real claims first, so that removing the fake restores the registry
    proofs.REGISTRY.append(fake)
    try:
        assert main(["verify", "--only", "gram_map"]) == 1
    finally:
        proofs.REGISTRY.remove(fake)
    out = capsys.readouterr().out
    assert "deliberately false" in out and "1 failed" in out


@pytest.mark.parametrize("only", ["no_such_claim", "", " , ", "gram_map,no_such_claim"])
def test_an_only_name_that_matches_no_claim_is_a_one_line_error(
    only: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", "--only", only]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"lintf verify: error: --only {only!r}") and "\n" not in err
    assert "no_such_claim" not in only or "'no_such_claim' matches no claim" in err, err


def test_latex_output_is_written(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    out = tmp_path / "derived.md"
    assert main(["verify", "--only", "gram_map", "--latex", str(out)]) == 0
    text = out.read_text()
    assert "M^{l+1}" in text and "w^{l+1}" in text and "$$" in text
