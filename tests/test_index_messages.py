"""Index protobufs through prost (issue 23): the manifest's ``index_details`` messages, the
``Index`` message of pylance's legacy vector index file and the ``IVF`` message of a V3 index,
compared with what pylance 14 writes and reports (``describe_indices().details``), both ways,
and damaged messages refused with lancepy's exceptions."""

from __future__ import annotations

import glob
import json
import os
import random
import struct

import lance
import lancepy
import numpy as np
import pyarrow as pa
import pytest
from lancepy import _lancepy
from lancepy._ops import fts_analyzer as _fts_analyzer
from lancepy._ops import inverted as _inverted
from lancepy.exceptions import CorruptFileError, NotSupportedError

DIM = 16


def _details(path: str) -> dict:
    """``{index name: (type_url, value bytes)}`` of the dataset's latest version, as stored."""
    ds = lancepy.dataset(path)
    out = {}
    for e in json.loads(_lancepy.index_section_to_json(ds._view.loaded.index_section))["indices"]:
        d = e["index_details"]
        out[e["name"]] = (d["type_url"], bytes(d["value"]))
    return out


def _pylance_details(path: str) -> dict:
    return {d.name: d.details for d in lance.dataset(path).describe_indices()}


def _text_table(seed: int, n: int = 300) -> pa.Table:
    rng = random.Random(seed)
    words = ["Running", "jumps", "the", "Café", "naïve", "over", "lazy", "dogs", "x1", "foo-bar"]
    return pa.table(
        {
            "t": [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) for _ in range(n)],
            "x": list(range(n)),
            "l": [[rng.randint(0, 5)] for _ in range(n)],
        }
    )


def _fts_options(seed: int) -> dict:
    rng = random.Random(seed)
    tokenizer = rng.choice(["simple", "whitespace", "ngram"])
    opts = {
        "base_tokenizer": tokenizer,
        "with_position": rng.random() < 0.5 and tokenizer != "ngram",
        "lower_case": rng.random() < 0.5,
        "stem": rng.random() < 0.5 and tokenizer != "ngram",
        "remove_stop_words": rng.random() < 0.5,
        "ascii_folding": rng.random() < 0.5,
        "max_token_length": rng.choice([None, 20, 40]),
    }
    if tokenizer == "ngram":
        lo = rng.randint(1, 3)
        opts.update(min_ngram_length=lo, max_ngram_length=lo + rng.randint(0, 2), prefix_only=rng.random() < 0.5)
    return opts


_FIELDS = (
    "base_tokenizer", "language", "with_position", "max_token_length", "lower_case", "stem", "remove_stop_words",
    "ascii_folding", "min_ngram_length", "max_ngram_length", "prefix_only", "block_size",
)


@pytest.mark.parametrize("seed", range(8))
def test_inverted_details_both_ways(tmp_path, seed: int) -> None:
    """pylance's InvertedIndexDetails decoded by lancepy equal what pylance reports; lancepy
    encodes the same bytes for the same options; pylance reports lancepy's as lancepy's."""
    opts = _fts_options(seed)
    theirs, mine = str(tmp_path / "theirs"), str(tmp_path / "mine")
    lance.write_dataset(_text_table(seed), theirs).create_scalar_index("t", "INVERTED", **opts)
    (url, value), reported = _details(theirs)["t_idx"], _pylance_details(theirs)["t_idx"]
    assert url == "/lance.table.InvertedIndexDetails"
    decoded = _lancepy.decode_index_details(url, value)
    assert {k: decoded[k] for k in _FIELDS} == {k: reported[k] for k in _FIELDS}
    assert decoded["format_version"] == _inverted.FORMAT_VERSION
    # lancepy's encoder: pylance's bytes from the fields pylance reports
    fields = {k: reported[k] for k in _FIELDS}
    assert _lancepy.encode_inverted_index_details(**fields, format_version=_inverted.FORMAT_VERSION) == value
    # lancepy builds no ngram indices (its create_scalar_index does not take their keywords)
    if opts["base_tokenizer"] == "ngram":
        return
    # what lancepy commits for the same options: the same bytes, reported alike by pylance
    assert bytes(_inverted.details_bytes(_fts_analyzer.check_params(opts))) == value
    lancepy.write_dataset(_text_table(seed), mine)
    lancepy.dataset(mine).create_scalar_index("t", "INVERTED", **opts)
    assert _details(mine)["t_idx"] == (url, value)
    assert {k: _pylance_details(mine)["t_idx"][k] for k in _FIELDS} == {k: reported[k] for k in _FIELDS}


