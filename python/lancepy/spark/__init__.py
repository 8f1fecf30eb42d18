"""Spark integration, from Python, with no JVM jar. Import it explicitly
(``import lancepy.spark``); ``import lancepy`` never imports pyspark.

Two ways in:

* :func:`write_dataset` / :func:`read_dataset` (pyspark 3.5 and later) run through
  ``DataFrame.mapInArrow``; the protocol (exactly-once commits, pinned read versions) is
  described in :mod:`lancepy.spark._mapinarrow`.
* :func:`register` (pyspark 4.1 and later) registers the Python data source ``"lance"``:
  ``spark.read.format("lance").load(uri)`` and ``df.write.format("lance").save(uri)``, with
  filters pushed into lancepy's scans (:mod:`lancepy.spark.datasource`).
* :func:`compact_files` compacts a dataset with Spark's tasks doing the rewriting
  (:mod:`lancepy.spark.compaction`).
* :func:`add_columns` backfills new columns, one Spark task per fragment
  (:mod:`lancepy.spark.backfill`).
* :func:`merge_insert` upserts a Spark DataFrame into a dataset, matched in Spark's tasks
  (pyspark 4.0 and later; :mod:`lancepy.spark.merge`).
* :func:`create_index` builds an IVF vector index: trained on the driver, one segment per
  Spark task (:mod:`lancepy.spark.index`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lancepy.spark._mapinarrow import (  # noqa: F401  (private names: tests and benches)
    DATA_DIR,
    DEFAULT_MAX_BYTES_PER_FILE,
    _choose_attempts,
    _conform,
    _delete_job_files,
    _job_files,
    _rows_per_batch,
    _spark_to_arrow,
    _vector_schema,
    _write_partition,
    _WritePlan,
    read_dataset,
    write_dataset,
)
from lancepy.spark.backfill import add_columns
from lancepy.spark.compaction import compact_files
from lancepy.spark.index import create_index
from lancepy.spark.merge import merge_insert

if TYPE_CHECKING:  # pragma: no cover - typing only; pyspark is imported lazily
    from pyspark.sql import SparkSession

__all__ = [
    "write_dataset", "read_dataset", "register", "compact_files", "add_columns", "merge_insert", "create_index", "DEFAULT_MAX_BYTES_PER_FILE",
]


def register(spark: "SparkSession", *, filter_pushdown: bool = True) -> None:
    """Registers the data source ``"lance"`` with `spark` (see :mod:`lancepy.spark.datasource`).

    Args:
        spark: the session.
        filter_pushdown: also set ``spark.sql.python.filterPushdown.enabled`` to ``true`` in
            the session (Spark refuses to plan a read with the option ``pushFilters=true``
            while that setting is off). With ``False`` the setting is left as it is.

    Raises:
        NotSupportedError: pyspark is older than 4.1 (no Python data sources with filter
            pushdown); use :func:`write_dataset` / :func:`read_dataset` there.
    """
    try:
        from lancepy.spark import datasource
    except ImportError as e:
        import pyspark

        from lancepy.exceptions import UnsupportedError

        raise UnsupportedError(
            f"lancepy.spark.register: the data source needs pyspark 4.1 or later (this is pyspark {pyspark.__version__}: {e}); "
            "use lancepy.spark.write_dataset / read_dataset"
        ) from None
    datasource.register(spark, filter_pushdown=filter_pushdown)
