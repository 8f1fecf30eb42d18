"""PyTorch data loading benchmark: lancepy.torch vs pylance's loaders vs an in-memory gather.

    python benches/bench_torch.py                            # both datasets
    python benches/bench_torch.py --quick                    # small sizes: a smoke run
    python benches/bench_torch.py --out benches/RESULTS.md   # also write the Markdown section
    python benches/bench_torch.py --cold                     # also random batches from storage

``--cold`` reads random batches (map-style, workers=0: lancepy's ``LanceDataset`` and the
map-style dataset over pylance's ``ds.take``) with the dataset's files evicted from the page
cache before each (``posix_fadvise(POSIX_FADV_DONTNEED)``, no root needed; benches/_cold.py)
and reports rows/s and bytes read per row (``mincore`` residency and each library's
``io_stats_incremental()``) beside the warm figures; loaders that read ahead (worker processes,
the ``Loader``'s threads, iterable datasets, scans) and in-memory rows are listed as not
measured cold, with the reason.

Datasets (generated deterministically by bench_file.py's generators, cached in benches/data/,
written once by lancepy into 4 fragments; every loader reads the same files from a warm page
cache):

* ``embeddings`` 200k rows: 768-d float32 ``vector`` + ~60-char ``caption``; batches of 256
  rows of ``vector``;
* ``images``     20k rows: 20-100 KB binary ``image`` + int32 ``label``; batches of 64 rows;
* ``loader``     200k rows (``--loader-rows``): 768-d float32 ``emb`` + int64 ``label``; batches of
  1,024 rows of both: ``lancepy.torch.Loader`` (threads in the training process, prefetch 4, not
  pinned) with 1, 2 and all threads against ``LanceDataset`` in a DataLoader (workers 0 and 2)
  and the in-memory numpy gather (gather + ``torch.from_numpy``, one thread) as the reference.

Loaders (each in a real ``torch.utils.data.DataLoader`` unless said otherwise):

* lancepy ``LanceDataset`` + ``ShuffleSampler`` (uniform random rows), ``num_workers`` 0 and 2
  (fork, persistent workers); ``LanceIterableDataset`` shuffled and as a scan; ``Loader``
  (no DataLoader: batches read ahead on threads in this process);
* pylance ``lance.torch.data.LanceDataset`` with its default sampler (contiguous batches: it
  cannot give random rows);
* a map-style dataset whose ``__getitems__`` is pylance's ``ds.take`` (random rows, the same
  sampler and collate as lancepy's);
* pylance ``SafeLanceDataset`` (per-row Python dicts; default collation);
* the ceiling: a gather from an in-memory numpy array (embeddings) or Arrow array (images).

Rows/s are counted after the first batch, over ``--budget`` seconds (several epochs), median
of ``--rounds`` rounds run in turn so that load from other processes hits all loaders alike.
Time to first batch runs from making the dataset object (opening the dataset) to the first
batch out of the loader. A per-stage profile of lancepy's batch (native take, Arrow import,
tensor conversion, DataLoader) follows each table.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import _cold  # noqa: E402  (page-cache eviction and residency, for --cold)
import bench_file as bf  # noqa: E402  (data generators, machine description, noise accounting)
import lancepy  # noqa: E402

RESULTS_MARKER = "## PyTorch loading (benches/bench_torch.py)"
COLD_RESULTS_MARKER = "## PyTorch loading, warm and cold (benches/bench_torch.py --cold)"
FRAGMENTS = 4


def _require() -> Tuple[Any, Any]:
    try:
        import torch
    except ImportError:
        sys.exit("PyTorch is needed: pip install torch")
    try:
        import lance
        import lance.torch.data  # noqa: F401
    except ImportError:
        sys.exit("pylance is needed for the comparison: pip install pylance==14.0.2")
    # Both libraries' torch modules are imported before any timing, like torch itself: an
    # import belongs to the program's start, not to the first batch of whichever loader
    # happens to be measured first.
    import lancepy.torch  # noqa: F401

    return torch, lance


# ----------------------------------------------------------------------------------------
# Datasets on disk


def prepare(name: str, rows: int, data_dir: str) -> Tuple[str, pa.Table]:
    spec = bf.SPECS[name]
    table = bf.load_dataset(spec, rows, data_dir)
    uri = os.path.join(data_dir, "torch", f"{name}-{rows}-v{bf.DATA_FORMAT}.lance")
    if not os.path.exists(uri):
        tmp = uri + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        lancepy.write_dataset(table, tmp, max_rows_per_file=-(-rows // FRAGMENTS))
        os.replace(tmp, uri)
    assert len(lancepy.dataset(uri).get_fragments()) == FRAGMENTS
    return uri, table


def warm(uri: str) -> None:
    """Reads every file once so the page cache holds them."""
    for root, _, files in os.walk(uri):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                while fh.read(1 << 24):
                    pass


# ----------------------------------------------------------------------------------------
# Loaders: each maker returns (iterable of batches, set_epoch, rows of a batch)

Maker = Callable[[], Tuple[Any, Callable[[int], None], Callable[[Any], int]]]


def _rows_of(key: str) -> Callable[[Any], int]:
    def rows(batch: Any) -> int:
        v = batch[key] if isinstance(batch, dict) else batch
        if hasattr(v, "num_values"):  # lancepy's BinaryTensor
            return int(v.num_values)
        if hasattr(v, "shape"):
            return int(v.shape[0])
        if isinstance(v, list) and v and hasattr(v[0], "shape"):  # default collation of per-row lists
            return int(v[0].shape[0])
        return len(v)

    return rows


def lancepy_map(uri: str, columns: List[str], batch: int, workers: int, binary: str = "bytes") -> Maker:
    def make():
        import torch.utils.data as tud

        from lancepy.torch import LanceDataset, ShuffleSampler, collate_fn

        data = LanceDataset(uri, columns=columns, binary=binary)
        sampler = ShuffleSampler(data, seed=0)
        loader = tud.DataLoader(
            data, batch_size=batch, sampler=sampler, collate_fn=collate_fn, num_workers=workers,
            multiprocessing_context="fork" if workers else None, persistent_workers=workers > 0,
            prefetch_factor=4 if workers else None,
        )
        return loader, sampler.set_epoch, _rows_of(columns[0])

    return make


def lancepy_loader(uri: str, columns: List[str], batch: int, threads: Optional[int], prefetch: int = 4) -> Maker:
    """``lancepy.torch.Loader``: uniform random rows (its ShuffleSampler order), no DataLoader."""

    def make():
        from lancepy.torch import Loader

        loader = Loader(uri, batch, columns=columns, threads=threads, prefetch=prefetch, seed=0)
        return loader, loader.set_epoch, _rows_of(columns[0])

    return make


def lancepy_iterable(uri: str, columns: List[str], batch: int, shuffle: bool) -> Maker:
    def make():
        import torch.utils.data as tud

        from lancepy.torch import LanceIterableDataset

        data = LanceIterableDataset(uri, batch_size=batch, columns=columns, shuffle=shuffle, seed=0)
        return tud.DataLoader(data, batch_size=None), data.set_epoch, _rows_of(columns[0])

    return make


def _pylance_tensors(rb: pa.RecordBatch) -> Dict[str, Any]:
    """What a pylance user writes to turn a record batch into tensors / lists (the same
    conversions lancepy makes: fixed-size lists and numbers to tensors, binary to bytes)."""
    import torch

    out: Dict[str, Any] = {}
    for name, col in zip(rb.schema.names, rb.columns):
        if pa.types.is_fixed_size_list(col.type):
            d = col.type.list_size
            out[name] = torch.from_numpy(col.flatten().to_numpy(zero_copy_only=False).reshape(-1, d))
        elif pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
            out[name] = torch.from_numpy(col.to_numpy(zero_copy_only=False))
        else:
            out[name] = col.to_pylist()
    return out


class PylanceTake:
    """Map-style: ``__getitems__`` is one pylance ``ds.take`` (random rows)."""

    def __init__(self, uri: str, columns: List[str]) -> None:
        import lance

        self.uri, self.columns = uri, columns
        self.ds = lance.dataset(uri)
        self.n = self.ds.count_rows()

    def __len__(self) -> int:
        return self.n

    def __getitems__(self, indices: List[int]) -> Dict[str, Any]:
        t = self.ds.take(indices, columns=self.columns)
        return _pylance_tensors(t.combine_chunks().to_batches()[0] if t.num_rows else t.to_batches()[0])

    def __getitem__(self, i: int) -> Dict[str, Any]:
        return self.__getitems__([i])


def pylance_take(uri: str, columns: List[str], batch: int) -> Maker:
    def make():
        import torch.utils.data as tud

        from lancepy.torch import ShuffleSampler, collate_fn

        data = PylanceTake(uri, columns)
        sampler = ShuffleSampler(len(data), seed=0)
        loader = tud.DataLoader(data, batch_size=batch, sampler=sampler, collate_fn=collate_fn)  # type: ignore[arg-type]
        return loader, sampler.set_epoch, _rows_of(columns[0])

    return make


def pylance_contiguous(uri: str, columns: List[str], batch: int) -> Maker:
    def make():
        import lance.torch.data as ltd
        import torch.utils.data as tud

        data = ltd.LanceDataset(
            uri, batch_size=batch, columns=columns, to_tensor_fn=lambda b, **_: _pylance_tensors(b)
        )
        return tud.DataLoader(data, batch_size=None), lambda e: None, _rows_of(columns[0])

    return make


def pylance_safe(uri: str, columns: List[str], batch: int) -> Maker:
    def make():
        import lance
        import lance.torch.data as ltd
        import torch.utils.data as tud

        class SafeColumns(ltd.SafeLanceDataset):
            """SafeLanceDataset reading only the benchmarked columns (it reads all otherwise)."""

            def __getitems__(self, indices):
                if self._ds is None:
                    self._ds = lance.dataset(self.uri)
                return self._ds.take(indices, columns=columns).to_pylist()

        loader = tud.DataLoader(SafeColumns(uri), batch_size=batch, shuffle=True)
        return loader, lambda e: None, _rows_of(columns[0])

    return make


def numpy_gather(columns: Dict[str, np.ndarray], batch: int) -> Maker:
    """The in-memory reference: the rows of each array gathered with numpy and wrapped with
    ``torch.from_numpy``, one thread, in a ShuffleSampler's order."""

    def make():
        import torch

        from lancepy.torch import ShuffleSampler

        first = next(iter(columns))
        sampler = ShuffleSampler(len(columns[first]), seed=0)

        class Gather:
            def __iter__(self):
                idx = sampler.indices()
                for s in range(0, len(idx), batch):
                    rows = idx[s : s + batch]
                    yield {name: torch.from_numpy(a[rows]) for name, a in columns.items()}

        return Gather(), sampler.set_epoch, _rows_of(first)

    return make


