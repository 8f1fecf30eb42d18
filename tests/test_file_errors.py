"""Bad input raises a typed ``lancepy.exceptions`` error whose message says what is wrong.

Covered: truncated files (cut at many points), flipped bytes in the footer and in the
column metadata, wrong magic, unsupported versions (reading and writing), out-of-range
indices, unknown columns, batches whose schema differs from the writer's, bad writer
arguments and encoding hints, missing files.

Crash safety: the truncation and byte-flip sweeps run in a separate interpreter, so a
segfault, abort or panic fails the test instead of killing pytest; a hang is caught by the
subprocess timeout.
"""

from __future__ import annotations

import collections
import json
import os
import struct
import shutil
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lancepy.exceptions as exc
from conftest import VERSIONS, run_isolated, write_lancepy, write_pylance
from lancepy.file import LanceFileReader, LanceFileWriter

FOOTER = 40


def _sample_table(n: int = 1500) -> pa.Table:
    """Several encodings in one file: bit-packed ints with nulls, FSST text, full-zip wide
    strings, vectors, booleans, a constant column and an all-null column."""
    rng = np.random.default_rng(3)
    words = np.array("lance columnar vector page chunk arrow fsst zstd rust".split())
    return pa.table(
        {
            "small": pa.array(rng.integers(0, 100, size=n), mask=rng.random(n) < 0.1),
            "text": pa.array([" ".join(words[rng.integers(0, len(words), size=12)]) for _ in range(n)]),
            "wide": pa.array([("w" * 300 if i % 10 == 0 else "w") + str(i) for i in range(n)]),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 16).astype(np.float32)), 16),
            "flag": pa.array(rng.random(n) < 0.5),
            "const": pa.array(np.full(n, 7, dtype=np.int32)),
            "category": pa.array(np.array(["red", "green", "blue", "ünï"])[rng.integers(0, 4, size=n)]),
            "nulls": pa.nulls(n, pa.float64()),
        }
    )


@pytest.fixture(params=VERSIONS)
def sample(request, tmp_path):
    table = _sample_table()
    path = tmp_path / f"sample-{request.param}.lance"
    write_lancepy(path, table, request.param, max_page_bytes=8 * 1024)
    return path, table


def _message(e: BaseException) -> str:
    return str(e)


def assert_informative(e: BaseException, *needles: str) -> None:
    msg = _message(e)
    assert msg.strip(), f"{type(e).__name__} has an empty message"
    for needle in needles:
        assert needle.lower() in msg.lower(), f"message {msg!r} does not mention {needle!r}"


def _footer(path):
    data = open(path, "rb").read()
    cm_start, cmo_pos, gbo_pos, n_gb, n_col, major, minor = struct.unpack("<QQQIIHH", data[-FOOTER:-4])
    return data, dict(cm_start=cm_start, cmo_pos=cmo_pos, gbo_pos=gbo_pos, n_gb=n_gb, n_col=n_col, major=major, minor=minor)


