"""The pipeline lancepy exists for: Spark ingests a multimodal dataset into Lance, PyTorch
trains from uniformly random rows of it, and pylance opens the very same dataset.

1. A local Spark session (``local[2]``) generates rows (an id, a 64-d float32 embedding, a
   label, and a small "image" of bytes) and writes them through lancepy's ``"lance"`` data
   source: ``df.write.format("lance").save(uri)`` (tasks write fragments, the driver commits
   once).
2. Spark reads them back through the same data source (a filtered count, pushed into lancepy).
3. ``lancepy.torch.Loader`` feeds a small PyTorch model for a few epochs from uniformly random
   batches (native gathers in background threads, no worker processes); each epoch prints
   its rows/s and mean loss, which falls as the model learns the labels.
4. pylance (when installed) opens the dataset and reads the same rows.

Run with ``bash scripts/demo.sh`` (which sets everything up), or
``python examples/pipeline.py --rows 200000 --epochs 3``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import List, Optional, Sequence

DIM = 64
CLASSES = 4


def spark_session():  # type: ignore[no-untyped-def]
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", __import__("sys").executable)
    return (
        SparkSession.builder.master("local[2]")
        .appName("lancepy-pipeline")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "8192")
        .getOrCreate()
    )


def generate(spark, rows: int, partitions: int):  # type: ignore[no-untyped-def]
    """Rows made by Spark itself: deterministic pseudo-random embeddings (from hashes of the
    id), labels from two hidden linear directions (so a linear model can learn them), and 48
    bytes of "image" per row."""
    emb = f"transform(sequence(0, {DIM - 1}), i -> cast((pmod(hash(id, i), 20000) - 10000) / 5000.0 AS FLOAT))"
    # score_k = sum_i emb[i] * w_k(i), with w_1(i) = sin(i + 1), w_2(i) = cos(2 * i)
    score1 = "aggregate(zip_with(emb, transform(sequence(0, 63), i -> sin(i + 1)), (a, b) -> a * b), 0D, (s, x) -> s + x)"
    score2 = "aggregate(zip_with(emb, transform(sequence(0, 63), i -> cos(2 * i)), (a, b) -> a * b), 0D, (s, x) -> s + x)"
    return (
        spark.range(0, rows, 1, numPartitions=partitions)
        .selectExpr("id", f"{emb} AS emb")
        .selectExpr(
            "id",
            "emb",
            f"cast((CASE WHEN {score1} > 0 THEN 2 ELSE 0 END) + (CASE WHEN {score2} > 0 THEN 1 ELSE 0 END) AS BIGINT) AS label",
            "unhex(concat(sha2(cast(id AS STRING), 256), sha2(cast(id + 1 AS STRING), 128))) AS image",
        )
    )


def train(uri: str, epochs: int, batch_size: int) -> List[float]:
    import torch

    from lancepy.torch import Loader

    torch.manual_seed(0)
    model = torch.nn.Linear(DIM, CLASSES)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = Loader(uri, batch_size=batch_size, columns=["emb", "label"], seed=0)
    losses = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        total, rows, t0 = 0.0, 0, time.perf_counter()
        for batch in loader:
            x, y = batch["emb"], batch["label"]
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(y)
            rows += len(y)
        seconds = time.perf_counter() - t0
        losses.append(total / rows)
        print(f"  epoch {epoch}: {rows:,} random rows in {seconds:.2f} s ({rows / seconds:,.0f} rows/s), mean loss {losses[-1]:.4f}")
    return losses


def main(argv: Optional[Sequence[str]] = None) -> List[float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=4, help="Spark tasks writing fragments")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--uri", help="where to write the dataset (default: a temporary directory)")
    args = parser.parse_args(argv)

    import lancepy
    import lancepy.spark

    with tempfile.TemporaryDirectory() as tmp:
        uri = args.uri or os.path.join(tmp, "multimodal.lance")
        from pyspark.sql import SparkSession

        ours = SparkSession.getActiveSession() is None  # (a caller's session is left running)
        spark = spark_session()
        spark.sparkContext.setLogLevel("ERROR")
        try:
            try:
                lancepy.spark.register(spark)
                source = True
            except lancepy.exceptions.NotSupportedError as e:  # pyspark before 4.1 (Python 3.9)
                print(f"   (no Python data sources here: {e}; using lancepy.spark.write_dataset / read_dataset)")
                source = False
            how = "the lance data source" if source else "mapInArrow (lancepy.spark.write_dataset)"
            print(f"1. Spark writes {args.rows:,} rows (id, 64-d embedding, label, image bytes) through {how}")
            t0 = time.perf_counter()
            df = generate(spark, args.rows, args.partitions)
            if source:
                df.write.format("lance").option("vector_columns", f"emb:{DIM}").mode("overwrite").save(uri)
            else:
                lancepy.spark.write_dataset(df, uri, mode="overwrite", vector_columns={"emb": DIM})
            seconds = time.perf_counter() - t0
            ds = lancepy.dataset(uri)
            print(f"   {ds.count_rows():,} rows in {len(ds.get_fragments())} fragments, version {ds.version}, "
                  f"{seconds:.1f} s ({args.rows / seconds:,.0f} rows/s)")
            print("2. Spark reads it back: rows per label, the filter pushed into lancepy")
            if source:
                df = spark.read.format("lance").option("pushFilters", "true").load(uri)
            else:
                df = lancepy.spark.read_dataset(spark, uri, filter="label >= 0")
            counts = {r["label"]: r["count"] for r in df.where("label >= 0").groupBy("label").count().collect()}
            print(f"   {dict(sorted(counts.items()))}")
        finally:
            if ours:
                spark.stop()

        print(f"3. lancepy.torch.Loader trains a linear classifier for {args.epochs} epochs on random batches of {args.batch_size}")
        losses = train(uri, args.epochs, args.batch_size)
        print(f"   loss {losses[0]:.4f} -> {losses[-1]:.4f}")

        try:
            import lance
        except ImportError:
            print("4. (pylance is not installed: skipping the check that it reads the dataset)")
        else:
            theirs = lance.dataset(uri)
            sample = [0, args.rows // 2, args.rows - 1]
            same = theirs.take(sample).equals(lancepy.dataset(uri).take(sample))
            print(f"4. pylance {lance.__version__} opens it: {theirs.count_rows():,} rows, the same rows: {same}")
    return losses


if __name__ == "__main__":
    main()
