"""File-format benchmark: lancepy vs pylance vs Parquet on the same data, in one run.

    python benches/bench_file.py                        # all datasets, file version 2.1
    python benches/bench_file.py --quick                # small sizes: a smoke run in seconds
    python benches/bench_file.py --datasets tabular,nested --version 2.1,2.2
    python benches/bench_file.py --out benches/RESULTS.md   # also write the Markdown section
    python benches/bench_file.py --cold --rows 50000     # also takes from storage (files evicted first)

Datasets (generated deterministically, cached as Arrow IPC in benches/data/, which is
git-ignored; ``--quick`` uses 1/20 to 1/100 of the rows):

* ``tabular``    2M rows: int64 id, int32 category (0..100), float64, ~14-char text, 50-value text
* ``embeddings`` 200k rows: 768-d float32 vector + ~60-char caption
* ``images``     20k rows: 20-100 KB incompressible binary (like JPEGs) + int32 label
* ``nested``     1M rows: ``tags: list<string>`` (0-10 items), ``boxes: list<struct<label: string,
  bbox: fixed_size_list<float32, 4>>>`` (0-6 items)

Each library writes the same in-memory table (lancepy and pylance at the same file version;
Parquet with pyarrow's defaults: snappy, dictionary, row groups of up to 1Mi rows), then reads
its own file (warm page cache: the files were just written and fit in memory). lancepy also
reads pylance's file, which separates reader speed from the writer's choice of encodings.

Metrics (median of repeated runs; the number of repetitions adapts to the operation's cost;
the Lance readers' repetitions are interleaved in ~50 ms blocks so that load from other
processes hits them alike, Parquet is measured on its own; ``--wait-quiet`` waits for an idle
machine before each measurement, and the output says how much CPU others used meanwhile):

* write: the whole table into one file (to the page cache; no fsync);
* file size;
* full scan and one-column scan, materialised as a ``pyarrow.Table``;
* take of 1 / 100 / 1,000 / 10,000 random rows in random order (a fresh set of rows each
  repetition, drawn from a fixed pool), as rows/s, both as the library's native result and
  materialised as a ``pyarrow.Table``; single-row take latency in µs. Indices are Python lists
  for both Lance readers.
  pylance's file API requires ascending indices: it is given the same rows pre-sorted, so its
  time excludes re-ordering (lancepy's includes it). Parquet: ``pyarrow.parquet.ParquetFile``
  opened once, then ``read_row_groups`` of just the row groups holding the rows + ``Table.take``
  (as fast or faster than ``pyarrow.dataset.Dataset.take``: 134 vs 312 ms for one row of the
  2M-row tabular file).
  pylance reads with ``batch_size=65536`` for scans and 8192 for takes (its default, 1024,
  makes scans ~1.7x slower).

``--cold`` adds takes from storage: before each take, the reader is opened afresh and its
file evicted from the page cache with ``posix_fadvise(POSIX_FADV_DONTNEED)`` (no root needed;
benches/_cold.py); reported are rows/s and bytes read per row, as ``mincore`` residency of the
file after the take (read-ahead included, the same measure for every reader) and as lancepy's
own counters (``lancepy.io_counts()``; pylance's and pyarrow's file readers have none), with the
ratios pylance time ÷ lancepy time and lancepy bytes ÷ pylance bytes.

Ratios are oriented so that > 1 means lancepy is better: lancepy's speed over the other's
(rows/s or MB/s), and for file size and latency the other's bytes (µs) over lancepy's.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

# numpy's OpenBLAS threads (unused here) would otherwise spin on the 2 cores we measure.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pyarrow as pa
import pyarrow.parquet as pq

import lancepy
from lancepy.file import LanceFileReader, LanceFileWriter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA_DIR = os.path.join(HERE, "data")
RESULTS_MARKER = "## Files (benches/bench_file.py)"
COLD_RESULTS_MARKER = "## Files, warm and cold takes (benches/bench_file.py --cold)"
TAKE_SIZES = (1, 100, 1_000, 10_000)
DATA_FORMAT = 1  # bump when the generators change: cached data is regenerated

# ----------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class Spec:
    name: str
    rows: int
    quick_rows: int
    scan_column: str
    describe: str
    make: Callable[[int, np.random.Generator], pa.Table]


_WORDS = (
    "amber bright cloud delta ember frost grove harbor iris jade kite lumen maple north ocean pixel "
    "quartz river solar tide umbra vivid willow xenon yarrow zephyr alpine basil cedar dune echo fjord "
    "glade haze isle jungle karst lagoon mesa nectar orbit prism quill ridge shale thorn"
).split()
_CITIES = [f"{_WORDS[i % len(_WORDS)].capitalize()}{('ville', 'port', 'field', 'ton', '')[i % 5]}" for i in range(50)]
_LABELS = (
    "person bicycle car motorcycle airplane bus train truck boat light hydrant sign meter bench bird "
    "cat dog horse sheep cow elephant bear zebra giraffe backpack umbrella handbag tie suitcase frisbee"
).split()


def _strings_from_parts(rng: np.random.Generator, n: int, parts: Sequence[str], k: int, sep: str = " ") -> np.ndarray:
    """``n`` strings of ``k`` random words each, as an object array (a few seconds for millions)."""
    vocab = np.array(parts, dtype=object)
    cols = [vocab[rng.integers(0, len(parts), n)] for _ in range(k)]
    out = cols[0]
    for c in cols[1:]:
        out = out + sep + c
    return out


def make_tabular(n: int, rng: np.random.Generator) -> pa.Table:
    # ~14 characters: "<word>_<word><3 digits>", e.g. "frost_ridge042"
    words = _strings_from_parts(rng, n, _WORDS, 2, "_")
    digits = np.char.zfill(rng.integers(0, 1000, n).astype(str), 3).astype(object)
    text = pa.array(words + digits, type=pa.string())
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "category": pa.array(rng.integers(0, 100, n, dtype=np.int32)),
            "value": pa.array(rng.normal(100.0, 15.0, n)),
            "text": text,
            "city": pa.array(np.array(_CITIES, dtype=object)[rng.integers(0, 50, n)], type=pa.string()),
        }
    )


def make_embeddings(n: int, rng: np.random.Generator) -> pa.Table:
    dim = 768
    vec = rng.standard_normal(n * dim, dtype=np.float32)
    caption = _strings_from_parts(rng, n, _WORDS, 9)  # ~60 characters
    return pa.table(
        {
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec), dim),
            "caption": pa.array(caption, type=pa.string()),
        }
    )


def make_images(n: int, rng: np.random.Generator) -> pa.Table:
    sizes = rng.integers(20_000, 100_001, n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    # Uniformly random bytes: like JPEG payloads, they do not compress.
    data = rng.bytes(int(offsets[-1]))
    typ = pa.large_binary() if offsets[-1] >= 2**31 else pa.binary()
    off = offsets if typ == pa.large_binary() else offsets.astype(np.int32)
    images = pa.Array.from_buffers(typ, n, [None, pa.py_buffer(off), pa.py_buffer(data)])
    return pa.table({"image": images, "label": pa.array(rng.integers(0, 1000, n, dtype=np.int32))})


def make_nested(n: int, rng: np.random.Generator) -> pa.Table:
    tag_vocab = [f"{w}-{i}" for i in range(20) for w in _WORDS]  # 1,000 tags
    ntags = rng.integers(0, 11, n)
    toff = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(ntags, out=toff[1:])
    tag_values = pa.array(np.array(tag_vocab, dtype=object)[rng.integers(0, len(tag_vocab), int(toff[-1]))], type=pa.string())
    tags = pa.ListArray.from_arrays(pa.array(toff), tag_values)

    nbox = rng.integers(0, 7, n)
    boff = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(nbox, out=boff[1:])
    m = int(boff[-1])
    labels = pa.array(np.array(_LABELS, dtype=object)[rng.integers(0, len(_LABELS), m)], type=pa.string())
    xy = rng.random((m, 2), dtype=np.float32) * 600
    wh = rng.random((m, 2), dtype=np.float32) * 200 + 10
    bbox = pa.FixedSizeListArray.from_arrays(pa.array(np.hstack([xy, xy + wh]).ravel()), 4)
    struct = pa.StructArray.from_arrays([labels, bbox], names=["label", "bbox"])
    boxes = pa.ListArray.from_arrays(pa.array(boff), struct)
    return pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "tags": tags, "boxes": boxes})


SPECS: Dict[str, Spec] = {
    s.name: s
    for s in [
        Spec("tabular", 2_000_000, 100_000, "text",
             "int64 id, int32 category 0..100, float64, ~14-char text, 50-value text", make_tabular),
        Spec("embeddings", 200_000, 5_000, "vector", "768-d float32 vector + ~60-char caption", make_embeddings),
        Spec("images", 20_000, 500, "label", "20-100 KB incompressible binary + int32 label", make_images),
        Spec("nested", 1_000_000, 50_000, "tags",
             "id, tags: list<string> (0-10), boxes: list<struct<label: string, bbox: fixed_size_list<float32, 4>>> (0-6)",
             make_nested),
    ]
}


def load_dataset(spec: Spec, rows: int, data_dir: str) -> pa.Table:
    """The dataset, generated once (seeded) and cached as an uncompressed Arrow IPC file."""
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, f"{spec.name}-{rows}-v{DATA_FORMAT}.arrow")
    if not os.path.exists(path):
        t0 = time.perf_counter()
        table = spec.make(rows, np.random.default_rng(20240601))
        # Batches of ~16 MiB, as a data pipeline would hand them over.
        batch_rows = max(1, min(rows, int(16 * 2**20 * rows / max(1, table.nbytes))))
        tmp = path + ".tmp"
        with pa.ipc.new_file(tmp, table.schema) as w:
            w.write_table(table, max_chunksize=batch_rows)
        os.replace(tmp, path)
        print(f"  generated {spec.name} ({rows:,} rows) in {time.perf_counter() - t0:.1f}s -> {path}", flush=True)
    with pa.OSFile(path) as f:  # read into memory (not mapped): writers read RAM, not the page cache
        return pa.ipc.open_file(f).read_all()


# ----------------------------------------------------------------------------------------
# Timing


@dataclass
class Timing:
    median: float  # seconds
    reps: int
    extra: Dict[str, float] = field(default_factory=dict)  # medians of named sub-steps


def _cpu_sample() -> Tuple[float, float, float]:
    """(wall clock, busy CPU-seconds of the whole machine, our own CPU-seconds)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:8]]
        busy = (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        busy = float("nan")
    t = os.times()
    return time.monotonic(), busy, t.user + t.system


class Noise:
    """CPU time other processes used while we measured (this machine is shared): a more
    direct indicator than the load average, which lags by minutes."""

    other = 0.0  # CPU-seconds used by others during measurements
    capacity = 0.0  # CPU-seconds available during measurements
    quiet_wait = 0.0  # seconds ``measure`` may wait for the machine to go quiet (--wait-quiet)

    @classmethod
    def record(cls, a: Tuple[float, float, float], b: Tuple[float, float, float]) -> None:
        cls.other += max(0.0, (b[1] - a[1]) - (b[2] - a[2]))
        cls.capacity += (b[0] - a[0]) * (os.cpu_count() or 1)

    @classmethod
    def wait_for_quiet(cls, threshold: float = 0.10, window: float = 2.0) -> None:
        """Waits (at most ``quiet_wait`` s) until others use < ``threshold`` of the CPUs."""
        deadline = time.monotonic() + cls.quiet_wait
        while time.monotonic() < deadline:
            a = _cpu_sample()
            time.sleep(window)
            b = _cpu_sample()
            used = ((b[1] - a[1]) - (b[2] - a[2])) / ((b[0] - a[0]) * (os.cpu_count() or 1))
            if used < threshold:
                return


def measure(fns: Dict[str, Callable[[int], Any]], budget: float, min_reps: int = 5, max_reps: int = 2000) -> Dict[str, Timing]:
    """Median time of each ``fn(i)`` (i = repetition number) after one warm-up call.

    The functions' repetitions are interleaved in blocks of ~50 ms (a round runs a block of
    each), so a burst of load from other processes slows all of them alike and their ratios
    stay meaningful, while consecutive calls of one function still find warm CPU caches.
    ``fn`` may return a dict of named checkpoints (``time.perf_counter()`` values taken
    inside it); their medians, relative to the start, are reported in ``extra``.
    """
    if Noise.quiet_wait > 0:
        Noise.wait_for_quiet()
    gc.collect()
    cpu0 = _cpu_sample()
    reps: Dict[str, int] = {}
    block: Dict[str, int] = {}
    for name, fn in fns.items():
        t0 = time.perf_counter()
        fn(0)
        first = max(time.perf_counter() - t0, 1e-7)
        reps[name] = int(min(max_reps, max(min_reps, budget / first)))
        block[name] = max(1, int(0.05 / first))
    times: Dict[str, List[float]] = {name: [] for name in fns}
    extras: Dict[str, Dict[str, List[float]]] = {name: {} for name in fns}
    while any(len(times[name]) < reps[name] for name in fns):
        for name, fn in fns.items():
            for _ in range(min(block[name], reps[name] - len(times[name]))):
                t0 = time.perf_counter()
                marks = fn(len(times[name]) + 1)
                t1 = time.perf_counter()
                times[name].append(t1 - t0)
                if isinstance(marks, dict):
                    for k, v in marks.items():
                        extras[name].setdefault(k, []).append(v - t0)
    Noise.record(cpu0, _cpu_sample())
    return {
        name: Timing(statistics.median(times[name]), reps[name], {k: statistics.median(v) for k, v in extras[name].items()})
        for name in fns
    }


# ----------------------------------------------------------------------------------------
# The libraries under test, behind one small interface


class Lib:
    name: str
    ext: str

    def write(self, table: pa.Table, path: str) -> None: ...
    def open(self, path: str, columns: Optional[List[str]] = None) -> Any: ...
    def scan(self, reader: Any) -> pa.Table: ...
    def take(self, reader: Any, idx: "Indices", marks: Dict[str, float]) -> pa.Table:
        """The rows as a Table; ``marks["native"]`` = when the library's own result was ready."""


@dataclass
class Indices:
    """One set of rows in the forms each library takes them."""

    shuffled: np.ndarray  # random order (what users ask for)
    shuffled_list: List[int]
    sorted_list: List[int]  # for pylance, whose file API requires ascending indices


class LancepyLib(Lib):
    name, ext = "lancepy", "lance"

    def __init__(self, version: str) -> None:
        self.version = version

    def write(self, table: pa.Table, path: str) -> None:
        with LanceFileWriter(path, version=self.version) as w:
            w.write_batch(table)

    def open(self, path: str, columns: Optional[List[str]] = None) -> Any:
        r = LanceFileReader(path, columns=columns)
        assert r.version == self.version, (r.version, self.version)
        return r

    def scan(self, reader: Any) -> pa.Table:
        return reader.read_all().to_table()

    def take(self, reader: Any, idx: Indices, marks: Dict[str, float]) -> pa.Table:
        # A Python list, as pylance gets (numpy input costs ~8 µs more per call today: it goes
        # through pa.array and an Arrow C-data import).
        res = reader.take_rows(idx.shuffled_list)
        marks["native"] = time.perf_counter()
        return res.to_table()


class PylanceLib(Lib):
    name, ext = "pylance", "lance"

    def __init__(self, version: str) -> None:
        import lance.file

        self.mod = lance.file
        self.version = version
        # Its default batch_size (1024) makes scans ~1.7x slower (2M-row tabular: 241 ms vs
        # 138 ms); 64Ki rows was its fastest for scans, 8Ki for takes (flat beyond).
        self.scan_batch_size = 65536
        self.take_batch_size = 8192

    def write(self, table: pa.Table, path: str) -> None:
        with self.mod.LanceFileWriter(path, version=self.version) as w:
            w.write_batch(table)

    def open(self, path: str, columns: Optional[List[str]] = None) -> Any:
        return self.mod.LanceFileReader(path, columns=columns)

    def scan(self, reader: Any) -> pa.Table:
        return reader.read_all(batch_size=self.scan_batch_size).to_table()

    def take(self, reader: Any, idx: Indices, marks: Dict[str, float]) -> pa.Table:
        stream = reader.take_rows(idx.sorted_list, batch_size=self.take_batch_size).to_batches()
        batches = list(stream)  # decoded; its to_table() is read_all() of this same stream
        marks["native"] = time.perf_counter()
        return pa.Table.from_batches(batches, schema=stream.schema)


class ParquetLib(Lib):
    name, ext = "parquet", "parquet"

    def write(self, table: pa.Table, path: str) -> None:
        pq.write_table(table, path)

    def open(self, path: str, columns: Optional[List[str]] = None) -> Any:
        pf = pq.ParquetFile(path)
        md = pf.metadata
        starts = np.zeros(md.num_row_groups + 1, dtype=np.int64)
        starts[1:] = np.cumsum([md.row_group(i).num_rows for i in range(md.num_row_groups)])
        return (pf, starts, columns)

    def scan(self, reader: Any) -> pa.Table:
        pf, _, columns = reader
        return pf.read(columns=columns)

    def take(self, reader: Any, idx: Indices, marks: Dict[str, float]) -> pa.Table:
        pf, starts, columns = reader
        rows = idx.shuffled
        group_of = np.searchsorted(starts, rows, side="right") - 1
        groups = np.unique(group_of)
        table = pf.read_row_groups(groups.tolist(), columns=columns)
        # Where each needed group starts in the concatenated table.
        sizes = starts[groups + 1] - starts[groups]
        base = np.zeros(len(groups), dtype=np.int64)
        base[1:] = np.cumsum(sizes)[:-1]
        pos = base[np.searchsorted(groups, group_of)] + (rows - starts[group_of])
        out = table.take(pa.array(pos))
        marks["native"] = time.perf_counter()
        return out


# ----------------------------------------------------------------------------------------
# The benchmark


@dataclass
class Row:
    metric: str
    unit: str
    values: Dict[str, Optional[float]]  # by reader: lancepy, lancepy_on_pylance, pylance, parquet
    higher_is_better: bool
    target: Optional[Tuple[str, Callable[[Dict[str, Optional[float]]], Optional[bool]]]] = None
    note: str = ""


READERS = ("lancepy", "lancepy_on_pylance", "pylance", "parquet")


def ratio(values: Dict[str, Optional[float]], other: str, higher_is_better: bool, a: str = "lancepy") -> Optional[float]:
    x, y = values.get(a), values.get(other)
    if x is None or y is None or x == 0 or y == 0:
        return None
    return x / y if higher_is_better else y / x


def encodings_summary(path: str, schema: pa.Schema) -> List[str]:
    """Per top-level field: the distinct page encodings lancepy sees in a file."""
    md = LanceFileReader(path).metadata()
    out = []
    for i, pages in enumerate(md.encodings()):
        uniq = sorted(set(pages))
        out.append(f"col {i}: " + "; ".join(uniq))
    return out


def bench_dataset(spec: Spec, table: pa.Table, version: str, args: argparse.Namespace, workdir: str) -> Tuple[List[Row], Dict[str, Any]]:
    budget = args.budget
    libs: Dict[str, Lib] = {"lancepy": LancepyLib(version), "pylance": PylanceLib(version), "parquet": ParquetLib()}
    paths = {n: os.path.join(workdir, f"{spec.name}-{version}-{n}.{lib.ext}") for n, lib in libs.items()}
    n = table.num_rows
    rows: List[Row] = []
    info: Dict[str, Any] = {}

    # Write (the last repetition's file is the one read below).
    write_s: Dict[str, Optional[float]] = {}
    timings = measure({name: (lambda i, lib=lib, name=name: lib.write(table, paths[name])) for name, lib in libs.items()},
                      budget * 2, min_reps=3, max_reps=20)
    for name, t in timings.items():
        write_s[name] = t.median
        print(f"    write {name}: {t.median:.3f}s ({t.reps} reps)", flush=True)
    # Flush the files' dirty pages now: background writeback would otherwise compete with
    # the reads measured next (the pages stay cached, so reads remain warm).
    os.sync()
    write_s["lancepy_on_pylance"] = None
    mb = table.nbytes / 1e6
    rows.append(Row("write", "MB/s", {k: (mb / v if v else None) for k, v in write_s.items()}, True,
                    ("≥ pylance", lambda v: _ge(ratio(v, "pylance", True), 1.0))))
    sizes = {name: os.path.getsize(p) / 1e6 for name, p in paths.items()}
    sizes["lancepy_on_pylance"] = None
    rows.append(Row("file size", "MB", sizes, False, ("≤ pylance", lambda v: _ge(ratio(v, "pylance", False), 1.0))))
    info["arrow_mb"] = mb
    info["encodings"] = {
        "lancepy": encodings_summary(paths["lancepy"], table.schema),
        "pylance": encodings_summary(paths["pylance"], table.schema),
    }
    pf_md = pq.ParquetFile(paths["parquet"]).metadata
    info["parquet_row_groups"] = pf_md.num_row_groups

    # Readers: each library reads its own file; lancepy also reads pylance's.
    readers: Dict[str, Tuple[Lib, str]] = {
        "lancepy": (libs["lancepy"], paths["lancepy"]),
        "lancepy_on_pylance": (libs["lancepy"], paths["pylance"]),
        "pylance": (libs["pylance"], paths["pylance"]),
        "parquet": (libs["parquet"], paths["parquet"]),
    }
    opened = {k: lib.open(p) for k, (lib, p) in readers.items()}
    opened_col = {k: lib.open(p, columns=[spec.scan_column]) for k, (lib, p) in readers.items()}

    # Sanity: every reader returns the same rows (cheap subset check).
    check = Indices(*_index_forms(np.random.default_rng(7).choice(n, min(n, 50), replace=False)))
    want = table.take(pa.array(check.sorted_list))
    for k, (lib, _) in readers.items():
        got = lib.take(opened[k], check, {})
        if k == "pylance":
            assert got.equals(want), f"{k} returned different rows"
        else:
            assert got.take(pa.array(np.argsort(check.shuffled))).equals(want), f"{k} returned different rows"

    for label, rdrs, col in (("full scan", opened, None), ("one-column scan", opened_col, spec.scan_column)):
        vals: Dict[str, Optional[float]] = {}
        timings = measure_readers(readers, lambda k, lib: (lambda i: lib.scan(rdrs[k])), budget, min_reps=3)
        for k, t in timings.items():
            vals[k] = n / t.median
            print(f"    {label} {k}: {t.median * 1e3:.2f} ms ({t.reps} reps)", flush=True)
        rows.append(Row(f"{label} → Table", "rows/s", vals, True,
                        ("≥ 1.5× pylance", lambda v: _ge(ratio(v, "pylance", True), 1.5))))

    # Takes: a pool of distinct random row sets per size, cycled through.
    rng = np.random.default_rng(1234)
    latency: Dict[str, Dict[str, float]] = {}
    for size in TAKE_SIZES:
        if size > n:
            continue
        pool = [Indices(*_index_forms(rng.choice(n, size, replace=False))) for _ in range(64 if size <= 1000 else 16)]
        native: Dict[str, Optional[float]] = {}
        tabled: Dict[str, Optional[float]] = {}
        timings = measure_readers(
            readers, lambda k, lib: (lambda i: _marks(lambda m: lib.take(opened[k], pool[i % len(pool)], m))),
            budget, min_reps=5,
        )
        for k, t in timings.items():
            native[k] = size / t.extra["native"]
            tabled[k] = size / t.median
            if size == 1:
                latency[k] = {"native": t.extra["native"] * 1e6, "table": t.median * 1e6}
            print(f"    take {size:,} {k}: native {t.extra['native'] * 1e3:.3f} ms, "
                  f"Table {t.median * 1e3:.3f} ms ({t.reps} reps)", flush=True)
        tgt = ("≥ 3× pylance", lambda v: _ge(ratio(v, "pylance", True), 3.0)) if size == 1000 else None
        rows.append(Row(f"take {size:,} → Table", "rows/s", tabled, True, tgt))
        rows.append(Row(f"take {size:,}, native result", "rows/s", native, True, tgt))
    if latency:
        for kind in ("table", "native"):
            vals = {k: v[kind] for k, v in latency.items()}
            rows.append(Row(f"take 1 row latency{' → Table' if kind == 'table' else ', native result'}", "µs", vals, False,
                            ("< 20 µs", lambda v: None if v.get("lancepy") is None else v["lancepy"] < 20)))
    if args.cold:
        # The warm readers go first: pages that a live lancepy reader's mapping has touched
        # (all of them, after its scans) cannot be evicted.
        del opened, opened_col, rdrs
        gc.collect()
        cold_rows, info["cold"] = cold_takes(readers, n, args.cold_reps, np.random.default_rng(4321))
        rows += cold_rows
    return rows, info


def cold_takes(readers: Dict[str, Tuple[Lib, str]], n: int, reps: int,
               rng: np.random.Generator) -> Tuple[List[Row], List[str]]:
    """Takes from storage (``--cold``): for each size and repetition, each reader is opened
    afresh (untimed: footer and column metadata read), its file is evicted from the page cache (``posix_fadvise(DONTNEED)``, no root needed), then the take is timed (to a
    Table). Bytes per row: what the take brought into the page cache for the file
    (``mincore``: read-ahead included, the same measure for every reader) and what the library
    counted (lancepy: ``io_counts()`` ``bytes + mapped_bytes``; pylance's and pyarrow's file
    readers have no counters). The repetitions' row sets are the same for every reader."""
    import _cold

    out: List[Row] = []
    notes: List[str] = []
    for size in TAKE_SIZES:
        if size > n:
            continue
        sets = [Indices(*_index_forms(rng.choice(n, size, replace=False))) for _ in range(reps)]
        rate: Dict[str, Optional[float]] = {}
        fetched: Dict[str, Optional[float]] = {}
        counted: Dict[str, Optional[float]] = {}
        for k, (lib, path) in readers.items():
            probe = _cold.Probe([path])
            times, got_bytes, lib_bytes, residual = [], 0, 0, 0
            for idx in sets:
                gc.collect()
                _cold.forget_lancepy_readers(os.path.dirname(path))
                reader = lib.open(path)
                residual = max(residual, probe.evict())
                c0 = lancepy.io_counts()
                t0 = time.perf_counter()
                lib.take(reader, idx, {})
                times.append(time.perf_counter() - t0)
                c1 = lancepy.io_counts()
                got_bytes += probe.fetched()
                lib_bytes += (c1["bytes"] - c0["bytes"]) + (c1["mapped_bytes"] - c0["mapped_bytes"])
                del reader
            med = statistics.median(times)
            rate[k] = size / med
            fetched[k] = got_bytes / (size * reps)
            counted[k] = lib_bytes / (size * reps) if isinstance(lib, LancepyLib) else None
            if residual:
                notes.append(f"take {size:,} {k}: {residual:,} B of the file stayed cached after eviction")
            print(f"    cold take {size:,} {k}: {med * 1e3:.3f} ms, {fetched[k]:,.0f} B/row fetched (mincore), "
                  f"{'–' if counted[k] is None else format(counted[k], ',.0f')} B/row counted; "
                  f"residual {residual:,} B ({reps} reps)", flush=True)
        out.append(Row(f"cold take {size:,} → Table", "rows/s", rate, True))
        out.append(Row(f"cold take {size:,}: bytes read per row (mincore)", "B/row", fetched, False))
        out.append(Row(f"cold take {size:,}: bytes read per row (library's counters)", "B/row", counted, False))
        a, b = rate.get("lancepy"), rate.get("pylance")
        fa, fb = fetched.get("lancepy"), fetched.get("pylance")
        if a and b and fa and fb:
            notes.append(f"cold take {size:,}: pylance time ÷ lancepy time {a / b:.2f}×; lancepy bytes ÷ pylance bytes "
                         f"{fa / fb:.2f}× (mincore); lancepy on pylance's file: time {rate['lancepy_on_pylance'] / b:.2f}×, "
                         f"bytes {fetched['lancepy_on_pylance'] / fb:.2f}×")
            print("    " + notes[-1], flush=True)
    return out, notes


def measure_readers(readers: Dict[str, Tuple[Lib, str]], make: Callable[[str, Lib], Callable[[int], Any]],
                    budget: float, min_reps: int) -> Dict[str, Timing]:
    """The Lance readers interleaved (see ``measure``), then Parquet on its own: its takes read
    and free whole row groups (hundreds of MB), which would disturb the others' caches."""
    lance_readers = {k: make(k, lib) for k, (lib, _) in readers.items() if k != "parquet"}
    out = measure(lance_readers, budget, min_reps=min_reps)
    out.update(measure({"parquet": make("parquet", readers["parquet"][0])}, budget, min_reps=3))
    return out


def _ge(x: Optional[float], bound: float) -> Optional[bool]:
    return None if x is None else x >= bound


def _index_forms(shuffled: np.ndarray) -> Tuple[np.ndarray, List[int], List[int]]:
    shuffled = np.ascontiguousarray(shuffled, dtype=np.int64)
    return shuffled, shuffled.tolist(), sorted(shuffled.tolist())


def _marks(fn: Callable[[Dict[str, float]], Any]) -> Dict[str, float]:
    marks: Dict[str, float] = {}
    fn(marks)
    return marks


# ----------------------------------------------------------------------------------------
# Reporting

LABELS = {"lancepy": "lancepy", "lancepy_on_pylance": "lancepy (pylance's file)", "pylance": "pylance", "parquet": "Parquet"}


def fmt(x: Optional[float], unit: str) -> str:
    if x is None:
        return "–"
    if unit == "rows/s":
        if x >= 1e6:
            return f"{x / 1e6:.2f} M"
        if x >= 1e3:
            return f"{x / 1e3:.1f} k"
        return f"{x:.0f}"
    if unit == "µs":
        return f"{x:,.1f}" if x < 1000 else f"{x:,.0f}"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def fmt_ratio(x: Optional[float]) -> str:
    return "–" if x is None else (f"{x:.2f}×" if x < 10 else f"{x:.0f}×")


def render_table(rows: List[Row]) -> List[List[str]]:
    head = ["metric", "unit"] + [LABELS[r] for r in READERS] + ["lancepy/pylance", "lancepy/Parquet", "target", "met"]
    out = [head]
    for r in rows:
        met = ""
        tname = ""
        if r.target:
            tname = r.target[0]
            ok = r.target[1](r.values)
            met = "–" if ok is None else ("yes" if ok else "**no**")
        out.append(
            [r.metric, r.unit]
            + [fmt(r.values.get(k), r.unit) for k in READERS]
            + [fmt_ratio(ratio(r.values, "pylance", r.higher_is_better)),
               fmt_ratio(ratio(r.values, "parquet", r.higher_is_better)), tname, met]
        )
    return out


def summary(results: List[Tuple[str, List[Row]]]) -> List[List[str]]:
    """Targets (rows) by dataset (columns): the ratio (or µs) and whether it is met."""
    head = ["target"] + [name for name, _ in results]
    out = [head]
    targets: List[str] = []
    for _, rows in results:
        for r in rows:
            if r.target and r.metric not in targets:
                targets.append(r.metric)
    for metric in targets:
        line = []
        for _, rows in results:
            r = next((r for r in rows if r.metric == metric), None)
            if r is None or r.target is None:
                line.append("–")
                continue
            ok = r.target[1](r.values)
            v = fmt(r.values.get("lancepy"), r.unit) + " µs" if r.unit == "µs" else fmt_ratio(ratio(r.values, "pylance", r.higher_is_better))
            line.append(v if ok is None else (f"{v} ✓" if ok else f"**{v} ✗**"))
        tname = next(r.target[0] for _, rows in results for r in rows if r.metric == metric and r.target)
        label = metric if "latency" in metric else f"{metric}, lancepy/pylance"
        out.append([f"{label} ({tname})"] + line)
    return out


def markdown(table: List[List[str]], align: Optional[str] = None) -> str:
    align = align or "ll" + "r" * (len(table[0]) - 4) + "ll"
    lines = ["| " + " | ".join(table[0]) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in table[1:]]
    return "\n".join(lines)


def plain(table: List[List[str]], align: Optional[str] = None) -> str:
    align = align or "ll" + "r" * (len(table[0]) - 4) + "ll"
    widths = [max(len(r[i].replace("**", "")) for r in table) for i in range(len(table[0]))]
    lines = []
    for j, r in enumerate(table):
        cells = [c.replace("**", "") for c in r]
        lines.append("  ".join(c.rjust(w) if align[i] == "r" else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def machine() -> Dict[str, str]:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    except OSError:
        nproc = str(os.cpu_count())
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "rust", "python", "Cargo.toml"],
                               capture_output=True, text=True).stdout.strip()
        commit += " (+ uncommitted changes)" if dirty else ""
    except OSError:
        commit = "unknown"
    import lance

    return {
        "nproc": nproc,
        "cpu": cpu,
        "commit": commit,
        "python": platform.python_version(),
        "versions": f"lancepy {lancepy.__version__}, pylance {lance.__version__}, pyarrow {pa.__version__}",
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
    }


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def write_results(path: str, section: str, marker: str = RESULTS_MARKER) -> None:
    """Replaces (or adds) this benchmark's section of a Markdown file; other sections stay."""
    existing = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    if marker in existing:
        before, rest = existing.split(marker, 1)
        nxt = rest.find("\n## ")
        after = rest[nxt:] if nxt >= 0 else "\n"
    else:
        # Above the other benchmarks' sections.
        first = existing.find("\n## ")
        before, after = (existing, "\n") if first < 0 else (existing[: first + 1], existing[first:])
    text = before.rstrip() + "\n\n" + section.rstrip() + "\n" + ("\n" + after.lstrip("\n") if after.strip() else "")
    with open(path, "w") as f:
        f.write(text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small datasets and short timings (smoke run)")
    p.add_argument("--datasets", default=",".join(SPECS), help=f"comma-separated, from {','.join(SPECS)}")
    p.add_argument("--version", default="2.1", help="file version(s): 2.1, 2.2 or 2.1,2.2")
    p.add_argument("--out", help="write the results as Markdown into this file (its own section; others are kept)")
    p.add_argument("--data-dir", default=DATA_DIR, help="where generated data and written files live")
    p.add_argument("--budget", type=float, help="seconds per measurement (default 1.0; 0.05 with --quick)")
    p.add_argument("--cold", action="store_true",
                   help="also time takes from storage: each file evicted from the page cache (posix_fadvise, no "
                        "root needed) before each take; rows/s and bytes read per row")
    p.add_argument("--cold-reps", type=int, default=7, help="cold takes per size and reader (default 7)")
    p.add_argument("--rows", type=int, help="rows of every dataset (overrides the defaults and --quick's)")
    p.add_argument("--keep-files", action="store_true", help="keep the written files (for profiling)")
    p.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                   help="before each measurement, wait up to SECONDS for other processes to use < 10%% of the CPUs")
    args = p.parse_args()
    Noise.quiet_wait = args.wait_quiet
    args.budget = args.budget if args.budget is not None else (0.05 if args.quick else 1.0)
    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    for d in names:
        if d not in SPECS:
            sys.exit(f"unknown dataset {d!r}; choose from {', '.join(SPECS)}")
    versions = [v.strip() for v in args.version.split(",") if v.strip()]
    for v in versions:
        if v not in ("2.1", "2.2"):
            sys.exit(f"unsupported --version {v!r}: 2.1 or 2.2")
    try:
        import lance  # noqa: F401
    except ImportError:
        sys.exit("pylance is needed for the comparison: pip install pylance==14.0.2")

    mach = machine()
    load_before = load()
    print(f"{mach['nproc']} CPUs ({mach['cpu']}), {mach['versions']}, lancepy commit {mach['commit']}; load {load_before}")
    workdir = os.path.join(args.data_dir, "files")
    os.makedirs(workdir, exist_ok=True)
    sections: List[str] = []
    results: List[Tuple[str, List[Row]]] = []
    noise: List[str] = []  # other processes' CPU use, per dataset
    t_start = time.perf_counter()
    for name in names:
        spec = SPECS[name]
        nrows = args.rows or (spec.quick_rows if args.quick else spec.rows)
        table = load_dataset(spec, nrows, args.data_dir)
        for version in versions:
            load_at = load()
            Noise.other = Noise.capacity = 0.0
            print(f"\n== {name}: {nrows:,} rows ({table.nbytes / 1e6:,.0f} MB in Arrow), file version {version}; "
                  f"load {load_at}", flush=True)
            rows, info = bench_dataset(spec, table, version, args, workdir)
            other_pct = 100.0 * Noise.other / max(1e-9, Noise.capacity)
            results.append((f"{name} {version}", rows))
            noise.append(f"{other_pct:.0f}%")
            print(f"  other processes used {other_pct:.0f}% of the CPUs while this dataset was measured", flush=True)
            t = render_table(rows)
            print()
            print(plain(t))
            enc = "\n".join(
                f"  {who}: " + " | ".join(info["encodings"][who]) for who in ("lancepy", "pylance")
            )
            print("encodings (per leaf column):\n" + enc)
            for note in info.get("cold", []):
                print("  " + note)
            sections.append(
                f"### {name}, file version {version}\n\n"
                f"{nrows:,} rows: {spec.describe} ({info['arrow_mb']:,.0f} MB in Arrow); one-column scan of "
                f"`{spec.scan_column}`; Parquet: {info['parquet_row_groups']} row group(s). Load average "
                f"{load_at} when this dataset started; other processes used {other_pct:.0f}% of the CPUs while "
                f"it was measured.\n\n"
                + markdown(t)
                + ("\n\nCold takes (`--cold`):\n\n" + "\n".join(f"- {x}" for x in info["cold"]) if info.get("cold") else "")
                + "\n\n<details><summary>encodings chosen (per leaf column)</summary>\n\n"
                + "\n".join(f"- {who}: " + " · ".join(f"`{e}`" for e in info["encodings"][who]) for who in ("lancepy", "pylance"))
                + "\n\n</details>\n"
            )
        del table
        gc.collect()
        if not args.keep_files:
            for f in os.listdir(workdir):
                if f.startswith(name + "-"):
                    os.remove(os.path.join(workdir, f))
    load_after = load()
    elapsed = time.perf_counter() - t_start
    summ = summary(results)
    summ.append(["CPU time used by other processes while measuring"] + noise)
    print("\nTargets (ratios: lancepy/pylance, > 1 = lancepy better):\n")
    print(plain(summ, "l" * len(summ[0])))
    print(f"\nload average (1/5/15 min) before {load_before}, after {load_after}; {elapsed:.0f}s")

    if args.out:
        marker = COLD_RESULTS_MARKER if args.cold else RESULTS_MARKER  # (a cold run keeps the warm section)
        cmd = "python benches/bench_file.py " + " ".join(sys.argv[1:])
        header = (
            f"{marker}\n\n"
            f"`{cmd.strip()}` (after a release build: `LANCEPY_PROFILE=release bash scripts/setup.sh`)\n\n"
            f"- machine: {mach['nproc']} CPUs (`nproc`), {mach['cpu']}; Python {mach['python']}\n"
            f"- {mach['versions']}; lancepy commit {mach['commit']}; {mach['date']}\n"
            f"- load average (1/5/15 min): {load_before} before, {load_after} after the run\n\n"
            "Each library writes the same in-memory Arrow table and reads its own file from a warm page cache; "
            "\"lancepy (pylance's file)\" is lancepy reading the file pylance wrote. Median of repeated runs. "
            "Ratios are lancepy's speed ÷ the other's (> 1: lancepy faster); for file size and latency, the other's ÷ "
            "lancepy's (> 1: lancepy smaller / quicker). Take: random rows in random order, a fresh set each "
            "repetition; pylance gets them sorted (its file API requires it), so its time excludes re-ordering. "
            "\"native result\": lancepy's `take_rows()` result (decoded, not yet a Table), pylance's decoded batches; "
            "\"→ Table\": plus `.to_table()`. Parquet (pyarrow defaults: snappy, row groups ≤ 1Mi rows): "
            "`ParquetFile.read_row_groups` of the row groups holding the rows, then `Table.take`.\n"
        )
        summary_md = "### Targets\n\n" + markdown(summ, "l" * len(summ[0])) + "\n"
        write_results(args.out, header + "\n" + summary_md + "\n" + "\n".join(sections), marker)
        print(f"written to {args.out}")


if __name__ == "__main__":
    main()
