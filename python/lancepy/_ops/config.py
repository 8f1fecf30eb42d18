"""Table config, table and schema metadata, field metadata and base paths: the
commits that change a dataset's description, not its rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from lancepy._table import bases as _bases
from lancepy._table import commit as _commit
from lancepy._table.bases import DatasetBasePath
from lancepy._table.operations import _update_map
from lancepy.exceptions import InvalidArgumentError

if TYPE_CHECKING:  # pragma: no cover
    from lancepy.dataset import LanceDataset


def update_config(ds: LanceDataset, values: Dict[str, Optional[str]], *, replace: bool = False) -> Dict[str, str]:
    """See :meth:`LanceDataset.update_config`."""
    ds._commit("UpdateConfig", {"config_updates": _update_map(values, replace)})
    return ds.config()


def delete_config_keys(ds: LanceDataset, keys: List[str]) -> None:
    """See :meth:`LanceDataset.delete_config_keys`."""
    if isinstance(keys, str):
        keys = [keys]
    ds._commit("UpdateConfig", {"config_updates": _update_map({k: None for k in keys}, False)})


def update_metadata(ds: LanceDataset, values: Dict[str, Optional[str]], *, replace: bool = False) -> Dict[str, str]:
    """See :meth:`LanceDataset.update_metadata`."""
    ds._commit("UpdateConfig", {"table_metadata_updates": _update_map(values, replace)})
    return ds.metadata


def update_schema_metadata(
    ds: LanceDataset, values: Dict[str, Optional[str]], *, replace: bool = False
) -> Dict[str, str]:
    """See :meth:`LanceDataset.update_schema_metadata`."""
    ds._commit("UpdateConfig", {"schema_metadata_updates": _update_map(values, replace)})
    return ds.schema_metadata


def replace_schema_metadata(ds: LanceDataset, new_metadata: Dict[str, str]) -> None:
    """See :meth:`LanceDataset.replace_schema_metadata`."""
    ds.update_schema_metadata(new_metadata, replace=True)


def update_field_metadata(
    ds: LanceDataset, field_updates: Dict[str, Dict[str, Optional[str]]], *, replace: bool = False
) -> None:
    """See :meth:`LanceDataset.update_field_metadata`."""
    ids = ds._field_ids_by_path()
    body = {}
    for name, values in field_updates.items():
        if name not in ids:
            from lancepy.exceptions import ColumnNotFoundError

            raise ColumnNotFoundError(f"field {name!r} does not exist; fields are {sorted(ids)}")
        body[str(ids[name])] = _update_map(values, replace)
    ds._commit("UpdateConfig", {"field_metadata_updates": body})


def replace_field_metadata(ds: LanceDataset, field_name: str, new_metadata: Dict[str, str]) -> None:
    """See :meth:`LanceDataset.replace_field_metadata`."""
    ds.update_field_metadata({field_name: new_metadata}, replace=True)


def _field_ids_by_path(ds: LanceDataset) -> Dict[str, int]:
    fields = ds._loaded.manifest.get("fields", [])
    by_id = {f.get("id", 0): f for f in fields}

    def path(f: Dict[str, Any]) -> str:
        parent = by_id.get(f.get("parent_id", -1))
        return f.get("name", "") if parent is None else f"{path(parent)}.{f.get('name', '')}"

    return {path(f): f.get("id", 0) for f in fields}


def add_bases(
    ds: LanceDataset, new_bases: List[DatasetBasePath], transaction_properties: Optional[Dict[str, str]] = None
) -> "LanceDataset":
    """See :meth:`LanceDataset.add_bases`."""
    if not new_bases:
        raise InvalidArgumentError("add_bases needs at least one base path")
    entries = _bases.register_initial_bases(new_bases)
    given = {id(b): getattr(b, "id", None) for b in new_bases}
    for entry, b in zip(entries, new_bases):
        entry["id"] = given[id(b)] or 0  # 0: assigned at commit, as pylance writes it
    _commit.check_feature_flags(ds._loaded, write=True, uri=ds._uri)
    txn = _commit.new_transaction(ds.version, "UpdateBases", {"new_bases": entries})
    txn["transaction_properties"] = dict(transaction_properties or {})
    result = _commit.commit_transaction(ds._store, txn, naming=ds._loaded.naming, commit_lock=ds._commit_lock)
    ds._set_loaded(result.manifest)
    return ds
