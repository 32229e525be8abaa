"""Committed models predict bit-identically, and the sweep cells' plans stay byte-identical.

``tests/data/model_digest.json`` (written by ``tests/data/make_model_digest.py``) records, for every committed
``results/**/model.npz``, its sha256 and the mean adjusted loss and prediction hashes on fixed float64
sequences, and the JSON of every sweep cell's plan.  Every model file's sha256 and every plan are checked in
the default run; the predictions are recomputed there for the shallowest and the deepest model of each kind
and noise kind over all grids (the passes run one program per kind and depth, the draw one per noise kind; the
grids share both), and for every model with ``-m slow``.  A recomputed entry must match exactly, except the mean adjusted loss, which must match to :data:`ORACLE_REL` relative: it subtracts the oracle ridge,
whose ``eigh`` goes through LAPACK kernels that the BLAS library picks by CPU, so its last bits differ between
machines while the model's own predictions do not.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

_SCRIPT = Path(__file__).resolve().parent / "data" / "make_model_digest.py"
_spec = importlib.util.spec_from_file_location("make_model_digest", _SCRIPT)
digest_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(digest_script)

#: Relative tolerance of the recorded mean adjusted loss (a changed prediction moves it by far more).  The
#: adjusted loss of a good model is a small difference of two losses near 1, so the oracle's last bits show up
#: amplified in it: two machines of this project's kind differ by 3e-11 relative on ``paper/diag-L7-uniform2``.
ORACLE_REL = 1e-9

RECORD = json.loads(digest_script.OUT.read_text())
MODELS = RECORD["models"]
SIGNATURES = RECORD["signatures"]


def test_record_settings_match_the_script():
    assert (RECORD["sequences"], RECORD["seed"]) == (digest_script.SEQUENCES, digest_script.SEED)


def test_every_committed_model_has_an_entry():
    files = {str(p.relative_to(digest_script.ROOT)) for p in digest_script.model_files()}
    missing = sorted(files - set(MODELS))
    assert not missing, (
        f"{len(missing)} model files have no digest entry (first: {missing[0]}); "
        f"run `{digest_script.COMMAND}`"
    )


def _group(rel: str) -> tuple[tuple[str, str], int]:
    """``(kind, noise kind)`` of a model file, and its depth."""
    cell = Path(rel).parent.name  # e.g. diag-L4-categorical1_3
    kind, depth, noise = re.fullmatch(r"(.+)-L(\d+)-([a-z]+).*", cell).groups()
    return (kind, noise), int(depth)


def _representatives(rels: list[str]) -> set[str]:
    """The shallowest and the deepest model of each kind and noise kind, over all grids (the first
    such file in path order): the code paths every other model of the group runs (the forward pass
    of its kind, the draw of its noise kind); a grid's files are read and run as any other's."""
    groups: dict[tuple, list[tuple[int, str]]] = {}
    for rel in rels:
        key, depth = _group(rel)
        groups.setdefault(key, []).append((depth, rel))
    return {rel for g in groups.values() for rel in (min(g)[1], max(g)[1])}


REPRESENTATIVES = _representatives(sorted(MODELS))


def test_every_committed_model_is_the_file_recorded():
    """Every model file's sha256 is its entry's; the predictions of the :data:`REPRESENTATIVES` are
    checked in the default run, those of every model with ``-m slow``."""
    changed = [
        rel
        for rel, entry in MODELS.items()
        if (digest_script.ROOT / rel).exists()
        and digest_script.sha256(digest_script.ROOT / rel) != entry["sha256"]
    ]
    assert not changed, (
        f"{changed} changed since the digest was recorded; run `{digest_script.COMMAND}`"
    )


@pytest.fixture(scope="module")
def recompute(product_env: dict[str, str]) -> Callable[[str], dict[str, Any]]:
    """The entry of a model file as the script computes it, in a subprocess that compiles as the
    product does (the suite's processes compile with LLVM's optimisation off, which changes the
    predictions' last bits: ``tests/conftest.py``).  The first call computes the
    :data:`REPRESENTATIVES` and the model asked for in one process; a later model not among them
    (``-m slow``) takes a process of its own."""
    done: dict[str, dict[str, Any]] = {}

    def run(rels: list[str]) -> None:
        code = (
            "import json, runpy, sys\n"
            "import jax\n"
            "jax.config.update('jax_enable_x64', True)\n"
            "m = runpy.run_path(sys.argv[1])\n"
            "print(json.dumps({r: m['digest'](m['ROOT'] / r) for r in sys.argv[2:]}))\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(_SCRIPT), *rels],
            cwd=digest_script.ROOT,
            env=product_env | {"PYTHONPATH": str(digest_script.ROOT)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        done.update(json.loads(out.splitlines()[-1]))

    def get(rel: str) -> dict[str, Any]:
        if rel not in done:
            run(sorted(REPRESENTATIVES | {rel}) if not done else [rel])
        return done[rel]

    return get


@pytest.mark.parametrize(
    "rel",
    [
        r if r in REPRESENTATIVES else pytest.param(r, marks=pytest.mark.slow)
        for r in sorted(MODELS)
    ],
)
def test_model_predicts_as_recorded(rel, recompute):
    path = digest_script.ROOT / rel
    entry = MODELS[rel]
    if not path.exists():
        pytest.fail(f"{rel} is in the digest but gone; run `{digest_script.COMMAND}`")
    if digest_script.sha256(path) != entry["sha256"]:
        pytest.fail(f"{rel} changed since the digest was recorded; run `{digest_script.COMMAND}`")
    current = recompute(rel)
    assert current["adjusted_loss"] == pytest.approx(entry["adjusted_loss"], rel=ORACLE_REL, abs=0)
    assert {k: v for k, v in current.items() if k != "adjusted_loss"} == {
        k: v for k, v in entry.items() if k != "adjusted_loss"
    }


@pytest.mark.parametrize("key", sorted(SIGNATURES))
def test_signature_is_byte_identical(key):
    current = _signatures()
    assert key in current, f"{key} is no longer a sweep cell; run `{digest_script.COMMAND}`"
    assert current[key] == SIGNATURES[key]


_SIGS: dict[str, str] = {}


def _signatures() -> dict[str, str]:
    if not _SIGS:
        _SIGS.update(digest_script.signatures())
    return _SIGS
