"""The README's first command runs examples/pipeline.py: Spark writes through the lance data
source, the Loader trains, pylance reads. Run small here: it must finish and the loss fall."""

from __future__ import annotations

import os
import sys

import pytest

pyspark = pytest.importorskip("pyspark")
if tuple(int(x) for x in pyspark.__version__.split(".")[:2]) < (4, 1):
    pytest.skip("the lance data source needs pyspark 4.1+", allow_module_level=True)
pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))


def test_pipeline_example_trains_and_pylance_reads(tmp_path, capsys):
    import pipeline

    import lancepy

    losses = pipeline.main(["--rows", "6000", "--partitions", "2", "--epochs", "3", "--uri", str(tmp_path / "p.lance")])
    assert len(losses) == 3 and losses[-1] < losses[0] * 0.8
    out = capsys.readouterr().out
    assert "the same rows: True" in out
    ds = lancepy.dataset(str(tmp_path / "p.lance"))
    assert ds.count_rows() == 6000 and ds.schema.field("emb").type.list_size == pipeline.DIM
