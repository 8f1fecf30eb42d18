"""What a single fragment's methods do without committing (pylance's ``LanceFragment.merge``,
``update_columns``, ``merge_columns`` and ``create_from_file``): each writes at most one new
data file and returns the fragment's new manifest entry, for a ``Merge`` or ``Update``
transaction the caller commits.

Joins run over the fragment's *physical* rows (deleted ones included, with null keys, so they
never match): a new data file must hold one value per physical row to line up with the
fragment's other files. Where the right side repeats a key, its last row wins.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc

from lancepy import _lancepy
from lancepy._core.conform import to_record_batch_reader
from lancepy._core.evaluate import _evaluate_values
from lancepy._core.schema import ROW_ADDRESS, ROW_ID, lance_fields_for, schema_differences
from lancepy._ops.write import _write
from lancepy._table.fragments import FragmentMetadata
from lancepy._table.operations import LanceSchema
from lancepy.exceptions import (
    ColumnNotFoundError,
    EmptyDataError,
    InvalidArgumentError,
    SchemaMismatchError,
)
from lancepy.file import LanceFileReader
from lancepy.filters import compile_expression

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.snapshot import DatasetView

#: Columns a scan can add that no data file stores (they cannot be written or updated).
_META_COLUMNS = (ROW_ID, ROW_ADDRESS, "_rowoffset", "_row_created_at_version", "_row_last_updated_at_version")

#: The field id a data file lists for a column it still stores but no longer serves.
_TOMBSTONE = -2


def _physical_keys(view: "DatasetView", fragment_id: int, column: str, columns: List[str]) -> pa.Table:
    """`columns` and the key `column` (a column of the dataset, ``_rowid`` or ``_rowaddr``)
    over every physical row of the fragment, deleted rows included (their keys null)."""
    special = column in (ROW_ID, ROW_ADDRESS)
    if not special and column not in view.schema.names:
        raise ColumnNotFoundError(f"column {column!r} does not exist in fragment {fragment_id}")
    read = list(dict.fromkeys(columns + ([] if special else [column])))
    phys = view.fragment_metadata(fragment_id).physical_rows or 0
    table = pa.table(
        view.snapshot.scan(
            read,
            fragment_ids=[fragment_id],
            batch_rows=max(phys, 1),
            include_deleted=True,
            with_row_id=column == ROW_ID,
            with_row_address=column == ROW_ADDRESS,
        )
    )
    if table.num_rows != phys:
        raise InvalidArgumentError(f"fragment {fragment_id} read {table.num_rows} rows, expected {phys}")
    return table


def _right_side(data_obj: Any, schema: Optional[pa.Schema], right_on: str) -> pa.Table:
    right = to_record_batch_reader(data_obj, schema).read_all()
    if right_on not in right.column_names:
        raise ColumnNotFoundError(f"column {right_on!r} does not exist in the data (its columns: {right.column_names})")
    return right


def _match(left_keys: Any, right: pa.Table, right_on: str, left_on: str) -> pa.Array:
    """For each left key, the position of its row in `right` (the last one where `right`
    repeats the key), or null."""
    right_keys = right.column(right_on)
    if right.num_rows == 0:
        return pa.nulls(len(left_keys), pa.int64())
    try:
        right_keys = right_keys.cast(left_keys.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InvalidArgumentError(
            f"cannot join {left_on!r} ({left_keys.type}) with {right_on!r} ({right_keys.type}): {e}"
        ) from None
    # index_in finds the first occurrence: look the keys up in reversed order.
    backwards = right_keys.take(pa.array(range(right.num_rows - 1, -1, -1), pa.int64())).combine_chunks()
    # (a null key matches a null key, as in pylance)
    found = pc.index_in(left_keys, value_set=backwards)
    return pc.subtract(pa.scalar(right.num_rows - 1, pa.int64()), found.cast(pa.int64()))


def _write_columns(
    view: "DatasetView", table: pa.Table, fields: List[Dict[str, Any]], metadata: Dict[str, Any]
) -> Dict[str, Any]:
    """`table` (one row per physical row of a fragment) as one new data file of the dataset;
    its manifest entry (``DataFile`` JSON)."""
    rows = max(table.num_rows, 1)
    made = _write(
        view.uri, table.to_reader(), fields, metadata, rows, view.data_storage_version, storage_options=view.storage_options
    )
    if len(made) != 1 or len(made[0].files) != 1:
        raise InvalidArgumentError("internal error: expected one data file for the fragment")
    return made[0]._manifest_json()["files"][0]


def add_columns_file(view: "DatasetView", fragment_id: int, new: pa.Table) -> Tuple[FragmentMetadata, LanceSchema]:
    """The fragment with one more data file holding `new` (new columns, one row per physical
    row), and the dataset's schema extended by them (field ids from ``max_field_id + 1``)."""
    meta = view.fragment_metadata(fragment_id)
    if new.num_rows != meta.physical_rows:
        raise InvalidArgumentError(
            f"the new columns have {new.num_rows} rows; fragment {fragment_id} has {meta.physical_rows}"
        )
    if not new.column_names:
        raise InvalidArgumentError("there are no new columns to add")
    clash = [n for n in new.column_names if n in view.schema.names or n in _META_COLUMNS]
    if clash:
        raise InvalidArgumentError(f"columns {clash} already exist in fragment {fragment_id}")
    new_schema = pa.schema([pa.field(f.name, f.type, True, f.metadata) for f in new.schema])
    new = pa.Table.from_arrays([c.combine_chunks() for c in new.columns], schema=new_schema)
    lance = lance_fields_for(new_schema, view.max_field_id + 1)
    own = meta._manifest_json()
    own["files"] = own["files"] + [_write_columns(view, new, lance["fields"], lance["metadata"])]
    return FragmentMetadata._from_dict(own), LanceSchema(view.loaded.field_entries + lance["fields"], view.loaded.schema_metadata)


