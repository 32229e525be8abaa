"""The package layout: small modules, no private imports across packages, and the direction of imports.

* no module of ``numerics``, ``lintf_theory`` or ``proofs`` has more than :data:`MAX_LINES` lines;
* no module of those packages, of ``tests`` or of ``benchmarks`` imports a private (underscore) module or name of
  another package (``numerics.models`` and ``numerics.train`` are different packages): proofs and tests reach
  ``lintf_theory`` through its public names (``lintf_theory``, ``lintf_theory.symbols``, ...) like any user;
* importing ``numerics`` (and building the ``lintf`` command line) imports neither ``proofs`` nor JAX;
* the committed results stay small: ``results/`` under :data:`RESULTS_BYTES` in all, no model file over
  :data:`MODEL_BYTES`.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("numerics", "lintf_theory", "proofs")
#: Every folder of Python code whose imports are checked: the packages, their tests and the benchmarks.
CHECKED = (*PACKAGES, "tests", "benchmarks")
MAX_LINES = 400
RESULTS_BYTES = 20 * 10**6
MODEL_BYTES = 100_000  # a 12-layer FULL model is 39 kB; a Fig. 5 cell's five seed replicas of depth 7, 68 kB


def modules(folders: tuple[str, ...] = PACKAGES) -> list[Path]:
    return sorted(p for pkg in folders for p in (ROOT / pkg).rglob("*.py"))


def package_of(path: Path) -> str:
    """The dotted package a module belongs to (``numerics/train/loop.py`` -> ``numerics.train``)."""
    return ".".join(path.relative_to(ROOT).parent.parts)


def private_imports(path: Path) -> list[str]:
    """``module:name`` of every import in ``path`` that reaches a private module or name of another package."""
    here = package_of(path)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = here.split(".")[: len(here.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            pairs = [(target, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            pairs = [(a.name, "") for a in node.names]
        else:
            continue
        for mod, name in pairs:
            parts = mod.split(".")
            if parts[0] not in CHECKED:
                continue
            # the package that owns the imported thing: the module path up to its first private part
            private = [i for i, p in enumerate(parts) if p.startswith("_")]
            owner = ".".join(parts[: private[0]]) if private else mod
            if private and not (here == owner or here.startswith(owner + ".")):
                found.append(f"{mod}:{name}")
            elif name.startswith("_") and not name.startswith("__") and here != mod and \
                    not (here == owner and mod.startswith(here)) and package_of_module(mod) != here:
                found.append(f"{mod}:{name}")
    return found


def package_of_module(mod: str) -> str:
    """The package of a dotted module name (a package names itself)."""
    path = ROOT.joinpath(*mod.split("."))
    return mod if path.is_dir() else mod.rpartition(".")[0]


def test_modules_are_small():
    big = {str(p.relative_to(ROOT)): n for p in modules() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: {big}"


@pytest.mark.parametrize("path", modules(CHECKED), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_import_across_packages(path):
    assert private_imports(path) == []


def test_the_private_import_check_can_fail(tmp_path):
    probe = ROOT / "numerics" / "cli" / "_layout_probe.py"
    probe.write_text("from numerics.reproduce.report import _f\nfrom lintf_theory._gdpp import mu\n"
                     "from lintf_theory.symbols import d\nfrom lintf_theory import GDPP_SYMBOLS\n")
    try:
        assert private_imports(probe) == ["numerics.reproduce.report:_f", "lintf_theory._gdpp:mu"]
    finally:
        probe.unlink()


def test_importing_numerics_imports_neither_proofs_nor_jax_for_the_command_line():
    code = ("import sys; from numerics.cli import build_parser; build_parser(); "
            "a = sorted(m for m in ('jax', 'proofs', 'sympy') if m in sys.modules); "
            "import numerics.models, numerics.baselines, numerics.train, numerics.evaluate, numerics.reproduce; "
            "from numerics.train import train; "
            "print(a, 'proofs' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["[]", "False"], out.stdout + out.stderr


def test_bridge_cache_is_keyed_by_the_rule_not_its_name():
    """Two different rules exported under one name lambdify to two different functions."""
    import sympy as sp

    from lintf_theory import export

    a = sp.Symbol("a")
    twice, square = export("same_name", (a,), (2 * a,)), export("same_name", (a,), (a**2,))
    assert (twice.numpy(3.0), square.numpy(3.0)) == (6.0, 9.0)
    assert export("same_name", (a,), (2 * a,)).numpy is twice.numpy  # an equal rule shares the entry


def test_the_committed_results_stay_small():
    """Counted over the files git tracks under ``results/``: a sweep's run left in the working tree is not committed."""
    listed = subprocess.run(["git", "ls-files", "-z", "results"], cwd=ROOT, capture_output=True, check=True).stdout
    files = [ROOT / f for f in listed.decode().split("\0") if f]
    total = sum(p.stat().st_size for p in files)
    assert total <= RESULTS_BYTES, f"results/ holds {total / 1e6:.1f} MB, above {RESULTS_BYTES / 1e6:.0f} MB"
    big = [f"{p.relative_to(ROOT)} ({p.stat().st_size} bytes)" for p in files
           if p.suffix == ".npz" and p.stat().st_size > MODEL_BYTES]
    assert files and not big, f"model files above {MODEL_BYTES} bytes: {big}"
