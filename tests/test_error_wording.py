"""Errors pylance users match on: the same exception classes and the phrases pylance's
messages carry, checked against pylance itself on the same calls."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancepy


@pytest.fixture()
def uri(tmp_path):
    path = str(tmp_path / "d.lance")
    t = pa.table({"str": ["a", "b"], "int": [1, 2], "vector": pa.array([[1.0] * 4] * 2, pa.list_(pa.float32(), 4))})
    lance.write_dataset(t, path)
    return path


@pytest.mark.parametrize("flt, pattern", [
    ("str BETWEEN 10 AND 20", "Invalid user input:"),
    ("str AN", "Invalid user input:"),
    ("🥞", "Invalid user input:"),
    ("foo = 7", "No field named foo"),
    ("int", "does not return a boolean"),
])
def test_bad_filters(uri, flt, pattern):
    for lib in (lance, lancepy):
        with pytest.raises(ValueError, match=pattern):
            lib.dataset(uri).to_table(filter=flt)


def test_bad_nearest_queries(uri, tmp_path):
    for lib in (lance, lancepy):
        with pytest.raises(ValueError, match="does not match index column size"):
            lib.dataset(uri).to_table(nearest={"column": "vector", "q": np.random.randn(3), "k": 1})
        with pytest.raises(TypeError, match="must be a vector"):
            lib.dataset(uri).to_table(nearest={"column": "int", "q": np.random.randn(4), "k": 1})


def test_offsets_limits_and_missing_datasets(uri, tmp_path):
    for lib in (lance, lancepy):
        with pytest.raises(ValueError, match="Offset must be non-negative"):
            lib.dataset(uri).to_table(offset=-1, limit=10)
        with pytest.raises(ValueError, match="Limit must be non-negative"):
            lib.dataset(uri).to_table(offset=1, limit=-1)
        with pytest.raises(ValueError):
            lib.dataset(str(tmp_path / "nothing.lance"))
        with pytest.raises(ValueError, match="Expected a binary array"):
            lib.BlobColumn(pa.array([1, 2]))


def test_file_writer_without_schema(tmp_path):
    from lance.file import LanceFileWriter as Theirs

    from lancepy.file import LanceFileWriter as Ours

    for cls in (Theirs, Ours):
        with pytest.raises(ValueError, match="Schema is unknown and file cannot be created"):
            with cls(str(tmp_path / f"{cls.__module__}.lance")):
                pass
