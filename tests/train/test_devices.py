"""The console command splits a CPU host into one XLA device per core (numerics.train.devices)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from numerics.train import devices as hd

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cores,count", [(1, 1), (2, 2), (3, 2), (6, 4), (16, 8), (64, 8)])
def test_default_count_is_a_power_of_two_within_the_cores(cores: int, count: int) -> None:
    assert hd.default_count(cores) == count


def test_configure_sets_the_flag_from_the_environment() -> None:
    env = {hd.ENV: "4", "XLA_FLAGS": "--xla_cpu_foo=1"}
    assert hd.configure(env, jax_imported=False) == 4
    assert env["XLA_FLAGS"] == f"--xla_cpu_foo=1 {hd.FLAG}=4"


@pytest.mark.parametrize(
    "env,imported",
    [
        ({hd.ENV: "4"}, True),  # JAX already loaded: too late, and not ours to change
        ({hd.ENV: "4", "XLA_FLAGS": f"{hd.FLAG}=3"}, False),  # the user's own count wins
    ],
)
def test_configure_leaves_a_decided_environment_alone(env: dict, imported: bool) -> None:
    before = dict(env)
    assert hd.configure(env, jax_imported=imported) is None
    assert env == before


def test_one_device_turns_the_split_off() -> None:
    env = {hd.ENV: "1"}
    assert hd.configure(env, jax_imported=False) == 1
    assert "XLA_FLAGS" not in env


@pytest.mark.parametrize(
    "env,added,cores,jobs,want",
    [
        ({}, None, 2, 2, {hd.ENV: "1"}),  # two processes on two cores: one device each
        ({}, None, 16, 2, {hd.ENV: "8"}),
        ({}, None, 16, 3, {hd.ENV: "4"}),
        (
            {"XLA_FLAGS": f"--xla_cpu_foo=1 {hd.FLAG}=2"},
            f"{hd.FLAG}=2",
            2,
            2,
            {"XLA_FLAGS": "--xla_cpu_foo=1", hd.ENV: "1"},
        ),
        (
            {"XLA_FLAGS": f"{hd.FLAG}=2"},
            f"{hd.FLAG}=2",
            4,
            1,
            {hd.ENV: "4"},
        ),  # the default's flag out, the share in
        (
            {hd.ENV: "2", "XLA_FLAGS": f"{hd.FLAG}=2"},
            None,
            2,
            2,
            None,
        ),  # the user's count: passed on as it is
        ({"XLA_FLAGS": f"{hd.FLAG}=2"}, None, 2, 2, None),
    ],
)
def test_processes_side_by_side_share_the_cores(
    env: dict, added: str | None, cores: int, jobs: int, want: dict | None
) -> None:
    assert hd.for_processes(jobs, env, added, n_cores=cores) == (env if want is None else want)


def test_the_console_commands_own_split_is_replaced_by_the_share_for_its_processes() -> None:
    """:func:`configure` on the process's own environment remembers the flag it added, which the processes of
    ``--jobs`` do not inherit."""
    code = (
        "import os; from numerics.train import devices as d; n = d.configure(); "
        "e = d.for_processes(2, n_cores=4); print(n, repr(os.environ.get('XLA_FLAGS')), e.get('XLA_FLAGS'), e[d.ENV])"
    )
    env = {k: v for k, v in os.environ.items() if k not in (hd.ENV, "XLA_FLAGS")} | {
        "PYTHONPATH": str(ROOT)
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    n = hd.default_count()
    assert out.split() == [
        str(n),
        repr(f"{hd.FLAG}={n}") if n > 1 else "None",
        "None",
        "2",
    ]  # one core: no split


def test_full_precision_is_asked_for_before_jax_loads_unless_the_user_chose() -> None:
    env: dict[str, str] = {}
    assert hd.full_precision(env, jax_imported=False) and env == {hd.PRECISION_ENV: "highest"}
    for env, imported in (({hd.PRECISION_ENV: "default"}, False), ({}, True)):
        before = dict(env)
        assert not hd.full_precision(env, jax_imported=imported) and env == before


def test_console_command_asks_jax_for_full_precision() -> None:
    code = (
        "import os, sys\nfrom numerics.cli import main\nsys.argv = ['lintf', 'nosuchcommand']\nmain()\n"
        "import jax\nprint(os.environ['JAX_DEFAULT_MATMUL_PRECISION'], jax.config.jax_default_matmul_precision)"
    )
    env = {k: v for k, v in os.environ.items() if k != hd.PRECISION_ENV}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT
    )
    assert out.stdout.split() == ["highest", "highest"], out.stderr


@pytest.mark.parametrize("raw", ["0", "-2", "two", "1.5", "65", "100000"])
def test_a_bad_count_is_a_one_line_error(raw: str) -> None:
    with pytest.raises(ValueError, match=rf"^{hd.ENV} must be an integer in 1\.\.64 .*{raw!r}$"):
        hd.configure({hd.ENV: raw}, jax_imported=False)


@pytest.mark.parametrize("batch,k", [(2048, 4), (6, 3), (10, 2), (7, 1)])
def test_usable_devices_divide_the_batch(batch: int, k: int) -> None:
    assert hd.usable(["a", "b", "c", "d"], batch) == ["a", "b", "c", "d"][:k]


def test_console_command_trains_on_the_split_host_with_the_numbers_of_one_device(
    tmp_path: Path,
) -> None:
    """``python -m numerics.cli`` (the console entry) with ``LINTF_HOST_DEVICES=2`` shards training over 2
    devices and ends where one device does (this process, which has one, trains the same run while the
    command runs), and its selection and evaluation (one program: the oracle ridge's batched solve at
    d = 10, which deadlocked when sharded) complete."""
    import jax
    import numpy as np

    from numerics.train.checkpoint import read_checkpoint
    from numerics.train.config import TrainConfig
    from numerics.train.loop import train

    # the test run's compile flags (tests/conftest.py) without a host-device count: the command adds
    # the one LINTF_HOST_DEVICES asks for
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(hd.FLAG)]
    env = dict(os.environ) | {hd.ENV: "2", "JAX_PLATFORMS": "cpu", "XLA_FLAGS": " ".join(flags)}
    cfg = TrainConfig(
        model="full", layers=2, noise="uniform:2", seeds=2, batch=64, steps=10, chunk=5
    )
    argv = [
        "--model",
        "full",
        "--layers",
        "2",
        "--noise",
        "uniform:2",
        "--seeds",
        "2",
        "--batch",
        "64",
    ]
    # as many evaluation sequences as the selection's: one program
    argv += ["--steps", "10", "--chunk-steps", "5", "--eval-sequences", str(cfg.select_sequences)]
    argv += ["--no-baselines"]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "numerics.cli",
            "train",
            *argv,
            "--json",
            "--out",
            str(tmp_path / "run"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert len(jax.devices()) == 1
        one = train(cfg)
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr[-2000:]
    assert json.loads(stdout)["devices"] == 2
    two = read_checkpoint(tmp_path / "run" / "checkpoint.npz", cfg)
    # float32 sums over the batch in a different order: agreement to float32 round-off, amplified by 10 Adam
    # steps (Adam divides a gradient entry by its own scale, so a tiny entry's round-off moves its step); a
    # device that trained on its own half of the batch, or on a copy of the other's, is off by O(1).
    for a, b in zip(
        jax.tree_util.tree_leaves(one.state.params), jax.tree_util.tree_leaves(two.state.params)
    ):
        a, b = np.asarray(a), np.asarray(b)
        assert np.max(np.abs(a - b) / (1e-3 + np.abs(a))) < 1e-3
    np.testing.assert_allclose(np.asarray(one.curve), np.asarray(two.curve), rtol=1e-5)


def _reproduce(tmp_path: Path, out: str) -> Path:
    env = {
        k: v
        for k, v in os.environ.items()  # without the test run's own cache (tests/conftest.py)
        if k != "XLA_FLAGS" and not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE"))
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "numerics.cli",
            "reproduce",
            "--budget",
            "test",
            "--cell",
            "diag-L1-uniform1",
            "--only",
            "table1",
            "--out",
            str(tmp_path / out),
            "--runs",
            str(tmp_path / "runs"),
        ],
        cwd=ROOT,
        env=env | {hd.ENV: "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return tmp_path / out / "models" / "diag-L1-uniform1" / "model.npz"


# Two whole `lintf reproduce` processes, a minute: behind `slow`.  The default run keeps the rule for a set cache.
@pytest.mark.slow
def test_a_sweep_keeps_its_compiled_programs_under_runs_and_a_second_process_loads_them(
    tmp_path: Path,
) -> None:
    """The second process compiles nothing new (every program it needs is in the cache: no file is added) and its
    model is the first's, byte for byte."""
    first = _reproduce(tmp_path, "a")
    cache = tmp_path / "runs" / "xla-cache"
    kept = sorted(p.name for p in cache.iterdir())
    assert (
        sum(name.endswith("-cache") for name in kept) > 20
    )  # the small programs too, not only the slow ones
    second = _reproduce(tmp_path, "b")
    assert sorted(p.name for p in cache.iterdir()) == kept
    assert second.read_bytes() == first.read_bytes()


def test_a_cache_directory_already_set_is_left_alone(tmp_path: Path) -> None:
    import jax

    before = jax.config.jax_compilation_cache_dir  # the test run's own (tests/conftest.py)
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "theirs"))
    try:
        assert not hd.compile_cache(tmp_path / "ours")
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "theirs")
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
