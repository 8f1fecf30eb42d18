"""Validation of a version: every data and deletion file its manifest lists exists, has the
recorded size, opens, and agrees with the fragment's row counts (``lancepy validate``,
:meth:`LanceDataset.validate`, :meth:`LanceFragment.validate`)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from lancepy._table.fragments import FragmentMetadata
from lancepy._table.snapshot import VersionState
from lancepy.exceptions import CorruptFileError, LanceError
from lancepy.file import LanceFileReader


def validate_version(store: Any, loaded: Any, storage_options: Optional[Dict[str, str]] = None) -> None:
    """Checks the files of version `loaded` (see :meth:`LanceDataset.validate`); raises
    :class:`CorruptFileError` listing every problem found."""
    problems: List[str] = []
    checked = {"manifests": 0, "data_files": 0, "deletion_files": 0}
    _validate_version(store, loaded, problems, checked, storage_options)
    if problems:
        raise CorruptFileError(f"{store.uri} version {loaded.version} is damaged: " + "; ".join(problems))


def _validate_version(
    store: Any,
    loaded: Any,
    problems: List[str],
    checked: Dict[str, int],
    storage_options: Optional[Dict[str, str]] = None,
) -> None:
    sizes = {p: size for p, size, _ in store.list("data")}
    snapshot = None
    try:
        snapshot = VersionState.open(store.uri, loaded, storage_options, None).snapshot
    except LanceError as e:
        problems.append(f"version {loaded.version}: cannot open its data: {e}")
    for frag in loaded.fragments:
        _validate_fragment(store, snapshot, frag, sizes, problems, checked, storage_options)


def _validate_fragment(
    store: Any,
    snapshot: Any,
    frag: FragmentMetadata,
    sizes: Dict[str, int],
    problems: List[str],
    checked: Dict[str, int],
    storage_options: Optional[Dict[str, str]] = None,
) -> None:
    """Checks one fragment's data files (present, sizes, footers, rows, columns) and its
    deletion file (readable, row count, offsets in range); appends what is wrong to
    `problems`. `sizes` maps ``data/...`` paths to their sizes; `snapshot` (or ``None``) reads
    deletion files."""

    fid = frag.id
    phys = frag.physical_rows or 0
    for df in frag.files:
        rel = f"data/{df.path}"
        if df.base_id is not None:
            continue  # under another base path; checked where it lives
        checked["data_files"] += 1
        where = f"fragment {fid}: data file {rel}"
        if rel not in sizes:
            problems.append(f"{where}: missing")
            continue
        recorded = df.file_size_bytes or 0
        if recorded and sizes[rel] != recorded:
            problems.append(f"{where}: {sizes[rel]} bytes, the manifest records {recorded}")
        try:
            reader = LanceFileReader(store.child_uri(rel), storage_options)
            meta = reader.metadata()
        except LanceError as e:
            problems.append(f"{where}: {e}")
            continue
        if phys and meta.num_rows != phys:
            problems.append(f"{where}: {meta.num_rows} rows, the fragment has {phys}")
        wanted = [c for c, f in zip(df.column_indices or [], df.fields) if f >= 0 and c >= 0]
        if wanted and max(wanted) >= len(meta.columns):
            problems.append(f"{where}: has {len(meta.columns)} columns, the manifest maps column {max(wanted)}")
    deletion = frag.deletion_file
    if deletion is None:
        return
    checked["deletion_files"] += 1
    rel = deletion.path(fid)
    where = f"fragment {fid}: deletion file {rel}"
    if snapshot is None:
        return
    try:
        import pyarrow as pa

        deleted = pa.table(snapshot.deleted_rows(fid)).column(0).to_pylist()
    except LanceError as e:
        problems.append(f"{where}: {e}")
        return
    if len(deleted) != deletion.num_deleted_rows:
        problems.append(f"{where}: holds {len(deleted)} rows, the manifest records {deletion.num_deleted_rows}")
    if deleted and phys and max(deleted) >= phys:
        problems.append(f"{where}: deletes row {max(deleted)} of a fragment of {phys} rows")