class _InMemory:
    """A map-style dataset over an in-memory array (numpy rows or an Arrow binary column): the
    control for what a DataLoader's worker processes cost whatever the dataset."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def __getitems__(self, indices: List[int]) -> Dict[str, Any]:
        import torch

        if isinstance(self.data, np.ndarray):
            return {"v": torch.from_numpy(self.data[np.asarray(indices)])}
        return {"v": self.data.take(pa.array(indices)).to_pylist()}


def in_memory_loader(data: Any, batch: int, workers: int) -> Maker:
    """The in-memory gather through the same DataLoader settings as lancepy_map."""

    def make():
        import torch.utils.data as tud

        from lancepy.torch import ShuffleSampler, collate_fn

        sampler = ShuffleSampler(len(data), seed=0)
        loader = tud.DataLoader(
            _InMemory(data), batch_size=batch, sampler=sampler, collate_fn=collate_fn, num_workers=workers,
            multiprocessing_context="fork" if workers else None, persistent_workers=workers > 0,
            prefetch_factor=4 if workers else None,
        )
        return loader, sampler.set_epoch, _rows_of("v")

    return make


def arrow_gather(column: pa.Array, batch: int) -> Maker:
    def make():
        from lancepy.torch import ShuffleSampler

        sampler = ShuffleSampler(len(column), seed=0)

        class Gather:
            def __iter__(self):
                idx = sampler.indices()
                for s in range(0, len(idx), batch):
                    yield {"v": column.take(pa.array(idx[s : s + batch])).to_pylist()}

        return Gather(), sampler.set_epoch, _rows_of("v")

    return make


# ----------------------------------------------------------------------------------------
# Measuring


def run_loader(make: Maker, budget: float) -> Tuple[float, float, int]:
    """(time to first batch, rows/s after it, rows read)."""
    gc.collect()
    t0 = time.perf_counter()
    loader, set_epoch, rows_of = make()
    it = iter(loader)
    first = next(it)
    ttfb = time.perf_counter() - t0
    del first
    rows, epoch = 0, 0
    t1 = time.perf_counter()
    done = False
    while not done:
        for b in it:
            rows += rows_of(b)
            if time.perf_counter() - t1 >= budget:
                done = True
                break
        else:
            epoch += 1
            set_epoch(epoch)
            it = iter(loader)
    elapsed = time.perf_counter() - t1
    del it, loader
    gc.collect()
    return ttfb, rows / elapsed, rows


def measure(makers: Dict[str, Tuple[Maker, float]], rounds: int,
            before: Optional[Callable[[], None]] = None) -> Dict[str, Dict[str, float]]:
    """Median rows/s and time to first batch of each loader; rounds run loaders in turn.
    `before` runs (untimed) before each loader: re-warming the page cache, which other
    processes' memory use may have shrunk since."""
    if bf.Noise.quiet_wait > 0:
        bf.Noise.wait_for_quiet()
    cpu0 = bf._cpu_sample()
    got: Dict[str, Dict[str, List[float]]] = {k: {"ttfb": [], "rate": []} for k in makers}
    for r in range(rounds):
        for name, (make, budget) in makers.items():
            if before is not None:
                before()
            ttfb, rate, rows = run_loader(make, budget)
            got[name]["ttfb"].append(ttfb)
            got[name]["rate"].append(rate)
            print(f"  round {r + 1}: {name:<48} {rate / 1e6:7.3f} M rows/s  first batch {ttfb * 1e3:7.1f} ms", flush=True)
    bf.Noise.record(cpu0, bf._cpu_sample())
    return {k: {"ttfb": statistics.median(v["ttfb"]), "rate": statistics.median(v["rate"])} for k, v in got.items()}


