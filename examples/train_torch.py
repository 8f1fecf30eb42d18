"""Train a linear classifier straight from a Lance dataset with ``lancepy.torch``.

    python examples/train_torch.py                       # 50,000 rows, 3 epochs, 2 workers
    python examples/train_torch.py --rows 5000 --epochs 2 --workers 0

It writes a dataset of synthetic 64-d float32 embeddings whose labels (10 classes) come from a
hidden linear model, then trains ``torch.nn.Linear`` on uniformly random batches read from it
(one native take per batch, zero-copy tensors), checkpoints the sampler half-way through the
last epoch and prints the mean loss of each epoch. Needs ``pip install lancepy[torch]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import List, Optional, Sequence

import numpy as np
import pyarrow as pa
import torch
from torch.utils.data import DataLoader

import lancepy
from lancepy.torch import LanceDataset, ShuffleSampler, collate_fn

DIM = 64
CLASSES = 10


def write_data(uri: str, rows: int, seed: int = 0) -> None:
    """Synthetic embeddings with labels from a hidden linear model (plus a little noise)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, DIM), dtype=np.float32)
    w = rng.standard_normal((DIM, CLASSES), dtype=np.float32)
    logits = x @ w + 0.5 * rng.standard_normal((rows, CLASSES), dtype=np.float32)
    table = pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), DIM),
            "label": pa.array(logits.argmax(axis=1).astype(np.int64)),
        }
    )
    lancepy.write_dataset(table, uri, max_rows_per_file=max(rows // 4, 1), mode="overwrite")


def train(uri: str, epochs: int = 3, batch_size: int = 256, workers: int = 2, lr: float = 0.05, seed: int = 0) -> List[float]:
    """Trains for `epochs` epochs; returns the mean training loss of each epoch."""
    torch.manual_seed(seed)
    data = LanceDataset(uri, columns=["emb", "label"])
    sampler = ShuffleSampler(data, seed=seed)
    loader = DataLoader(
        data,
        batch_size=batch_size,
        sampler=sampler,
        collate_fn=collate_fn,
        num_workers=workers,
        persistent_workers=workers > 0,
    )
    model = torch.nn.Linear(DIM, CLASSES)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    losses = []
    checkpoint = None
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        total, batches = 0.0, 0
        for i, batch in enumerate(loader):
            opt.zero_grad()
            loss = loss_fn(model(batch["emb"]), batch["label"])
            loss.backward()
            opt.step()
            total += loss.item()
            batches += 1
            if epoch == epochs - 1 and i == len(loader) // 2:
                # What a training script saves to resume exactly here (with workers, the
                # loader has fetched ahead: say how many rows were consumed).
                checkpoint = {"model": model.state_dict(), "sampler": sampler.state_dict(consumed=(i + 1) * batch_size)}
        losses.append(total / max(batches, 1))
        print(f"epoch {epoch}: mean loss {losses[-1]:.4f} over {batches} batches")
    if checkpoint is not None:
        print(f"mid-epoch checkpoint: epoch {checkpoint['sampler']['epoch']}, position {checkpoint['sampler']['position']}")
    return losses


def main(argv: Optional[Sequence[str]] = None) -> List[float]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=50_000)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--uri", help="where to write the dataset (default: a temporary directory)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lancepy-train-") as tmp:
        uri = args.uri or os.path.join(tmp, "train.lance")
        write_data(uri, args.rows)
        return train(uri, epochs=args.epochs, batch_size=args.batch_size, workers=args.workers)


if __name__ == "__main__":
    main()