def test_scalar_and_vector_details_from_pylance(tmp_path) -> None:
    path = str(tmp_path / "ds")
    rng = np.random.default_rng(7)
    t = _text_table(1, 600).append_column(
        "v", pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(600 * DIM).astype(np.float32)), DIM)
    )
    ds = lance.write_dataset(t, path)
    ds.create_scalar_index("x", "BTREE")
    ds.create_scalar_index("x", "BITMAP", name="x_bitmap")
    ds.create_scalar_index("l", "LABEL_LIST")
    ds.create_index("v", "IVF_PQ", num_partitions=2, num_sub_vectors=4, metric="cosine", name="pq")
    ds.create_index("v", "IVF_FLAT", num_partitions=2, metric="dot", name="flat")
    stored, reported = _details(path), _pylance_details(path)
    for name in ("x_idx", "x_bitmap", "l_idx"):
        url, value = stored[name]
        assert _lancepy.decode_index_details(url, value) == {} == reported[name]
    for name in ("pq", "flat"):
        url, value = stored[name]
        got = _lancepy.decode_index_details(url, value)
        want = reported[name]
        assert got["metric_type"] == want["metric_type"].lower()
        assert got["runtime_hints"] == want["runtime_hints"]
        if name == "pq":
            c = want["compression"]
            assert (got["compression"], got["num_bits"], got["num_sub_vectors"]) == (c["type"], c["num_bits"], c["num_sub_vectors"])
        else:
            assert got["compression"] in ("flat", None) and "compression" not in want


def test_lancepy_vector_details_as_pylance_reports_them(tmp_path) -> None:
    path = str(tmp_path / "ds")
    rng = np.random.default_rng(3)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(500 * DIM).astype(np.float32)), DIM)
    lancepy.write_dataset(pa.table({"v": vec}), path)
    lancepy.dataset(path).create_index("v", "IVF_PQ", num_partitions=2, num_sub_vectors=8, metric="l2", name="pq")
    url, value = _details(path)["pq"]
    got, want = _lancepy.decode_index_details(url, value), _pylance_details(path)["pq"]
    assert got["metric_type"] == want["metric_type"].lower() == "l2"
    assert (got["compression"], got["num_bits"], got["num_sub_vectors"]) == ("pq", 8, 8)
    assert want["compression"] == {"type": "pq", "num_bits": 8, "num_sub_vectors": 8}
    assert got["runtime_hints"] == want["runtime_hints"]


def _index_message(f: str) -> bytes:
    with open(f, "rb") as fh:
        data = fh.read()
    (pos,) = struct.unpack("<Q", data[-16:-8])
    (n,) = struct.unpack("<I", data[pos : pos + 4])
    return data[pos + 4 : pos + 4 + n]


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_legacy_index_message_both_ways(tmp_path, metric: str) -> None:
    """pylance's legacy ``Index`` message decoded by lancepy and encoded again byte for byte;
    lancepy's legacy index reported by pylance's index statistics as lancepy decodes it."""
    rng = np.random.default_rng(11)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(900 * DIM).astype(np.float32)), DIM)
    for who, writer in (("theirs", lance), ("mine", lancepy)):
        path = str(tmp_path / who)
        writer.write_dataset(pa.table({"v": vec}), path)
        writer.dataset(path).create_index(
            "v", index_type="IVF_PQ", num_partitions=3, num_sub_vectors=4, index_file_version="Legacy", metric=metric
        )
        (f,) = glob.glob(os.path.join(path, "_indices", "*", "index.idx"))
        raw = _index_message(f)
        m = _lancepy.decode_legacy_index(raw)
        stats = lance.dataset(path).stats.index_stats("v_idx")
        (seg,) = stats["indices"]
        v = m["vector_index"]
        assert (m["name"], m["columns"], m["index_type"]) == ("v_idx", ["v"], 0)
        (desc,) = lance.dataset(path).describe_indices()
        assert m["dataset_version"] == desc.segments[0].dataset_version_at_last_update
        assert (v["spec_version"], v["dimension"], v["metric_type"]) == (1, DIM, metric)
        assert [s["stage"] for s in v["stages"]] == ["ivf", "pq"]
        ivf, pq = v["stages"]
        assert ivf["lengths"] == [p["size"] for p in seg["partitions"]]
        assert np.asarray(ivf["centroids"]).tolist() == seg["centroids"]
        assert (pq["num_bits"], pq["num_sub_vectors"], pq["dimension"]) == (8, 4, DIM)
        assert np.asarray(pq["codebook"]).shape == (256, DIM)
        # encoded again from the decoded fields: the same bytes
        again = _lancepy.encode_legacy_index(
            m["name"], "v", m["dataset_version"], metric, DIM, ivf["offsets"], ivf["lengths"],
            pa.array(np.asarray(ivf["centroids"]).ravel()), pa.array(np.asarray(pq["codebook"]).ravel()), 4,
            loss=ivf["loss"],
        )
        assert again == raw, who


