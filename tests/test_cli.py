"""The ``lancepy`` command line (``lancepy.cli``): inspect, versions, validate.

Healthy datasets and files are described (checked against what the API and pylance say);
damaged ones (a truncated or missing data file, a garbled manifest, a damaged deletion
file, a data file with the wrong row count) make ``validate`` exit 1 naming the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import lancepy
from lancepy import cli


def _run(capsys, *argv: str):
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def uri(tmp_path) -> str:
    u = str(tmp_path / "d.lance")
    t = pa.table({"id": list(range(100)), "name": [f"n{i}" for i in range(100)]})
    ds = lancepy.write_dataset(t, u, max_rows_per_file=40)
    ds.delete("id % 10 = 0")
    ds.tags.create("gold", 1)
    return u


def _data_file(uri: str, fragment: int = 0) -> Path:
    ds = lancepy.dataset(uri)
    return Path(uri) / "data" / ds.get_fragment(fragment).data_files()[0].path


def test_inspect_dataset(capsys, uri) -> None:
    code, out, _ = _run(capsys, "inspect", uri, "--json")
    assert code == 0
    info = json.loads(out)
    assert info["kind"] == "dataset" and info["version"] == 2 and info["latest_version"] == 2
    assert info["rows"] == 90 and info["deleted_rows"] == 10
    assert info["num_fragments"] == 3
    assert [f["physical_rows"] for f in info["fragments"]] == [40, 40, 20]
    assert [f["deleted_rows"] for f in info["fragments"]] == [4, 4, 2]
    assert info["fragments"][0]["deletion_file"].startswith("_deletions/0-")
    assert info["tags"] == {"gold": 1}
    assert info["schema"] == [{"name": "id", "type": "int64", "nullable": True}, {"name": "name", "type": "string", "nullable": True}]
    on_disk = sum(p.stat().st_size for p in Path(uri).rglob("*") if p.is_file())
    assert info["storage_bytes"] == on_disk
    assert info["data_storage_version"] == "2.2"
    code, out, _ = _run(capsys, "inspect", uri)
    assert code == 0
    assert "90 rows (10 deleted) in 3 fragment(s)" in out and "gold -> 1" in out
    code, out, _ = _run(capsys, "inspect", uri, "--version", "1", "--json")
    assert json.loads(out)["rows"] == 100


def test_inspect_file(capsys, uri) -> None:
    path = _data_file(uri)
    code, out, _ = _run(capsys, "inspect", str(path), "--json")
    assert code == 0
    info = json.loads(out)
    reader = lancepy.LanceFileReader(str(path))
    assert info["kind"] == "file" and info["num_rows"] == reader.num_rows() == 40
    assert info["version"] == "2.2" and info["file_size"] == path.stat().st_size
    assert [c["encodings"] for c in info["columns"]] == [list(dict.fromkeys(e)) for e in reader.metadata().encodings()]
    assert all(c["rows"] == 40 for c in info["columns"])
    code, out, _ = _run(capsys, "inspect", str(path))
    assert "format version 2.2, 40 rows" in out and "miniblock" in out


def test_versions(capsys, uri) -> None:
    code, out, _ = _run(capsys, "versions", uri, "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["version"] for r in rows] == [1, 2]
    assert [r["operation"] for r in rows] == ["Overwrite", "Delete"]
    assert [r["rows"] for r in rows] == [100, 90]
    assert rows[0]["tags"] == ["gold"]
    code, out, _ = _run(capsys, "versions", uri)
    assert "Delete" in out and "gold" in out


def test_versions_of_a_pylance_dataset(capsys, tmp_path) -> None:
    lance = pytest.importorskip("lance")
    u = str(tmp_path / "p.lance")
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), u)
    lance.write_dataset(pa.table({"a": [4]}), u, mode="append")
    code, out, _ = _run(capsys, "versions", u, "--json")
    assert code == 0
    assert [(r["operation"], r["rows"]) for r in json.loads(out)] == [("Overwrite", 3), ("Append", 4)]
    code, out, _ = _run(capsys, "validate", u)
    assert code == 0 and out.startswith("OK")


def test_validate_healthy(capsys, uri) -> None:
    code, out, _ = _run(capsys, "validate", uri, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["ok"] and report["problems"] == []
    assert report["checked"] == {"manifests": 2, "data_files": 3, "deletion_files": 3}
    code, out, _ = _run(capsys, "validate", uri)
    assert code == 0 and out.startswith("OK:")


def _problems(capsys, uri: str):
    code, out, _ = _run(capsys, "validate", uri, "--json")
    report = json.loads(out)
    assert code == 1 and not report["ok"]
    return report["problems"]


def test_validate_truncated_data_file(capsys, uri) -> None:
    path = _data_file(uri, 1)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    problems = _problems(capsys, uri)
    assert any(p.startswith(f"fragment 1: data file data/{path.name}") for p in problems), problems
    assert any("bytes, the manifest records" in p for p in problems)
    code, out, _ = _run(capsys, "validate", uri)
    assert code == 1 and out.startswith("DAMAGED") and f"data/{path.name}" in out


def test_validate_corrupt_footer_same_size(capsys, uri) -> None:
    path = _data_file(uri, 0)
    data = bytearray(path.read_bytes())
    data[-4:] = b"XXXX"  # the magic
    path.write_bytes(bytes(data))
    problems = _problems(capsys, uri)
    assert any(p.startswith(f"fragment 0: data file data/{path.name}:") for p in problems), problems


def test_validate_missing_data_file(capsys, uri) -> None:
    path = _data_file(uri, 2)
    path.unlink()
    problems = _problems(capsys, uri)
    assert f"fragment 2: data file data/{path.name}: missing" in problems


def test_validate_garbled_old_manifest(capsys, uri) -> None:
    versions = sorted((Path(uri) / "_versions").glob("*.manifest"))
    oldest = max(versions)  # V2 naming: the largest name is the oldest version
    oldest.write_bytes(b"\x00" * 64)
    problems = _problems(capsys, uri)
    assert any(p.startswith(f"manifest of version 1 (_versions/{oldest.name})") for p in problems), problems


def test_validate_damaged_deletion_file(capsys, uri) -> None:
    ds = lancepy.dataset(uri)
    rel = ds.get_fragment(1).deletion_file()
    path = Path(uri) / rel
    path.write_bytes(path.read_bytes()[:10])
    problems = _problems(capsys, uri)
    assert any(p.startswith(f"fragment 1: deletion file {rel}") for p in problems), problems


def test_validate_wrong_row_count(capsys, uri, tmp_path) -> None:
    # Swap fragment 2's data file (20 rows) for a valid file of 21 rows.
    path = _data_file(uri, 2)
    with lancepy.LanceFileWriter(str(path), version="2.2") as w:
        w.write_batch(pa.table({"id": list(range(21)), "name": ["x"] * 21}))
    problems = _problems(capsys, uri)
    assert any(p.startswith(f"fragment 2: data file data/{path.name}: 21 rows, the fragment has 20") for p in problems), problems


def test_not_a_dataset(capsys, tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    for cmd in ("inspect", "versions", "validate"):
        code, out, err = _run(capsys, cmd, str(tmp_path / "empty"))
        assert code == 2 and "DatasetNotFoundError" in err
    code, out, err = _run(capsys, "validate", str(tmp_path / "empty"), "--json")
    assert code == 2 and json.loads(out)["ok"] is False
    junk = tmp_path / "junk.lance"
    junk.write_bytes(b"not a lance file at all" * 10)
    code, out, err = _run(capsys, "validate", str(junk))
    assert code == 1 and "junk.lance" in out
    code, out, err = _run(capsys, "inspect", str(junk))
    assert code == 2 and "CorruptFileError" in err


def test_python_dash_m_and_console_script(uri) -> None:
    env = dict(os.environ)
    done = subprocess.run([sys.executable, "-m", "lancepy", "validate", uri], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("OK"), done.stderr
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert 'lancepy = "lancepy.cli:main"' in text


def test_dataset_validate_method(uri) -> None:
    from lancepy.exceptions import CorruptFileError

    lance = pytest.importorskip("lance")
    assert lancepy.dataset(uri).validate() is None
    assert lance.dataset(uri).validate() is None
    path = _data_file(uri, 1)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CorruptFileError, match=f"fragment 1: data file data/{path.name}"):
        lancepy.dataset(uri).validate()
    with pytest.raises(CorruptFileError):  # version 1 uses the same file
        lancepy.dataset(uri, version=1).validate()
