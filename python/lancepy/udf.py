"""pylance's ``lance.udf``: :func:`batch_udf` wraps a function ``RecordBatch -> new columns``
into a :class:`BatchUDF` for :meth:`LanceDataset.add_columns`, with a declared (or inferred)
output schema that every result must match and, optionally, a checkpoint file that keeps
the results of batches already computed so that a failed ``add_columns`` resumes where it
stopped.

The checkpoint is a SQLite database with pylance's two tables: ``batches(fragment_id,
batch_index, result)`` (a pickled ``RecordBatch`` per batch computed) and ``fragments
(fragment_id, data)`` (fragments whose new data file pylance wrote). lancepy reads and
writes ``batches``; it writes no ``fragments`` rows and, finding one that pylance wrote,
computes that fragment again (the data file such a row names was never committed). The
file is removed once ``add_columns`` commits.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
from contextlib import closing
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional, Union

import pyarrow as pa

from lancepy.exceptions import InvalidArgumentError, SchemaMismatchError

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path


def _as_batch(result: Any) -> pa.RecordBatch:
    """A UDF's result as one record batch (pandas DataFrames converted, as pylance does)."""
    if type(result).__module__.startswith("pandas"):
        return pa.RecordBatch.from_pandas(result)
    if isinstance(result, pa.RecordBatch):
        return result
    if isinstance(result, pa.Table):
        return (
            result.combine_chunks().to_batches()[0]
            if result.num_rows
            else pa.RecordBatch.from_pylist([], result.schema)
        )
    if isinstance(result, dict):
        return pa.RecordBatch.from_pydict(result)
    raise InvalidArgumentError(
        f"a batch UDF must return a RecordBatch or a pandas DataFrame, got {type(result).__name__}"
    )


class BatchUDFCheckpoint:
    """The results of a :class:`BatchUDF` saved batch by batch in a SQLite file (see the
    module's docstring). Each call opens and closes its own connection, so the object may
    be used from any thread."""

    class BatchInfo(NamedTuple):
        fragment_id: int
        batch_index: int

    def __init__(self, path: Union[str, Path]) -> None:
        self.path = path
        with closing(sqlite3.connect(path)) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS batches (fragment_id INT, batch_index INT, result BLOB)")
            conn.execute("CREATE TABLE IF NOT EXISTS fragments (fragment_id INT, data BLOB)")
            conn.commit()

    def cleanup(self) -> None:
        """Removes the checkpoint file."""
        os.remove(self.path)

    def get_batch(self, info: BatchUDFCheckpoint.BatchInfo) -> Optional[pa.RecordBatch]:
        """The saved result of batch `info`, or None."""
        with closing(sqlite3.connect(self.path)) as conn:
            row = conn.execute(
                "SELECT result FROM batches WHERE fragment_id = ? AND batch_index = ?",
                (info.fragment_id, info.batch_index),
            ).fetchone()
        return None if row is None else pickle.loads(row[0])

    def insert_batch(self, info: BatchUDFCheckpoint.BatchInfo, batch: pa.RecordBatch) -> None:
        """Saves the result of batch `info`."""
        with closing(sqlite3.connect(self.path)) as conn:
            conn.execute(
                "INSERT INTO batches (fragment_id, batch_index, result) VALUES (?, ?, ?)",
                (info.fragment_id, info.batch_index, pickle.dumps(batch)),
            )
            conn.commit()

    def get_fragment(self, fragment_id: int) -> Optional[str]:
        """The saved fragment (JSON text) of `fragment_id`, or None."""
        with closing(sqlite3.connect(self.path)) as conn:
            row = conn.execute("SELECT data FROM fragments WHERE fragment_id = ?", (fragment_id,)).fetchone()
        return None if row is None else row[0]

    def insert_fragment(self, fragment_id: int, fragment: str) -> None:
        """Saves a finished fragment (JSON text); its batches are no longer needed."""
        with closing(sqlite3.connect(self.path)) as conn:
            conn.execute("INSERT INTO fragments (fragment_id, data) VALUES (?, ?)", (fragment_id, fragment))
            conn.execute("DELETE FROM batches WHERE fragment_id = ?", (fragment_id,))
            conn.commit()


class BatchUDF:
    """A function ``RecordBatch -> new columns`` for :meth:`LanceDataset.add_columns`
    (make one with :func:`batch_udf`). Calling the object calls the function unchanged;
    ``add_columns`` checks each result against `output_schema` (inferred from the first
    result when None) and saves results in `checkpoint_file` when one is given."""

    def __init__(
        self,
        func: Callable[[pa.RecordBatch], Any],
        output_schema: Optional[pa.Schema] = None,
        checkpoint_file: Optional[Union[str, Path]] = None,
    ) -> None:
        if not callable(func):
            raise InvalidArgumentError(f"batch_udf wraps a function, got {type(func).__name__}")
        if output_schema is not None and not isinstance(output_schema, pa.Schema):
            raise InvalidArgumentError(f"output_schema must be a pyarrow.Schema, got {type(output_schema).__name__}")
        self.func = func
        self.output_schema = output_schema
        self.cache: Optional[BatchUDFCheckpoint] = (
            None if checkpoint_file is None else BatchUDFCheckpoint(checkpoint_file)
        )

    def __call__(self, batch: pa.RecordBatch) -> Any:
        return self.func(batch)

    def _call(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The function's result on `batch` as a record batch of `output_schema` (set from
        this result when still None); a result of another schema raises
        :class:`~lancepy.exceptions.SchemaMismatchError`."""
        return self._check(_as_batch(self.func(batch)))

    def _check(self, result: pa.RecordBatch) -> pa.RecordBatch:
        """`result` if it has `output_schema` (which it sets when still None)."""
        if self.output_schema is None:
            self.output_schema = result.schema
        elif result.schema != self.output_schema:
            raise SchemaMismatchError(
                "Output schema of function does not match the expected schema. "
                f"Expected:\n{self.output_schema}\nGot:\n{result.schema}"
            )
        return result


def batch_udf(
    output_schema: Optional[pa.Schema] = None,
    checkpoint_file: Optional[Union[str, Path]] = None,
) -> Callable[[Callable[[pa.RecordBatch], Any]], BatchUDF]:
    """A decorator making a :class:`BatchUDF` of a function ``RecordBatch -> RecordBatch``
    (or pandas DataFrame) of new columns, for :meth:`LanceDataset.add_columns`.

    `output_schema`: the schema every result must have (default: the first result's).
    `checkpoint_file`: a SQLite file keeping each batch's result until ``add_columns``
    commits, so that running it again after a failure computes only the missing batches.
    """

    def wrap(func: Callable[[pa.RecordBatch], Any]) -> BatchUDF:
        return BatchUDF(func, output_schema, checkpoint_file)

    return wrap
