"""Table config, table and schema metadata, field metadata and base paths: the
commits that change a dataset's description, not its rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from lancepy._table import bases as _bases
from lancepy._table import commit as _commit
from lancepy._table.commit import commit_on
from lancepy._table.bases import DatasetBasePath
from lancepy._table.operations import _update_map
from lancepy.exceptions import InvalidArgumentError

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.snapshot import DatasetView


def update_config(
    view: "DatasetView", values: Dict[str, Optional[str]], *, replace: bool = False
) -> Tuple["DatasetView", Dict[str, str]]:
    """See :meth:`LanceDataset.update_config`: the dataset at the new version and its config."""
    view = commit_on(view, "UpdateConfig", {"config_updates": _update_map(values, replace)})
    return view, view.loaded.config


def delete_config_keys(view: "DatasetView", keys: List[str]) -> "DatasetView":
    """See :meth:`LanceDataset.delete_config_keys`."""
    if isinstance(keys, str):
        keys = [keys]
    return commit_on(view, "UpdateConfig", {"config_updates": _update_map({k: None for k in keys}, False)})


def update_metadata(
    view: "DatasetView", values: Dict[str, Optional[str]], *, replace: bool = False
) -> Tuple["DatasetView", Dict[str, str]]:
    """See :meth:`LanceDataset.update_metadata`: the dataset at the new version and its table metadata."""
    view = commit_on(view, "UpdateConfig", {"table_metadata_updates": _update_map(values, replace)})
    return view, view.loaded.table_metadata


def update_schema_metadata(
    view: "DatasetView", values: Dict[str, Optional[str]], *, replace: bool = False
) -> Tuple["DatasetView", Dict[str, str]]:
    """See :meth:`LanceDataset.update_schema_metadata`: the dataset at the new version and its
    schema metadata (as text)."""
    view = commit_on(view, "UpdateConfig", {"schema_metadata_updates": _update_map(values, replace)})
    return view, view.loaded.schema_metadata_text


def replace_schema_metadata(view: "DatasetView", new_metadata: Dict[str, str]) -> "DatasetView":
    """See :meth:`LanceDataset.replace_schema_metadata`."""
    return update_schema_metadata(view, new_metadata, replace=True)[0]


def update_field_metadata(
    view: "DatasetView", field_updates: Dict[str, Dict[str, Optional[str]]], *, replace: bool = False
) -> "DatasetView":
    """See :meth:`LanceDataset.update_field_metadata`."""
    ids = view.loaded.field_ids_by_path
    body = {}
    for name, values in field_updates.items():
        if name not in ids:
            from lancepy.exceptions import ColumnNotFoundError

            raise ColumnNotFoundError(f"field {name!r} does not exist; fields are {sorted(ids)}")
        body[str(ids[name])] = _update_map(values, replace)
    return commit_on(view, "UpdateConfig", {"field_metadata_updates": body})


def replace_field_metadata(view: "DatasetView", field_name: str, new_metadata: Dict[str, str]) -> "DatasetView":
    """See :meth:`LanceDataset.replace_field_metadata`."""
    return update_field_metadata(view, {field_name: new_metadata}, replace=True)


def add_bases(
    view: "DatasetView", new_bases: List[DatasetBasePath], transaction_properties: Optional[Dict[str, str]] = None
) -> "DatasetView":
    """See :meth:`LanceDataset.add_bases`."""
    if not new_bases:
        raise InvalidArgumentError("add_bases needs at least one base path")
    entries = _bases.register_initial_bases(new_bases)
    given = {id(b): getattr(b, "id", None) for b in new_bases}
    for entry, b in zip(entries, new_bases):
        entry["id"] = given[id(b)] or 0  # 0: assigned at commit, as pylance writes it
    _commit.check_feature_flags(view.loaded, write=True, uri=view.uri)
    txn = _commit.new_transaction(view.version, "UpdateBases", {"new_bases": entries})
    txn["transaction_properties"] = dict(transaction_properties or {})
    result = _commit.commit_transaction(view.store, txn, naming=view.loaded.naming, commit_lock=view.commit_lock)
    _commit.check_feature_flags(result.manifest, write=False, uri=view.uri)
    return view.at(result.manifest)
