"""Merge-insert (upsert): :class:`MergeInsertBuilder`, what :meth:`LanceDataset.merge_insert`
returns."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancepy import _lancepy
from lancepy._core.args import DEFAULT_CONFLICT_RETRIES, DEFAULT_RETRY_TIMEOUT
from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy.exceptions import CommitConflictError, InvalidArgumentError, SchemaMismatchError, UnsupportedError
from lancepy.filters import Filter, FilterLike, compile_filter
from lancepy._ops import mutations as _mutations
from lancepy._ops.mutations import replace_rows_uncommitted, update_body
from lancepy._table.commit import commit_on
from lancepy.fragment import align_to_schema, to_record_batch_reader
from lancepy._core.evaluate import _evaluate

if TYPE_CHECKING:  # pragma: no cover
    from lancepy.dataset import LanceDataset


PRIMARY_KEY_METADATA = "lance-schema:unenforced-primary-key"


PRIMARY_KEY_POSITION_METADATA = "lance-schema:unenforced-primary-key:position"


def _primary_key(schema: pa.Schema) -> List[str]:
    """The top-level fields of the schema's unenforced primary key, in key order (the rule
    lives in the native schema code: fields with a position first, by position, then the rest
    in schema order, as pylance). Key fields inside structs cannot be merge keys here."""
    keys = _lancepy.primary_key(schema)
    nested = [name for name, top in keys if not top]
    if nested:
        raise UnsupportedError(f"primary key field(s) {nested} inside a struct cannot be merge_insert keys")
    return [name for name, _ in keys]


class MergeInsertBuilder:
    """``ds.merge_insert(on)``: match source rows to dataset rows on key columns, then update
    matched rows, insert unmatched ones and optionally delete dataset rows the source lacks."""

    def __init__(self, ds: LanceDataset, on: List[str]) -> None:
        for c in on:
            if c not in ds._schema.names:
                raise InvalidArgumentError(f"merge_insert key {c!r} is not a column of the dataset")
        self._ds = ds
        self._on = on
        self._update_all = False
        self._matched_delete = False
        self._matched_fail = False
        self._update_condition: Optional[str] = None
        self._insert_all = False
        self._delete_not_matched_by_source = False
        self._delete_condition: Optional[Filter] = None
        self._conflict_retries = DEFAULT_CONFLICT_RETRIES
        self._retry_timeout = DEFAULT_RETRY_TIMEOUT
        self._use_index = True

    @classmethod
    def _keyed(cls, ds: LanceDataset, on: Union[str, List[str], None]) -> "MergeInsertBuilder":
        """``ds.merge_insert(on)``: keys `on` (a name or names), else the schema's primary key."""
        if on is None:
            keys = _primary_key(ds._schema)
            if not keys:
                raise InvalidArgumentError(
                    "merge_insert needs join keys: pass on=... or mark primary-key fields in the schema "
                    f"(field metadata {PRIMARY_KEY_METADATA!r} = 'true')"
                )
            return cls(ds, keys)
        return cls(ds, [on] if isinstance(on, str) else list(on))

    def conflict_retries(self, max_retries: int) -> "MergeInsertBuilder":
        """How often a merge whose commit conflicts with a concurrent one is re-applied to the
        latest version (default 10; 0 raises :class:`CommitConflictError` at once)."""
        if max_retries < 0:
            raise InvalidArgumentError(f"conflict_retries must be >= 0, got {max_retries}")
        self._conflict_retries = max_retries
        return self

    def retry_timeout(self, timeout: datetime.timedelta) -> "MergeInsertBuilder":
        """How long conflicting commits are retried in all (default 30 s)."""
        self._retry_timeout = timeout
        return self

    def when_matched_update_all(self, condition: Optional[str] = None) -> "MergeInsertBuilder":
        """Matched dataset rows take the source's values (only where `condition` holds; it
        may refer to ``target.col`` and ``source.col``)."""
        self._update_all, self._matched_delete, self._matched_fail = True, False, False
        self._update_condition = condition
        return self

    def when_matched_delete(self) -> "MergeInsertBuilder":
        """Dataset rows with a match in the source are deleted."""
        self._matched_delete, self._update_all, self._matched_fail = True, False, False
        return self

    def when_matched_fail(self) -> "MergeInsertBuilder":
        """The merge fails (:class:`~lancepy.exceptions.InvalidArgumentError`, nothing
        written) if any source row matches a dataset row: insert-if-absent."""
        self._matched_fail, self._update_all, self._matched_delete = True, False, False
        return self

    def when_not_matched_insert_all(self) -> "MergeInsertBuilder":
        """Source rows without a match are inserted."""
        self._insert_all = True
        return self

    def when_not_matched_by_source_delete(self, expr: Optional[FilterLike] = None) -> "MergeInsertBuilder":
        """Dataset rows without a match in the source are deleted (only those for which
        `expr`, a filter over the dataset's columns, holds)."""
        self._delete_not_matched_by_source = True
        self._delete_condition = compile_filter(expr, self._ds._schema)
        return self

    def use_index(self, use_index: bool) -> "MergeInsertBuilder":
        """Whether an index on the key columns may be used to find matches (pylance's hint;
        default true). lancepy always joins the source with a read of the dataset's key
        columns, so both settings run the same plan (see :meth:`explain_plan`)."""
        if not isinstance(use_index, bool):
            raise InvalidArgumentError(f"use_index must be a bool, got {use_index!r}")
        self._use_index = use_index
        return self

    def _check_clauses(self) -> None:
        if not (self._update_all or self._matched_delete or self._matched_fail or self._insert_all
                or self._delete_not_matched_by_source):
            raise InvalidArgumentError(
                "merge_insert does nothing: give at least one of when_matched_update_all / when_matched_delete / "
                "when_matched_fail / when_not_matched_insert_all / when_not_matched_by_source_delete")

    def execute(self, data_obj: Any, *, schema: Optional[pa.Schema] = None) -> Dict[str, int]:
        """Runs the merge as one ``Update`` transaction; returns counts like pylance.

        If a concurrent commit conflicts, the merge is re-applied to the latest version (see
        :meth:`conflict_retries` and :meth:`retry_timeout`).
        """
        self._check_clauses()
        raw = to_record_batch_reader(data_obj, schema).read_all()

        def attempt(view: Any) -> Dict[str, int]:
            self._ds._install(view)  # (the latest version, when a conflict made this a retry)
            # (aligned to this version's schema: a retry may meet columns added concurrently)
            source, missing = self._aligned(raw)
            stats, planned = self._plan(source, missing)
            # (a merge that changes nothing commits a version all the same, as pylance's)
            self._ds._install(commit_on(view, "Update", *(planned or (self._unchanged(),))))
            return stats

        return _mutations._retry_on_conflict(self._ds._view, attempt, self._conflict_retries, self._retry_timeout)

    def execute_uncommitted(self, data_obj: Any, *, schema: Optional[pa.Schema] = None) -> Tuple[Any, Dict[str, int]]:
        """Writes the merge's files without committing: returns ``(Transaction, stats)``, the
        transaction to commit with :meth:`LanceDataset.commit` (an ``Update`` planned against
        this version; a no-op merge gives an ``Update`` that changes nothing)."""
        from lancepy._table.fragments import FragmentMetadata
        from lancepy._table.operations import LanceOperation, Transaction

        source, missing = self._source(data_obj, schema)
        stats, planned = self._plan(source, missing)
        body = planned[0] if planned is not None else self._unchanged()
        op = LanceOperation.Update(
            removed_fragment_ids=list(body["removed_fragment_ids"]),
            updated_fragments=[FragmentMetadata.from_json(f) for f in body["updated_fragments"]],
            new_fragments=[FragmentMetadata.from_json(f) for f in body["new_fragments"]],
            fields_modified=list(body["fields_modified"]),
            fields_for_preserving_frag_bitmap=list(body["fields_for_preserving_frag_bitmap"]),
            update_mode="rewrite_rows",
        )
        return Transaction(read_version=self._ds.version, operation=op), stats

    def explain_plan(self, schema: Optional[pa.Schema] = None, verbose: bool = False) -> str:
        """How :meth:`execute` runs for a source with `schema` (the dataset's by default), as
        an indented tree of lancepy's steps."""
        if schema is not None:
            align_to_schema(pa.RecordBatchReader.from_batches(schema, iter(())), self._ds._schema, fill_missing=True)
        return "\n".join(self._plan_lines(verbose))

    def analyze_plan(self, data_obj: Any, *, schema: Optional[pa.Schema] = None) -> str:
        """Runs the merge against `data_obj` without committing (the files it wrote are removed
        again) and returns :meth:`explain_plan`'s tree with what the run did: rows updated,
        inserted and deleted, files and bytes written, time taken."""
        import time

        from lancepy._table.commit import delete_written

        source, missing = self._source(data_obj, schema)
        t0 = time.perf_counter()
        stats, planned = self._plan(source, missing)
        elapsed = time.perf_counter() - t0
        written = list(planned[1]) if planned is not None else []
        store = self._ds._view.store
        listed: Dict[str, int] = {}
        for folder in {p.rsplit("/", 1)[0] for p in written if isinstance(p, str) and "/" in p}:
            listed.update({path: size for path, size, _ in store.list(folder)})
        sizes = [listed.get(p, 0) for p in written if isinstance(p, str)]
        delete_written(store, written)
        lines = self._plan_lines(True)
        lines[0] += (f", metrics=[elapsed={elapsed * 1e3:.3f} ms, num_updated_rows={stats['num_updated_rows']}, "
                     f"num_inserted_rows={stats['num_inserted_rows']}, num_deleted_rows={stats['num_deleted_rows']}, "
                     f"num_files_written={len(written)}, bytes_written={sum(sizes)}]")
        return "\n".join(lines)

    def _plan_lines(self, verbose: bool) -> List[str]:
        self._check_clauses()
        matched = ("UpdateAll" + (f" where {self._update_condition}" if self._update_condition else "") if self._update_all
                   else "Delete" if self._matched_delete else "Fail" if self._matched_fail else "DoNothing")
        not_matched = "InsertAll" if self._insert_all else "DoNothing"
        by_source = ("Delete" + (f" where {self._delete_condition.text}" if self._delete_condition is not None else "")
                     if self._delete_not_matched_by_source else "Keep")
        ds = self._ds
        steps = [
            f"MergeInsert: on={self._on}, when_matched={matched}, when_not_matched={not_matched}, "
            f"when_not_matched_by_source={by_source}",
            "Write: matched rows rewritten as new fragments with the source's values (old rows deleted), "
            "unmatched source rows appended; one Update commit",
            f"HashJoin: full outer join on {self._on} of the source with the dataset's keys (use_index={self._use_index}: "
            "lancepy reads the key columns; no index lookup)",
            f"LanceRead: uri={ds.uri}, version={ds.version}, columns={self._on}, row_addr=true"
            + (f", fragments={[f.fragment_id for f in ds.get_fragments()]}" if verbose else ""),
        ]
        return [("  " * i) + line for i, line in enumerate(steps)]

    def _source(self, data_obj: Any, schema: Optional[pa.Schema]) -> Tuple[pa.Table, List[str]]:
        self._check_clauses()
        return self._aligned(to_record_batch_reader(data_obj, schema).read_all())

    def _aligned(self, source: pa.Table) -> Tuple[pa.Table, List[str]]:
        """`source` aligned to the dataset's current schema, and the columns it lacks."""
        target = self._ds._schema
        # A source with only some of the columns (the keys among them) updates those columns
        # of matched rows and inserts nulls in the others, as pylance does.
        present = [n for n in target.names if n in source.column_names]
        missing = [n for n in target.names if n not in source.column_names]
        if missing and not set(self._on) <= set(present):
            raise SchemaMismatchError(f"the source lacks merge key column(s) {sorted(set(self._on) - set(present))}")
        if missing and set(source.column_names) <= set(present):
            target = pa.schema([target.field(n) for n in present], metadata=target.metadata)
        source = align_to_schema(source.to_reader(), target).read_all()
        return source, missing

    def _complete(self, rows: pa.Table, missing: List[str], addresses: Optional[pa.Array]) -> pa.Table:
        """`rows` (source rows) with the `missing` columns added: the dataset's values at
        `addresses` (blob columns as values), or nulls; columns in the dataset's order."""
        if not missing:
            return rows
        ds = self._ds
        blobs = set(ds._view.loaded.blob_columns(missing))
        if addresses is not None:
            have = self._rows_at(addresses, missing)
            for n in missing:
                values = have.column(n).combine_chunks()
                if n in blobs:
                    values = pa.table(ds._view.snapshot.blob_values(n, have.column(ROW_ADDRESS).combine_chunks(), values)).column(0)
                rows = rows.append_column(pa.field(n, values.type, ds._schema.field(n).nullable), values)
        else:
            for n in missing:
                t = pa.large_binary() if n in blobs else ds._schema.field(n).type
                rows = rows.append_column(pa.field(n, t, ds._schema.field(n).nullable), pa.nulls(rows.num_rows, t))
        return rows.select(ds._schema.names)

    def _plan(self, source: pa.Table, missing: Sequence[str] = ()) -> Tuple[Dict[str, int], Optional[Tuple[Dict[str, Any], List[str]]]]:
        """Writes the merge's files: the stats and the ``Update`` body and files written to
        commit, or ``None`` when the merge changes nothing."""
        ds = self._ds
        target = ds.to_table(columns=self._on, with_row_address=True, with_row_id=ds._view.stable_row_ids)
        stats, addresses, rows, kept = self._decide(source, list(missing), target)
        if addresses is None:
            return stats, None
        planned = replace_rows_uncommitted(ds._view, addresses, rows, ds._schema.names, kept)
        return stats, planned

    def _unchanged(self) -> Dict[str, Any]:
        """The body of the ``Update`` of a merge that changes no row."""
        return update_body(self._ds._view, [], [], [], self._ds._schema.names)

    def _decide(
        self, source: pa.Table, missing: List[str], target: pa.Table
    ) -> Tuple[Dict[str, int], Optional[pa.Array], Optional[pa.Table], Optional[pa.Array]]:
        """What the merge of `source` (its columns the dataset's, less `missing`) does to the
        dataset rows of `target` (their key columns and ``_rowaddr``, and ``_rowid`` with
        stable row ids: all of the dataset's rows, or those a distributed merge gave one
        task): the stats, the row addresses to delete, the rows to write (``None`` where
        nothing is to be deleted or written; both ``None`` when the merge changes nothing)
        and, with stable row ids, the ids the first rows to write keep (the updated rows').
        As pylance writes them: the updated rows in source order, then the inserted ones."""
        src_keys = source.select(self._on).append_column("__src", pa.array(np.arange(source.num_rows, dtype=np.int64)))
        # The hash table is built on the source's keys; the dataset's rows that match no
        # source row are kept only when the merge deletes them.
        outer = "full outer" if self._delete_not_matched_by_source else "right outer"
        joined = target.join(src_keys, keys=self._on, join_type=outer)
        found = pc.is_valid(joined.column(ROW_ADDRESS))
        matched = joined.filter(found).sort_by("__src")
        only_src = joined.filter(pc.invert(found)).sort_by("__src")
        if self._delete_not_matched_by_source:
            matched = matched.filter(pc.is_valid(matched.column("__src")))
            only_tgt = joined.filter(pc.is_null(joined.column("__src")))
        else:
            only_tgt = joined.slice(0, 0)
        delete_addr: List[Any] = []
        new_rows: List[pa.Table] = []
        updated = inserted = deleted = 0
        if self._matched_fail and matched.num_rows:
            keys = matched.select(self._on).slice(0, 1).to_pylist()[0]
            raise InvalidArgumentError(
                "merge_insert failed: a source row matches a dataset row ("
                + ", ".join(f"{k} = {v!r}" for k, v in keys.items()) + ")"
            )
        if self._update_all and matched.num_rows and self._update_condition is not None:
            matched = self._filter_matched(matched, source)
        if self._matched_delete or self._update_all:
            _refuse_ambiguous(matched, self._on)
        if self._matched_delete and matched.num_rows:
            delete_addr.append(matched.column(ROW_ADDRESS))
            deleted += matched.num_rows
        kept = None
        if self._update_all and matched.num_rows:
            delete_addr.append(matched.column(ROW_ADDRESS))
            addr = matched.column(ROW_ADDRESS).combine_chunks()
            new_rows.append(self._complete(source.take(matched.column("__src")), missing, addr))
            updated = matched.num_rows
            if ROW_ID in matched.column_names:
                kept = matched.column(ROW_ID).combine_chunks()
        if self._insert_all and only_src.num_rows:
            new_rows.append(self._complete(source.take(only_src.column("__src")), missing, None))
            inserted = only_src.num_rows
        if self._delete_not_matched_by_source and only_tgt.num_rows and self._delete_condition is not None:
            rows = self._rows_at(only_tgt.column(ROW_ADDRESS).combine_chunks())
            only_tgt = only_tgt.filter(_evaluate(rows, self._delete_condition))
        if self._delete_not_matched_by_source and only_tgt.num_rows:
            delete_addr.append(only_tgt.column(ROW_ADDRESS))
            deleted += only_tgt.num_rows
        stats = {"num_inserted_rows": inserted, "num_updated_rows": updated, "num_deleted_rows": deleted}
        if not delete_addr and not new_rows:
            return stats, None, None, None
        addresses = pa.chunked_array([c for a in delete_addr for c in a.chunks], pa.uint64()).combine_chunks() if delete_addr else pa.array([], pa.uint64())
        rows = pa.concat_tables(new_rows, promote_options="permissive") if new_rows else None
        return stats, addresses, rows, kept


    def _rows_at(self, addresses: pa.Array, columns: Optional[List[str]] = None) -> pa.Table:
        """The dataset's rows at row `addresses` (live rows the merge matched), in that order
        (by address: with stable row ids a row's id is not its address): `columns` (all by
        default) and ``_rowaddr``."""
        rows = pa.table(self._ds._view.snapshot.take_addresses(addresses, columns=columns, with_row_address=True))
        if rows.num_rows != len(addresses):
            raise CommitConflictError("merge_insert: matched rows changed while they were read")
        return rows

    def _filter_matched(self, matched: pa.Table, source: pa.Table) -> pa.Table:
        """The matched pairs for which the update condition holds."""
        target_rows = self._rows_at(matched.column(ROW_ADDRESS).combine_chunks())
        source_rows = source.take(matched.column("__src"))
        pair = pa.table(
            {
                "target": pa.StructArray.from_arrays(
                    [c.combine_chunks() for c in target_rows.columns], names=target_rows.column_names
                ),
                "source": pa.StructArray.from_arrays(
                    [c.combine_chunks() for c in source_rows.columns], names=source_rows.column_names
                ),
            }
        )
        assert self._update_condition is not None
        flt = compile_filter(self._update_condition, pair.schema)
        assert flt is not None
        return matched.filter(_evaluate(pair, flt))


def _refuse_ambiguous(matched: pa.Table, on: Sequence[str]) -> None:
    """Refuses a merge where several source rows match one dataset row (`matched`: the
    matching pairs a clause acts on), as pylance does; source rows sharing a key that
    matches no dataset row are not ambiguous (each is inserted)."""
    addresses = matched.column(ROW_ADDRESS)
    if len(addresses) < 2 or pc.count_distinct(addresses).as_py() == len(addresses):
        return
    counts = pa.table({"a": addresses}).group_by("a").aggregate([([], "count_all")])
    twice = counts.filter(pc.greater(counts.column("count_all"), 1)).column("a")[0]
    row = matched.filter(pc.equal(addresses, twice)).select(list(on)).slice(0, 1).to_pylist()[0]
    raise InvalidArgumentError(
        "Ambiguous merge inserts are prohibited: multiple source rows match the same target row on ("
        + ", ".join(f"{k} = {v!r}" for k, v in row.items())
        + "). Please ensure each target row is matched by at most one source row."
    )