def test_v3_ivf_message_from_pylance(tmp_path) -> None:
    """The IVF message of a V3 index: centroids and their stored type (float16 vectors keep
    float16 centroids), partition lengths as pylance reports them."""
    from lancepy.file import LanceFileReader

    rng = np.random.default_rng(5)
    for dtype, name in ((np.float32, "float32"), (np.float16, "float16")):
        path = str(tmp_path / name)
        vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(600 * DIM).astype(dtype)), DIM)
        lance.write_dataset(pa.table({"v": vec}), path).create_index("v", "IVF_FLAT", num_partitions=2)
        (base,) = glob.glob(os.path.join(path, "_indices", "*"))
        readers = {f: LanceFileReader(os.path.join(base, f)) for f in ("index.idx", "auxiliary.idx")}
        msgs = {}
        for f, r in readers.items():
            md = {k.decode(): v.decode() for k, v in (r.metadata().schema.metadata or {}).items()}
            msgs[f] = _lancepy.decode_ivf_message(r.read_global_buffer(int(md["lance:ivf"])))
        idx, aux = msgs["index.idx"], msgs["auxiliary.idx"]
        assert idx["centroids_type"] == name and np.asarray(idx["centroids"]).shape == (2, DIM)
        assert aux["centroids"] is None and aux["centroids_type"] is None
        (seg,) = lance.dataset(path).stats.index_stats("v_idx")["indices"]
        assert aux["lengths"] == [p["size"] for p in seg["partitions"]]
        # the tuple-returning reader agrees
        assert _lancepy.decode_ivf(readers["auxiliary.idx"].read_global_buffer(int(
            {k.decode(): v.decode() for k, v in readers["auxiliary.idx"].metadata().schema.metadata.items()}["lance:ivf"]
        )))[:2] == (aux["offsets"], aux["lengths"])


def _garbage(seed: int, n: int) -> bytes:
    return random.Random(seed).randbytes(n)


def test_damaged_messages_raise_lancepy_errors() -> None:
    fts = bytes(_inverted.details_bytes(_fts_analyzer.check_params({"base_tokenizer": "simple"})))
    url = "/lance.table.InvertedIndexDetails"
    assert _lancepy.decode_index_details(url, fts)["base_tokenizer"] == "simple"
    with pytest.raises(CorruptFileError):
        _lancepy.decode_index_details(url, fts[:5])
    with pytest.raises(CorruptFileError, match="JSON"):  # a language that is not a JSON string
        _lancepy.decode_index_details(url, b"\x12\x07English")
    with pytest.raises(NotSupportedError):
        _lancepy.decode_index_details("/lance.table.SomethingElse", b"")
    legacy = _lancepy.encode_legacy_index(
        "i", "v", 2, "l2", 2, [0, 20], [2, 0], pa.array([0.0, 1.0, 2.0, 3.0], pa.float32()),
        pa.array(np.arange(512, dtype=np.float32)), 1, loss=0.5,
    )
    assert _lancepy.decode_legacy_index(legacy)["vector_index"]["stages"][0]["loss"] == 0.5
    for n in range(len(legacy)):
        try:
            _lancepy.decode_legacy_index(legacy[:n])
        except CorruptFileError:
            pass
    with pytest.raises(CorruptFileError):
        _lancepy.decode_legacy_index(legacy[:-4])
    for seed in range(200):
        g = _garbage(seed, seed % 97)
        for call in (
            lambda: _lancepy.decode_legacy_index(g),
            lambda: _lancepy.decode_ivf_message(g),
            lambda: _lancepy.decode_index_details(url, g),
            lambda: _lancepy.decode_index_details("/lance.index.pb.VectorIndexDetails", g),
        ):
            try:
                call()
            except (CorruptFileError, NotSupportedError):
                pass
    from lancepy.exceptions import InvalidArgumentError

    with pytest.raises(InvalidArgumentError):  # centroids of another shape than partitions x dimension
        _lancepy.encode_legacy_index("i", "v", 2, "l2", 2, [0], [2], pa.array([0.0], pa.float32()),
                                     pa.array(np.arange(512, dtype=np.float32)), 1)
    with pytest.raises(InvalidArgumentError, match="32-bit"):
        _fts_analyzer.check_params({"max_token_length": 1 << 40})


def test_damaged_legacy_offsets_are_corrupt_not_overflow(tmp_path) -> None:
    """A legacy file whose IVF stage claims offsets past the file (up to 2^64 - 1, which does
    not fit numpy's int64) is refused as corrupt."""
    from lancepy._ops import ivf_legacy as _legacy

    codebook = pa.array(np.arange(256 * 2, dtype=np.float32))
    for bad in (2**64 - 1, 2**63, 10_000):
        msg = _lancepy.encode_legacy_index(
            "i", "v", 1, "l2", 2, [bad], [0], pa.array([0.0, 1.0], pa.float32()), codebook, 1
        )
        f = tmp_path / "index.idx"
        f.write_bytes(struct.pack("<I", len(msg)) + msg + struct.pack("<QHH", 0, 0, 1) + b"LANC")
        assert _legacy.is_legacy(str(f))
        with pytest.raises(CorruptFileError, match="offsets"):
            _legacy.load(str(f))
    # the same file with a fitting offset loads
    msg = _lancepy.encode_legacy_index("i", "v", 1, "l2", 2, [0], [0], pa.array([0.0, 1.0], pa.float32()), codebook, 1)
    f.write_bytes(struct.pack("<I", len(msg)) + msg + struct.pack("<QHH", 0, 0, 1) + b"LANC")
    model = _legacy.load(str(f))
    assert (model.name, model.column, model.dim, model.metric, model.centroids_type) == ("i", "v", 2, "l2", "float32")
