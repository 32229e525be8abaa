"""The package layout: small modules, no private imports across packages, and the direction of
imports.

* a module of ``numerics``, ``lintf_theory`` or ``proofs`` past :data:`SPLIT_LINES` lines is reported as a concept
  that wants splitting (a warning); past :data:`MAX_LINES` it fails;
* no module of those packages, of ``tests`` or of ``benchmarks`` imports a private (underscore)
  module or name of another package (``numerics.models`` and ``numerics.train`` are different
  packages): proofs and tests reach ``lintf_theory`` through its public names (``lintf_theory``,
  ``lintf_theory.symbols``, ...) like any user;
* imports point down the layers (:data:`TIERS`: ``numerics.cli`` -> ``numerics.reproduce`` ->
  ``numerics.train`` (beside it the testing kit, ``numerics.testing``) -> ``numerics.evaluate`` -> ``numerics.baselines`` -> ``numerics.models`` ->
  ``numerics.model_file`` -> ``numerics.data``/``numerics.io`` -> ``lintf_theory``; ``proofs`` beside the command line), no
  packages and no modules of one package import each other in a cycle, and an import inside a
  function is there to keep start-up fast and says so (:data:`LAZY_MARKER`);
* importing ``numerics`` (and building the ``lintf`` command line) imports neither ``proofs`` nor
  JAX;
* the committed results stay small: ``results/`` under :data:`RESULTS_BYTES` in all, no model file
  over :data:`MODEL_BYTES`.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("numerics", "lintf_theory", "proofs")
#: Every folder of Python code whose imports are checked: the packages, their tests and the
#: benchmarks.
CHECKED = (*PACKAGES, "tests", "benchmarks")
MAX_LINES = 600
#: Past this a module is reported as a concept that wants splitting (a warning, not a failure).
SPLIT_LINES = 300
RESULTS_BYTES = 20 * 10**6
MODEL_BYTES = (
    100_000  # a 12-layer FULL model is 39 kB; a Fig. 5 cell's five seed replicas of depth 7, 68 kB
)


def modules(folders: tuple[str, ...] = PACKAGES) -> list[Path]:
    return sorted(p for pkg in folders for p in (ROOT / pkg).rglob("*.py"))


def package_of(path: Path) -> str:
    """The dotted package a module belongs to (``numerics/train/loop.py`` -> ``numerics.train``)."""
    return ".".join(path.relative_to(ROOT).parent.parts)


def private_imports(path: Path) -> list[str]:
    """``module:name`` of every import in ``path`` that reaches a private module or name of another
    package."""
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
            elif (
                name.startswith("_")
                and not name.startswith("__")
                and here != mod
                and not (here == owner and mod.startswith(here))
                and package_of_module(mod) != here
            ):
                found.append(f"{mod}:{name}")
    return found


def package_of_module(mod: str) -> str:
    """The package of a dotted module name (a package names itself)."""
    path = ROOT.joinpath(*mod.split("."))
    return mod if path.is_dir() else mod.rpartition(".")[0]


def test_modules_are_small():
    # A module past SPLIT_LINES is a concept that wants splitting: a warning in the test summary, never a
    # number to fit under; past MAX_LINES it fails.
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in modules()}
    split = {k: n for k, n in sizes.items() if n > SPLIT_LINES}
    if split:
        warnings.warn(
            f"modules that want splitting (over {SPLIT_LINES} lines): {split}", stacklevel=1
        )
    big = {k: n for k, n in sizes.items() if n > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: {big}"


@pytest.mark.parametrize("path", modules(CHECKED), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_import_across_packages(path):
    assert private_imports(path) == []


def test_the_private_import_check_can_fail(tmp_path):
    probe = ROOT / "numerics" / "cli" / "_layout_probe.py"
    probe.write_text(
        "from numerics.reproduce.report import _f\nfrom lintf_theory._gdpp import mu\n"
        "from lintf_theory.symbols import d\nfrom lintf_theory import GDPP_SYMBOLS\n"
    )
    try:
        assert private_imports(probe) == ["numerics.reproduce.report:_f", "lintf_theory._gdpp:mu"]
    finally:
        probe.unlink()


def test_importing_numerics_imports_neither_proofs_nor_jax_for_the_command_line():
    code = (
        "import sys; from numerics.cli import build_parser; build_parser(); "
        "a = sorted(m for m in ('jax', 'proofs', 'sympy') if m in sys.modules); "
        "import numerics.models, numerics.baselines, numerics.train, numerics.evaluate; "
        "import numerics.reproduce; "
        "from numerics.train.loop import train; "
        "print(a, 'proofs' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.split() == ["[]", "False"], out.stdout + out.stderr


def test_bridge_cache_is_keyed_by_the_rule_not_its_name():
    """Two different rules exported under one name lambdify to two different functions."""
    import sympy as sp

    from lintf_theory import export

    a = sp.Symbol("a")
    twice, square = export("same_name", (a,), (2 * a,)), export("same_name", (a,), (a**2,))
    assert (twice.numpy(3.0), square.numpy(3.0)) == (6.0, 9.0)
    assert (
        export("same_name", (a,), (2 * a,)).numpy is twice.numpy
    )  # an equal rule shares the entry


def test_every_file_the_lint_configuration_names_exists():
    """A ``per-file-ignores`` entry of ``pyproject.toml`` that names a file names one that is there
    (a glob names at least one): an exception for a file that is gone is left over."""
    import re

    text = (ROOT / "pyproject.toml").read_text()  # tomllib is Python 3.11's; lintf runs on 3.10
    table = text.split("[tool.ruff.lint.per-file-ignores]\n", 1)[1].split("\n[", 1)[0]
    entries = re.findall(r'^"([^"]+)" = ', table, re.M)
    assert len(entries) > 10
    gone = [e for e in entries if not any(ROOT.glob(e))]
    assert not gone, f"pyproject.toml's per-file-ignores name files that are gone: {gone}"


def test_the_committed_results_stay_small():
    """Counted over the files git tracks under ``results/``: a sweep's run left in the working tree
    is not committed."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "results"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    files = [ROOT / f for f in listed.decode().split("\0") if f]
    total = sum(p.stat().st_size for p in files)
    assert total <= RESULTS_BYTES, (
        f"results/ holds {total / 1e6:.1f} MB, above {RESULTS_BYTES / 1e6:.0f} MB"
    )
    big = [
        f"{p.relative_to(ROOT)} ({p.stat().st_size} bytes)"
        for p in files
        if p.suffix == ".npz" and p.stat().st_size > MODEL_BYTES
    ]
    assert files and not big, f"model files above {MODEL_BYTES} bytes: {big}"


