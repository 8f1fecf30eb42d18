#!/usr/bin/env python3
"""Does a Lance loader keep a GPU fed? One run, side by side, on one machine.

A copy of ../shared/bench/gpu_feed.py with rows for lancepy.torch.Loader (batches read ahead on
threads in the training process, vectors gathered straight into pinned memory):
`lancepy_loader_t{N}_{mode}_{reader}` (the Loader copies to the device; mode is
`Loader._copy_mode`: `current` — the default —, `side`, `readers`; reader is `native` — the
default: lancepy's TakePipeline threads, no Python on the reading side —, `py` — Python threads
calling the native take —, or `py_copied` — the same with vectors read, then copied into pinned
memory, as before `take_into`), `lancepy_loader_pinned_t{N}_{reader}` (pinned CPU batches, copied
by the loop), for N in --loader-threads; `transform_*` rows (a ~2 ms per-batch numpy transform
through DataLoader workers and the Loader's threads); the training section adds the Loader
for each of --train-loader-threads and copy mode.

Rows of `dim` float32 embeddings + an int64 label, written once with lancepy (pylance reads the
same dataset). Every variant delivers uniform random batches (or pylance's contiguous batches)
onto the device (pinned memory, non-blocking copy) for `--seconds`; then a small MLP trains from
the best loaders. Also: take throughput vs threads, lancepy and pylance.

Dry run without a GPU: python gpu_feed_loader.py --rows 20000 --seconds 2 --device cpu --workers 0,2
On a GPU machine (benches/RESULTS.md has the command used there): 1M rows, ~2.5 min; prints one
JSON line per result, and writes $OUT/gpu_feed.json when OUT is set.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import torch

RESULTS = {}
#: The file under $OUT that collects RESULTS (gpu_train_profile.py, which imports this, sets its own).
JSON_NAME = "gpu_feed.json"


def log(key, value):
    RESULTS[key] = value
    print(json.dumps({key: value}), flush=True)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, JSON_NAME), "w") as f:
            json.dump(RESULTS, f, indent=1)


def make_data(path, rows, dim, files):
    import lancepy

    rng = np.random.default_rng(0)
    w = rng.standard_normal((dim, 10)).astype(np.float32)
    schema = pa.schema([("emb", pa.list_(pa.float32(), dim)), ("label", pa.int64())])

    def batches():
        step = 65536
        for start in range(0, rows, step):
            n = min(step, rows - start)
            x = rng.standard_normal((n, dim), dtype=np.float32)
            y = np.argmax(x @ w, axis=1).astype(np.int64)
            emb = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), dim)
            yield pa.record_batch([emb, pa.array(y)], schema=schema)

    t = time.perf_counter()
    lancepy.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), path,
                          max_rows_per_file=max(rows // files, 1))
    log("write_s", round(time.perf_counter() - t, 2))


def deliver(name, batches, device, seconds, rows_key="emb"):
    """Moves batches to the device for `seconds`; rows/s and time to first batch."""
    t0 = time.perf_counter()
    it = iter(batches)
    first = None
    n = 0
    end = None
    try:
        for b in it:
            x = b[rows_key] if isinstance(b, dict) else b[0]
            y = b["label"] if isinstance(b, dict) else b[1]
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            if first is None:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                first = time.perf_counter() - t0
                start = time.perf_counter()
                end = start + seconds
                continue
            n += x.shape[0]
            if time.perf_counter() > end:
                break
    finally:
        if device.type == "cuda":
            torch.cuda.synchronize()
    el = time.perf_counter() - start
    log(name, {"rows_per_s": round(n / el), "first_batch_ms": round(first * 1000, 1)})
    return n / el


def numpy_gather(arr, labels, batch, pin):
    rng = np.random.default_rng(1)
    while True:
        idx = rng.integers(0, len(arr), batch)
        x = torch.from_numpy(arr[idx])
        y = torch.from_numpy(labels[idx])
        if pin:
            x, y = x.pin_memory(), y.pin_memory()
        yield x, y


class PylanceTake(torch.utils.data.Dataset):
    """A map-style dataset over pylance's ds.take (what a pylance user writes for random rows)."""

    def __init__(self, uri):
        self.uri, self.ds = uri, None

    def _open(self):
        if self.ds is None:
            import lance

            self.ds = lance.dataset(self.uri)
        return self.ds

    def __len__(self):
        return self._open().count_rows()

    def __getitems__(self, idx):
        t = self._open().take(sorted(idx), columns=["emb", "label"])
        emb = t.column("emb").combine_chunks()
        x = torch.from_numpy(emb.values.to_numpy(zero_copy_only=False).reshape(len(t), -1))
        y = torch.from_numpy(t.column("label").to_numpy())
        return {"emb": x, "label": y}


