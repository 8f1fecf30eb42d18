#!/usr/bin/env python3
"""Where does a training loop fed by lancepy.torch.Loader lose time against data already on the GPU?

Issue 22's goal: a small MLP (768→4096→4096→10, bf16) trains from `Loader(pin_memory=True,
device="cuda")` at ≥ 95% of its rate from GPU-resident data. Its step is bound by the CPU
(kernel launches), so every microsecond the training thread spends on feeding, or loses to
threads beside it, shows. This script trains the same model from several sources in
interleaved rounds (runs differ by more between machines than between sources, so every
source is measured in every round and the median is reported), and splits each step into the
time spent getting the batch (`next()` + the copy call) and the model's step:

- `resident`: a random gather from tensors already on the GPU (the ceiling).
- `pinned_cycle`: pre-made pinned batches cycled, copied by the loop (no reading at all: what
  the host-to-device copy alone costs).
- `resident_bg{k}`: `resident` while k threads gather random rows from an in-memory array in
  the background (what reading threads beside the training thread cost it, through memory
  bandwidth and shared cores, without any GIL).
- `loader_t{n}`: `lancepy.torch.Loader(..., threads=n, pin_memory=True, device=...)`, as shipped.
- `loader_t{n}_{variant}` for each --variants entry (`Loader` class attributes set for the run,
  `name:attr=value`).

  python3 benches/gpu_train_profile.py --rows 500000 --seconds 3 --rounds 3
  (no GPU: --device cpu --rows 20000 --seconds 1 --hidden 64; only the CPU parts mean anything then)

Prints one JSON line per measurement and a summary; writes $OUT/gpu_train_profile.json when OUT is set.
"""
import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_feed_loader  # noqa: E402  (the same data and JSON lines as gpu_feed_loader.py)
from gpu_feed_loader import log, make_data  # noqa: E402