# --- The direction of imports
# ------------------------------------------------------------------------------------
#
# Every import of ``numerics``, ``lintf_theory`` and ``proofs`` is read with ``ast`` (at any depth,
# inside functions too; ``from . import x`` resolved against the module's package) and checked
# against the layers below.

#: The layers, top first.  A module imports only from a lower tier or from its own package (the unit
#: it belongs to: the longest name of :data:`TIERS` it starts with).  ``proofs`` sits beside the
#: command line.
TIERS = (
    ("numerics.cli", "proofs"),
    ("numerics.reproduce", "numerics.bench"),
    ("numerics.train", "numerics.testing"),
    ("numerics.evaluate",),
    ("numerics.baselines",),
    ("numerics.models",),
    ("numerics.model_file",),
    ("numerics.data", "numerics.io"),
    ("numerics.archive",),
    ("numerics", "numerics.errors", "numerics.types"),
    ("lintf_theory",),
)
#: Imports across one tier or upwards that the layers allow: ``lintf verify`` runs the proofs.
ALSO_ALLOWED = {("numerics.cli", "proofs")}
#: Imports downwards that the layers refuse: the proofs check the theory and the numerics it rests
#: on, and never depend on the reproduction (a sweep's results) or on the command line.
NEVER = {("proofs", "numerics.reproduce")}
#: An import inside a function is there to keep start-up fast (``lintf --help`` imports neither JAX
#: nor SymPy) and says so on its line; any other reason goes into :data:`LAZY_ALLOWED`.
LAZY_MARKER = "# lazy: start-up"
#: ``(module, imported module)`` of imports inside functions kept for a reason other than start-up.
LAZY_ALLOWED: dict[tuple[str, str], str] = {}


class Import(NamedTuple):
    module: str  # the importing module, dotted
    target: (
        str  # the imported module, dotted (a name imported from one of ours resolves to its module)
    )
    line: int
    in_function: bool
    marked: bool  # the statement carries LAZY_MARKER


