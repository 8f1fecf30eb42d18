"""The one conversion step every write goes through: any input as a stream of valid record
batches of one schema.

:func:`conform` is used by :func:`lancepy.write_dataset` (and so ``insert``),
:func:`lancepy.fragment.write_fragments`, ``merge``, ``merge_insert``, ``add_columns`` and
:class:`lancepy.LanceFileWriter`. Whatever the input (a pyarrow ``Table``, ``RecordBatch``
or ``RecordBatchReader``, a list, iterator or generator of batches, a pandas DataFrame, a
dict or list of dicts, a lancepy or pylance dataset, a scanner, anything with
``__arrow_c_stream__`` / ``__arrow_c_array__``):

* every batch is checked with ``validate(full=True)``: a batch whose buffers are shorter
  than its length says (or whose offsets point outside its data) is refused, never read;
* every batch is brought to the stream's schema -- the declared ``schema=`` when given, else
  the input's own -- column by column, matched by name (any order): a column of another
  type is cast with Arrow's *safe* cast (int32 → int64, int → float, int → string are
  fine; 1.5 → int64 or 2**40 → int32 are not), nulls in a non-nullable field are refused;
* anything that cannot be done raises :class:`~lancepy.exceptions.SchemaMismatchError`
  naming the column, its type and the declared type. Inputs held in memory are converted
  whole before the reader is returned, so the error comes before any file is written; for a
  stream, what can be decided from its schema (names, whether the types cast at all) is
  checked up front, the values as they arrive.

Python objects (dicts, lists of dicts, pandas) are converted by pyarrow with the declared
schema, as pylance converts them.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, List, Optional

import pyarrow as pa

from lancepy._core import blobschema as _blob
from lancepy._core.schema import _describe, schema_differences
from lancepy.exceptions import InvalidArgumentError, SchemaMismatchError

__all__ = ["conform", "conform_batch", "as_schema"]


def as_schema(schema: Any) -> Optional[pa.Schema]:
    """`schema` as a ``pyarrow.Schema`` (anything with ``__arrow_c_schema__``); None stays None."""
    if schema is None or isinstance(schema, pa.Schema):
        return schema
    try:
        return pa.schema(schema)
    except (TypeError, ValueError, pa.ArrowException) as e:
        raise InvalidArgumentError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}: {e}") from None


def _is_pandas(data: Any) -> bool:
    return type(data).__module__.startswith("pandas") and hasattr(data, "columns") and hasattr(data, "dtypes")


def _mismatch(column: str, got: Any, want: pa.DataType, why: str) -> SchemaMismatchError:
    return SchemaMismatchError(f"column {column!r}: cannot store {got} as the declared type {want}: {why}")


def _names_check(got: List[str], target: pa.Schema) -> None:
    """Raises SchemaMismatchError unless `got` (column names) holds exactly `target`'s names."""
    parts = []
    dup_got = sorted({n for n in got if got.count(n) > 1})
    dup_target = sorted({n for n in target.names if target.names.count(n) > 1})
    missing = [n for n in target.names if n not in got]
    extra = [n for n in got if n not in target.names]
    if dup_target:
        parts.append(f"the schema repeats columns {dup_target}")
    if dup_got:
        parts.append(f"the data repeats columns {dup_got}")
    if missing:
        parts.append(f"missing columns {missing}")
    if extra:
        parts.append(f"unexpected columns {extra}")
    if parts:
        raise SchemaMismatchError(
            "the data does not match the declared schema: " + ", ".join(parts)
            + f". Declared: [{', '.join(f'{f.name}: {f.type}' for f in target)}]; data columns: {got}"
        )


def _keep_as_is(source: pa.DataType, field: pa.Field) -> bool:
    """Whether a column of type `source` is written as it is for `field`: the same type, or
    binary values for a blob-v2 column (blob columns are written from their bytes)."""
    if source == field.type:
        return True
    if pa.types.is_binary(source) or pa.types.is_large_binary(source):

        return _blob._is_arrow_blob_v2(field)
    return False


def _out_schema(target: pa.Schema, types: List[pa.DataType]) -> pa.Schema:
    """`target` with each field typed as it is written (see :func:`_keep_as_is`)."""
    if all(f.type == t for f, t in zip(target, types)):
        return target
    return pa.schema([pa.field(f.name, t, f.nullable, f.metadata) for f, t in zip(target, types)], metadata=target.metadata)


def check_castable(source: pa.Schema, target: pa.Schema) -> None:
    """Up-front check of a stream with a known schema: the names match and every column's
    type can be cast at all (value-dependent losses are found batch by batch)."""
    _names_check(source.names, target)
    for f in target:
        got = source.field(f.name).type
        if _keep_as_is(got, f):
            continue
        try:
            pa.array([], type=got).cast(f.type, safe=True)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise _mismatch(f.name, got, f.type, f"Arrow has no such cast ({e})") from None