def stage_profile(uri: str, columns: List[str], batch: int, binary: str = "bytes", batches: int = 200) -> Dict[str, float]:
    """Median µs per batch of each stage of lancepy's ``__getitems__`` (workers=0)."""
    from lancepy.torch import LanceDataset, ShuffleSampler

    data = LanceDataset(uri, columns=columns, binary=binary)
    idx = ShuffleSampler(data, seed=1).indices()
    sets = [idx[s : s + batch].tolist() for s in range(0, min(len(idx), batches * batch), batch)]
    snap = data._dataset()._view.snapshot
    stages: Dict[str, Callable[[List[int]], Any]] = {
        "native take (Rust, GIL released)": lambda b: snap.take(b, columns=columns),
        "+ Arrow import (pa.record_batch)": lambda b: pa.record_batch(snap.take(b, columns=columns)),
        "+ conversion = __getitems__": data.__getitems__,
    }
    out: Dict[str, float] = {}
    for name, fn in stages.items():
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            for b in sets:
                fn(b)
            times.append((time.perf_counter() - t0) / len(sets))
        out[name] = statistics.median(times) * 1e6
    return out


# ----------------------------------------------------------------------------------------
# Cold mode (--cold): each measured batch reads from storage, not from the page cache

COLD_NOT_MEASURED = {
    "workers=2": "its worker processes read batches ahead, so an eviction before a batch cannot make that batch's "
                 "reads cold",
    "Loader": "it reads batches ahead on its own threads, so an eviction before a batch cannot make that batch's "
              "reads cold",
    "IterableDataset": "it reads ahead (shuffled: whole fragments' batches; scan: sequentially), not one cold take a batch",
    "contiguous": "a sequential scan (read-ahead is the point)",
    "SafeLanceDataset": "not measured cold (the same pylance ds.take as the map-style row, plus per-row Python objects)",
    "in-memory": "in memory: no storage to read",
}