def module_name(path: str) -> str:
    """``numerics/train/loop.py`` -> ``numerics.train.loop``; a package's ``__init__.py`` -> the
    package."""
    parts = Path(path).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: str, source: str, known: set[str]) -> list[Import]:
    """Every import in the module at ``path`` (relative to the root) whose text is ``source``;
    ``known`` is the set of our dotted module names, to which ours resolve."""
    name = module_name(path)
    package = name if Path(path).name == "__init__.py" else name.rpartition(".")[0]
    lines = source.splitlines()
    found: list[Import] = []

    def owner(dotted: str) -> str:  # ours: the longest known module ``dotted`` starts with, if any
        mod = dotted
        while mod and mod not in known:
            mod = mod.rpartition(".")[0]
        return mod or dotted

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                if isinstance(child, ast.Import):
                    targets = [a.name for a in child.names]
                else:
                    base = child.module or ""
                    if child.level:
                        up = package.split(".")[: len(package.split(".")) - child.level + 1]
                        base = ".".join([*up, *([child.module] if child.module else [])])
                    # ``from p import m`` imports the module ``p.m`` where there is one, else a name
                    # of ``p``
                    targets = [
                        f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                        for a in child.names
                    ]
                text = "\n".join(lines[child.lineno - 1 : child.end_lineno])
                for t in {owner(t) for t in targets}:
                    found.append(Import(name, t, child.lineno, in_function, LAZY_MARKER in text))
            visit(
                child,
                in_function
                or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
            )

    visit(ast.parse(source), False)
    return found


def unit_of(module: str) -> str:
    """The package of :data:`TIERS` of a module: ``numerics.train.loop`` -> ``numerics.train``."""
    units = [u for tier in TIERS for u in tier if module == u or module.startswith(u + ".")]
    return max(units, key=len)


def tier_of(unit: str) -> int:
    return next(i for i, tier in enumerate(TIERS) if unit in tier)


def may_import(unit: str, other: str) -> bool:
    if unit == other or (unit, other) in ALSO_ALLOWED:
        return True
    return tier_of(other) > tier_of(unit) and (unit, other) not in NEVER


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(out)


def sources(paths: list[Path]) -> dict[str, str]:
    """``{path relative to the root: text}`` of the modules at ``paths``."""
    return {str(p.relative_to(ROOT)): p.read_text() for p in paths}


def violations(texts: dict[str, str]) -> set[str]:
    """``up: a -> b``, ``cycle: a, b, ...`` and ``lazy: a -> b`` of the modules
    ``{relative path: text}``."""
    known = {module_name(p) for p in texts}
    found: set[str] = set()
    module_edges, unit_edges = set(), set()
    for path, text in texts.items():
        for imp in imports(path, text, known):
            if imp.in_function and not imp.marked and (imp.module, imp.target) not in LAZY_ALLOWED:
                found.add(f"lazy: {imp.module} -> {imp.target}")
            if imp.target.partition(".")[0] not in PACKAGES or imp.target == imp.module:
                continue
            unit, other = unit_of(imp.module), unit_of(imp.target)
            if not may_import(unit, other):
                found.add(f"up: {imp.module} -> {imp.target}")
            if unit == other:
                module_edges.add((imp.module, imp.target))
            else:
                unit_edges.add((unit, other))
    found |= {f"cycle: {', '.join(c)}" for c in cycles(module_edges) + cycles(unit_edges)}
    return found


def test_imports_point_down_the_layers_without_cycles_or_unmarked_lazy_imports():
    found = violations(sources(modules()))
    assert not found, "imports against the layers (see TIERS, LAZY_MARKER):\n" + "\n".join(
        sorted(found)
    )


PROBES = {
    "numerics/models/_probe_up.py": "from numerics.train import config\n",
    "numerics/models/_probe_a.py": "import numerics.models._probe_b\n",
    "numerics/models/_probe_b.py": (
        "def f():\n    from . import _probe_a\n    import json  # lazy: start-up\n"
    ),
    "proofs/_probe_c.py": "def g():\n    from numerics.reproduce import floor  # lazy: start-up\n",
}


def test_the_layer_check_finds_an_upward_import_a_cycle_and_an_unmarked_lazy_import():
    planted = {
        "up: numerics.models._probe_up -> numerics.train.config",
        "cycle: numerics.models._probe_a, numerics.models._probe_b",
        "lazy: numerics.models._probe_b -> numerics.models._probe_a",
        # marked lazy, but the proofs never import the reproduction
        "up: proofs._probe_c -> numerics.reproduce.floor",
    }
    in_the_tree = violations(sources(modules()) | PROBES)
    cycle = [v for v in in_the_tree - planted if v.startswith("cycle: ")]
    # the way back from numerics.train to numerics.models closes one cycle between packages
    assert in_the_tree - planted == set(cycle) and len(cycle) == 1
    assert {"numerics.models", "numerics.train"} <= set(
        cycle[0].removeprefix("cycle: ").split(", ")
    )