def _write_bytes(path, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


# --------------------------------------------------------------------------------------------
# Crash-safety sweeps (in a subprocess)
# --------------------------------------------------------------------------------------------

# Reads every corrupted variant of a file through every read path and classifies the outcome.
# Prints one JSON object: {"outcomes": [[label, kind, detail], ...]} where kind is
#   "lance_error:<Class>" - a lancepy.exceptions error (detail = message),
#   "ok_equal"            - the read succeeded and returned the original data,
#   "ok_different"        - the read succeeded with other (valid Arrow) data,
#   "other:<Class>"       - any other exception, including pyo3's PanicException.
SWEEP = textwrap.dedent(
    r"""
    import json, os, sys
    import pyarrow as pa
    import lancepy.exceptions as exc
    from lancepy.file import LanceFileReader

    src, workdir = sys.argv[1], sys.argv[2]
    spec = json.load(open(os.path.join(workdir, "spec.json")))
    original = open(src, "rb").read()
    expected = LanceFileReader(src).read_all().to_table()
    n = expected.num_rows
    out = []

    def read_everything(path):
        r = LanceFileReader(path)
        r.metadata()
        got = r.read_all().to_table()
        got.validate(full=True)
        rows = [0, n - 1, n // 2, 1024] if n else []
        rows = [i for i in rows if i < r.num_rows()]
        t = r.take_rows(rows).to_table()
        t.validate(full=True)
        r.read_range(0, min(r.num_rows(), 10)).to_table().validate(full=True)
        for b in r.to_batches(batch_size=1000):
            b.validate(full=True)
        return got

    for label, data in (
        [("cut@%d" % c, original[:c]) for c in spec.get("cuts", [])]
        + [("flip@%d^%d" % (p, m), original[:p] + bytes([original[p] ^ m]) + original[p + 1:]) for p, m in spec.get("flips", [])]
    ):
        path = os.path.join(workdir, "variant.lance")
        with open(path, "wb") as f:
            f.write(data)
        try:
            got = read_everything(path)
            kind = "ok_equal" if got.equals(expected) else "ok_different"
            out.append([label, kind, ""])
        except exc.LanceError as e:
            out.append([label, "lance_error:" + type(e).__name__, str(e)])
        except BaseException as e:  # PanicException derives from BaseException
            out.append([label, "other:" + type(e).__module__ + "." + type(e).__name__, str(e)[:300]])
    print(json.dumps({"outcomes": out}))
    """
)


def _sweep(tmp_path, src, spec: dict) -> list:
    # Thousands of variants are written one after the other: use memory-backed storage when
    # the machine has it (disk writes dominate otherwise).
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        workdir = Path(tempfile.mkdtemp(prefix="lancepy-sweep-", dir=shm))
    else:
        workdir = tmp_path / "sweep"
        workdir.mkdir(exist_ok=True)
    try:
        return _run_sweep(src, workdir, spec)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run_sweep(src, workdir, spec: dict) -> list:
    (Path(workdir) / "spec.json").write_text(json.dumps(spec))
    code = f"import sys; sys.argv = ['sweep', {str(src)!r}, {str(workdir)!r}]\n" + SWEEP
    # The timeout only guards against hangs; nothing here is timed.
    proc = run_isolated(code, timeout=900)
    assert proc.returncode == 0, (
        f"reading corrupted files crashed the interpreter (exit code {proc.returncode}; "
        f"a negative code is the signal that killed it)\nstderr tail:\n{proc.stderr[-3000:]}"
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])["outcomes"]


def _bad_outcomes(outcomes, allowed_kinds) -> list:
    # Shown with `pytest -s`: how the variants were handled.
    print(sorted(collections.Counter(o[1] for o in outcomes).items()))
    # An InternalError is a bug (an invariant or a panic), never an acceptable answer to bad bytes.
    return [
        o for o in outcomes
        if o[1] == "lance_error:InternalError" or not any(o[1] == k or o[1].startswith(k) for k in allowed_kinds)
    ]