def ident(b):
    return b


def _plain_worker(_worker_id):
    """worker_init_fn of the `_plain` rows: batches leave the worker the usual way."""
    from lancepy.torch import _ring

    _ring.enabled = False


class CostlyTransform:
    """A per-batch transform costing about `target_ms` on one core: repeated row normalisation in numpy.

    Picklable (DataLoader workers get a copy); `calibrate` picks the repetitions on this machine.
    """

    def __init__(self, reps=1):
        self.reps = reps

    def __call__(self, batch):
        x = batch["emb"].numpy()
        for _ in range(self.reps):
            x = (x - x.mean(axis=1, keepdims=True)) / (x.std(axis=1, keepdims=True) + 1e-6)
        return {"emb": torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)), "label": batch["label"]}

    @classmethod
    def calibrate(cls, batch, target_ms=2.0):
        one = cls(1)
        one(batch)
        t = time.perf_counter()
        for _ in range(20):
            one(batch)
        per = (time.perf_counter() - t) / 20 * 1000
        return cls(max(1, round(target_ms / per)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--workers", default="0,4,8")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--loader-threads", default="1,4,8,15", help="threads of the lancepy.torch.Loader rows")
    ap.add_argument("--skip", default="",
                    help="comma list of sections to skip: lancepy,loader,transform,iter,pylance,threads,train")
    ap.add_argument("--copy-modes", default="current,side,readers",
                    help="how the Loader copies to the device (Loader._copy_mode): current, side, readers")
    ap.add_argument("--readers", default="native,py",
                    help="the Loader's reading side: native (TakePipeline), py (Python threads), py_copied")
    ap.add_argument("--train-loader-threads", default="2,4,15", help="Loader threads of the training rows")
    ap.add_argument("--transform-workers", default="0,1,2,8", help="DataLoader workers of the transform rows")
    ap.add_argument("--no-plain", action="store_true",
                    help="skip the `_plain` rows (DataLoader workers without lancepy's shared-memory ring)")
    a = ap.parse_args()
    skip = set(a.skip.split(","))
    device = torch.device(a.device)
    pin = device.type == "cuda"
    workers = [int(w) for w in a.workers.split(",")]
    log("machine", {"cpus": os.cpu_count(), "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name(0) if pin else None})

    import lancepy
    import lancepy.torch as lt

    try:
        import lance
        import lance.torch.data as ltd

        log("pylance", lance.__version__)
    except Exception as e:  # noqa: BLE001
        lance = None
        log("pylance", f"unavailable: {e!r}")

    root = a.dir or tempfile.mkdtemp()
    path = os.path.join(root, "emb.lance")
    if os.path.exists(path):  # --dir of an earlier run: its data (same seed) is reused
        log("write_s", "reused")
    else:
        make_data(path, a.rows, a.dim, a.files)

    # The ceiling: the same rows as one in-memory numpy array, gathered per batch.
    t = lancepy.dataset(path).to_table()
    arr = t.column("emb").combine_chunks().values.to_numpy().reshape(len(t), a.dim)
    labels = t.column("label").to_numpy()
    del t
    deliver("numpy_gather", numpy_gather(arr, labels, a.batch, pin), device, a.seconds)

    ds = lt.LanceDataset(path, columns=["emb", "label"])
    for w in ([] if "lancepy" in skip else workers):
        for ring in ([True, False] if w and not a.no_plain else [True]):
            name = f"lancepy_map_w{w}" + ("" if ring else "_plain")
            sampler = lt.ShuffleSampler(ds, seed=0)
            loader = torch.utils.data.DataLoader(
                ds, batch_size=a.batch, sampler=sampler, collate_fn=lt.collate_fn, num_workers=w,
                pin_memory=pin, persistent_workers=False, prefetch_factor=4 if w else None,
                worker_init_fn=None if ring else _plain_worker)
            try:
                deliver(name, loader, device, a.seconds)
            except Exception as e:  # noqa: BLE001
                log(name, f"error: {e!r}")
    loader_threads = [int(t) for t in a.loader_threads.split(",") if t.strip()]
    copy_modes = [m for m in a.copy_modes.split(",") if m]
    # Readers: "native" (the default: lancepy's TakePipeline threads, no Python there) or "py"
    # (Python threads calling the native take; with "_copied", vectors read then copied into
    # pinned memory, as before take_into).
    readers = [r for r in a.readers.split(",") if r]

    def variant(reader):
        lt.Loader._native = "pinned" if reader == "native" else False
        lt.Loader._gather_into_pinned = reader != "py_copied"

    def reset():
        lt.Loader._native, lt.Loader._gather_into_pinned, lt.Loader._copy_mode = "pinned", True, "current"

    for t in ([] if "loader" in skip else loader_threads):
        for reader in readers:
            for mode in copy_modes if pin else ["current"]:
                name = f"lancepy_loader_t{t}_{mode}_{reader}"
                variant(reader)
                lt.Loader._copy_mode = mode
                try:
                    loader = lt.Loader(ds, a.batch, threads=t, prefetch=max(4, t), pin_memory=pin,
                                       device=device if pin else None)
                    deliver(name, loader, device, a.seconds)
                except Exception as e:  # noqa: BLE001
                    log(name, f"error: {e!r}")
                finally:
                    reset()
            if pin:  # pinned CPU batches, copied by the loop
                name = f"lancepy_loader_pinned_t{t}_{reader}"
                variant(reader)
                try:
                    loader = lt.Loader(ds, a.batch, threads=t, prefetch=max(4, t), pin_memory=True)
                    deliver(name, loader, device, a.seconds)
                except Exception as e:  # noqa: BLE001
                    log(name, f"error: {e!r}")
                finally:
                    reset()
    if "transform" not in skip:
        # Item 4 of the issue: a ~2 ms per-batch transform, through DataLoader workers and the Loader's threads.
        probe = lt.LanceDataset(path, columns=["emb", "label"]).__getitems__(list(range(a.batch)))
        tf = CostlyTransform.calibrate(probe)
        t0 = time.perf_counter()
        for _ in range(10):
            tf(probe)
        log("transform_ms", {"reps": tf.reps, "ms_per_batch": round((time.perf_counter() - t0) * 100, 2)})
        tds = lt.LanceDataset(path, columns=["emb", "label"], transform=tf)
        for w in [int(x) for x in a.transform_workers.split(",") if x.strip()]:
            # Batches leave the workers through lancepy's shared-memory ring (the default), or,
            # with "_plain", the usual way (a new shared-memory segment per tensor).
            for ring in ([True, False] if w and not a.no_plain else [True]):
                name = f"transform_map_w{w}" + ("" if ring else "_plain")
                loader = torch.utils.data.DataLoader(
                    tds, batch_size=a.batch, sampler=lt.ShuffleSampler(tds, seed=0), collate_fn=lt.collate_fn,
                    num_workers=w, pin_memory=pin, prefetch_factor=4 if w else None,
                    worker_init_fn=None if ring else _plain_worker)
                try:
                    deliver(name, loader, device, a.seconds)
                except Exception as e:  # noqa: BLE001
                    log(name, f"error: {e!r}")
        for t in sorted({1, max(loader_threads or [1])}):
            try:
                loader = lt.Loader(ds, a.batch, threads=t, prefetch=max(4, t), pin_memory=pin, transform=tf,
                                   device=device if pin else None)
                deliver(f"transform_loader_t{t}", loader, device, a.seconds)
            except Exception as e:  # noqa: BLE001
                log(f"transform_loader_t{t}", f"error: {e!r}")

    if "iter" not in skip:
        for w in (0, max(workers)):
            ids = lt.LanceIterableDataset(path, batch_size=a.batch, columns=["emb", "label"], shuffle=True, seed=0)
            loader = torch.utils.data.DataLoader(ids, batch_size=None, num_workers=w, pin_memory=pin,
                                                 prefetch_factor=4 if w else None)
            try:
                deliver(f"lancepy_iter_shuffle_w{w}", loader, device, a.seconds)
            except Exception as e:  # noqa: BLE001
                log(f"lancepy_iter_shuffle_w{w}", f"error: {e!r}")

    if lance is not None and "pylance" not in skip:
        try:
            pds = ltd.LanceDataset(path, batch_size=a.batch, columns=["emb", "label"])
            loader = torch.utils.data.DataLoader(pds, batch_size=None, num_workers=0, pin_memory=pin)
            deliver("pylance_contiguous_w0", loader, device, a.seconds)
        except Exception as e:  # noqa: BLE001
            log("pylance_contiguous_w0", f"error: {e!r}")
        for w in (0, max(workers)):
            pt = PylanceTake(path)
            sampler = torch.utils.data.RandomSampler(range(lance.dataset(path).count_rows()))
            loader = torch.utils.data.DataLoader(
                pt, batch_size=a.batch, sampler=sampler, collate_fn=ident, num_workers=w,
                pin_memory=pin, prefetch_factor=4 if w else None,
                multiprocessing_context="forkserver" if w else None)  # pylance is not fork-safe
            try:
                deliver(f"pylance_take_random_w{w}", loader, device, a.seconds)
            except Exception as e:  # noqa: BLE001
                log(f"pylance_take_random_w{w}", f"error: {e!r}")

    # Take throughput vs threads (GIL released in both libraries' native takes).
    if "threads" not in skip:
        n = lancepy.dataset(path).count_rows()
        libs = [("lancepy", lancepy.dataset(path))]
        if lance is not None:
            libs.append(("pylance", lance.dataset(path)))
        for name, d in libs:
            res = {}
            for threads in (1, 2, 4, 8, 16):
                rng = np.random.default_rng(threads)

                def job(_):
                    idx = np.sort(rng.choice(n, a.batch, replace=False))
                    d.take(idx, columns=["emb"])
                    return a.batch

                with ThreadPoolExecutor(threads) as ex:
                    list(ex.map(job, range(threads)))  # warm
                    t0 = time.perf_counter()
                    rows = 0
                    while time.perf_counter() - t0 < a.seconds / 3:
                        rows += sum(ex.map(job, range(threads * 4)))
                    res[threads] = round(rows / (time.perf_counter() - t0))
            log(f"take_rows_per_s_by_threads_{name}", res)

    # End to end: an MLP trains from each source; GPU-resident data is the step's own ceiling.
    if "train" not in skip:
        torch.manual_seed(0)

        def train(name, source, seconds):
            model = torch.nn.Sequential(
                torch.nn.Linear(a.dim, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096), torch.nn.GELU(),
                torch.nn.Linear(4096, 10)).to(device)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
            it = iter(source)
            steps = rows = 0
            losses = []
            t0 = None
            for b in it:
                x, y = (b["emb"], b["label"]) if isinstance(b, dict) else b
                x = x.to(device, non_blocking=True)
                y = y.to(device, non_blocking=True)
                with torch.autocast(device.type, dtype=torch.bfloat16):
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                steps += 1
                if steps == 5:
                    if pin:
                        torch.cuda.synchronize()
                    t0 = time.perf_counter()
                elif steps > 5:
                    rows += x.shape[0]
                    if steps % 50 == 0:
                        losses.append(round(float(loss), 3))
                    if time.perf_counter() - t0 > seconds:
                        break
            if pin:
                torch.cuda.synchronize()
            log(f"train_{name}", {"rows_per_s": round(rows / (time.perf_counter() - t0)),
                                  "loss_first_last": [losses[0], losses[-1]] if losses else None})

        xg = torch.from_numpy(arr).to(device)
        yg = torch.from_numpy(labels).to(device)

        def resident():
            g = torch.Generator(device=device)
            g.manual_seed(0)
            while True:
                idx = torch.randint(0, xg.shape[0], (a.batch,), device=device, generator=g)
                yield xg[idx], yg[idx]

        train("gpu_resident", resident(), a.seconds)
        del xg, yg
        train("numpy_gather", numpy_gather(arr, labels, a.batch, pin), a.seconds)
        best_w = max(workers)
        for w in ([] if "lancepy" in skip else sorted({0, best_w})):
            sampler = lt.ShuffleSampler(ds, seed=0)
            loader = torch.utils.data.DataLoader(
                ds, batch_size=a.batch, sampler=sampler, collate_fn=lt.collate_fn, num_workers=w,
                pin_memory=pin, prefetch_factor=4 if w else None)
            train(f"lancepy_map_w{w}", loader, a.seconds)
        for t in ([] if "loader" in skip else [int(x) for x in a.train_loader_threads.split(",") if x.strip()]):
            for reader in readers:
                for mode in copy_modes if pin else ["current"]:
                    variant(reader)
                    lt.Loader._copy_mode = mode
                    try:
                        train(f"lancepy_loader_t{t}_{mode}_{reader}",
                              lt.Loader(ds, a.batch, threads=t, prefetch=max(4, t), pin_memory=pin,
                                        device=device if pin else None), a.seconds)
                    finally:
                        reset()
        if lance is not None and "pylance" not in skip:
            loader = torch.utils.data.DataLoader(
                PylanceTake(path), batch_size=a.batch, sampler=torch.utils.data.RandomSampler(range(len(arr))),
                collate_fn=ident, num_workers=best_w, pin_memory=pin, prefetch_factor=4 if best_w else None,
                multiprocessing_context="forkserver" if best_w else None)
            train(f"pylance_take_random_w{best_w}", loader, a.seconds)
    log("done", True)


if __name__ == "__main__":
    sys.exit(main())
