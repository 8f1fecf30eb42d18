"""LanceDataset.sql: SELECT queries over one dataset, compared with pylance's (DataFusion) on the
same data: same rows, same column names."""

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

lance = pytest.importorskip("lance")


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = str(tmp_path_factory.mktemp("sql") / "ds.lance")
    t = pa.table({
        "id": list(range(100)),
        "label": [f"l{i % 4}" for i in range(100)],
        "score": [i * 0.5 if i % 7 else None for i in range(100)],
    })
    lancepy.write_dataset(t, p, max_rows_per_file=30)
    lancepy.dataset(p).delete("id = 42")
    return p


QUERIES = [
    "SELECT * FROM dataset WHERE id < 3",
    "SELECT id, score * 2 AS s2 FROM dataset WHERE label = 'l1' ORDER BY id DESC LIMIT 4",
    "SELECT id + 1, score * 2.5, label = 'l1', lower(label), -id FROM dataset ORDER BY id LIMIT 3",
    "SELECT label, count(*) AS n, avg(score), min(id), max(id), sum(score) FROM dataset GROUP BY label ORDER BY label",
    "SELECT count(*) FROM dataset",
    "SELECT count(score), count(DISTINCT label), sum(id + 1) FROM dataset WHERE id > 50",
    "SELECT label, count(*) AS n FROM dataset GROUP BY label HAVING count(*) > 24 ORDER BY n DESC, label",
    "SELECT DISTINCT label FROM dataset ORDER BY label",
    "SELECT id, score FROM dataset WHERE score IS NOT NULL ORDER BY score DESC LIMIT 3 OFFSET 1",
    "SELECT id FROM dataset ORDER BY score ASC, id LIMIT 5",
    "SELECT id % 3 AS m, count(*) FROM dataset GROUP BY m ORDER BY m",
    "SELECT label, count(*) FROM dataset GROUP BY 1 ORDER BY 1",
    "SELECT count(*), sum(score) FROM dataset WHERE id > 1000",
    "SELECT id FROM dataset WHERE label IN ('l1', 'l2') AND id BETWEEN 10 AND 20 ORDER BY id",
]


@pytest.mark.parametrize("query", QUERIES)
def test_same_result_as_pylance(path, query):
    ours = pa.Table.from_batches(lancepy.dataset(path).sql(query).build().to_batch_records())
    theirs = pa.Table.from_batches(lance.dataset(path).sql(query).build().to_batch_records())
    assert ours.column_names == theirs.column_names
    assert ours.to_pylist() == theirs.to_pylist()


def test_builder_options(path):
    ds = lancepy.dataset(path)
    t = ds.sql("SELECT id, _rowid FROM t WHERE id < 2").table_name("t").with_row_id().build().to_stream_reader().read_all()
    ref = lance.dataset(path).sql("SELECT id, _rowid FROM t WHERE id < 2").table_name("t").with_row_id().build()
    assert t.to_pylist() == pa.Table.from_batches(ref.to_batch_records()).to_pylist()
    t = ds.sql("SELECT _rowaddr FROM dataset WHERE id = 31").with_row_addr().build().to_table()
    assert t.column("_rowaddr").to_pylist() == [1 << 32 | 1]
    assert ds.sql("SELECT id FROM dataset ORDER BY id LIMIT 2").build().to_table().column("id").to_pylist() == [0, 1]


@pytest.mark.parametrize("query,error", [
    ("SELECT a.id FROM dataset a JOIN dataset b ON a.id = b.id", NotSupportedError),
    ("SELECT id FROM (SELECT id FROM dataset)", NotSupportedError),
    ("SELECT id FROM dataset UNION SELECT id FROM dataset", NotSupportedError),
    ("DELETE FROM dataset WHERE id = 1", NotSupportedError),
    ("SELECT nope FROM dataset", InvalidArgumentError),
    ("SELECT id FROM other", InvalidArgumentError),
    ("SELECT id FROM dataset WHERE count(*) > 1", InvalidArgumentError),
    ("SELECT id, count(*) FROM dataset", InvalidArgumentError),
    ("SELECT median(id) FROM dataset", NotSupportedError),
    ("SELEC id", InvalidArgumentError),
])
def test_errors(path, query, error):
    with pytest.raises(error):
        lancepy.dataset(path).sql(query).build().to_table()