def _cut_points(size: int, meta_start: int) -> list:
    cuts = set(range(0, 200)) | set(range(max(0, size - 400), size))  # every byte near both ends
    cuts |= set(range(0, size, max(1, size // 1000)))  # and across the data
    cuts |= set(range(meta_start - 8, size))  # every byte of the metadata region
    return sorted(c for c in cuts if 0 <= c < size)


def test_truncated_file_raises_corrupt_file_error_at_every_cut(tmp_path, sample):
    path, _ = sample
    data, f = _footer(path)
    cuts = _cut_points(len(data), f["cm_start"])
    outcomes = _sweep(tmp_path, path, {"cuts": cuts})
    assert len(outcomes) == len(cuts)
    bad = _bad_outcomes(outcomes, ["lance_error:CorruptFileError"])
    assert not bad, f"{len(bad)} of {len(cuts)} truncated files did not raise CorruptFileError, e.g. {bad[:5]}"
    for label, _, msg in outcomes:
        assert msg.strip(), f"{label}: empty message"
        assert str(path.name).split(".")[0] in msg or "variant.lance" in msg, f"{label}: message does not name the file: {msg!r}"


def test_truncated_pylance_file_raises_corrupt_file_error(tmp_path, pylance_file):
    table = _sample_table(2000)
    path = tmp_path / "pylance.lance"
    write_pylance(pylance_file, path, table, "2.1")
    data, f = _footer(path)
    cuts = _cut_points(len(data), f["cm_start"])[::3]
    outcomes = _sweep(tmp_path, path, {"cuts": cuts})
    bad = _bad_outcomes(outcomes, ["lance_error:CorruptFileError"])
    assert not bad, f"{len(bad)} of {len(cuts)} truncated files did not raise CorruptFileError, e.g. {bad[:5]}"


def test_flipped_footer_bytes(tmp_path, sample):
    """Offsets, counts, version and magic in the footer: every flip of bytes 8..40 is caught
    (the offset tables and footer must line up exactly); a flip of the column-metadata start
    (bytes 0..8) is either caught or harmless."""
    path, _ = sample
    data, _ = _footer(path)
    size = len(data)
    flips = [(size - FOOTER + i, m) for i in range(FOOTER) for m in (0x01, 0x80, 0xFF)]
    outcomes = _sweep(tmp_path, path, {"flips": flips})
    crashes = _bad_outcomes(outcomes, ["lance_error:", "ok_equal"])
    assert not crashes, f"flipped footer bytes gave {crashes[:5]}"
    for (pos, mask), (label, kind, msg) in zip(flips, outcomes):
        if pos - (size - FOOTER) >= 8:
            assert kind.startswith("lance_error:"), f"{label}: a flipped footer byte went unnoticed ({kind})"
            assert kind in ("lance_error:CorruptFileError", "lance_error:UnsupportedError"), f"{label}: {kind}: {msg}"


def test_flipped_column_metadata_bytes(tmp_path, sample):
    """Every byte of the column metadata and its offset table, flipped: a lancepy error or a
    valid result, never another exception or a crash."""
    path, _ = sample
    data, f = _footer(path)
    end = f["gbo_pos"]  # column metadata + CMO table
    flips = [(p, m) for p in range(f["cm_start"], end) for m in (0xFF, 0x01, 0x80)]
    outcomes = _sweep(tmp_path, path, {"flips": flips})
    bad = _bad_outcomes(outcomes, ["lance_error:", "ok_equal", "ok_different"])
    assert not bad, f"{len(bad)} of {len(flips)} flips raised something else than a lancepy error: {bad[:8]}"
    caught = sum(o[1].startswith("lance_error:") for o in outcomes)
    # The offset table's flips always land outside the metadata region.
    cmo_flips = [o for (p, m), o in zip(flips, outcomes) if p >= f["cmo_pos"] and m == 0xFF]
    assert all(o[1].startswith("lance_error:") for o in cmo_flips), [o for o in cmo_flips if not o[1].startswith("lance_error:")][:5]
    assert caught > 0


def test_flipped_schema_bytes(tmp_path, sample):
    """Global buffer 0 holds the schema; every flip there is an error or harmless."""
    path, _ = sample
    data, f = _footer(path)
    gb0_pos, gb0_len = struct.unpack("<QQ", data[f["gbo_pos"] : f["gbo_pos"] + 16])
    flips = [(p, 0xFF) for p in range(gb0_pos, gb0_pos + gb0_len)]
    outcomes = _sweep(tmp_path, path, {"flips": flips})
    bad = _bad_outcomes(outcomes, ["lance_error:", "ok_equal", "ok_different"])
    assert not bad, f"{len(bad)} of {len(flips)} flips raised something else than a lancepy error: {bad[:8]}"


def test_flipped_page_data_bytes(tmp_path, sample):
    """Flips inside page buffers (chunk metadata, chunk data, dictionaries, full-zip data)."""
    path, _ = sample
    _page_flip_sweep(tmp_path, path)


@pytest.mark.parametrize("version", VERSIONS)
def test_flipped_page_data_bytes_pylance_file(tmp_path, pylance_file, version):
    """The same for a file pylance wrote (its own choices of encodings and chunking)."""
    path = tmp_path / "pylance.lance"
    write_pylance(pylance_file, path, _sample_table(), version)
    _page_flip_sweep(tmp_path, path)


def _page_flip_sweep(tmp_path, path) -> None:
    meta = LanceFileReader(str(path)).metadata()
    flips = []
    for col in meta.columns:
        for page in col.pages[:2]:
            for pos, size in page.buffers:
                step = max(1, size // 40)
                flips += [(p, 0xFF) for p in range(pos, pos + min(size, 64))]
                flips += [(p, 0x10) for p in range(pos, pos + size, step)]
    outcomes = _sweep(tmp_path, path, {"flips": sorted(set(flips))})
    bad = _bad_outcomes(outcomes, ["lance_error:", "ok_equal", "ok_different"])
    assert not bad, f"{len(bad)} of {len(flips)} flips raised something else than a lancepy error: {bad[:8]}"


# --------------------------------------------------------------------------------------------
# Targeted corruption
# --------------------------------------------------------------------------------------------


def test_wrong_magic(tmp_path, sample):
    path, _ = sample
    data = open(path, "rb").read()
    bad = _write_bytes(tmp_path / "magic.lance", data[:-4] + b"LANX")
    with pytest.raises(exc.CorruptFileError) as ei:
        LanceFileReader(bad)
    assert_informative(ei.value, "LANC", "magic.lance")


@pytest.mark.parametrize("size", [0, 1, 4, 39])
def test_too_small_file(tmp_path, size):
    path = _write_bytes(tmp_path / "small.lance", b"LANC"[-size:] if size <= 4 else b"\0" * (size - 4) + b"LANC")
    with pytest.raises(exc.CorruptFileError) as ei:
        LanceFileReader(path)
    assert_informative(ei.value, "small.lance")


def test_not_a_lance_file(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1, 2, 3]}), tmp_path / "x.parquet")
    with pytest.raises(exc.CorruptFileError) as ei:
        LanceFileReader(str(tmp_path / "x.parquet"))
    assert_informative(ei.value, "not a Lance file")
    rng = np.random.default_rng(0)
    noise = _write_bytes(tmp_path / "noise.lance", rng.bytes(10_000))
    with pytest.raises(exc.CorruptFileError):
        LanceFileReader(noise)


def test_garbage_column_metadata(tmp_path, sample):
    """Column 0's metadata replaced by bytes that are not a ColumnMetadata message."""
    path, _ = sample
    data, f = _footer(path)
    pos, length = struct.unpack("<QQ", data[f["cmo_pos"] : f["cmo_pos"] + 16])
    bad = _write_bytes(tmp_path / "cm.lance", data[:pos] + b"\xff" * length + data[pos + length :])
    r = LanceFileReader(bad)  # column metadata may be decoded lazily
    with pytest.raises(exc.CorruptFileError) as ei:
        r.read_all(columns=["small"])
    assert_informative(ei.value, "column 0")
    # Other columns are still readable.
    assert r.read_all(columns=["text"]).num_rows == r.num_rows()


def test_garbage_schema(tmp_path, sample):
    path, _ = sample
    data, f = _footer(path)
    pos, length = struct.unpack("<QQ", data[f["gbo_pos"] : f["gbo_pos"] + 16])
    bad = _write_bytes(tmp_path / "schema.lance", data[:pos] + b"\xff" * length + data[pos + length :])
    with pytest.raises(exc.CorruptFileError) as ei:
        LanceFileReader(bad)
    assert_informative(ei.value, "schema")


def test_column_count_disagrees_with_schema(tmp_path, sample):
    """A footer whose column count is consistent with the offset tables but not with the
    schema (one column dropped from the CMO table)."""
    path, _ = sample
    data, f = _footer(path)
    cmo, gbo = f["cmo_pos"], f["gbo_pos"]
    # Drop the last CMO entry and shift the GBO table and footer down by 16 bytes.
    new_tail = data[cmo : gbo - 16] + data[gbo : len(data) - FOOTER]
    footer = struct.pack("<QQQIIHH", f["cm_start"], cmo, gbo - 16, f["n_gb"], f["n_col"] - 1, f["major"], f["minor"]) + b"LANC"
    bad = _write_bytes(tmp_path / "cols.lance", data[:cmo] + new_tail + footer)
    with pytest.raises(exc.CorruptFileError) as ei:
        LanceFileReader(bad)
    assert_informative(ei.value, "column")


def _with_version(data: bytes, major: int, minor: int) -> bytes:
    return data[:-8] + struct.pack("<HH", major, minor) + b"LANC"


@pytest.mark.parametrize(
    "major,minor,needle",
    [(2, 3, "2.3"), (2, 4, "2.4"), (3, 0, "3.0"), (0, 1, "legacy"), (0, 2, "legacy"), (65535, 65535, "65535")],
)
def test_unsupported_file_version(tmp_path, sample, major, minor, needle):
    path, _ = sample
    bad = _write_bytes(tmp_path / "ver.lance", _with_version(open(path, "rb").read(), major, minor))
    with pytest.raises(exc.UnsupportedError) as ei:
        LanceFileReader(bad)
    assert isinstance(ei.value, NotImplementedError)
    assert_informative(ei.value, needle)


@pytest.mark.parametrize("version", ["2.3", "next"])
def test_pylance_unstable_version_is_rejected(tmp_path, pylance_file, version):
    """A real file of the unstable 2.3 format, written by pylance."""
    path = tmp_path / "next.lance"
    try:
        write_pylance(pylance_file, path, pa.table({"a": pa.array([1, 2, 3])}), version)
    except Exception as e:  # pragma: no cover - depends on the reference build
        pytest.skip(f"pylance cannot write version {version}: {e}")
    with pytest.raises(exc.UnsupportedError) as ei:
        LanceFileReader(str(path))
    assert_informative(ei.value, "2.3")


def test_version_2_2_footer_on_a_2_1_file_is_an_error(tmp_path):
    """2.1 mini-block chunks have u16 words; reading them as 2.2 (u32) must not succeed
    silently with garbage (pylance rejects this too)."""
    table = pa.table({"a": pa.array(np.arange(5000) % 77), "s": pa.array([str(i) for i in range(5000)])})
    src = tmp_path / "v21.lance"
    write_lancepy(src, table, "2.1")
    bad = _write_bytes(tmp_path / "v22.lance", _with_version(open(src, "rb").read(), 2, 2))
    try:
        got = LanceFileReader(bad).read_all().to_table()
    except exc.LanceError as e:
        assert_informative(e)
        return
    assert got.equals(table), "a 2.1 file relabelled 2.2 decoded to different data without an error"


# --------------------------------------------------------------------------------------------
# Writer versions
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2.3", "next", "legacy", "0.1", "0.2", "NEXT"])
def test_writer_rejects_unsupported_versions(tmp_path, version):
    with pytest.raises(exc.UnsupportedError) as ei:
        LanceFileWriter(str(tmp_path / "x.lance"), pa.schema([("a", pa.int64())]), version=version)
    assert_informative(ei.value, version, "2.1", "2.2")
    assert not (tmp_path / "x.lance").exists() or os.path.getsize(tmp_path / "x.lance") == 0


@pytest.mark.parametrize("version", ["banana", "", "2", "2.1.0", "v2.1", "3.0"])
def test_writer_rejects_unknown_versions(tmp_path, version):
    with pytest.raises(exc.InvalidArgumentError) as ei:
        LanceFileWriter(str(tmp_path / "x.lance"), pa.schema([("a", pa.int64())]), version=version)
    assert_informative(ei.value, repr(version).strip("'") or '""', "stable")


@pytest.mark.parametrize("alias,expected", [("stable", "2.2"), ("STABLE", "2.2"), ("2.1", "2.1"), ("2.2", "2.2"), (None, "2.2")])  # None: pylance 14's default
def test_writer_version_aliases(tmp_path, alias, expected, pylance_file):
    path = tmp_path / "a.lance"
    with LanceFileWriter(str(path), version=alias) as w:
        w.write_batch(pa.table({"a": pa.array(np.arange(100))}))
    assert LanceFileReader(str(path)).version == expected
    _, f = _footer(path)
    assert f"{f['major']}.{f['minor']}" == expected
    meta = pylance_file.LanceFileReader(str(path)).metadata()
    assert f"{meta.major_version}.{meta.minor_version}" == expected


# --------------------------------------------------------------------------------------------
# Indices and ranges
# --------------------------------------------------------------------------------------------


@pytest.fixture
def small_file(tmp_path):
    path = tmp_path / "small.lance"
    table = pa.table({"a": pa.array(np.arange(5000)), "s": pa.array([str(i) for i in range(5000)])})
    write_lancepy(path, table, "2.1")
    return LanceFileReader(str(path)), table


@pytest.mark.parametrize(
    "indices",
    [[5000], [0, 5000], [10**9], [4999, 5001, 0], np.array([5000]), pa.array([5000], pa.uint32()), [2**63 - 1], [2**63], [2**64 + 5]],
    ids=["n", "0,n", "1e9", "mixed", "numpy", "uint32", "i64max", "2**63", "2**64+5"],
)
def test_take_out_of_range(small_file, indices):
    r, _ = small_file
    with pytest.raises(exc.IndexOutOfRangeError) as ei:
        r.take_rows(indices)
    assert isinstance(ei.value, IndexError)
    assert_informative(ei.value, "5000 rows")


@pytest.mark.parametrize("indices", [[-1], [3, -7], np.array([-1]), pa.array([-1], pa.int8())], ids=["list", "mixed", "numpy", "int8"])
def test_take_negative(small_file, indices):
    r, _ = small_file
    with pytest.raises(exc.IndexOutOfRangeError) as ei:
        r.take_rows(indices)
    assert_informative(ei.value, "negative")


@pytest.mark.parametrize(
    "indices", [["a"], [1.5], pa.array([1.5]), pa.array([1, None]), pa.array(["x"]), object()], ids=["str", "float", "pa_float", "pa_null", "pa_str", "object"]
)
def test_take_non_integer_indices(small_file, indices):
    r, _ = small_file
    with pytest.raises(exc.InvalidArgumentError) as ei:
        r.take_rows(indices)
    assert_informative(ei.value, "indices")


@pytest.mark.parametrize("start,count", [(4999, 2), (5000, 1), (5001, 0), (0, 5001), (2**63, 1), (2**64 - 1, 2), (2**64, 1)])
def test_read_range_out_of_range(small_file, start, count):
    r, _ = small_file
    with pytest.raises(exc.IndexOutOfRangeError) as ei:
        r.read_range(start, count)
    assert_informative(ei.value, "5000")


@pytest.mark.parametrize("start,count", [(-1, 2), (0, -1)])
def test_read_range_negative(small_file, start, count):
    r, _ = small_file
    with pytest.raises(exc.InvalidArgumentError) as ei:
        r.read_range(start, count)
    assert_informative(ei.value, "negative")


@pytest.mark.parametrize("batch_size", [0, -1])
def test_to_batches_bad_batch_size(small_file, batch_size):
    r, _ = small_file
    with pytest.raises(exc.InvalidArgumentError) as ei:
        list(r.to_batches(batch_size=batch_size))
    assert_informative(ei.value, "batch_size")


@pytest.mark.parametrize("index", [1, 5, -1])
def test_read_global_buffer_out_of_range(small_file, index):
    r, _ = small_file
    with pytest.raises(exc.IndexOutOfRangeError) as ei:
        r.read_global_buffer(index)
    assert_informative(ei.value, "global buffer")


def test_reader_is_usable_after_errors(small_file):
    r, table = small_file
    for bad in ([5000], [-1], ["x"]):
        with pytest.raises(exc.LanceError):
            r.take_rows(bad)
    assert r.take_rows([4999, 0]).to_table().equals(table.take([4999, 0]))


# --------------------------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.read_all(columns=["nope"]),
        lambda r: r.read_range(0, 1, columns=["a", "nope"]),
        lambda r: r.take_rows([1], columns=["nope"]),
        lambda r: list(r.to_batches(columns=["nope"])),
        lambda r: r.to_reader(columns=["nope"]),
        lambda r: LanceFileReader(r.path, columns=["nope"]).read_all(),
        lambda r: r.read_all(columns=["A"]),  # names are case-sensitive
    ],
    ids=["read_all", "read_range", "take_rows", "to_batches", "to_reader", "reader_default", "case"],
)
def test_unknown_column(small_file, call):
    r, _ = small_file
    with pytest.raises(exc.ColumnNotFoundError) as ei:
        call(r)
    assert isinstance(ei.value, KeyError)
    msg = str(ei.value)
    assert "nope" in msg or '"A"' in msg, msg
    assert '"a"' in msg and '"s"' in msg, f"message should list the existing columns: {msg}"