def conform_batch(batch: Any, target: pa.Schema) -> pa.RecordBatch:
    """One batch, validated and brought to `target` (see the module's description)."""
    if isinstance(batch, pa.Table):
        raise InvalidArgumentError("conform_batch takes a record batch; split tables with to_batches()")
    if not isinstance(batch, pa.RecordBatch):
        if hasattr(batch, "__arrow_c_array__"):
            batch = pa.record_batch(batch)
        else:
            raise InvalidArgumentError(f"expected record batches, got {type(batch).__name__}")
    try:
        batch.validate(full=True)
    except pa.ArrowException as e:
        raise InvalidArgumentError(f"refusing a malformed record batch of {batch.num_rows} rows: {e}") from None
    names = batch.schema.names
    if names != target.names:
        _names_check(names, target)
    columns = []
    types = []
    for i, f in enumerate(target):
        col = batch.column(i if names[i] == f.name else names.index(f.name))
        if not _keep_as_is(col.type, f):
            try:
                col = col.cast(f.type, safe=True)
            except pa.ArrowInvalid as e:
                raise _mismatch(f.name, col.type, f.type, f"the values do not fit ({e})") from None
            except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise _mismatch(f.name, col.type, f.type, f"Arrow has no such cast ({e})") from None
        if not f.nullable and col.null_count:
            raise SchemaMismatchError(
                f"column {f.name!r} is declared non-nullable but holds {col.null_count} null(s)"
            )
        columns.append(col)
        types.append(col.type)
    return pa.RecordBatch.from_arrays(columns, schema=_out_schema(target, types))


def _conformed(batches: Iterable[Any], target: pa.Schema) -> Iterator[pa.RecordBatch]:
    for b in batches:
        if isinstance(b, pa.Table):
            for part in b.to_batches():
                yield conform_batch(part, target)
        else:
            yield conform_batch(b, target)


def _first_schema(batches: Iterable[Any]) -> Optional[pa.Schema]:
    for b in batches:
        if isinstance(b, (pa.RecordBatch, pa.Table)):
            return b.schema
        return None
    return None


def _python_table(data: Any, schema: Optional[pa.Schema]) -> pa.Table:
    """A dict / list of dicts / pandas DataFrame converted by pyarrow (with `schema`, as
    pylance converts them); a failure names the column."""
    if schema is not None and (_is_pandas(data) or isinstance(data, dict)):
        _names_check([str(n) for n in (data.columns if _is_pandas(data) else data)], schema)
    try:
        if _is_pandas(data):
            return pa.Table.from_pandas(data, schema=schema, preserve_index=False)
        if isinstance(data, dict):
            return pa.table(data, schema=schema)
        return pa.Table.from_pylist(data, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError) as e:
        if schema is None:
            raise InvalidArgumentError(f"cannot convert the {type(data).__name__} to Arrow: {e}") from None
        for f in schema:
            values = data[f.name] if (_is_pandas(data) or isinstance(data, dict)) else [r.get(f.name) for r in data]
            try:
                pa.array(values, type=f.type, from_pandas=_is_pandas(data))
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError) as col_error:
                got = getattr(values, "dtype", "Python values")
                raise _mismatch(f.name, got, f.type, str(col_error)) from None
        raise SchemaMismatchError(f"the data cannot be converted to the declared schema: {e}") from None


def _source(data: Any) -> Any:
    """(schema or None, batches, materialized) for any input but Python objects."""
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, data, False
    if isinstance(data, pa.Table):
        return data.schema, data.to_batches(), True
    if isinstance(data, pa.RecordBatch):
        return data.schema, [data], True
    if isinstance(data, list):
        return _first_schema(data), data, True
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return reader.schema, reader, False
    if hasattr(data, "__arrow_c_array__"):
        batch = pa.record_batch(data)
        return batch.schema, [batch], True
    if hasattr(data, "to_reader") and hasattr(data, "projected_schema"):
        reader = data.to_reader()  # a pyarrow dataset Scanner or a lancepy scanner: streamed
        return reader.schema, reader, False
    if hasattr(data, "_view") and hasattr(data, "scanner"):

        reader = _lancepy_dataset_reader(data)  # a lancepy dataset (blob columns as values)
        return reader.schema, reader, False
    if hasattr(data, "scanner") and callable(data.scanner) and hasattr(data, "schema"):
        reader = data.scanner().to_reader()  # a pyarrow or pylance dataset: streamed
        return reader.schema, reader, False
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, dict)):
        return None, data, False  # an iterator or generator of batches, read lazily
    raise InvalidArgumentError(
        f"cannot write {type(data).__name__}: expected a pyarrow Table/RecordBatch/RecordBatchReader, "
        "a pandas DataFrame, a dict or list of dicts, or an object implementing the Arrow PyCapsule protocol"
    )


