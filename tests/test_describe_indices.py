"""``describe_indices()`` against pylance 14's: every field of every index description and of
each of its segments (``details`` included), for indices of every kind lancepy reads, built
by pylance and by lancepy, on the same dataset read by both libraries."""

from __future__ import annotations

import random
import warnings

import lance
import lancepy
import numpy as np
import pyarrow as pa
import pytest
from lance.query import DocumentGranularity
from lancepy.exceptions import NotSupportedError

DIM = 16
N = 1200

_DESC = ("name", "type_url", "index_type", "num_rows_indexed", "fields", "field_names", "total_size_bytes", "details")
_SEGMENT = ("uuid", "dataset_version_at_last_update", "index_version", "created_at", "size_bytes", "base_id",
            "covering_fields")


def _table(seed: int, n: int = N) -> pa.Table:
    rng = random.Random(seed)
    words = ["Running", "jumps", "the", "Café", "naïve", "over", "lazy", "dogs", "x1", "fooBar"]
    vec = np.random.default_rng(seed).standard_normal(n * DIM).astype(np.float32)
    return pa.table(
        {
            "x": list(range(n)),
            "c": [rng.randint(0, 6) for _ in range(n)],
            "l": [[rng.randint(0, 5) for _ in range(rng.randint(0, 3))] for _ in range(n)],
            "t": [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) for _ in range(n)],
            "u": [" ".join(rng.choice(words) for _ in range(rng.randint(1, 3))) for _ in range(n)],
            "lt": [[rng.choice(words) for _ in range(rng.randint(1, 3))] for _ in range(n)],
            "v": pa.FixedSizeListArray.from_arrays(pa.array(vec), DIM),
        }
    )


def assert_same_descriptions(path: str) -> None:
    """lancepy's ``describe_indices()`` of `path` equals pylance's, field by field (in
    pylance's order: by name)."""
    mine, theirs = lancepy.dataset(path).describe_indices(), lance.dataset(path).describe_indices()
    assert [d.name for d in mine] == [d.name for d in theirs]
    for a, b in zip(mine, theirs):
        for key in _DESC:
            assert getattr(a, key) == getattr(b, key), (a.name, key)
        assert a.num_segments == len(b.segments)
        for s, t in zip(a.segments, b.segments):
            for key in _SEGMENT:
                assert getattr(s, key) == getattr(t, key), (a.name, key)
            assert s.fragment_ids == set(t.fragment_ids), a.name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (pylance's list_indices)
        theirs_listed = [(i["name"], i["uuid"]) for i in lance.dataset(path).list_indices()]
    assert [(i["name"], i["uuid"]) for i in lancepy.dataset(path).list_indices()] == theirs_listed


def _scalar_and_vector(ds, lib: str) -> None:
    ds.create_scalar_index("x", "BTREE")
    ds.create_scalar_index("c", "BITMAP")
    ds.create_scalar_index("x", "BITMAP", name="x_bitmap")
    ds.create_scalar_index("l", "LABEL_LIST")
    ds.create_scalar_index("t", "INVERTED", with_position=True, stem=False)
    ds.create_scalar_index("u", "INVERTED", name="u_ws", base_tokenizer="whitespace", max_token_length=20,
                           remove_stop_words=False, ascii_folding=False, lower_case=False)
    ds.create_index("v", "IVF_PQ", num_partitions=2, num_sub_vectors=4, name="pq")
    ds.create_index("v", "IVF_FLAT", num_partitions=2, metric="dot", name="flat")
    ds.create_index("v", "IVF_SQ", num_partitions=2, metric="cosine", name="sq")
    ds.create_index("v", "IVF_FLAT", target_partition_size=400, name="flat_tps")
    ds.create_index("v", "IVF_PQ", num_partitions=2, num_sub_vectors=4, index_file_version="Legacy", name="legacy")


@pytest.mark.parametrize("writer", ["pylance", "lancepy"])
def test_every_kind_as_pylance_describes_it(tmp_path, writer: str) -> None:
    path = str(tmp_path / "ds")
    lib = lance if writer == "pylance" else lancepy
    lib.write_dataset(_table(1), path, max_rows_per_file=500)
    _scalar_and_vector(lib.dataset(path), writer)
    assert_same_descriptions(path)
    # the shapes pylance 14 reports (so a change on either side shows here)
    got = {d.name: d.details for d in lancepy.dataset(path).describe_indices()}
    assert got["x_idx"] == got["c_idx"] == got["l_idx"] == got["x_bitmap"] == {}
    assert got["pq"]["compression"] == {"type": "pq", "num_bits": 8, "num_sub_vectors": 4}
    assert got["sq"]["compression"] == {"type": "sq", "num_bits": 8}
    assert "compression" not in got["flat"] and got["flat"]["metric_type"] == "DOT"
    assert got["flat_tps"]["target_partition_size"] == 400
    assert got["t_idx"]["with_position"] is True and got["t_idx"]["document_granularity"] == "row"
    assert "format_version" not in got["t_idx"] and got["u_ws"]["max_token_length"] == 20
    # after an append (segments not covering it) and a delta segment
    lib.write_dataset(_table(2, 300), path, mode="append")
    lance.dataset(path).optimize.optimize_indices(num_indices_to_merge=0, index_names=["x_idx"])
    assert_same_descriptions(path)


def test_pylance_only_kinds(tmp_path) -> None:
    """Indices pylance builds of kinds lancepy reads but builds otherwise or not at all: HNSW,
    RQ, and INVERTED indices of the code analyzer, list-element documents and n-grams."""
    path = str(tmp_path / "ds")
    ds = lance.write_dataset(_table(3), path)
    ds.create_index("v", "IVF_HNSW_SQ", num_partitions=2, m=8, ef_construction=50, name="hnsw_sq")
    ds.create_index("v", "IVF_HNSW_PQ", num_partitions=2, num_sub_vectors=4, name="hnsw_pq")
    ds.create_index("v", "IVF_HNSW_FLAT", num_partitions=2, name="hnsw_flat")
    ds.create_index("v", "IVF_RQ", num_partitions=2, num_bits=1, name="rq")
    ds.create_scalar_index("t", "INVERTED", analyzer="code", split_identifiers=True, index_operators=True)
    ds.create_scalar_index("lt", "INVERTED", document_granularity=DocumentGranularity.LIST_ELEMENT)
    ds.create_scalar_index("u", "INVERTED", name="u_ngram", base_tokenizer="ngram", min_ngram_length=2,
                           max_ngram_length=4, prefix_only=True, block_size=256, custom_stop_words=["the"])
    ds.create_scalar_index("u", "NGRAM", name="u_trigrams")
    ds.create_scalar_index("x", "ZONEMAP", name="x_zones")
    ds.create_scalar_index("x", "BLOOMFILTER", name="x_bloom")
    assert_same_descriptions(path)
    got = {d.name: d.details for d in lancepy.dataset(path).describe_indices()}
    assert got["hnsw_sq"]["hnsw"] == {"max_connections": 8, "construction_ef": 50, "max_level": 7}
    assert got["rq"]["compression"] == {"type": "rq", "num_bits": 1, "rotation_type": "fast"}
    assert (got["t_idx"]["base_tokenizer"], got["t_idx"]["split_identifiers"], got["t_idx"]["index_operators"]) == (
        "code", True, True)
    assert got["lt_list_element_idx"]["document_granularity"] == "list_element"
    assert got["u_ngram"]["custom_stop_words"] is None  # (pylance does not keep them in the manifest)
    assert got["u_trigrams"] == got["x_zones"] == got["x_bloom"] == {}


@pytest.mark.parametrize("seed", range(12))
def test_inverted_options_differential(tmp_path, seed: int) -> None:
    """Seeded INVERTED options, indexed by each library in turn: the same descriptions."""
    rng = random.Random(seed)
    tokenizer = rng.choice(["simple", "whitespace", "raw", "icu", "icu/split", "code"])
    opts = {
        "base_tokenizer": tokenizer,
        "language": rng.choice(["English", "German", "Turkish"]),
        "with_position": rng.random() < 0.5,
        "lower_case": rng.random() < 0.5,
        "stem": rng.random() < 0.5,
        "remove_stop_words": rng.random() < 0.5,
        "ascii_folding": rng.random() < 0.5,
        "max_token_length": rng.choice([None, 20, 40]),
    }
    if tokenizer == "code":
        opts.update({k: rng.random() < 0.5 for k in ("split_identifiers", "split_on_numerics", "preserve_original",
                                                      "index_operators")})
    for writer in (lance, lancepy):
        path = str(tmp_path / writer.__name__)
        writer.write_dataset(_table(seed, 200), path, max_rows_per_file=rng.choice([50, 200]))
        writer.dataset(path).create_scalar_index("t", "INVERTED", **opts)
        assert_same_descriptions(path)
        (d,) = lancepy.dataset(path).describe_indices()
        assert {k: d.details[k] for k in opts} == opts


def test_no_indices_and_unknown_details(tmp_path) -> None:
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(4, 100), path)
    assert lancepy.dataset(path).describe_indices() == [] == lance.dataset(path).describe_indices()
    with pytest.raises(NotSupportedError, match="SomethingIndexDetails"):
        from lancepy._ops.indices import index_details

        index_details("/lance.table.SomethingIndexDetails", b"")


