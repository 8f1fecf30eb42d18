"""Schema evolution: adding columns (computed by a function, SQL expressions or given
values), dropping, renaming and casting columns. The functions behind
:class:`LanceDataset`'s methods of the same names."""

from __future__ import annotations

import copy
import os
import re
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from lancepy._core.conform import to_record_batch_reader
from lancepy._core.evaluate import _evaluate_values
from lancepy._core.schema import ROW_ADDRESS, ROW_ID, _as_table, lance_fields_for
from lancepy._ops.scan import count_matching
from lancepy._ops.write import _write
from lancepy._table.commit import commit_on
from lancepy.exceptions import ColumnNotFoundError, IndexedColumnError, InvalidArgumentError, LanceIOError, UnsupportedError
from lancepy.filters import Filter, compile_expression, parse_sql
from lancepy.udf import BatchUDF, BatchUDFCheckpoint

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.snapshot import DatasetView


def add_columns(
    view: DatasetView,
    transforms: Any,
    read_columns: Optional[List[str]] = None,
    reader_schema: Optional[pa.Schema] = None,
    batch_size: Optional[int] = None,
) -> "DatasetView":
    """See :meth:`LanceDataset.add_columns`."""
    if reader_schema is not None:
        transforms = to_record_batch_reader(transforms, reader_schema)
    schema = view.schema
    first_id = view.max_field_id + 1
    if isinstance(transforms, (pa.Field, pa.Schema)) or (
        isinstance(transforms, list) and transforms and all(isinstance(f, pa.Field) for f in transforms)
    ):
        new_schema = pa.schema([transforms] if isinstance(transforms, pa.Field) else list(transforms))
        _check_new_names(view, new_schema)
        for f in new_schema:
            if not f.nullable:
                raise InvalidArgumentError(f"all-null column {f.name!r} must be nullable")
        lance = lance_fields_for(new_schema, first_id)
        fields = view.loaded.field_entries + lance["fields"]
        frags = [f._manifest_json() for f in view.loaded.fragments]
        return commit_on(
            view,
            "Merge",
            {"fragments": frags, "schema": fields, "schema_metadata": view.loaded.schema_metadata},
        )
    if isinstance(transforms, dict):
        compiled = {n: compile_expression(e, schema) if isinstance(e, str) else e for n, e in transforms.items()}
        if transforms and (
            all(isinstance(e, str) and _is_null_cast(e) for e in transforms.values()) or not view.fragment_ids
        ):
            # Only ``CAST(NULL AS type)``s, or a dataset without fragments, as pylance: columns
            # of the expressions' types, a metadata-only change.
            empty = schema.empty_table()
            types = {n: _evaluate_values(empty, f.expression, None).type for n, f in compiled.items()}
            return add_columns(view, pa.schema([pa.field(n, t) for n, t in types.items()]))
        fn, needed = sql_function(schema, compiled)
        return _add_computed_columns(view, fn, needed, first_id, batch_size)
    if callable(transforms):
        cols = read_columns if read_columns is not None else schema.names
        return _add_computed_columns(view, transforms, cols, first_id, batch_size)
    if isinstance(transforms, (pa.Table, pa.RecordBatchReader, pa.RecordBatch)) or hasattr(
        transforms, "__arrow_c_stream__"
    ):
        return _add_precomputed_columns(
            view, pa.table(transforms) if not isinstance(transforms, pa.Table) else transforms, first_id
        )
    raise InvalidArgumentError(f"add_columns cannot use a {type(transforms).__name__}")


def sql_function(
    schema: pa.Schema, compiled: Dict[str, Any]
) -> Tuple[Callable[[pa.RecordBatch], Dict[str, pa.Array]], List[str]]:
    """``add_columns``' function for a dict of new column names to compiled SQL expressions
    (or pyarrow expressions) over `schema`, and the columns it reads."""
    needed = sorted({c for f in compiled.values() if isinstance(f, Filter) for c in (f.columns or schema.names)})
    if any(not isinstance(f, Filter) for f in compiled.values()):
        needed = schema.names

    def fn(batch: pa.RecordBatch) -> Dict[str, pa.Array]:
        t = pa.Table.from_batches([batch])
        return {n: _evaluate_values(t, f.expression if isinstance(f, Filter) else f, None) for n, f in compiled.items()}

    return fn, needed or [schema.names[0]]


