"""The local SparkSession the Spark tests share (``local[2,4]``: two cores, a task may be
tried four times), bound to 127.0.0.1 and this interpreter."""

from __future__ import annotations

import os
import sys
from typing import Any


def local_session() -> Any:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2,4]")
        .appName("lancepy-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