# --------------------------------------------------------------------------------------------
# Writer: schema mismatches and bad arguments
# --------------------------------------------------------------------------------------------

SCHEMA = pa.schema([("a", pa.int64()), ("s", pa.string())])


def _good(n=3):
    return pa.table({"a": pa.array(np.arange(n)), "s": pa.array(["x"] * n)})


@pytest.mark.parametrize(
    "batch,needles",
    [
        (pa.table({"a": pa.array([1, 2], pa.int32()), "s": ["x", "y"]}), ["Int32", "Int64"]),
        (pa.table({"b": pa.array([1, 2]), "s": ["x", "y"]}), ['"b', '"a']),
        (pa.table({"a": pa.array([1]), "s": ["x"], "z": [1.0]}), ["z"]),
        (pa.table({"a": pa.array([1])}), ["s"]),
        (pa.table({"s": ["x"], "a": pa.array([1])}), ["s", "a"]),
        (pa.table({"a": pa.array([1]), "s": pa.array(["x"], pa.large_string())}), ["LargeUtf8"]),
        (pa.table({"a": pa.array([1]), "s": pa.array([b"x"])}), ["Binary"]),
    ],
    ids=["type", "name", "extra", "missing", "order", "large_string", "binary"],
)
def test_batch_schema_differs_from_writer(tmp_path, batch, needles):
    path = tmp_path / "w.lance"
    w = LanceFileWriter(str(path), SCHEMA)
    with pytest.raises(exc.SchemaMismatchError) as ei:
        w.write_batch(batch)
    assert isinstance(ei.value, ValueError)
    assert_informative(ei.value, *needles)
    # The writer is still usable and the file only holds the good batches.
    w.write_batch(_good())
    w.close()
    got = LanceFileReader(str(path)).read_all().to_table()
    assert got.equals(_good())