def _is_null_cast(sql: str) -> bool:
    """Whether `sql` is literally ``CAST(NULL AS type)`` (what pylance adds without data)."""
    node = parse_sql(sql)
    return type(node).__name__ == "Cast" and type(node.this).__name__ == "Null"


def _check_new_names(view: DatasetView, new_schema: pa.Schema) -> None:
    clash = [n for n in new_schema.names if n in view.schema.names]
    if clash:
        raise InvalidArgumentError(f"columns {clash} already exist in the dataset")


def _add_computed_columns(
    view: DatasetView,
    fn: Callable[[pa.RecordBatch], Any],
    read_columns: List[str],
    first_id: int,
    batch_size: Optional[int] = None,
) -> "DatasetView":
    """Calls `fn` as pylance does: per fragment, on runs of `batch_size` (default 1024)
    physical rows with the deleted ones left out (a run may be short, or empty); the
    results are laid over the fragment's physical rows, deleted rows getting nulls.
    `read_columns` may name ``_rowid`` / ``_rowaddr``."""
    if batch_size is None:
        batch_size = _UDF_BATCH_SIZE
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise InvalidArgumentError(f"batch_size must be a positive int, got {batch_size!r}")
    serial = isinstance(fn, BatchUDF) and fn.cache is not None  # (a checkpoint is written in order)
    fragments = len(view.loaded.fragments)
    committed = _attach_new_columns(
        view, first_id, lambda fid: fragment_values(view, fn, read_columns, fid, batch_size),
        1 if serial else _udf_threads(max(fragments - 1, 1)),
    )
    if isinstance(fn, BatchUDF) and fn.cache is not None:
        fn.cache.cleanup()
    return committed