gpu_feed_loader.JSON_NAME = "gpu_train_profile.json"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=500_000)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--device", default="cuda")
    p.add_argument("--loader-threads", default="1,2")
    p.add_argument("--bg-threads", default="1,4")
    p.add_argument("--variants", default="", help="name:attr=value[,attr=value];... Loader class attributes")
    p.add_argument("--hidden", type=int, default=4096, help="the MLP's width (smaller for a CPU dry run)")
    p.add_argument("--dir", default=None)
    a = p.parse_args()

    import lancepy
    import lancepy.torch as lt

    device = torch.device(a.device)
    cuda = device.type == "cuda"
    log("machine", {"cpus": os.cpu_count(), "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name(0) if cuda else None})
    root = a.dir or tempfile.mkdtemp()
    path = os.path.join(root, "emb.lance")
    if not os.path.exists(path):
        make_data(path, a.rows, a.dim, a.files)
    t = lancepy.dataset(path).to_table()
    arr = t.column("emb").combine_chunks().values.to_numpy().reshape(len(t), a.dim)
    labels = t.column("label").to_numpy()
    del t
    ds = lt.LanceDataset(path, columns=["emb", "label"])

    # What the training thread pays per batch for pieces of the Loader's path (µs, median of 200).
    if cuda:
        def per_call(fn, n=200):
            times = []
            for _ in range(n):
                t0 = time.perf_counter_ns()
                fn()
                times.append(time.perf_counter_ns() - t0)
            return round(statistics.median(times) / 1000, 1)

        shapes = [((a.batch, a.dim), torch.float32), ((a.batch,), torch.int64)]
        host = [torch.empty(s, dtype=d, pin_memory=True) for s, d in shapes]
        log("us_per_batch", {
            "pinned_empty_x2": per_call(lambda: [torch.empty(s, dtype=d, pin_memory=True) for s, d in shapes]),
            "to_device_x2": per_call(lambda: [h.to(device, non_blocking=True) for h in host]),
            "cuda_empty_x2": per_call(lambda: [torch.empty(s, dtype=d, device=device) for s, d in shapes]),
            "event_record": per_call(lambda: torch.cuda.Event().record()),
        })
        torch.cuda.synchronize()

    def resident():
        xg = torch.from_numpy(arr).to(device)
        yg = torch.from_numpy(labels).to(device)
        g = torch.Generator(device=device)
        g.manual_seed(0)
        while True:
            idx = torch.randint(0, xg.shape[0], (a.batch,), device=device, generator=g)
            yield xg[idx], yg[idx]

    def pinned_cycle():
        rng = np.random.default_rng(2)
        made = []
        for _ in range(8):
            idx = rng.integers(0, len(arr), a.batch)
            x, y = torch.from_numpy(arr[idx]), torch.from_numpy(labels[idx])
            made.append((x.pin_memory(), y.pin_memory()) if cuda else (x, y))
        i = 0
        while True:
            yield made[i % len(made)]
            i += 1

    def loader(threads):
        """The Loader's epochs one after another (a small --rows ends an epoch within a round)."""
        ld = lt.Loader(ds, a.batch, threads=threads, prefetch=max(4, threads), pin_memory=cuda,
                       device=device if cuda else None)
        epoch = 0
        while True:
            ld.set_epoch(epoch)
            yield from ld
            epoch += 1

    class Background:
        """k threads gathering random rows of the in-memory array (numpy releases the GIL)."""

        def __init__(self, k):
            self.k, self.stop, self.rows = k, threading.Event(), [0] * k

        def run(self, i):
            rng = np.random.default_rng(10 + i)
            out = np.empty((a.batch, a.dim), dtype=np.float32)
            while not self.stop.is_set():
                np.take(arr, rng.integers(0, len(arr), a.batch), axis=0, out=out)
                self.rows[i] += a.batch

        def __enter__(self):
            self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(self.k)]
            self.t0 = time.perf_counter()
            for th in self.threads:
                th.start()
            return self

        def __exit__(self, *exc):
            self.stop.set()
            for th in self.threads:
                th.join()
            self.rate = sum(self.rows) / (time.perf_counter() - self.t0)

    def train(source, seconds):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(a.dim, a.hidden), torch.nn.GELU(), torch.nn.Linear(a.hidden, a.hidden), torch.nn.GELU(),
            torch.nn.Linear(a.hidden, 10)).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        it = iter(source)
        steps = rows = 0
        fetch_ns = step_ns = 0
        t0 = None
        while True:
            f0 = time.perf_counter_ns()
            b = next(it)
            x, y = (b["emb"], b["label"]) if isinstance(b, dict) else b
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            f1 = time.perf_counter_ns()
            with torch.autocast(device.type, dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            f2 = time.perf_counter_ns()
            steps += 1
            if steps == 10:
                if cuda:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
            elif steps > 10:
                rows += x.shape[0]
                fetch_ns += f1 - f0
                step_ns += f2 - f1
                if time.perf_counter() - t0 > seconds:
                    break
        if cuda:
            torch.cuda.synchronize()
        el = time.perf_counter() - t0
        n = steps - 10
        close = getattr(it, "close", None)
        if close is not None:
            close()
        return {"rows_per_s": round(rows / el), "fetch_us": round(fetch_ns / n / 1000, 1),
                "step_us": round(step_ns / n / 1000, 1), "total_us": round(el / n * 1e6, 1)}

    sources = {"resident": resident, "pinned_cycle": pinned_cycle}
    for k in [int(x) for x in a.bg_threads.split(",") if x.strip()]:
        sources[f"resident_bg{k}"] = (k, resident)
    variants = {}
    for spec in [s for s in a.variants.split(";") if s.strip()]:
        name, _, attrs = spec.partition(":")
        variants[name] = {k: eval(v, {}) for k, v in (kv.split("=", 1) for kv in attrs.split(",") if kv)}
    for t in [int(x) for x in a.loader_threads.split(",") if x.strip()]:
        sources[f"loader_t{t}"] = (None, t, {})
        for name, attrs in variants.items():
            sources[f"loader_t{t}_{name}"] = (None, t, attrs)

    measured = {name: [] for name in sources}
    for r in range(a.rounds):
        for name, how in sources.items():
            if callable(how):
                res = train(how(), a.seconds)
            elif how[0] is not None:  # background threads beside the resident source
                with Background(how[0]) as bg:
                    res = train(how[1](), a.seconds)
                res["bg_rows_per_s"] = round(bg.rate)
            else:
                _, threads, attrs = how
                saved = {k: getattr(lt.Loader, k) for k in attrs}
                try:
                    for k, v in attrs.items():
                        setattr(lt.Loader, k, v)
                    res = train(loader(threads), a.seconds)
                finally:
                    for k, v in saved.items():
                        setattr(lt.Loader, k, v)
            measured[name].append(res)
            log(f"r{r}_{name}", res)
    base = statistics.median(m["rows_per_s"] for m in measured["resident"])
    summary = {}
    for name, ms in measured.items():
        rate = statistics.median(m["rows_per_s"] for m in ms)
        summary[name] = {"rows_per_s": round(rate), "of_resident": round(rate / base, 3),
                         "fetch_us": statistics.median(m["fetch_us"] for m in ms),
                         "step_us": statistics.median(m["step_us"] for m in ms),
                         "per_round": [round(m["rows_per_s"] / measured["resident"][i]["rows_per_s"], 3)
                                       for i, m in enumerate(ms)]}
    log("summary", summary)


if __name__ == "__main__":
    sys.exit(main())
