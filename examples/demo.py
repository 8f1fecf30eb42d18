"""lancepy demo: a small multimodal dataset through its life.

Creates a dataset of ids, captions, 768-d embeddings and small images; appends, deletes,
travels back in time, adds a column without rewriting data, samples random rows, compacts,
and (when pylance is installed) shows that the reference implementation opens the very same
dataset. A short single-file part at the end shows the file layer.

Run with `bash scripts/demo.sh`.
"""

from __future__ import annotations

import os
import random
import tempfile
import time

import numpy as np
import pyarrow as pa

import lancepy
from lancepy.file import LanceFileReader, LanceFileWriter

DIM = 768
WORDS = ["red", "green", "blue", "cyan", "magenta", "yellow", "black", "white"]


def make_rows(n: int, start: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    images = [rng.integers(0, 256, 16 * 16 * 3, dtype=np.uint8).tobytes() for _ in range(n)]  # 16x16 RGB
    return pa.table(
        {
            "id": ids,
            "caption": [f"a photo of a {WORDS[i % 8]} thing, number {i}" for i in ids],
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * DIM, dtype=np.float32)), DIM),
            "image": pa.array(images, pa.binary()),
        }
    )


def timed(label: str, fn):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn()
    print(f"  {label:<52s} {(time.perf_counter() - t0) * 1e3:8.1f} ms")
    return out


def dataset_demo(root: str) -> None:
    rng = np.random.default_rng(7)
    uri = os.path.join(root, "photos.lance")
    print(f"== dataset at {uri}")
    ds = timed("create: 20,000 rows (768-d embeddings, 16x16 images)",
               lambda: lancepy.write_dataset(make_rows(20_000, 0, rng), uri, max_rows_per_file=5_000))
    ds = timed("append 5,000 rows", lambda: lancepy.write_dataset(make_rows(5_000, 20_000, rng), uri, mode="append"))
    timed("delete captions about 'blue' things", lambda: ds.delete("caption LIKE '%blue%'"))
    print(f"  versions: {[v['version'] for v in ds.versions()]}, rows now {ds.count_rows():,}, "
          f"at version 1 {lancepy.dataset(uri, version=1).count_rows():,}")
    ds.tags.create("before-features", ds.version)
    timed("add column 'id_bucket' = id % 10 (no data rewrite)", lambda: ds.add_columns({"id_bucket": "id % 10"}))
    print(f"  schema: {', '.join(f'{f.name}: {f.type}' for f in ds.schema)}")
    print(f"  tagged 'before-features' -> version {lancepy.dataset(uri, version='before-features').version}")

    idx = random.Random(0).sample(range(ds.count_rows()), 1000)
    sample = timed("take 1,000 random rows (all columns)", lambda: ds.take(idx))
    print(f"  first sampled row: id={sample['id'][0]}, caption={sample['caption'][0].as_py()!r}, "
          f"|embedding|={np.linalg.norm(sample['embedding'][0].values.to_numpy()):.2f}")
    hits = timed("filter: id_bucket = 3 AND id >= 24000", lambda: ds.to_table(columns=["id"], filter="id_bucket = 3 AND id >= 24000"))
    print(f"  -> {hits.num_rows} rows")
    before = len(ds.get_fragments())
    metrics = timed("compact (materialize deletions)", lambda: ds.optimize.compact_files(target_rows_per_fragment=50_000))
    print(f"  fragments {before} -> {len(ds.get_fragments())} ({metrics.fragments_removed} rewritten), version {ds.version}")

    try:
        import lance  # the reference implementation, only if installed
    except ImportError:
        print("  (pylance is not installed: skipping the cross-check)")
        return
    theirs = lance.dataset(uri)
    same = theirs.to_table().replace_schema_metadata(None).equals(ds.to_table().replace_schema_metadata(None))
    print(f"  pylance opens the same dataset: version {theirs.version}, {theirs.count_rows():,} rows, "
          f"tables {'equal' if same else 'DIFFERENT'}")
    lance.write_dataset(make_rows(10, 90_000, rng), uri, mode="append")
    print(f"  pylance appended; lancepy now reads version {lancepy.dataset(uri).version} "
          f"with {lancepy.dataset(uri).count_rows():,} rows")


def file_demo(root: str) -> None:
    path = os.path.join(root, "single.lance")
    table = pa.table({"id": np.arange(100_000), "word": [WORDS[i % 8] for i in range(100_000)]})
    with LanceFileWriter(path, version="2.1") as w:
        w.write_batch(table)
    reader = LanceFileReader(path)
    print(f"\n== single file {os.path.basename(path)}: {reader.num_rows():,} rows, "
          f"{os.path.getsize(path) / 1e3:.0f} kB, encodings {reader.metadata().encodings()[1][:1]}")
    assert reader.read_all().to_table().equals(table)
    print(f"  take_rows([5, 99999]) -> {reader.take_rows([5, 99_999]).to_table().column('word').to_pylist()}")


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        dataset_demo(d)
        file_demo(d)


if __name__ == "__main__":
    main()