def _cold_reason(label: str) -> str:
    for key, why in COLD_NOT_MEASURED.items():
        if key in label:
            return why
    return "not measured cold"


def cold_batches(uri: str, cols: List[str], batch: int, n_batches: int) -> Dict[str, Dict[str, float]]:
    """Per library, ``n_batches`` batches of uniform random rows (the first batches of a
    ``ShuffleSampler(seed=0)`` epoch, the same for both), each read cold: a fresh map-style
    dataset object per batch (lancepy's ``LanceDataset``; the map-style dataset over pylance's
    ``ds.take``), opened and given one row of each fragment untimed (metadata read), then the
    dataset's files evicted from the page cache (``posix_fadvise(DONTNEED)``), then the timed
    ``__getitems__`` + ``collate_fn`` (what a DataLoader with workers=0 calls per batch).

    Bytes per row: what the batch brought into the page cache for the dataset's files
    (``mincore``: read-ahead included, the same measure for both) and the library's own
    ``io_stats_incremental()`` (lancepy: ``read_bytes`` + ``mapped_bytes``; pylance:
    ``read_bytes``). A fresh object per batch because lancepy maps the files, and pages a live
    mapping has touched cannot be evicted; lancepy's process-wide cache of open files is
    emptied too (after the objects are dropped)."""
    from lancepy.torch import LanceDataset, ShuffleSampler, collate_fn

    files = _cold.data_files(os.path.join(uri, "data"))
    total = lancepy.dataset(uri).count_rows()
    per = -(-total // FRAGMENTS)
    probe_rows = [k * per for k in range(FRAGMENTS) if k * per < total]
    order = ShuffleSampler(total, seed=0).indices()
    sets = [order[s : s + batch].tolist() for s in range(0, min(len(order), n_batches * batch), batch)]

    def lancepy_data():
        data = LanceDataset(uri, columns=cols)
        return data, lambda: data._dataset().io_stats_incremental(), lambda st: st.read_bytes + st.mapped_bytes

    def pylance_data():
        data = PylanceTake(uri, cols)
        return data, data.ds.io_stats_incremental, lambda st: st.read_bytes

    out: Dict[str, Dict[str, float]] = {}
    probe = _cold.Probe(files)
    for name, make in (("lancepy", lancepy_data), ("pylance", pylance_data)):
        times, fetched, lib_bytes, residuals, rows = [], 0, 0, [], 0
        for b in sets:
            gc.collect()
            _cold.forget_lancepy_readers(uri)
            data, stats, nbytes = make()
            data.__getitems__(probe_rows)  # untimed: the dataset is open, its metadata read
            stats()
            residuals.append(probe.evict())
            t0 = time.perf_counter()
            got = collate_fn(data.__getitems__(b))
            times.append(time.perf_counter() - t0)
            fetched += probe.fetched()
            lib_bytes += nbytes(stats())
            rows += _rows_of(cols[0])(got)
            del data, got, stats, nbytes
        med = statistics.median(times)
        residual = statistics.median(residuals)
        big = sum(1 for r in residuals if r > (1 << 20))
        out[name] = {"rate": batch / med, "ms": med * 1e3, "fetched": fetched / rows, "lib": lib_bytes / rows,
                     "residual": residual, "residual_max": max(residuals), "residual_big": big}
        print(f"  cold {name:<8} {batch / med / 1e3:8.1f} k rows/s  {med * 1e3:7.2f} ms/batch  "
              f"{fetched / rows:10,.0f} B/row fetched (mincore)  {lib_bytes / rows:10,.0f} B/row (io_stats)  "
              f"left after eviction: median {residual:,.0f} B, max {max(residuals):,} B "
              f"({big} of {len(residuals)} batches > 1 MiB)", flush=True)
    return out


def run_cold(uri: str, cols: List[str], batch: int, args: argparse.Namespace) -> Dict[str, Dict[str, float]]:
    """The cold batches, measured before the warm loaders: a warm loader's zero-copy tensors or
    worker processes may keep pages of the files mapped, which no eviction can drop."""
    print(f"\n  cold mode: {args.cold_batches} batches of {batch} per library, files evicted before each", flush=True)
    cold = cold_batches(uri, cols, batch, args.cold_batches)
    gc.collect()
    _cold.forget_lancepy_readers(uri)
    return cold


def cold_lines(uri: str, cols: List[str], batch: int, args: argparse.Namespace, warm: Dict[str, Dict[str, float]],
               cold: Dict[str, Dict[str, float]], ours_label: str, theirs_label: str) -> List[str]:
    """The cold table (lancepy vs pylance, warm figures beside), and the rows not measured cold."""
    row_bytes = sum(_bytes_per_row(uri, c) for c in cols)
    a, b = cold["lancepy"], cold["pylance"]
    lines = [
        f"Cold (`--cold`): {args.cold_batches} batches of {batch} random rows per library, each batch read with the "
        f"dataset's files evicted from the page cache (`posix_fadvise(DONTNEED)`, a fresh dataset object per batch, "
        f"opened untimed); median ms per batch; bytes per row fetched into the page cache for the files "
        f"(`mincore`, read-ahead included) and as each library counts them (`io_stats_incremental()`: lancepy "
        f"`read_bytes + mapped_bytes`, pylance `read_bytes`). The rows hold ~{row_bytes:,.0f} B of "
        f"{', '.join(cols)} (uncompressed).\n",
        "| random rows | warm rows/s | cold rows/s | cold ms/batch | B/row fetched (mincore) | B/row (io_stats) | "
        "left resident after eviction: median, max (batches > 1 MiB) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, label in (("lancepy", ours_label), ("pylance", theirs_label)):
        c = cold[name]
        w = warm.get(label, {}).get("rate")
        lines.append(f"| {label} | {fmt_rate(w) if w else '–'} | {fmt_rate(c['rate'])} | {c['ms']:,.2f} | "
                     f"{c['fetched']:,.0f} | {c['lib']:,.0f} | {c['residual']:,.0f} B, {c['residual_max']:,} B "
                     f"({c['residual_big']} of {args.cold_batches}) |")
    ratio_line = (f"Ratios, cold: pylance time ÷ lancepy time {b['ms'] / a['ms']:.2f}×; lancepy bytes ÷ pylance bytes "
                  f"{a['fetched'] / b['fetched']:.2f}× (mincore), {a['lib'] / b['lib']:.2f}× (io_stats).")
    print("  " + ratio_line, flush=True)
    lines += ["", ratio_line, ""]
    skipped = [k for k in warm if k not in (ours_label, theirs_label)]
    if skipped:
        lines.append("Not measured cold:\n")
        lines += [f"- {k}: {_cold_reason(k)}" for k in skipped]
        for k in skipped:
            print(f"  not measured cold: {k}: {_cold_reason(k)}", flush=True)
        lines.append("")
    return lines


def _bytes_per_row(uri: str, col: str) -> float:
    t = lancepy.dataset(uri).take([0], columns=[col])
    return float(t.nbytes)


# ----------------------------------------------------------------------------------------
# Report


def fmt_rate(r: float) -> str:
    return f"{r / 1e6:.2f} M" if r >= 1e6 else f"{r / 1e3:.1f} k"


def bench(name: str, rows: int, args: argparse.Namespace) -> Tuple[str, List[Tuple[str, str, Optional[bool]]]]:
    torch, lance = _require()
    uri, table = prepare(name, rows, args.data_dir)
    warm(uri)
    budget, rounds = args.budget, args.rounds
    if name == "embeddings":
        cols, batch, ceiling_label = ["vector"], 256, "in-memory numpy gather (ceiling)"
        arr = table.column("vector").combine_chunks()
        in_memory: Any = arr.flatten().to_numpy().reshape(len(arr), -1)
        ceiling: Maker = numpy_gather({"v": in_memory}, batch)
    else:
        cols, batch, ceiling_label = ["image", "label"], 64, "in-memory Arrow take → list[bytes] (ceiling)"
        in_memory = table.column("image").combine_chunks()
        ceiling = arrow_gather(in_memory, batch)
    del table
    gc.collect()
    makers: Dict[str, Tuple[Maker, float]] = {
        "lancepy LanceDataset, random rows, workers=0": (lancepy_map(uri, cols, batch, 0), budget),
        "lancepy LanceDataset, random rows, workers=2 (fork)": (lancepy_map(uri, cols, batch, 2), budget),
    }
    if name == "images":
        makers["lancepy LanceDataset binary='tensor', random rows, workers=0"] = (
            lancepy_map(uri, cols, batch, 0, binary="tensor"), budget)
    makers[f"lancepy Loader, random rows, threads={os.cpu_count()}, prefetch=4 (no DataLoader)"] = (
        lancepy_loader(uri, cols, batch, os.cpu_count()), budget)
    makers.update({
        "lancepy LanceIterableDataset, shuffled, workers=0": (lancepy_iterable(uri, cols, batch, True), budget),
        "lancepy LanceIterableDataset, scan, workers=0": (lancepy_iterable(uri, cols, batch, False), budget),
        "pylance LanceDataset (contiguous batches), workers=0": (pylance_contiguous(uri, cols, batch), budget),
        "map-style over pylance ds.take, random rows, workers=0": (pylance_take(uri, cols, batch), budget),
        "pylance SafeLanceDataset, random rows, workers=0": (pylance_safe(uri, cols, batch), min(budget, 2.0)),
        ceiling_label: (ceiling, budget),
        "control: in-memory gather in a DataLoader, workers=2 (fork)": (in_memory_loader(in_memory, batch, 2), budget),
    })
    bf.Noise.other = bf.Noise.capacity = 0.0
    load_at = bf.load()
    print(f"\n== {name}: {rows:,} rows, batches of {batch}; load {load_at}", flush=True)
    cold = run_cold(uri, cols, batch, args) if args.cold else {}
    warm(uri)
    res = measure(makers, rounds, before=lambda: warm(uri))
    other_pct = 100.0 * bf.Noise.other / max(1e-9, bf.Noise.capacity)
    prof = stage_profile(uri, cols, batch)
    if name == "images":
        prof_t = stage_profile(uri, cols, batch, binary="tensor")
        prof.update({k.replace("conversion", "conversion (binary='tensor')"): v for k, v in prof_t.items() if "conversion" in k})

    ours = res["lancepy LanceDataset, random rows, workers=0"]
    take_ref = res["map-style over pylance ds.take, random rows, workers=0"]["rate"]
    contig = res["pylance LanceDataset (contiguous batches), workers=0"]["rate"]
    ceil = res[ceiling_label]["rate"]
    lines = [
        f"### {name}\n",
        f"{rows:,} rows ({bf.SPECS[name].describe}), {FRAGMENTS} fragments written by lancepy, columns "
        f"{', '.join('`' + c + '`' for c in cols)}, batches of {batch}. Load average {load_at} when it started; "
        f"other processes used {other_pct:.0f}% of the CPUs while it was measured.\n",
        "| loader | rows/s | time to first batch | lancepy ÷ this |",
        "|---|---:|---:|---:|",
    ]
    for k, v in res.items():
        rel = ours["rate"] / v["rate"] if v["rate"] else float("nan")
        lines.append(f"| {k} | {fmt_rate(v['rate'])} | {v['ttfb'] * 1e3:,.1f} ms | {rel:.2f}× |")
    lines.append("")
    lines.append("lancepy's batch, stage by stage (µs per batch, workers=0, median):\n")
    lines.append("| stage | µs per batch |")
    lines.append("|---|---:|")
    for k, v in prof.items():
        lines.append(f"| {k} | {v:,.0f} |")
    lines.append(f"| whole DataLoader step (from rows/s) | {batch / ours['rate'] * 1e6:,.0f} |")
    lines.append("")
    if args.cold:
        lines += cold_lines(uri, cols, batch, args, res, cold, "lancepy LanceDataset, random rows, workers=0",
                            "map-style over pylance ds.take, random rows, workers=0")
    goals: List[Tuple[str, str, Optional[bool]]] = []
    if name == "embeddings":
        goals += [
            ("(a) random rows, workers=0 ≥ 1.5 M rows/s", fmt_rate(ours["rate"]), ours["rate"] >= 1.5e6),
            ("(a) ≥ 10× pylance's random-take path", f"{ours['rate'] / take_ref:.1f}×", ours["rate"] >= 10 * take_ref),
            ("(a) ≥ pylance's contiguous loader", f"{ours['rate'] / contig:.2f}×", ours["rate"] >= contig),
            ("(a) ≥ 45% of the numpy ceiling", f"{100 * ours['rate'] / ceil:.0f}%", ours["rate"] >= 0.45 * ceil),
            ("(a) time to first batch < 50 ms", f"{ours['ttfb'] * 1e3:.1f} ms", ours["ttfb"] < 0.050),
        ]
    else:
        goals += [
            ("(b) random rows ≥ 3× pylance (its random-take path)", f"{ours['rate'] / take_ref:.1f}×", ours["rate"] >= 3 * take_ref),
            ("(b) random rows vs pylance's contiguous loader", f"{ours['rate'] / contig:.2f}×", None),
        ]
    return "\n".join(lines), goals


LOADER_DIM = 768


def prepare_loader(rows: int, data_dir: str) -> Tuple[str, np.ndarray, np.ndarray]:
    """``rows`` rows of a 768-d float32 ``emb`` + int64 ``label`` (deterministic), written once
    by lancepy in FRAGMENTS fragments; also returned as in-memory arrays."""
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((rows, LOADER_DIM), dtype=np.float32)
    labels = rng.integers(0, 1000, rows, dtype=np.int64)
    uri = os.path.join(data_dir, "torch", f"loader-{rows}-d{LOADER_DIM}.lance")
    if not os.path.exists(uri):
        tmp = uri + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(os.path.dirname(tmp), exist_ok=True)
        table = pa.table({"emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)), LOADER_DIM),
                          "label": pa.array(labels)})
        lancepy.write_dataset(table, tmp, max_rows_per_file=-(-rows // FRAGMENTS))
        os.replace(tmp, uri)
    return uri, emb, labels


def bench_loader(rows: int, args: argparse.Namespace) -> Tuple[str, List[Tuple[str, str, Optional[bool]]]]:
    """The Loader (threads in this process) against DataLoader workers and the numpy gather."""
    _require()
    uri, emb, labels = prepare_loader(rows, args.data_dir)
    warm(uri)
    cols, batch, budget = ["emb", "label"], 1024, args.budget
    ncpu = os.cpu_count() or 1
    reference = "in-memory numpy gather + torch.from_numpy, 1 thread (reference)"
    dl0 = "lancepy LanceDataset + DataLoader, workers=0"
    makers: Dict[str, Tuple[Maker, float]] = {
        reference: (numpy_gather({"emb": emb, "label": labels}, batch), budget),
        dl0: (lancepy_map(uri, cols, batch, 0), budget),
        "lancepy LanceDataset + DataLoader, workers=2 (fork)": (lancepy_map(uri, cols, batch, 2), budget),
    }
    for t in sorted({1, 2, ncpu}):
        label = f"lancepy Loader, threads={t}" + (" (all CPUs)" if t == ncpu else "") + ", prefetch=4, not pinned"
        makers[label] = (lancepy_loader(uri, cols, batch, t), budget)
    default = f"lancepy Loader, default threads ({Loader_default_threads()}), prefetch=4, not pinned"
    makers[default] = (lancepy_loader(uri, cols, batch, None), budget)
    pylance_dl0 = "map-style over pylance ds.take, random rows, workers=0"
    if args.cold:  # (its warm figure beside its cold one)
        makers[pylance_dl0] = (pylance_take(uri, cols, batch), budget)
    bf.Noise.other = bf.Noise.capacity = 0.0
    load_at = bf.load()
    print(f"\n== loader: {rows:,} rows, batches of {batch}; load {load_at}", flush=True)
    cold = run_cold(uri, cols, batch, args) if args.cold else {}
    warm(uri)
    res = measure(makers, args.rounds, before=lambda: warm(uri))
    other_pct = 100.0 * bf.Noise.other / max(1e-9, bf.Noise.capacity)
    ref, base = res[reference]["rate"], res[dl0]["rate"]
    lines = [
        "### loader\n",
        f"{rows:,} rows of `emb` (768-d float32) + `label` (int64), {FRAGMENTS} fragments written by lancepy, "
        f"batches of {batch} uniform random rows, warm page cache, {ncpu} CPUs. Load average {load_at} when it "
        f"started; other processes used {other_pct:.0f}% of the CPUs while it was measured.\n",
        "| loader | rows/s | time to first batch | ÷ numpy gather | ÷ DataLoader workers=0 |",
        "|---|---:|---:|---:|---:|",
    ]
    for k, v in res.items():
        lines.append(f"| {k} | {fmt_rate(v['rate'])} | {v['ttfb'] * 1e3:,.1f} ms | {v['rate'] / ref:.2f}× "
                     f"| {v['rate'] / base:.2f}× |")
    lines.append("")
    if args.cold:
        lines += cold_lines(uri, cols, batch, args, res, cold, dl0, pylance_dl0)
    best = max((v["rate"], k) for k, v in res.items() if k.startswith("lancepy Loader"))
    goals: List[Tuple[str, str, Optional[bool]]] = [
        ("(c) best Loader vs LanceDataset + DataLoader workers=0", f"{best[0] / base:.2f}×", best[0] >= base),
        ("(c) best Loader vs the numpy gather", f"{best[0] / ref:.2f}×", None),
    ]
    return "\n".join(lines), goals


def Loader_default_threads() -> int:
    from lancepy.torch import _default_threads

    return _default_threads()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small datasets and short timings (smoke run)")
    p.add_argument("--datasets", default="embeddings,images,loader")
    p.add_argument("--loader-rows", type=int, help="rows of the loader dataset (default 200,000; 20,000 with --quick)")
    p.add_argument("--budget", type=float, help="seconds per measurement (default 3; 0.3 with --quick)")
    p.add_argument("--rounds", type=int, help="rounds per loader (default 3; 1 with --quick)")
    p.add_argument("--cold", action="store_true",
                   help="also read random batches cold: the dataset's files evicted from the page cache before each "
                        "(posix_fadvise, no root needed); rows/s and bytes read per row, lancepy and pylance")
    p.add_argument("--cold-batches", type=int, help="cold batches per library (default 20; 5 with --quick)")
    p.add_argument("--out", help="write the results as Markdown into this file (its own section; others are kept)")
    p.add_argument("--data-dir", default=bf.DATA_DIR)
    p.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                   help="before each dataset, wait up to SECONDS for other processes to use < 10%% of the CPUs")
    args = p.parse_args()
    args.budget = args.budget if args.budget is not None else (0.3 if args.quick else 3.0)
    args.rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    args.cold_batches = args.cold_batches if args.cold_batches is not None else (5 if args.quick else 20)
    bf.Noise.quiet_wait = args.wait_quiet
    torch, _ = _require()
    mach = bf.machine()
    load_before = bf.load()
    print(f"{mach['nproc']} CPUs ({mach['cpu']}), {mach['versions']}, torch {torch.__version__}, "
          f"lancepy commit {mach['commit']}; load {load_before}")
    sections, goals = [], []
    for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        if name == "loader":
            text, g = bench_loader(args.loader_rows or (20_000 if args.quick else 200_000), args)
        else:
            spec = bf.SPECS[name]
            text, g = bench(name, spec.quick_rows if args.quick else spec.rows, args)
        print("\n" + text)
        sections.append(text)
        goals += g
    load_after = bf.load()
    goal_lines = ["| goal | measured | met |", "|---|---:|---|"]
    for label, value, ok in goals:
        met = "–" if ok is None else ("yes" if ok else "**no**")
        goal_lines.append(f"| {label} | {value} | {met} |")
    print("\n" + "\n".join(goal_lines))
    if args.out:
        marker = COLD_RESULTS_MARKER if args.cold else RESULTS_MARKER  # (a cold run keeps the warm section)
        cmd = "python benches/bench_torch.py " + " ".join(sys.argv[1:])
        header = (
            f"{marker}\n\n"
            f"`{cmd.strip()}` (after a release build: `LANCEPY_PROFILE=release bash scripts/setup.sh`)\n\n"
            f"- machine: {mach['nproc']} CPUs (`nproc`), {mach['cpu']}; Python {mach['python']}\n"
            f"- {mach['versions']}, torch {torch.__version__}; lancepy commit {mach['commit']}; {mach['date']}\n"
            f"- load average (1/5/15 min): {load_before} before, {load_after} after the run\n\n"
            "Uniform random rows through a real `torch.utils.data.DataLoader` (unless marked as the ceiling); "
            "rows/s after the first batch, median of rounds run in turn; time to first batch from opening the "
            "dataset. \"lancepy ÷ this\": lancepy's `LanceDataset` with workers=0 over the row's loader.\n\n"
            "### Goals\n\n" + "\n".join(goal_lines) + "\n"
        )
        path = args.out
        existing = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
        section = header + "\n" + "\n\n".join(sections) + "\n"
        if marker in existing:
            before, rest = existing.split(marker, 1)
            nxt = rest.find("\n## ")
            after = rest[nxt:] if nxt >= 0 else "\n"
        else:
            before, after = existing, "\n"
        text = before.rstrip() + "\n\n" + section.rstrip() + "\n" + ("\n" + after.lstrip("\n") if after.strip() else "")
        with open(path, "w") as f:
            f.write(text)
        print(f"written to {path}")


if __name__ == "__main__":
    main()
