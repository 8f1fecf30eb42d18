"""Blob pages (`lance-encoding:blob`), written by pylance, read by lancepy (read-only layout)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lancepy.file import LanceFileReader

lance_file = pytest.importorskip("lance.file")


@pytest.mark.interop
@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_read_pylance_blob_column(tmp_path, version):
    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    values = [b"x" * (i * 997) if i % 3 else (None if i % 2 else b"") for i in range(300)]
    t = pa.table([pa.array(values, pa.large_binary()), pa.array(range(300))], schema=pa.schema([field, pa.field("i", pa.int64())]))
    path = str(tmp_path / "blob.lance")
    w = lance_file.LanceFileWriter(path, version=version)
    w.write_batch(t)
    w.close()
    r = LanceFileReader(path)
    assert r.metadata().encodings()[0][0] == "blob"
    got = r.read_all().to_table()
    assert got.column("b").to_pylist() == values
    assert got.column("i").to_pylist() == list(range(300))
    idx = [299, 4, 1, 2, 2, 150]
    assert r.take_rows(idx).to_table().column("b").to_pylist() == [values[i] for i in idx]
    assert r.read_range(100, 50).to_table().column("b").to_pylist() == values[100:150]
