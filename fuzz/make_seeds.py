"""Writes the seed corpora of the fuzz targets into fuzz/seeds/<target>/ (not committed).

Usage: .venv/bin/python fuzz/make_seeds.py

Files come from pylance (the venv's ``lance``) and from lancepy, small on purpose (a few KB:
libFuzzer mutates small inputs much faster), one column per file so that each page layout
and encoding has its own seed, with small pages so that ranges and takes cross page edges.
Datasets written by pylance give the manifests, transaction files, deletion files (Arrow IPC
for a few deletions, roaring bitmaps for many) and row-id sequences.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
OUT = HERE / "seeds"
TARGETS = ["file_reader", "file_ops", "manifest", "transaction", "deletion_arrow", "deletion_bitmap", "row_ids"]
# Largest seed file kept (bytes): the fuzzers run with -max_len a little above this.
MAX_SEED = 48 * 1024


def put(target: str, data: bytes) -> None:
    if len(data) > MAX_SEED:
        return
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def tables() -> dict[str, tuple[pa.Table, int]]:
    """name -> (table, max_page_bytes)."""
    rng = np.random.default_rng(7)
    n = 300
    words = np.array("lance columnar vector page chunk arrow fsst zstd".split())
    blob_field = pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    out = {
        "int64_nulls": pa.table({"v": pa.array(rng.integers(-1000, 1000, n), mask=rng.random(n) < 0.2)}),
        "int32_small": pa.table({"v": pa.array(rng.integers(0, 16, n).astype(np.int32))}),
        "uint8": pa.table({"v": pa.array(rng.integers(0, 255, n).astype(np.uint8))}),
        "float64": pa.table({"v": pa.array(rng.standard_normal(n))}),
        "float32_nulls": pa.table({"v": pa.array(rng.standard_normal(n).astype(np.float32), mask=rng.random(n) < 0.1)}),
        "bool": pa.table({"v": pa.array(rng.random(n) < 0.5)}),
        "bool_nulls": pa.table({"v": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.3)}),
        "text": pa.table({"v": pa.array([" ".join(words[rng.integers(0, len(words), 3)]) for _ in range(n)])}),
        "text_nulls": pa.table({"v": pa.array(["w" + str(i) if i % 7 else None for i in range(n)])}),
        "category": pa.table({"v": pa.array(words[rng.integers(0, 3, n)])}),
        "large_string": pa.table({"v": pa.array(["x" * (i % 5) for i in range(n)], pa.large_string())}),
        "wide_text": pa.table({"v": pa.array([("w" * 200 if i % 3 == 0 else "w") + str(i) for i in range(60)])}),
        "binary": pa.table({"v": pa.array([bytes([i % 256]) * (i % 9) for i in range(n)], pa.binary())}),
        "large_binary": pa.table({"v": pa.array([bytes([i % 256]) * 150 for i in range(40)], pa.large_binary())}),
        "fixed_binary": pa.table({"v": pa.array([struct.pack("<I", i) for i in range(n)], pa.binary(4))}),
        "vector": pa.table({"v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(60 * 16).astype(np.float32)), 16)}),
        "vector_small": pa.table({"v": pa.FixedSizeListArray.from_arrays(pa.array(rng.integers(0, 9, n * 2).astype(np.int16)), 2)}),
        "constant": pa.table({"v": pa.array(np.full(n, 7, dtype=np.int32))}),
        "constant_text": pa.table({"v": pa.array(["same"] * n)}),
        "all_null": pa.table({"v": pa.nulls(n, pa.float64())}),
        "all_null_text": pa.table({"v": pa.nulls(n, pa.string())}),
        "list_int": pa.table(
            {"v": pa.array([list(range(i % 4)) if i % 5 else None for i in range(n)], pa.list_(pa.int32()))}
        ),
        "list_text": pa.table({"v": pa.array([["a" * (i % 3)] * (i % 3) for i in range(n)], pa.list_(pa.string()))}),
        "large_list": pa.table({"v": pa.array([[i] * (i % 3) for i in range(n)], pa.large_list(pa.int64()))}),
        "list_list": pa.table(
            {"v": pa.array([[[i], []] if i % 4 else [] for i in range(n)], pa.list_(pa.list_(pa.int16())))}
        ),
        "struct": pa.table(
            {
                "v": pa.StructArray.from_arrays(
                    [pa.array(np.arange(n, dtype=np.int32)), pa.array([str(i) if i % 3 else None for i in range(n)])],
                    names=["a", "b"],
                    mask=pa.array([i % 11 == 0 for i in range(n)]),
                )
            }
        ),
        "list_struct": pa.table(
            {"v": pa.array([[{"x": i, "y": None}] * (i % 3) for i in range(n)], pa.list_(pa.struct([("x", pa.int32()), ("y", pa.float32())])))}
        ),
        "dictionary": pa.table({"v": pa.array(words[rng.integers(0, 4, n)]).dictionary_encode()}),
        "timestamp": pa.table({"v": pa.array(np.arange(n, dtype=np.int64) * 1000, pa.timestamp("us"))}),
        "decimal": pa.table({"v": pa.array([i * 3 for i in range(n)], pa.decimal128(12, 2))}),
        "blob": pa.Table.from_arrays([pa.array([bytes([i]) * (i * 5) if i % 4 else None for i in range(30)], pa.large_binary())], schema=pa.schema([blob_field])),
        "mixed": pa.table(
            {
                "a": pa.array(np.arange(120, dtype=np.int64)),
                "b": pa.array([str(i) * (i % 4) for i in range(120)]),
                "c": pa.nulls(120, pa.int32()),
                "d": pa.array([[i] for i in range(120)], pa.list_(pa.int8())),
            }
        ),
        "empty": pa.table({"v": pa.array([], pa.int32())}),
    }
    return {k: (t, 512 if k not in ("wide_text", "large_binary", "vector", "blob") else 2048) for k, t in out.items()}


def write_files(tmp: Path) -> list[bytes]:
    import lance.file as pylance_file

    try:
        import lancepy.file as lancepy_file
    except Exception as e:  # the extension may not be built
        print(f"lancepy is not importable ({e}); only pylance files are written", file=sys.stderr)
        lancepy_file = None
    written = []
    for name, (table, page) in tables().items():
        for version in ("2.0", "2.1", "2.2"):
            for who, mod in (("pylance", pylance_file), ("lancepy", lancepy_file)):
                if mod is None:
                    continue
                path = tmp / f"{name}-{version}-{who}.lance"
                try:
                    if who == "pylance":
                        w = mod.LanceFileWriter(str(path), table.schema, version=version, max_page_bytes=page)
                        w.write_batch(table)
                        w.close()
                    else:
                        with mod.LanceFileWriter(str(path), table.schema, version=version, max_page_bytes=page) as w:
                            w.write_batch(table)
                except Exception as e:
                    print(f"skip {name} {version} {who}: {type(e).__name__}: {str(e)[:100]}", file=sys.stderr)
                    continue
                written.append(path.read_bytes())
    return written


def row_id_seeds() -> list[bytes]:
    """Every segment kind, encoded by hand (protobuf wire format)."""

    def varint(x: int) -> bytes:
        out = bytearray()
        while True:
            b = x & 0x7F
            x >>= 7
            out.append(b | (0x80 if x else 0))
            if not x:
                return bytes(out)

    def field(num: int, payload: bytes) -> bytes:
        return varint(num << 3 | 2) + varint(len(payload)) + payload

    def uint(num: int, x: int) -> bytes:
        return varint(num << 3) + varint(x)

    def seq(*segments: bytes) -> bytes:
        return b"".join(field(1, s) for s in segments)

    def arr(kind: int, base: int, data: bytes) -> bytes:
        inner = (uint(1, base) if kind != 3 else b"") + field(2, data)
        return field(kind, inner)

    rng_ = field(1, uint(1, 10) + uint(2, 100))
    holes = field(2, uint(1, 0) + uint(2, 50) + field(3, arr(1, 0, struct.pack("<3H", 3, 9, 20))))
    bitmap = field(3, uint(1, 100) + uint(2, 120) + field(3, bytes([0xF0, 0x0F, 0xAA])))
    sorted_ = field(4, arr(2, 1000, struct.pack("<4I", 1, 2, 5, 9)))
    plain = field(5, arr(3, 0, struct.pack("<3Q", 7, 3, 1 << 40)))
    return [seq(rng_), seq(holes), seq(bitmap), seq(sorted_), seq(plain), seq(rng_, holes, bitmap, sorted_, plain), b""]


def write_datasets(tmp: Path) -> None:
    import lance

    n = 12000
    table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "s": pa.array([str(i % 97) for i in range(n)])})
    for stable in (False, True):
        for version in ("2.0", "2.1"):
            path = tmp / f"ds-{stable}-{version}"
            ds = lance.write_dataset(
                table, path, data_storage_version=version, enable_stable_row_ids=stable, max_rows_per_file=8000
            )
            ds.delete("id % 1000 = 3")  # few deletions: an Arrow IPC deletion file
            ds = lance.dataset(path)
            ds.delete("id >= 1000 and id < 7000")  # many (6000 of 8000): a roaring bitmap
            ds = lance.dataset(path)
            lance.write_dataset(table.slice(0, 10), path, mode="append")
            ds = lance.dataset(path)
            try:
                ds.create_scalar_index("id", "BTREE")
            except Exception as e:
                print(f"skip index: {e}", file=sys.stderr)
            ds = lance.dataset(path)
            ds.add_columns({"twice": "id * 2"})
    for f in sorted(tmp.rglob("*")):
        if not f.is_file():
            continue
        data = f.read_bytes()
        if f.suffix == ".manifest":
            put("manifest", data)
        elif f.suffix == ".txn":
            put("transaction", data)
        elif f.suffix == ".arrow" and "_deletions" in f.parts:
            put("deletion_arrow", data)
        elif f.suffix == ".bin" and "_deletions" in f.parts:
            put("deletion_bitmap", data)
        elif f.suffix == ".lance" and "data" in f.parts and len(data) <= MAX_SEED:
            put("file_reader", data)


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        files = write_files(tmp / "files")
        for data in files:
            put("file_reader", data)
        # file_ops: 16 bytes of requests before the file (field, range start/length, takes).
        rng = np.random.default_rng(11)
        for i, data in enumerate(files):
            for _ in range(2):
                put("file_ops", rng.integers(0, 256, 16, dtype=np.uint8).tobytes() + data)
        for s in row_id_seeds():
            put("row_ids", s)
        write_datasets(tmp / "datasets")
    # Row-id sequences embedded in the manifests are found by the manifest target; the
    # deletion targets also get a few hand-made edge cases.
    put("deletion_bitmap", b"")
    put("deletion_bitmap", struct.pack("<II", 12346, 0))
    for t in TARGETS:
        d = OUT / t
        count = len(list(d.iterdir())) if d.exists() else 0
        print(f"{t}: {count} seeds")


if __name__ == "__main__":
    main()