def conform(data: Any, schema: Any = None) -> pa.RecordBatchReader:
    """`data` (any input kind) as a reader of valid batches of one schema: the declared
    `schema` when given, else the input's own. See the module's description."""
    schema = as_schema(schema)
    if _is_pandas(data) or isinstance(data, dict) or (
        isinstance(data, list) and all(isinstance(r, dict) for r in data) and (data or schema is not None)
    ):
        data = _python_table(data, schema)
    elif isinstance(data, list) and not data:
        raise InvalidArgumentError("cannot infer a schema from an empty list; pass schema=")
    source_schema, batches, materialized = _source(data)
    target = schema if schema is not None else source_schema
    if target is None:
        if isinstance(data, list) and data:
            raise InvalidArgumentError(f"expected record batches in the list, got {type(data[0]).__name__}")
        raise InvalidArgumentError("writing an iterable of record batches needs schema=")
    if source_schema is not None and schema is not None:
        check_castable(source_schema, target)
    if materialized:
        out = list(_conformed(batches, target))
        out_schema = out[0].schema if out else _written_schema(source_schema, target)
        return pa.RecordBatchReader.from_batches(out_schema, out)
    out_schema = _written_schema(source_schema, target)
    return pa.RecordBatchReader.from_batches(out_schema, _checked_stream(_conformed(batches, target), out_schema))


def _written_schema(source: Optional[pa.Schema], target: pa.Schema) -> pa.Schema:
    """The schema of the batches :func:`conform_batch` makes from a source of schema `source`."""
    if source is None:
        return target
    return _out_schema(target, [source.field(f.name).type if _keep_as_is(source.field(f.name).type, f) else f.type
                                for f in target])


def _checked_stream(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """`batches`, each checked to have `schema`'s types (a stream of unknown schema could
    yield binary for a blob column in one batch and a struct in the next)."""
    for b in batches:
        if not b.schema.equals(schema):
            raise SchemaMismatchError(f"a batch of the stream has schema [{b.schema}], not the stream's [{schema}]")
        yield b


def _lancepy_dataset_reader(ds: Any) -> pa.RecordBatchReader:
    """A lancepy dataset's rows, streamed, with its blob columns as their values (still
    marked ``lance-encoding:blob``, so that a copy stores them as blobs again)."""
    blobs = set(ds._view.loaded.blob_columns(ds._schema.names))
    reader = ds.scanner(blob_handling="all_binary").to_reader()
    if not blobs:
        return reader
    schema = pa.schema(
        [f.with_metadata({**(f.metadata or {}), b"lance-encoding:blob": b"true"}) if f.name in blobs else f
         for f in reader.schema],
        metadata=reader.schema.metadata,
    )
    return pa.RecordBatchReader.from_batches(schema, (pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in reader))


def to_record_batch_reader(data: Any, schema: Optional[pa.Schema] = None) -> pa.RecordBatchReader:
    """Anything tabular (pyarrow tables/batches/readers, lists, iterators or generators of
    batches, pandas, dicts, lists of dicts, datasets, Arrow PyCapsule producers) as a
    ``RecordBatchReader`` of valid batches of `schema` (cast to it) or of the input's own
    schema: the one conversion step of every write (see :mod:`lancepy._core.conform`)."""

    return conform(data, schema)


def align_to_schema(reader: pa.RecordBatchReader, target: pa.Schema, fill_missing: bool = False) -> pa.RecordBatchReader:
    """Checks that `reader`'s columns are `target`'s (any order) and reorders them. With
    `fill_missing` (an append of a subset of the columns, as pylance allows), columns the data
    lacks are written as nulls when the dataset's field is nullable.

    Raises :class:`SchemaMismatchError` naming the difference before anything is written.
    """
    got = reader.schema
    # Blob-v2 columns are written from binary values (stored as descriptions + sidecars).
    target = _blob.writable_schema(target, got)
    missing = [f for f in target if f.name not in got.names]
    if fill_missing and missing and all(f.nullable for f in missing) and any(n in target.names for n in got.names):
        return _with_nulls(reader, missing, target)
    parts = schema_differences(got, target)
    if parts or len(set(got.names)) != len(got.names):
        raise SchemaMismatchError(
            "the data does not match the dataset schema: " + ", ".join(parts or ["duplicate column names"])
            + f". Dataset schema: [{_describe(target)}]; data schema: [{_describe(got)}]"
        )
    if got.names == target.names:
        return reader
    names = target.names

    def reorder() -> Iterator[pa.RecordBatch]:
        for b in reader:
            yield pa.RecordBatch.from_arrays([b.column(n) for n in names], names=names)

    out_schema = pa.schema([got.field(n) for n in names], metadata=got.metadata)
    return pa.RecordBatchReader.from_batches(out_schema, reorder())


def _with_nulls(reader: pa.RecordBatchReader, missing: List[pa.Field], target: pa.Schema) -> pa.RecordBatchReader:
    """`reader` with null columns for the `missing` fields, then aligned to `target`."""
    fields = list(reader.schema) + missing
    schema = pa.schema(fields, metadata=reader.schema.metadata)

    def filled() -> Iterator[pa.RecordBatch]:
        for b in reader:
            cols = list(b.columns) + [pa.nulls(b.num_rows, f.type) for f in missing]
            yield pa.RecordBatch.from_arrays(cols, schema=schema)

    return align_to_schema(pa.RecordBatchReader.from_batches(schema, filled()), target)
