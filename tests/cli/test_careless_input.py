"""A careless user's input that is not a file's content: the environment, an output that cannot be written, numbers
past float64 in options, ``verify --only`` names, a spreadsheet's CSV, all-zero data, a full disk.  Each is one line
(or, where valid, works), before any work."""

from __future__ import annotations

import codecs
import contextlib
import io
import signal
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from numerics.baselines.gdpp_floor import read_printed
from numerics.cli import environment, main
from numerics.cli import reproduce as cli_reproduce
from numerics.errors import LintfError
from numerics.model_file import save_model
from numerics.train.devices import FLAG, MAX_COUNT
from proofs import discover, ref_parts
from tests.strategies.hostile import bad_xla_flags, huge_number_texts

#: Numbers whose exact value no float holds: an option that expands them exactly (a ``Fraction``) hangs.
HUGE_NUMBERS = [
    "1e999999999",
    "-1e999999999",
    "1e-999999999",
    "1/1e-999999999",
    "1e999999999/3",
    "9" * 5000,
]


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "flags",
    [
        f"{FLAG}=abc",
        f"{FLAG}=0",
        f"{FLAG}=-1",
        f"{FLAG}=",
        FLAG,
        f"{FLAG}=65",
        f"{FLAG}=2 {FLAG}=4",
        f"--foo {FLAG}=٣",
    ],
)
def test_a_bad_host_device_count_in_xla_flags_is_one_line(flags: str) -> None:
    with pytest.raises(
        LintfError, match=rf"^XLA_FLAGS: {FLAG} must be given once as an integer in 1\.\.64, got "
    ):
        environment.xla_flags({"XLA_FLAGS": flags})


@pytest.mark.parametrize(
    "flags", ["", f"{FLAG}=1", f"--xla_cpu_foo=1 {FLAG}=8", f"{FLAG}_other=abc"]
)
def test_a_good_host_device_count_in_xla_flags_is_accepted(flags: str) -> None:
    environment.xla_flags({"XLA_FLAGS": flags})


@given(case=bad_xla_flags(FLAG, MAX_COUNT))
@settings(max_examples=200, deadline=None, database=None)
def test_any_bad_host_device_count_in_xla_flags_is_one_line(case: tuple[str, str]) -> None:
    label, flags = case
    with pytest.raises(LintfError, match=rf"^XLA_FLAGS: {FLAG} must be given once as an integer"):
        environment.xla_flags({"XLA_FLAGS": flags})


@given(count=st.integers(1, MAX_COUNT), zeros=st.integers(0, 2))
@settings(max_examples=50, deadline=None, database=None)
def test_any_good_host_device_count_in_xla_flags_is_accepted(count: int, zeros: int) -> None:
    environment.xla_flags({"XLA_FLAGS": f"--xla_cpu_foo=1 {FLAG}={'0' * zeros}{count}"})


def test_the_console_command_checks_xla_flags_before_jax_starts(monkeypatch, capsys) -> None:  # noqa: ANN001
    monkeypatch.setenv("XLA_FLAGS", f"{FLAG}=0")
    monkeypatch.setattr(sys, "argv", ["lintf", "verify", "--only", "gram_map"])
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGALRM), sys.unraisablehook
    try:
        assert main() == 2
    finally:  # the console command installs its interrupt handling; the test process keeps its own
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGALRM, handlers[1])
        sys.unraisablehook = handlers[2]
    err = capsys.readouterr().err.strip()
    assert err.startswith("lintf: error: XLA_FLAGS: ") and "\n" not in err, err


@pytest.mark.parametrize("argv", [["--help"], ["reproduce", "--help"], ["convert", "--help"]])
def test_help_that_cannot_be_written_is_an_error(argv: list[str], monkeypatch, capsys) -> None:  # noqa: ANN001
    with open("/dev/full", "w") as full:
        monkeypatch.setattr(sys, "stdout", full)
        assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == "lintf: error: cannot write the help text: No space left on device", err


#: Parses every number of ``HUGE_NUMBERS`` with every typed option of every sub-command; prints how many it tried.
PARSE_ALL = """
import argparse, contextlib, sys
from numerics.cli import build_parser
sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
tried = 0
for name, p in sub.choices.items():
    for a in p._actions:
        if a.option_strings and a.type is not None:
            for text in sys.argv[1:]:
                with contextlib.suppress(Exception):
                    a.type(text)
                tried += 1
print(tried, any("--value-scale" in a.option_strings for a in sub.choices["convert"]._actions))
"""


def _numbers_past_float64(numbers: list[str]) -> None:
    """Each option's parser gets each number, in another process: one still working after two minutes is a hang
    (the exact expansion of ``1e999999999`` holds the interpreter for hours), not a slow machine."""
    res = subprocess.run(
        [sys.executable, "-c", PARSE_ALL, *numbers],
        capture_output=True,
        text=True,
        timeout=120,
    )
    tried, has_scale = res.stdout.split()
    assert res.returncode == 0 and int(tried) > 10 * len(numbers) and has_scale == "True", (
        res.stderr
    )
    for text in numbers:
        rc, _, err = _run(["convert", "x.npz", "--out", "y.npz", "--value-scale", text])
        assert rc == 2 and "--value-scale" in err and len(err.splitlines()) == 1, err