def sql_columns(
    view: "DatasetView", fragment_id: int, transforms: Dict[str, str], batch_size: Optional[int]
) -> Tuple[FragmentMetadata, LanceSchema]:
    """See :meth:`lancepy.fragment.LanceFragment.merge_columns` with a dict: new columns
    named by its keys, each the value of the SQL expression (over the dataset's columns) of
    its value, for every physical row."""
    if not transforms or not all(isinstance(k, str) and isinstance(v, str) for k, v in transforms.items()):
        raise InvalidArgumentError("merge_columns with a dict needs new column names mapped to SQL expressions")
    schema = view.schema
    compiled = {name: compile_expression(sql, schema) for name, sql in transforms.items()}
    needed = sorted({c for f in compiled.values() for c in (f.columns or schema.names)})
    phys = view.fragment_metadata(fragment_id).physical_rows or 0
    src = pa.table(
        view.snapshot.scan(
            needed, fragment_ids=[fragment_id], batch_rows=batch_size or max(phys, 1), include_deleted=True
        )
    )
    parts = []
    for batch in src.to_batches():
        t = pa.Table.from_batches([batch])
        parts.append(pa.table({n: _evaluate_values(t, f.expression, None) for n, f in compiled.items()}))
    if not parts:
        raise InvalidArgumentError(f"fragment {fragment_id} has no rows to compute columns for")
    return add_columns_file(view, fragment_id, pa.concat_tables(parts))


def merge(
    view: "DatasetView",
    fragment_id: int,
    data_obj: Any,
    left_on: str,
    right_on: Optional[str],
    schema: Optional[pa.Schema],
) -> Tuple[FragmentMetadata, LanceSchema]:
    """See :meth:`lancepy.fragment.LanceFragment.merge`."""
    right_on = left_on if right_on is None else right_on
    right = _right_side(data_obj, schema, right_on)
    keys = _physical_keys(view, fragment_id, left_on, []).column(left_on)
    names = [n for n in right.column_names if n != right_on]
    both = [n for n in names if n in view.schema.names]
    if both:
        raise InvalidArgumentError(f"columns {both} exist in fragment {fragment_id} and in the data to merge")
    positions = _match(keys, right, right_on, left_on)
    return add_columns_file(view, fragment_id, right.select(names).take(positions))


def _subtree_ids(fields: List[Dict[str, Any]], top: int) -> List[int]:
    """`top` and the ids of every field below it, in manifest order."""
    out = {top}
    for f in fields:  # parents come before their children in a manifest
        if f.get("parent_id", -1) in out:
            out.add(f.get("id", 0))
    return [f.get("id", 0) for f in fields if f.get("id", 0) in out]