def test_second_batch_differs_from_first(tmp_path):
    path = tmp_path / "w.lance"
    w = LanceFileWriter(str(path))  # schema taken from the first batch
    w.write_batch(_good())
    with pytest.raises(exc.SchemaMismatchError) as ei:
        w.write_batch(pa.table({"a": pa.array([1.5]), "s": ["x"]}))
    assert_informative(ei.value, "Float64", "Int64")
    w.close()
    assert LanceFileReader(str(path)).num_rows() == 3


def test_nulls_in_non_nullable_field(tmp_path):
    schema = pa.schema([pa.field("a", pa.int64(), nullable=False)])
    w = LanceFileWriter(str(tmp_path / "w.lance"), schema)
    with pytest.raises(exc.SchemaMismatchError) as ei:
        w.write_batch(pa.table({"a": pa.array([1, None])}))
    assert_informative(ei.value, '"a"', "null")


def test_writer_argument_errors(tmp_path):
    with pytest.raises(exc.InvalidArgumentError) as ei:
        LanceFileWriter(str(tmp_path / "a.lance"), max_page_bytes=0)
    assert_informative(ei.value, "max_page_bytes")
    w = LanceFileWriter(str(tmp_path / "b.lance"))
    with pytest.raises(exc.InvalidArgumentError) as ei:
        w.write_batch([1, 2, 3])
    assert_informative(ei.value, "list")
    with pytest.raises(exc.InvalidArgumentError) as ei:
        w.write_batch({"a": [1]})
    with pytest.raises(exc.InvalidArgumentError) as ei:
        w.close()
    assert_informative(ei.value, "schema")


