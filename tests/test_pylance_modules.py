"""pylance's module layout on lancepy: names pylance users import (``lance.vector.vec_to_table``,
``lance.progress``, ``LANCE_COMMIT_MESSAGE_KEY``), each compared with pylance's on the same
input."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

lance = pytest.importorskip("lance")
import lance.progress  # noqa: E402
import lance.vector  # noqa: E402

import lancepy.progress  # noqa: E402
import lancepy.vector  # noqa: E402


@pytest.mark.parametrize(
    "data, kwargs",
    [
        ({"a": np.arange(4.0), "b": np.ones(4)}, {}),
        ({"a": [1, 2, 3], "b": [4, 5, 6]}, {"names": ["key", "emb"]}),
        ([[1.5, 2.5], [3.5, 4.5], [5.5, 6.5]], {}),
        ([[1, 2], [3, 4]], {"names": "vec"}),
        ([[1, 2], [3, 4]], {"names": ["vec"]}),
        (np.random.default_rng(0).standard_normal((50, 16)), {}),
        (np.arange(12, dtype=np.int64).reshape(3, 4), {"ndim": 4}),
        (np.arange(12.0).reshape(4, 3), {"check_ndim": False}),
    ],
)
def test_vec_to_table_matches_pylance(data, kwargs):
    ours = lancepy.vector.vec_to_table(data, **kwargs)
    theirs = lance.vector.vec_to_table(data, **kwargs)
    assert ours.schema == theirs.schema
    assert ours.equals(theirs)


def test_vec_to_table_refuses_what_pylance_refuses():
    with pytest.raises(ValueError):
        lance.vector.vec_to_table([[1, 2], [3]])
    with pytest.raises(InvalidArgumentError, match="2 dimensions"):
        lancepy.vector.vec_to_table([[1, 2], [3]])
    with pytest.raises(InvalidArgumentError, match="two column names"):
        lancepy.vector.vec_to_table({"a": [1.0]}, names=["only"])
    with pytest.raises(InvalidArgumentError, match="one column name"):
        lancepy.vector.vec_to_table([[1.0]], names=["a", "b"])
    with pytest.raises(NotSupportedError):
        lancepy.vector.vec_to_table("not vectors")
    empty = lancepy.vector.vec_to_table([], ndim=3)
    assert empty.num_rows == 0 and empty.schema.field("vector").type == pa.list_(pa.float32(), 3)
    with pytest.raises(InvalidArgumentError, match="ndim"):
        lancepy.vector.vec_to_table([])


def test_vec_to_table_writes_a_dataset_pylance_reads(tmp_path):
    table = lancepy.vector.vec_to_table(np.random.default_rng(1).standard_normal((100, 8)))
    lancepy.write_dataset(table, str(tmp_path / "v.lance"))
    assert lance.dataset(str(tmp_path / "v.lance")).to_table().equals(table)


def _recorder_class(base):
    """A progress recorder subclassing `base` (lancepy's or pylance's FragmentWriteProgress)."""

    class Recorder(base):
        def __init__(self):
            self.events = []

        def begin(self, fragment, **kwargs):
            self.events.append("begin")

        def complete(self, fragment, **kwargs):
            self.events.append(("complete", fragment.physical_rows))

    return Recorder


_Recorder = _recorder_class(lancepy.progress.FragmentWriteProgress)


def test_fragment_write_progress_subclass_hears_every_fragment(tmp_path):
    progress = _Recorder()
    table = pa.table({"x": list(range(250))})
    lancepy.write_dataset(table, str(tmp_path / "p.lance"), max_rows_per_file=100, progress=progress)
    assert progress.events == ["begin", ("complete", 100), "begin", ("complete", 100), "begin", ("complete", 50)]
    # Fragments cut by max_bytes_per_file inside one run of rows are heard of too, as pylance.
    for lib, rec in ((lancepy, _Recorder()), (lance, _recorder_class(lance.progress.FragmentWriteProgress)())):
        big = pa.RecordBatchReader.from_batches(pa.schema([("a", pa.string())]),
                                                [pa.record_batch([pa.array(["0" * 1024] * 8192)], names=["a"])] * 2)
        frags = lib.fragment.write_fragments(big, str(tmp_path / f"big-{lib.__name__}"), max_bytes_per_file=1024, progress=rec)
        assert len(frags) == 2 and rec.events == ["begin", ("complete", 8192), "begin", ("complete", 8192)]
    with pytest.raises(TypeError):
        lancepy.progress.FragmentWriteProgress()  # abstract, as pylance's
    lancepy.write_dataset(table, str(tmp_path / "q.lance"), progress=lancepy.progress.NoopFragmentWriteProgress())


def test_file_system_progress_writes_pylances_files(tmp_path):
    frag = lancepy.fragment.write_fragments(pa.table({"x": [1, 2, 3]}), str(tmp_path / "d.lance"))[0]
    ours_dir, theirs_dir = tmp_path / "ours", tmp_path / "theirs"
    ours = lancepy.progress.FileSystemFragmentWriteProgress(str(ours_dir), {"worker": "7"})
    theirs = lance.progress.FileSystemFragmentWriteProgress(str(theirs_dir), {"worker": "7"})
    their_frag = lance.FragmentMetadata.from_json(json.dumps(frag.to_json()))
    ours.begin(frag)
    theirs.begin(their_frag)
    assert sorted(os.listdir(ours_dir)) == sorted(os.listdir(theirs_dir)) == ["fragment_0.in_progress", "fragment_0.json"]
    for name in os.listdir(ours_dir):
        assert json.loads((ours_dir / name).read_text()) == json.loads((theirs_dir / name).read_text()), name
    ours.complete(frag)
    theirs.complete(their_frag)
    assert os.listdir(ours_dir) == os.listdir(theirs_dir) == ["fragment_0.json"]


def test_index_progress_as_pylance():
    for args in [("start", "train"), ("progress", "assign", 5, 10, "rows"), ("complete", "x", 3, 0), ("progress", "y", 20, 10)]:
        ours, theirs = lancepy.IndexProgress(*args), lance.IndexProgress(*args)
        assert (ours.event, ours.stage, ours.completed, ours.total, ours.unit, ours.fraction) == (
            theirs.event, theirs.stage, theirs.completed, theirs.total, theirs.unit, theirs.fraction
        )


def test_commit_message_key_is_pylances(tmp_path):
    from lance.dataset import LANCE_COMMIT_MESSAGE_KEY as theirs

    from lancepy.dataset import LANCE_COMMIT_MESSAGE_KEY as ours

    assert ours == theirs
    uri = str(tmp_path / "m.lance")
    lancepy.write_dataset(pa.table({"x": [1]}), uri, commit_message="hello")
    assert lance.dataset(uri).read_transaction(1).transaction_properties[theirs] == "hello"


@pytest.mark.parametrize("large", [False, True])
def test_blob_column_as_pylance(large):
    values = [b"abc", None, b"", b"\x00" * 1000]
    arr = pa.array(values, pa.large_binary() if large else pa.binary())
    for column in (arr, pa.chunked_array([arr.slice(0, 2), arr.slice(2)])):
        ours = [f.read() for f in lancepy.BlobColumn(column)]
        theirs = [f.read() for f in lance.BlobColumn(column)]
        assert ours == theirs == [b"abc", b"", b"", b"\x00" * 1000]
    with pytest.raises(ValueError):
        lancepy.BlobColumn(pa.array([1, 2]))
    with pytest.raises(ValueError):
        lancepy.BlobColumn([b"a"])


def test_debug_dumps_name_the_facts_pylances_do(tmp_path):
    import lance.debug

    import lancepy.debug

    uri = str(tmp_path / "dbg.lance")
    table = pa.table({"a": [1, 2, 3], "s": pa.array([{"x": 1}] * 3)})
    lancepy.write_dataset(table, uri)
    lancepy.write_dataset(table, uri, mode="append", commit_message="second")
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    frag = ours.get_fragments()[0]
    for text in (lancepy.debug.format_fragment(frag.metadata, ours), lancepy.debug.format_fragment(frag, ours),
                 lance.debug.format_fragment(theirs.get_fragments()[0].metadata, theirs)):
        assert "major_version: 2" in text and "id: 0" in text
    for text in (lancepy.debug.format_schema(ours), lance.debug.format_schema(theirs)):
        assert 'name: "a"' in text and 'name: "x"' in text and "parent_id: 1" in text
    assert "fragments" in lancepy.debug.format_manifest(ours)
    ours_txns, theirs_txns = lancepy.debug.list_transactions(ours), lance.debug.list_transactions(theirs)
    assert len(ours_txns) == len(theirs_txns) == 2
    assert "Append" in ours_txns[0] and "Overwrite" in ours_txns[1]
    assert "Append" in theirs_txns[0] and "Overwrite" in theirs_txns[1]
    assert len(lancepy.debug.list_transactions(ours, max_transactions=1)) == 1


# -- lancepy.schema: LanceSchema, LanceField, schema JSON ----------------------------------

import datetime  # noqa: E402
import importlib  # noqa: E402
import re  # noqa: E402

import lance.file  # noqa: E402
import lance.schema  # noqa: E402
import lance.util  # noqa: E402
from test_api_parity import signature_problems  # noqa: E402

import lancepy.file  # noqa: E402
import lancepy.schema  # noqa: E402
import lancepy.util  # noqa: E402

_PK = "lance-schema:unenforced-primary-key"
_CK = "lance-schema:unenforced-clustering-key"
SCHEMAS = {
    "nested": pa.schema(
        [
            pa.field("ab", pa.int64()),
            pa.field(
                "S",
                pa.struct(
                    [
                        pa.field("x`y", pa.float32()),
                        pa.field("m", pa.map_(pa.string(), pa.int32())),
                        pa.field("Ab", pa.int8()),
                        pa.field("ab", pa.int8()),
                        pa.field("x.y", pa.float32(), metadata={"a": "1"}),
                    ]
                ),
            ),
        ]
    ),
    "encodings": pa.schema(
        [
            pa.field("a", pa.int64()),
            pa.field("s", pa.string()),
            pa.field("d", pa.dictionary(pa.int32(), pa.string())),
            pa.field("v", pa.list_(pa.float32(), 4), nullable=False),
            pa.field("l", pa.large_list(pa.struct([("q", pa.binary())]))),
        ],
        metadata={"k": "v"},
    ),
    "keys": pa.schema(
        [
            pa.field("a", pa.int64(), False, metadata={_PK: "true", _PK + ":position": "2"}),
            pa.field("b", pa.int64(), False, metadata={_PK: "true", _PK + ":position": "1", _CK + ":position": "1"}),
            pa.field("c", pa.int64(), False, metadata={_PK: "true"}),
            pa.field("d", pa.int64(), False, metadata={_CK: "true"}),
            pa.field("S", pa.struct([pa.field("z", pa.int32(), False, metadata={_PK: "true"})]), False),
        ]
    ),
    "escapes": pa.schema(
        [
            pa.field("t", pa.timestamp("us", "UTC")),
            pa.field('q"\\n', pa.decimal128(10, 2)),
            pa.field("é", pa.date32()),
            pa.field("tab\t", pa.bool_()),
        ]
    ),
}
PATHS = ["a", "ab", "`ab`", "S.`x``y`", "S.x`y", "`S`.m", "S.m.entries", "S.m.entries.key", "S.m.key_value", "S..m",
         "", "S.", "`ab", "S.AB", "s.AB", "s.ab", "S.`x.y`", "S.x.y", "l.item.q", "L.ITEM.Q", "z", "S.z", "`S`x"]


def _sorted_maps(text: str) -> str:
    """pylance prints metadata maps in hash order: entries sorted, so texts compare."""
    return re.sub(r"metadata: \{([^{}]*)\}", lambda m: "metadata: {" + ", ".join(sorted(m.group(1).split(", "))) + "}", text)


def _describe(f) -> tuple:
    return (
        f.name(), f.id(), _sorted_maps(repr(f)), f.metadata, f.to_arrow(), f.is_unenforced_primary_key(),
        f.unenforced_primary_key_position(), f.is_unenforced_clustering_key(), f.unenforced_clustering_key_position(),
        [_describe(c) for c in f.children()],
    )  # fmt: skip


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_lance_schema_as_pylance(name):
    schema = SCHEMAS[name]
    ours, theirs = lancepy.schema.LanceSchema.from_pyarrow(schema), lance.schema.LanceSchema.from_pyarrow(schema)
    assert _sorted_maps(repr(ours)) == _sorted_maps(repr(theirs))
    assert ours.to_pyarrow() == theirs.to_pyarrow()
    assert ours.to_pyarrow().metadata == theirs.to_pyarrow().metadata
    assert [_describe(f) for f in ours.fields()] == [_describe(f) for f in theirs.fields()]
    assert [_describe(f) for f in ours.unenforced_primary_key()] == [_describe(f) for f in theirs.unenforced_primary_key()]
    assert [_describe(f) for f in ours.unenforced_clustering_key()] == [
        _describe(f) for f in theirs.unenforced_clustering_key()
    ]
    for path in PATHS:
        for method in ("field", "field_case_insensitive"):
            a, b = getattr(ours, method)(path), getattr(theirs, method)(path)
            assert (a is None) == (b is None), (path, method)
            if a is not None:
                assert _describe(a) == _describe(b), (path, method)
    assert ours == lancepy.schema.LanceSchema.from_pyarrow(schema)


def test_lance_schema_of_datasets_each_library_wrote(tmp_path):
    table = pa.table(
        {"a": [1, 2], "s": pa.array([{"x": 1.0, "y": "q"}] * 2), "d": pa.array(["a", "b"]).dictionary_encode()}
    ).replace_schema_metadata({"k": "v"})
    lance.write_dataset(table, str(tmp_path / "theirs"))
    lancepy.write_dataset(table, str(tmp_path / "ours"))
    for uri in (tmp_path / "theirs", tmp_path / "ours"):
        ours, theirs = lancepy.dataset(str(uri)).lance_schema, lance.dataset(str(uri)).lance_schema
        assert repr(ours) == repr(theirs)
        assert [_describe(f) for f in ours.fields()] == [_describe(f) for f in theirs.fields()]


def test_lance_schema_refusals():
    with pytest.raises(InvalidArgumentError, match="pyarrow.Schema"):
        lancepy.schema.LanceSchema.from_pyarrow({"a": 1})
    for bad in (pa.schema([pa.field("a.b", pa.int64())]), pa.schema([pa.field("S", pa.struct([pa.field("z", pa.int8(), False, {_PK: "true"})]))])):
        with pytest.raises(ValueError):
            lance.schema.LanceSchema.from_pyarrow(bad)
        with pytest.raises(InvalidArgumentError):
            lancepy.schema.LanceSchema.from_pyarrow(bad)


JSON_FIELDS = [
    pa.field("a", pa.int64(), False, metadata={"x": "y"}),
    pa.field("S", pa.struct([pa.field("q", pa.float32())])),
    pa.field("l", pa.list_(pa.string())),
    pa.field("v", pa.list_(pa.float32(), 4)),
    pa.field("t", pa.timestamp("us", "UTC")),
    pa.field("ts", pa.timestamp("s")),
    pa.field("tz", pa.timestamp("ns", "America/New_York")),
    pa.field("d", pa.decimal128(10, 2)),
    pa.field("d256", pa.decimal256(40, 3)),
    pa.field("dd", pa.dictionary(pa.int32(), pa.string())),
    pa.field("ll", pa.large_list(pa.int8())),
    pa.field("el", pa.list_(pa.field("el", pa.int8(), False, metadata={"x": "1"}))),
    pa.field("b", pa.binary()),
    pa.field("fb", pa.binary(3)),
    pa.field("lb", pa.large_binary()),
    pa.field("ls", pa.large_string()),
    pa.field("d32", pa.date32()),
    pa.field("d64", pa.date64()),
    pa.field("t32", pa.time32("ms")),
    pa.field("t64", pa.time64("ns")),
    pa.field("du", pa.duration("s")),
    pa.field("h", pa.float16()),
    pa.field("bo", pa.bool_()),
    pa.field("n", pa.null()),
    pa.field("u8", pa.uint8()),
    pa.field("tensor", pa.fixed_shape_tensor(pa.float32(), [2, 2])),
]


@pytest.mark.parametrize("field", JSON_FIELDS, ids=[f.name for f in JSON_FIELDS])
def test_schema_json_as_pylance(field):
    schema = pa.schema([field])
    ours, theirs = lancepy.schema.schema_to_json(schema), lance.schema.schema_to_json(schema)
    assert ours == theirs
    for text in (ours, theirs):  # each library reads the other's
        a, b = lancepy.schema.json_to_schema(text), lance.schema.json_to_schema(text)
        assert a == b and a.field(0).metadata == b.field(0).metadata


def test_schema_json_whole_schema_and_refusals():
    schema = pa.schema(JSON_FIELDS, metadata={"k": "v"})
    assert lancepy.schema_to_json(schema) == lance.schema.schema_to_json(schema)
    assert lancepy.json_to_schema(lance.schema.schema_to_json(schema)) == schema
    assert lancepy.schema_to_json(pa.schema([])) == lance.schema.schema_to_json(pa.schema([])) == {"fields": []}
    for bad in (pa.schema([pa.field("m", pa.map_(pa.int8(), pa.int8()))]), pa.schema([pa.field("sv", pa.string_view())])):
        with pytest.raises(ValueError):
            lance.schema.schema_to_json(bad)
        with pytest.raises(InvalidArgumentError):
            lancepy.schema.schema_to_json(bad)
    for bad in ({}, {"fields": [{"name": "a", "type": {"type": "int8"}}]},
                {"fields": [{"name": "a", "type": {"type": "nope"}, "nullable": True}]},
                {"fields": [{"name": "a", "type": {"type": "list"}, "nullable": True}]},
                {"fields": [{"name": "a", "type": {"type": "int8"}, "nullable": True}], "metadata": {"a": 1}}):  # fmt: skip
        with pytest.raises(ValueError):
            lance.schema.json_to_schema(bad)
        with pytest.raises(InvalidArgumentError):
            lancepy.schema.json_to_schema(bad)


def test_debug_schema_and_fragment_are_pylances_text(tmp_path):
    """format_schema and format_fragment print what pylance's print, line for line, on a
    dataset each library wrote (deletions, a nested column, a second data file)."""
    import lance.debug

    import lancepy.debug

    table = pa.table({"a": [1, 2, 3], "s": pa.array([{"x": 1.0, "y": "q"}] * 3), "b": [b"x"] * 3})
    table = table.replace_schema_metadata({"k": "v"})
    for lib in (lance, lancepy):
        uri = str(tmp_path / lib.__name__)
        lib.write_dataset(table, uri)
        lib.write_dataset(table, uri, mode="append")
        lib.dataset(uri).delete("a = 1")
        if lib is lance:  # a fragment of two data files
            lance.dataset(uri).add_columns({"z": "a + 1"})
        ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
        assert lancepy.debug.format_schema(ours) == lance.debug.format_schema(theirs)
        for a, b in zip(ours.get_fragments(), theirs.get_fragments()):
            assert lancepy.debug.format_fragment(a.metadata, ours) == lance.debug.format_fragment(b.metadata, theirs)


# -- lancepy.util ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ts",
    [
        datetime.datetime(2024, 1, 2, 3, 4, 5),
        datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc),
        "2024-01-02 03:04:05",
    ],
)
def test_sanitize_ts_as_pylance(ts):
    assert lancepy.util.sanitize_ts(ts) == lance.util.sanitize_ts(ts)
    assert lancepy.sanitize_ts is lancepy.util.sanitize_ts


def test_sanitize_ts_pandas_and_refusals():
    import pandas as pd

    stamp = pd.Timestamp("2024-05-06 07:08:09.123456")
    assert lancepy.util.sanitize_ts(stamp) == lance.util.sanitize_ts(stamp)
    assert type(lancepy.util.sanitize_ts(stamp)) is datetime.datetime
    with pytest.raises(TypeError):
        lance.util.sanitize_ts(12)
    with pytest.raises(lancepy.util.ArgumentTypeError):
        lancepy.util.sanitize_ts(12)
    for text in ("not a time", "2024-01-02", "2024-01-02T03:04:05+02:00"):  # one form only, in both
        with pytest.raises(ValueError):
            lance.util.sanitize_ts(text)
        with pytest.raises(InvalidArgumentError):
            lancepy.util.sanitize_ts(text)


@pytest.mark.parametrize("td", [datetime.timedelta(0), datetime.timedelta(days=3, microseconds=7), datetime.timedelta(seconds=-1.5)])
def test_td_to_micros_as_pylance(td):
    assert lancepy.util.td_to_micros(td) == lance.util.td_to_micros(td)


def _groups(labels) -> list:
    labels = np.asarray(labels)
    return sorted(tuple(np.flatnonzero(labels == v)) for v in np.unique(labels))


def test_kmeans_predict_with_given_centroids_as_pylance():
    rng = np.random.default_rng(3)
    centroids = rng.standard_normal((16, 8)).astype(np.float32)
    data = rng.standard_normal((500, 8)).astype(np.float32)
    fsl = pa.FixedSizeListArray.from_arrays(pa.array(centroids.ravel()), 8)
    for metric in ("l2", "euclidean", "dot"):
        ours = lancepy.util.KMeans(16, metric, centroids=fsl)
        theirs = lance.util.KMeans(16, metric, centroids=fsl)
        # "dot" keeps centroids at unit length (float32 rounding may differ in the last bit)
        mine, want = (np.stack(m.centroids.to_numpy(zero_copy_only=False)) for m in (ours, theirs))
        np.testing.assert_allclose(mine, want, rtol=1e-6, atol=0)
        assert ours.centroids.type == theirs.centroids.type
        for form in (data, pa.FixedSizeListArray.from_arrays(pa.array(data.ravel()), 8)):
            got, want = ours.predict(form), theirs.predict(form)
            assert got.type == want.type == pa.uint32()
            assert got.equals(want)
    assert repr(lancepy.util.KMeans(2, "EUCLIDEAN")) == "lancepy.KMeans(k=2, metric_type=l2)"


def test_kmeans_fit_finds_pylances_clusters():
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0], [10, 10], [-10, 10]], dtype=np.float32)
    data = np.concatenate([c + rng.standard_normal((50, 2)).astype(np.float32) for c in centres])
    truth = _groups(np.repeat([0, 1, 2], 50))
    ours = lancepy.util.KMeans(3)
    assert ours.centroids is None
    ours.fit(data)
    assert ours.centroids.type == pa.fixed_shape_tensor(pa.float32(), [2])
    assert _groups(ours.predict(data)) == truth
    assert _groups(ours.predict(ours.centroids)) == [(0,), (1,), (2,)]
    # pylance's random start sometimes settles in a local minimum: its best of a few runs
    theirs = []
    for _ in range(5):
        km = lance.util.KMeans(3)
        km.fit(data)
        theirs.append(_groups(km.predict(data)))
    assert truth in theirs
    mine = np.sort(np.stack(ours.centroids.to_numpy(zero_copy_only=False)), axis=0)
    means = np.sort(np.stack([data[list(g)].mean(axis=0) for g in truth]), axis=0)
    np.testing.assert_allclose(mine, means, rtol=1e-5, atol=1e-5)


def test_kmeans_refusals_as_pylance():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((20, 4)).astype(np.float32)
    for mod, err in ((lance.util, ValueError), (lancepy.util, InvalidArgumentError)):
        km = mod.KMeans(3)
        for bad in (data.astype(np.float64), data[0], [1, 2]):
            for method in (km.fit, km.predict):
                with pytest.raises(err):
                    method(bad)
        with pytest.raises(ValueError):
            mod.KMeans(3, "hamming")
    with pytest.raises(RuntimeError):
        lance.util.KMeans(3).predict(data)
    with pytest.raises(lancepy.util.NotFittedError):
        lancepy.util.KMeans(3).predict(data)
    with pytest.raises(InvalidArgumentError, match="cannot train"):
        lancepy.util.KMeans(30).fit(data)
    with pytest.raises(InvalidArgumentError, match="expected 3 centroids"):
        lancepy.util.KMeans(3, centroids=pa.FixedSizeListArray.from_arrays(pa.array(data[:2].ravel()), 4))


def test_kmeans_cosine():
    """pylance 14 panics training with cosine; lancepy normalizes the vectors first."""
    rng = np.random.default_rng(2)
    directions = np.array([[1, 0], [0, 1]], dtype=np.float32)
    data = np.concatenate([d * rng.uniform(1, 100, (40, 1)) + 0.01 * rng.standard_normal((40, 2)) for d in directions])
    km = lancepy.util.KMeans(2, "cosine")
    km.fit(data.astype(np.float32))
    assert _groups(km.predict(data.astype(np.float32))) == _groups(np.repeat([0, 1], 40))


def test_validate_vector_index(tmp_path):
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal(2000 * 8).astype(np.float32)
    table = pa.table({"v": pa.FixedSizeListArray.from_arrays(pa.array(vectors), 8)})
    uri = str(tmp_path / "v.lance")
    # one PQ sub-vector of 256 codes for 2,000 vectors: codes collide
    lance.write_dataset(table, uri).create_index("v", "IVF_PQ", num_partitions=1, num_sub_vectors=1)
    both = ((lance.util, lance.dataset, ValueError), (lancepy.util, lancepy.dataset, lancepy.util.IndexValidationError))
    for util, open_, error in both:
        # re-ranking 50 candidates by exact distance: every vector finds itself
        util.validate_vector_index(open_(uri), "v", refine_factor=50, sample_size=100)
        # the PQ distance alone: colliding codes hide most vectors behind others
        with pytest.raises(error):
            util.validate_vector_index(open_(uri), "v", refine_factor=1, sample_size=200)
        util.validate_vector_index(open_(uri), "v", refine_factor=1, sample_size=200, pass_threshold=0.0)


# -- lancepy.file.stable_version, AutoCleanupConfig ------------------------------------------


def test_stable_version_is_pylances(tmp_path):
    assert lancepy.file.stable_version() == lance.file.stable_version() == "2.2"
    ds = lancepy.write_dataset(pa.table({"a": [1]}), str(tmp_path / "d"), data_storage_version="stable")
    assert lance.dataset(str(tmp_path / "d")).data_storage_version == lancepy.file.stable_version()
    assert ds.data_storage_version == "2.2"


def test_auto_cleanup_config_is_pylances(tmp_path):
    ours = importlib.import_module("lancepy.dataset").AutoCleanupConfig
    theirs = importlib.import_module("lance.dataset").AutoCleanupConfig
    assert ours.__annotations__.keys() == theirs.__annotations__.keys()
    config = ours(interval=1, older_than_seconds=0)
    ds = lancepy.write_dataset(pa.table({"a": [1]}), str(tmp_path / "d"), auto_cleanup_options=config)
    assert lance.dataset(str(tmp_path / "d")).config() == ds.config()


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda: lancepy.util.KMeans.__init__, lambda: lance.util.KMeans.__init__),
        (lambda: lancepy.util.KMeans.fit, lambda: lance.util.KMeans.fit),
        (lambda: lancepy.util.KMeans.predict, lambda: lance.util.KMeans.predict),
        (lambda: lancepy.util.validate_vector_index, lambda: lance.util.validate_vector_index),
        (lambda: lancepy.util.sanitize_ts, lambda: lance.util.sanitize_ts),
        (lambda: lancepy.util.td_to_micros, lambda: lance.util.td_to_micros),
        (lambda: lancepy.schema.schema_to_json, lambda: lance.schema.schema_to_json),
        (lambda: lancepy.schema.json_to_schema, lambda: lance.schema.json_to_schema),
        (lambda: lancepy.file.stable_version, lambda: lance.file.stable_version),
    ],
)
def test_signatures_are_pylances(ours, theirs):
    try:
        assert signature_problems(ours(), theirs()) == []
    except ValueError:  # a native function without a signature
        assert theirs().__text_signature__ in (None, "()")