def update_columns(
    view: "DatasetView",
    fragment_id: int,
    data_obj: Any,
    left_on: str,
    right_on: Optional[str],
    schema: Optional[pa.Schema],
    with_offsets: bool,
) -> Union[Tuple[FragmentMetadata, List[int]], Tuple[FragmentMetadata, List[int], bytes]]:
    """See :meth:`lancepy.fragment.LanceFragment.update_columns`."""
    right_on = left_on if right_on is None else right_on
    right = _right_side(data_obj, schema, right_on)
    names = [n for n in right.column_names if n != right_on]
    meta_cols = [n for n in names if n in _META_COLUMNS]
    if meta_cols:
        raise InvalidArgumentError(f"metadata column {meta_cols[0]!r} cannot be updated")
    missing = [n for n in names if n not in view.schema.names]
    if missing:
        raise ColumnNotFoundError(f"column {missing[0]!r} does not exist in fragment {fragment_id}")
    if left_on in names:
        raise InvalidArgumentError(f"the join column {left_on!r} cannot be updated")
    if not names:
        raise InvalidArgumentError("the data has no columns to update besides the join column")
    current = _physical_keys(view, fragment_id, left_on, names)
    positions = _match(current.column(left_on), right, right_on, left_on)
    matched = pc.is_valid(positions)
    target = pa.schema([view.schema.field(n) for n in names])
    columns = []
    for n in names:
        try:
            values = right.column(n).cast(target.field(n).type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaMismatchError(
                f"column {n!r}: cannot use {right.column(n).type} values for {target.field(n).type}: {e}"
            ) from None
        picked = values.take(pc.if_else(matched, positions, pa.scalar(0, pa.int64()))) if right.num_rows else values
        columns.append(pc.if_else(matched, picked, current.column(n)) if right.num_rows else current.column(n))
    new = pa.Table.from_arrays(
        [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns], schema=target
    )

    all_fields = view.loaded.field_entries
    top_ids = [next(f["id"] for f in all_fields if f.get("parent_id", -1) == -1 and f.get("name") == n) for n in names]
    modified = [i for top in top_ids for i in _subtree_ids(all_fields, top)]
    sub = [f for f in all_fields if f.get("id") in set(modified)]
    meta = view.fragment_metadata(fragment_id)._manifest_json()
    for df in meta["files"]:  # the old values stay in their files, no longer served
        df["fields"] = [_TOMBSTONE if i in set(modified) else i for i in df.get("fields", [])]
    written = _write_columns(view, new, sub, view.loaded.schema_metadata)
    meta["files"].append(written)
    out = FragmentMetadata._from_dict(meta)
    # the fields modified are those the new file stores (a struct's leaves, as pylance says)
    fields_modified = list(written["fields"])
    if not with_offsets:
        return out, fields_modified
    hits = pc.indices_nonzero(matched).to_pylist() if len(matched) else []
    return out, fields_modified, bytes(_lancepy.fragment_bitmap(hits))


def fragment_from_file(filename: str, view: "DatasetView", fragment_id: int) -> FragmentMetadata:
    """See :meth:`lancepy.fragment.LanceFragment.create_from_file`."""
    if not isinstance(filename, str) or not filename or filename.startswith("/") or ".." in filename.split("/"):
        raise InvalidArgumentError(
            f"filename must be a file name under the dataset's data/ directory, got {filename!r}"
        )
    reader = LanceFileReader(view.store.child_uri(f"data/{filename}"), storage_options=view.storage_options)
    got, want = reader.schema, view.schema
    problems = schema_differences(got, want)
    if problems or got.names != want.names:
        raise SchemaMismatchError(
            f"{filename} does not hold the dataset's schema in its order: "
            + ", ".join(problems or [f"columns {got.names}, expected {want.names}"])
        )
    rows = reader.num_rows()
    if rows == 0:
        raise EmptyDataError(f"{filename} has no rows")
    # Which field ids the file's columns stand for is the writer's rule: ask it, with one row
    # written to memory under the dataset's field ids.
    probe = pa.table(reader.read_range(0, 1).to_table())
    probe_uri = f"memory://lancepy-probe-{id(probe)}-{fragment_id}"
    text = _lancepy.write_fragments(
        probe_uri,
        probe.to_reader(),
        json.dumps(view.loaded.field_entries),
        json.dumps(view.loaded.schema_metadata),
        1,
        reader.version,
        1 << 62,
    )
    written = json.loads(text)[0]["files"][0]
    probe_store = _lancepy.Store(probe_uri)
    probe_store.delete([p for p, _, _ in probe_store.list("data")])
    major, minor = (int(x) for x in reader.version.split("."))
    size = reader.metadata().file_size
    return FragmentMetadata._from_dict(
        {
            "id": int(fragment_id),
            "files": [
                {
                    "path": filename,
                    "fields": written["fields"],
                    "column_indices": written["column_indices"],
                    "file_major_version": major,
                    "file_minor_version": minor,
                    "file_size_bytes": size,
                }
            ],
            "physical_rows": rows,
        }
    )