def _udf_threads(fragments: int) -> int:
    """How many fragments ``add_columns`` computes at once: half the cores, at most 8. The
    function's own Python holds the GIL; measured on 2 cores (1M rows, 10 fragments), two
    threads made a light numpy function 30% slower and a 10× heavier one 25% faster, so a
    2-core machine computes one fragment at a time."""
    return max(1, min(fragments, (os.cpu_count() or 2) // 2, 8))


def _parallel(work: Callable[[int], Any], items: List[int], workers: int, record: Callable[[Any], None]) -> None:
    """`work` of each of `items` on `workers` threads, each result handed to `record` (in
    this thread) as it completes. The first failure is raised once the work in flight has
    ended (what it finished is recorded, so that the caller can remove it); the work not
    started is cancelled."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    failure: Optional[BaseException] = None
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lancepy-add-columns") as pool:
        futures = [pool.submit(work, i) for i in items]
        for fut in as_completed(futures):
            if fut.cancelled():
                continue
            error = fut.exception()
            if error is None:
                record(fut.result())
            elif failure is None:
                failure = error
                for other in futures:
                    other.cancel()
    if failure is not None:
        raise failure


def fragment_values(
    view: DatasetView, fn: Callable[[pa.RecordBatch], Any], read_columns: List[str], fid: int, batch_size: int
) -> pa.Table:
    """`fn`'s new columns for fragment `fid`, called as :func:`_add_computed_columns` calls
    it (runs of `batch_size` physical rows, deleted ones left out), laid over the fragment's
    physical rows (deleted rows null)."""
    import numpy as np

    want_id, want_addr = ROW_ID in read_columns, ROW_ADDRESS in read_columns
    columns = [c for c in read_columns if c not in (ROW_ID, ROW_ADDRESS)]
    phys, live = view.fragment_rows()[fid]
    # Every physical row, so the new file lines up with the fragment's other files.
    src = pa.table(
        view.snapshot.scan(
            columns,
            fragment_ids=[fid],
            batch_rows=1 << 40,
            with_row_id=want_id,
            with_row_address=want_addr,
            include_deleted=True,
        )
    )
    src = src.select(read_columns).combine_chunks()
    keep = np.ones(phys, dtype=bool)
    if live < phys:
        keep[pa.table(view.snapshot.deleted_rows(fid)).column(0).to_numpy()] = False
    outs = []
    for start in range(0, phys, batch_size):
        live_rows = np.flatnonzero(keep[start : start + batch_size]) + start
        part = src.take(pa.array(live_rows, pa.int64()))
        batch = part.to_batches()
        batch = batch[0] if batch else pa.RecordBatch.from_pylist([], schema=src.schema)
        out = _as_table(_udf_result(fn, batch, fid, len(outs)))
        if out.num_rows != len(live_rows):
            raise InvalidArgumentError(
                f"the add_columns function returned {out.num_rows} rows for a batch of {len(live_rows)}"
            )
        outs.append(out)
    filled = [o for o in outs if o.num_rows] or outs[:1]
    try:
        values = pa.concat_tables(filled)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise InvalidArgumentError(f"the add_columns function returned batches of different schemas: {e}") from None
    return _spread_over_physical_rows(values, keep)


def _udf_result(fn: Callable[[pa.RecordBatch], Any], batch: pa.RecordBatch, fragment_id: int, index: int) -> Any:
    """`fn`'s result on the `index`-th batch of fragment `fragment_id`: a :class:`BatchUDF`'s
    checked against its output schema and taken from (or saved in) its checkpoint."""
    if not isinstance(fn, BatchUDF):
        return fn(batch)
    info = BatchUDFCheckpoint.BatchInfo(fragment_id, index)
    saved = fn.cache.get_batch(info) if fn.cache is not None else None
    if saved is not None:
        return fn._check(saved)
    out = fn._call(batch)
    if fn.cache is not None:
        fn.cache.insert_batch(info, out)
    return out


def _add_precomputed_columns(view: DatasetView, values: pa.Table, first_id: int) -> "DatasetView":
    total = view.count_rows()
    # (pylance's messages, and its OSError: the values come as a stream)
    if values.num_rows < total:
        raise LanceIOError(
            "Stream ended before producing values for all rows in dataset "
            f"({values.num_rows} values for {total} live rows)"
        )
    if values.num_rows > total:
        raise LanceIOError(
            f"Stream produced more values than expected for dataset ({values.num_rows} values for {total} live rows)"
        )
    if not view.loaded.fragments:  # (no rows to give values: a schema change, as pylance's)
        return add_columns(view, nullable_schema(values.schema))
    starts: Dict[int, int] = {}
    start = 0
    for frag in view.loaded.fragments:
        starts[frag.id] = start
        start += view.fragment_rows()[frag.id][1]

    def values_of(fid: int) -> pa.Table:
        phys, live = view.fragment_rows()[fid]
        chunk = values.slice(starts[fid], live)
        if live != phys:
            import numpy as np

            keep = np.ones(phys, dtype=bool)
            keep[pa.table(view.snapshot.deleted_rows(fid)).column(0).to_numpy()] = False
            chunk = _spread_over_physical_rows(chunk, keep)
        return chunk

    return _attach_new_columns(view, first_id, values_of, 1)


def _attach_new_columns(
    view: DatasetView, first_id: int, values_of: Callable[[int], pa.Table], workers: int
) -> "DatasetView":
    """Writes each fragment's new columns (`values_of(fragment id)`: one row per physical row)
    as a new data file and commits them as a ``Merge``. The first fragment's values fix the
    columns' schema; the others are computed and written on `workers` threads (as pylance
    runs an ``add_columns`` function: numpy and Arrow release the GIL), each file as soon as
    its values are there, so memory holds a fragment's values per thread. A failure removes
    every file written."""
    frags = view.loaded.fragments
    if not frags:
        raise InvalidArgumentError("cannot compute columns for a dataset without rows; add all-null columns instead")
    written: List[str] = []
    files: Dict[int, Dict[str, Any]] = {}
    try:
        first = values_of(frags[0].id)
        new_schema = nullable_schema(first.schema)
        _check_new_names(view, new_schema)
        lance = lance_fields_for(new_schema, first_id)

        def one(fid: int, table: Optional[pa.Table] = None) -> Tuple[int, Dict[str, Any]]:
            return fid, new_columns_file(view, fid, values_of(fid) if table is None else table, new_schema, lance)

        def record(done: Tuple[int, Dict[str, Any]]) -> None:
            files[done[0]] = done[1]
            written.append(f"data/{done[1]['path']}")

        record(one(frags[0].id, first))
        del first
        rest = [f.id for f in frags[1:]]
        if workers <= 1 or len(rest) <= 1:
            for fid in rest:
                record(one(fid))
        else:
            _parallel(one, rest, workers, record)
    except BaseException:
        view.store.delete(written)
        raise
    return commit_new_columns(view, files, lance, written)


def nullable_schema(schema: pa.Schema) -> pa.Schema:
    """`schema` with every field nullable (new columns always are)."""
    return pa.schema([pa.field(f.name, f.type, True, f.metadata) for f in schema])


def new_columns_file(
    view: DatasetView,
    fid: int,
    table: pa.Table,
    new_schema: pa.Schema,
    lance: Dict[str, Any],
    file_tag: Optional[str] = None,
) -> Dict[str, Any]:
    """Writes `table` (new columns, one row per physical row of fragment `fid`, cast to
    `new_schema`; `lance`: their fields from ``lance_fields_for``) as one new data file;
    its manifest entry. `file_tag` goes into the file's name."""
    phys = view.fragment_rows()[fid][0]
    if table.num_rows != phys:
        raise InvalidArgumentError(f"the new columns have {table.num_rows} rows for fragment {fid}, which has {phys}")
    try:
        cols = [table.column(n).cast(new_schema.field(n).type) for n in new_schema.names]
    except KeyError as e:
        raise InvalidArgumentError(f"fragment {fid}'s new columns lack {e}") from None
    table = pa.Table.from_arrays(cols, schema=new_schema)
    made = _write(
        view.uri,
        table.to_reader(),
        lance["fields"],
        lance["metadata"],
        max(phys, 1),
        view.data_storage_version,
        file_tag=file_tag,
        storage_options=view.storage_options,
    )
    if len(made) != 1:
        view.store.delete([f"data/{d.path}" for f in made for d in f.files])
        raise InvalidArgumentError("internal error: expected one data file per fragment")
    return made[0]._manifest_json()["files"][0]


def commit_new_columns(
    view: DatasetView, files: Dict[int, Dict[str, Any]], lance: Dict[str, Any], written: List[str]
) -> "DatasetView":
    """Commits one ``Merge``: every fragment of `view`'s version with its new data file from
    `files` (by fragment id; every fragment must have one) and the schema extended by
    `lance`'s fields. `written` (the new files) are deleted if the commit fails."""
    lacking = [f.id for f in view.loaded.fragments if f.id not in files]
    if lacking:
        view.store.delete(written)
        raise InvalidArgumentError(f"internal error: no new data file for fragments {lacking}")
    frags = []
    for frag in view.loaded.fragments:
        entry = frag._manifest_json()
        entry["files"] = entry.get("files", []) + [files[frag.id]]
        frags.append(entry)
    fields = view.loaded.field_entries + lance["fields"]
    return commit_on(
            view,
        "Merge",
        {"fragments": frags, "schema": fields, "schema_metadata": view.loaded.schema_metadata},
        written,
    )


def drop_columns(view: DatasetView, columns: List[str]) -> "DatasetView":
    """See :meth:`LanceDataset.drop_columns`."""
    if isinstance(columns, str):
        columns = [columns]
    fields = view.loaded.fields
    names = [f.name for f in fields if f.is_top_level]
    missing = [c for c in columns if c not in names]
    if missing:
        raise InvalidArgumentError(f"cannot drop {missing}: no such columns (columns are {names})")
    if len(set(columns)) >= len(names):
        raise InvalidArgumentError("cannot drop every column of a dataset")
    drop_ids = {f.id for f in fields if f.is_top_level and f.name in columns}
    for f in fields:  # children of dropped fields go too (parents come first)
        if f.parent_id in drop_ids:
            drop_ids.add(f.id)
    kept = [f.entry for f in fields if f.id not in drop_ids]
    return commit_on(view, "Project", {"schema": kept})


def alter_columns(view: DatasetView, *alterations: Dict[str, Any]) -> "DatasetView":
    """See :meth:`LanceDataset.alter_columns`."""
    if len(alterations) == 1 and isinstance(alterations[0], list):
        alterations = tuple(alterations[0])
    fields = copy.deepcopy(view.loaded.field_entries)
    top = {f.get("name"): f for f in fields if f.get("parent_id", -1) == -1}
    casts: Dict[str, pa.DataType] = {}
    for alt in alterations:
        if not isinstance(alt, dict):
            raise InvalidArgumentError(f"an alteration is a dict, got {type(alt).__name__}")
        unknown = [k for k in alt if k not in ("path", "name", "nullable", "data_type")]
        if unknown:
            raise InvalidArgumentError(f"Unknown key: {unknown[0]} (an alteration has path, name, nullable, data_type)")
        if all(alt.get(k) is None for k in ("name", "nullable", "data_type")):
            raise InvalidArgumentError("At least one of name, nullable, or data_type must be specified")
        path = alt.get("path")
        if path not in top:
            raise ColumnNotFoundError(f'Column "{path}" does not exist (columns are {list(top)})')
        f = top[path]
        if alt.get("data_type") is not None:
            old_type = view.schema.field(path).type
            if not _castable(old_type, alt["data_type"]):
                raise InvalidArgumentError(
                    f'Cannot cast column "{path}" from {_arrow_name(old_type)} to {_arrow_name(alt["data_type"])}'
                )
            casts[path] = alt["data_type"]
        if "name" in alt and alt["name"] is not None and alt["name"] != path:
            if alt["name"] in top:
                raise InvalidArgumentError(f"cannot rename {path!r} to {alt['name']!r}: that column exists")
            f["name"] = alt["name"]
        if "nullable" in alt and alt["nullable"] is not None:
            if not alt["nullable"] and f.get("nullable", False):
                if count_matching(view, f"`{path}` IS NULL") > 0:
                    raise InvalidArgumentError(f"cannot make {path!r} non-nullable: it contains nulls")
            f["nullable"] = bool(alt["nullable"])
        top = {g.get("name"): g for g in fields if g.get("parent_id", -1) == -1}
    if casts:
        _refuse_casting_indexed(view, casts)
        return _cast_columns(view, fields, casts)
    return commit_on(view, "Project", {"schema": fields})


def _refuse_casting_indexed(view: DatasetView, casts: Dict[str, pa.DataType]) -> None:
    """A cast rewrites the column's values: an index built on it would describe other values
    (as pylance, refused until the index is dropped)."""
    top = {f.name: f.id for f in view.loaded.fields if f.is_top_level}
    ids = {top[n] for n in casts}
    names = sorted({e.get("name", "") for e in view.index_entries() if ids & set(e.get("fields", []))})
    if names:
        raise IndexedColumnError(
            f"Cannot cast column(s) {sorted(casts)} to a new type: they have {len(names)} index(es) attached: {names}. "
            "A cast rewrites the column's data and invalidates any index on it: drop the index(es) with drop_index() "
            "first, then create them again after the cast"
        )


def _cast_columns(view: DatasetView, fields: List[Dict[str, Any]], casts: Dict[str, pa.DataType]) -> "DatasetView":
    """Rewrites the columns in `casts` (old name → new type); `fields` is the new schema
    apart from the types. As pylance does it, a cast column takes a new field id (after the
    largest any schema or file used): the files written before keep the old id, which no
    longer names a column, so no file is ever read as a type it was not written in (an
    append committed concurrently, say)."""
    by_old_name = {f.name: f.entry for f in view.loaded.fields if f.is_top_level}
    new_fields = []
    next_id = view.max_field_id + 1
    for old_name, new_type in casts.items():
        old = by_old_name[old_name]
        if any(g.get("parent_id", -1) == old.get("id", 0) for g in fields):
            raise UnsupportedError(f"changing the type of nested column {old_name!r} is not supported")
        target = next(f for f in fields if f.get("id", 0) == old.get("id", 0))
        arrow = pa.field(target["name"], new_type, target.get("nullable", True))
        lance = lance_fields_for(pa.schema([arrow]), next_id)["fields"]
        if len(lance) != 1:
            raise UnsupportedError(f"cannot change {old_name!r} to the nested type {new_type}")
        target.update({k: v for k, v in lance[0].items() if k in ("id", "logical_type", "encoding", "type")})
        new_fields.append(lance[0] | {"name": target["name"], "nullable": target.get("nullable", True)})
        next_id += 1
    frags = [f._manifest_json() for f in view.loaded.fragments]
    written: List[str] = []
    try:
        for frag in frags:
            fid = frag.get("id", 0)
            src = pa.table(
                view.snapshot.scan(
                    list(casts),
                    fragment_ids=[fid],
                    batch_rows=1 << 40,
                    include_deleted=True,
                )
            )
            cols = []
            for n, t in casts.items():
                try:
                    cols.append(src.column(n).cast(t))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise InvalidArgumentError(f"cannot cast column {n!r} to {t}: {_cast_message(e, t)}") from None
            names = [f["name"] for f in new_fields]
            table = pa.Table.from_arrays(cols, names=names)
            made = _write(
                view.uri,
                table.to_reader(),
                new_fields,
                {},
                max(src.num_rows, 1),
                view.data_storage_version,
                storage_options=view.storage_options,
            )
            df = made[0]._manifest_json()["files"][0]
            written.append(f"data/{df['path']}")
            frag["files"] = frag.get("files", []) + [df]
    except BaseException:
        view.store.delete(written)
        raise
    body = {"fragments": frags, "schema": fields, "schema_metadata": view.loaded.schema_metadata}
    return commit_on(view, "Merge", body, written)


#: Rows per call of an ``add_columns`` function when no ``batch_size`` is given (pylance's).
_UDF_BATCH_SIZE = 1024


def _castable(old: pa.DataType, new: pa.DataType) -> bool:
    """The type changes pylance's alter_columns allows: within integers, within floats,
    between string and large string, binary and large binary, date and timestamp, lists and
    large lists, and fixed-size lists of the same size, of castable values."""
    t = pa.types
    if old == new:
        return True
    for kind in (t.is_integer, t.is_floating):
        if kind(old) and kind(new):
            return True
    for pair in ((t.is_string, t.is_large_string), (t.is_binary, t.is_large_binary), (t.is_date, t.is_timestamp)):
        if any(a(old) for a in pair) and any(b(new) for b in pair):
            return True
    if (t.is_list(old) or t.is_large_list(old)) and (t.is_list(new) or t.is_large_list(new)):
        return _castable(old.value_type, new.value_type)
    if t.is_fixed_size_list(old) and t.is_fixed_size_list(new):
        return old.list_size == new.list_size and _castable(old.value_type, new.value_type)
    return False


def _arrow_name(t: pa.DataType) -> str:
    """A type as pylance names it in errors (Arrow's Rust names for the common ones)."""
    names = {
        pa.string(): "Utf8", pa.large_string(): "LargeUtf8", pa.binary(): "Binary",
        pa.large_binary(): "LargeBinary", pa.bool_(): "Boolean",
    }
    if t in names:
        return names[t]
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return str(t).replace("uint", "UInt").replace("int", "Int").replace("halffloat", "Float16").replace(
            "float", "Float32").replace("double", "Float64")
    return str(t)


def _cast_message(error: Exception, to: pa.DataType) -> str:
    """pyarrow's cast error, an out-of-range integer worded as pylance words it."""
    m = re.search(r"Integer value (-?\d+) not in range", str(error))
    if m and pa.types.is_integer(to):
        return f"Can't cast value {m.group(1)} to type {_arrow_name(to)} ({error})"
    return str(error)


def _spread_over_physical_rows(values: pa.Table, keep: Any) -> pa.Table:
    """`values` (one row per live row) laid over a fragment's physical rows (`keep`: a
    bool per physical row, False where deleted); deleted rows get NULL."""
    import numpy as np

    if bool(keep.all()):
        return values
    positions = np.cumsum(keep) - 1
    take_idx = pa.array(np.where(keep, positions, 0))
    mask = pa.array(~keep)
    phys = len(keep)
    if values.num_rows == 0:
        return pa.table({n: pa.nulls(phys, values.column(n).type) for n in values.column_names})
    return pa.table(
        {
            n: pc.if_else(mask, pa.nulls(phys, values.column(n).type), values.column(n).take(take_idx))
            for n in values.column_names
        }
    )
