"""The parity runner (scripts/pylance_suite.py) on a tiny pylance-style test file: the test
that passes on both counts, the one using a name lancepy lacks is reported with its error, only
the lancepy run sees the alias, and a test skipped with --skip is not counted."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("lance")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SUITE = '''
import pyarrow as pa
import lance


def test_write_and_read(tmp_path):
    import lance.dataset  # the submodule: it must not hide the function lance.dataset

    uri = str(tmp_path / "d.lance")
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), uri)
    assert lance.dataset(uri).count_rows() == 3
    assert lance.__name__ in ("lance", "lancepy")


def test_the_alias_is_seen_only_by_the_lancepy_run():
    # Passes on pylance (the real module), fails on lancepy (the alias hands over lancepy).
    assert lance.__name__ == "lance", lance.__name__


def test_needs_network():
    raise AssertionError("skipped by the runner: never runs")


def test_a_name_lancepy_lacks():
    from lance.mem_wal import ShardingSpec  # pylance has it; lancepy does not

    assert ShardingSpec is not None
'''


def test_runner_counts_parity_and_names_the_missing_module(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_tiny.py").write_text(SUITE)
    (tests / "test_imports.py").write_text("from lance.mem_wal import ShardingSpec\n\n\ndef test_one():\n    assert ShardingSpec\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    got = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "pylance_suite.py"), str(tests), "--files", "test_tiny.py", "test_imports.py",
         "--json", str(tmp_path / "out.json"), "--skip", "test_tiny.py::test_needs_network=needs network"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert got.returncode == 0, got.stderr
    # The test that passes on both counts; the one skipped by --skip is not counted and says why.
    assert "| test_tiny.py | 3 | 1 | 33% | 1 / 0 |" in got.stdout, got.stdout
    assert "AssertionError: lancepy" in got.stdout, got.stdout
    assert "- 1 x needs network (--skip)" in got.stdout, got.stdout
    assert "No module named 'lance.mem_wal'" in got.stdout, got.stdout
    # A file that fails at import counts all its tests as failed, and says why.
    assert "| test_imports.py | 1 | 0 | 0% (import error: ModuleNotFoundError: No module named 'lance.mem_wal') | 0 / 0 |" in got.stdout
    assert "| **total** | 4 | 1 | 25.0% | 1 / 0 |" in got.stdout
    assert (tmp_path / "out.json").exists()