@pytest.mark.parametrize("mtl", [None, 40, 7])
def test_max_token_length_none_means_no_limit_as_in_pylance(tmp_path, mtl):
    """pylance 14 takes ``max_token_length`` among its keyword options: left out it is 40,
    ``None`` drops no token. lancepy's keyword defaults to 40, so ``None`` is told apart."""
    long_word = "x" * 50
    table = pa.table({"text": [f"short {long_word}", "short words", "sevenzz token"]})
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for uri in (ours, theirs):
        lancepy.write_dataset(table, uri)
    lancepy.dataset(ours).create_scalar_index("text", "INVERTED", max_token_length=mtl)
    lance.dataset(theirs).create_scalar_index("text", "INVERTED", max_token_length=mtl)
    assert lancepy.dataset(ours).describe_indices()[0].details == lance.dataset(theirs).describe_indices()[0].details
    for uri in (ours, theirs):
        for lib in (lancepy, lance):
            for word in (long_word, "sevenzz"):
                got = lib.dataset(uri).to_table(full_text_query=word).num_rows
                want = lance.dataset(theirs).to_table(full_text_query=word).num_rows
                assert got == want, (uri, lib.__name__, word)
    assert lance.dataset(theirs).to_table(full_text_query=long_word).num_rows == (1 if mtl is None else 0)


def test_max_token_length_left_out_is_forty(tmp_path):
    uri = str(tmp_path / "d")
    lancepy.write_dataset(pa.table({"text": ["a " + "y" * 45]}), uri)
    lancepy.dataset(uri).create_scalar_index("text", "INVERTED")
    assert lance.dataset(uri).describe_indices()[0].details["max_token_length"] == 40
    lancepy.dataset(uri).create_scalar_index("text", "BTREE", name="b", max_token_length=40)  # (the default: not an INVERTED option given)