@given(drawn=st.lists(huge_number_texts(), min_size=10, max_size=10))
@settings(max_examples=2, deadline=None, database=None)
def test_every_numeric_option_answers_numbers_past_float64_at_once(drawn: list[str]) -> None:
    """The listed numbers and ten drawn ones."""
    _numbers_past_float64(HUGE_NUMBERS + drawn)


@pytest.mark.slow
@given(drawn=st.lists(huge_number_texts(), min_size=20, max_size=20))
@settings(max_examples=20, deadline=None, database=None)
def test_every_numeric_option_answers_numbers_past_float64_at_once_many(drawn: list[str]) -> None:
    _numbers_past_float64(drawn)


@pytest.mark.parametrize("only", ["s", "lemma", "gram", "theorem_5", "4.1", "proofs"])
def test_verify_only_matches_whole_names_never_substrings(only: str) -> None:
    rc, out, err = _run(["verify", "--only", only])
    assert rc == 2 and out == "" and f"--only {only!r}: {only!r} matches no claim" in err, err


#: What ``verify --only`` matches whole: each claim's module name and each part of its paper ref.
WHOLE_NAMES = sorted(
    {c.module.removeprefix("proofs.") for c in discover()}
    | {p for c in discover() for p in ref_parts(c.ref)}
)


@given(name=st.sampled_from(WHOLE_NAMES), data=st.data())
@settings(max_examples=100, deadline=None, database=None)
def test_verify_only_refuses_any_part_of_a_name_that_is_no_whole_name(
    name: str, data: st.DataObject
) -> None:
    i = data.draw(st.integers(0, len(name) - 1))
    part = name[i : data.draw(st.integers(i + 1, len(name)))]
    key = " ".join(part.lower().split())
    assume(key and "," not in part and key not in WHOLE_NAMES)
    rc, out, err = _run(["verify", "--only", part])
    assert rc == 2 and out == "" and "matches no claim" in err, (part, err)


def test_verify_only_takes_a_module_name_or_a_paper_ref() -> None:
    claims = discover()
    family = {
        f"proofs.family_{m}"
        for m in ("linear", "causal", "retnet", "ssd", "gla", "deltanet", "gated_deltanet")
    }
    assert {c.module for c in claims if "theorem 4.1" in ref_parts(c.ref)} == {
        "proofs.theorem_4_1",
        "proofs.gdpp_spectral",
    } | family
    assert "lemma 4.3" in ref_parts("Lemma 4.3 (matrix form), fast forward pass")


def test_a_printed_csv_with_a_byte_order_mark_reads_as_without(tmp_path: Path) -> None:
    """Spreadsheets write UTF-8 CSV with a byte-order mark."""
    text = "noise,depth,value,se\r\nuniform:5,3,0.36,0.005\r\n"
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text(text)
    marked.write_bytes(codecs.BOM_UTF8 + text.encode())
    assert read_printed(marked) == read_printed(plain) and len(read_printed(plain)) == 1


def test_all_zero_data_in_inspect_has_no_ols_reference_and_no_overflow(tmp_path: Path) -> None:
    """``XᵀX = 0``: OLS is 0/0, not an overflow; the references are left out and the check still runs."""
    rng = np.random.default_rng(0)
    save_model(
        tmp_path / "m.npz",
        0.1 * rng.standard_normal((2, 1, 3, 3)),
        0.1 * rng.standard_normal((2, 1, 3, 3)),
    )
    np.savez(
        tmp_path / "z.npz",
        X=np.zeros((4, 5, 2)),
        y=np.zeros((4, 5)),
        x_query=np.zeros((4, 2)),
        sigma=np.zeros(4),
    )
    rc, out, err = _run(["inspect", str(tmp_path / "m.npz"), str(tmp_path / "z.npz")])
    assert rc == 0 and err == "", err
    assert (
        "no OLS reference: X^T X is singular on some sequence" in out and "overflow" not in out
    ), out


@pytest.mark.parametrize("full", ["--out", "--runs"])
def test_a_sweep_on_a_full_disk_is_refused_before_it_starts(
    full: str, tmp_path: Path, monkeypatch
) -> None:  # noqa: ANN001
    dirs = {"--out": tmp_path / "o", "--runs": tmp_path / "r"}
    for d in dirs.values():
        d.mkdir()
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(cli_reproduce, "run", lambda args: pytest.fail("the sweep started"))
    monkeypatch.setattr(
        environment.shutil,
        "disk_usage",
        lambda p: usage(10**9, 10**9 - 4096, 4096 if Path(p) == dirs[full] else 10**8),
    )
    rc, out, err = _run(
        ["reproduce", "--budget", "quick", *(a for k, d in dirs.items() for a in (k, str(d)))]
    )
    assert (
        rc == 2
        and len(err.splitlines()) == 1
        and f"{full} '{dirs[full]}': its file system has 4096 bytes free" in err
    ), err
    assert not any(any(d.iterdir()) for d in dirs.values())