def test_write_after_close(tmp_path):
    w = LanceFileWriter(str(tmp_path / "a.lance"))
    w.write_batch(_good())
    w.close()
    with pytest.raises(exc.InvalidArgumentError) as ei:
        w.write_batch(_good())
    assert_informative(ei.value, "closed")


@pytest.mark.parametrize(
    "typ,version",
    [
        (pa.month_day_nano_interval(), "2.1"),
        (pa.dense_union([pa.field("a", pa.int32())]), "2.2"),
        (pa.string_view(), "2.2"),
        (pa.run_end_encoded(pa.int32(), pa.int64()), "2.2"),
        (pa.map_(pa.string(), pa.int32()), "2.1"),  # maps need 2.2
    ],
    ids=["interval", "union", "string_view", "run_end_encoded", "map_2_1"],
)
def test_unsupported_type(tmp_path, typ, version):
    with pytest.raises(exc.UnsupportedError) as ei:
        with LanceFileWriter(str(tmp_path / "a.lance"), pa.schema([("col", typ)]), version=version) as w:
            w.write_batch(pa.table({"col": pa.nulls(3, typ)}))
    assert_informative(ei.value, "col" if pa.types.is_map(typ) else "")


@pytest.mark.parametrize(
    "metadata,needles",
    [
        ({"lance-encoding:compression": "banana"}, ["banana", "lance-encoding:compression", '"a"']),
        ({"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "x"}, ['"x"', "compression-level", '"a"']),
        ({"lance-encoding:structural-encoding": "weird"}, ["weird", "structural-encoding", '"a"']),
    ],
    ids=["compression", "level", "structural"],
)
def test_bad_encoding_hints(tmp_path, metadata, needles):
    schema = pa.schema([pa.field("a", pa.int64(), metadata=metadata)])
    with pytest.raises(exc.InvalidArgumentError) as ei:
        with LanceFileWriter(str(tmp_path / "h.lance"), schema) as w:
            w.write_batch(pa.table({"a": pa.array(np.arange(10))}, schema=schema))
    assert_informative(ei.value, *needles)


# --------------------------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    missing = tmp_path / "missing.lance"
    with pytest.raises(exc.NotFoundError) as ei:
        LanceFileReader(str(missing))
    assert isinstance(ei.value, FileNotFoundError)
    assert_informative(ei.value, "missing.lance")


def test_directory_and_bad_uris(tmp_path):
    with pytest.raises(exc.LanceError) as ei:
        LanceFileReader(str(tmp_path))
    assert_informative(ei.value, "directory")
    with pytest.raises(exc.UnsupportedError) as ei:
        LanceFileReader("ftp://host/x.lance")
    assert_informative(ei.value, "ftp")
    with pytest.raises(exc.InvalidArgumentError):
        LanceFileReader("")


def test_every_exception_is_a_lance_error():
    for name in exc.__all__:
        cls = getattr(exc, name)
        assert issubclass(cls, exc.LanceError) and issubclass(cls, Exception), name


def test_a_panic_is_an_internal_error():
    """A panic in the core is a bug: it reaches Python as InternalError (asking for a bug
    report), distinct from errors about bad input, and the interpreter stays usable."""
    from lancepy import _lancepy

    for _ in range(2):
        with pytest.raises(exc.InternalError, match="bug in lancepy") as ei:
            _lancepy._panic_for_tests()
        assert "deliberate panic" in str(ei.value)
        assert not isinstance(ei.value, (exc.CorruptFileError, exc.InvalidArgumentError))
    assert exc.NotSupportedError is exc.UnsupportedError
