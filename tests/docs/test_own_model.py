"""The examples of ``docs/your-own-model.md`` run as written: its Python blocks and its ``lintf``
commands."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from numerics import testing
from numerics.cli import main

PAGE = Path(__file__).resolve().parents[2] / "docs" / "your-own-model.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", PAGE.read_text(), re.S)


def test_convert_predict_inspect_commands_run_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    make_files, _ = blocks("python")
    exec(compile(make_files, str(PAGE), "exec"), {})
    (commands,) = blocks("bash")
    lines = [line for line in commands.splitlines() if line.strip()]
    assert [shlex.split(line)[1] for line in lines] == ["convert", "predict", "inspect"]
    for line in lines:
        argv = shlex.split(line)
        assert argv[0] == "lintf" and main(argv[1:]) == 0, line
    out = capsys.readouterr().out
    assert "x ~ uniform:-0.5,0.5 (the model's own, from its meta)" in out
    assert "noise fixed:0 (the model's own, from its meta)" in out and ": agree" in out
    assert (tmp_path / "predictions.npy").exists()


def test_testing_example_passes_the_good_and_rejects_the_leaky_implementation(capsys):
    _, example = blocks("python")
    exec(compile(example, str(PAGE), "exec"), {"__name__": "docs_example"})
    printed = capsys.readouterr().out.strip()
    assert (
        printed.split(":")[0] in testing.PROPERTIES and "shrunk example (B=2, n=1, d=3)" in printed
    ), printed
    shown = "\n".join(
        line.strip() for line in PAGE.read_text().split("The second prints\n\n")[1].splitlines()[:2]
    )
    assert printed == shown, "the page shows another message than the example prints: copy it again"
