"""Base paths: datasets whose files live under more than one root, and shallow clones.

A manifest may register **base paths** (``Manifest.base_paths``, FORMAT.md "Base Path
System"): other roots, each with a numeric id, an optional name, and a flag saying whether
it is another dataset's root (files under ``data/``, ``_deletions/``) or a plain directory
of files. A data file, deletion file or index with ``base_id = n`` lives under base ``n``;
without ``base_id`` it lives under the dataset's own root. The native reader resolves every
file this way; this module holds the policy:

* :class:`DatasetBasePath` — pylance's description of a base (``initial_bases=``);
* :func:`register_initial_bases` / :func:`resolve_target_base` — ``write_dataset(...,
  initial_bases=..., target_bases=...)``;
* :func:`shallow_clone` — a new dataset whose manifest points at a version of another one
  (the source becomes a dataset-root base; nothing is copied). pylance 14 writes it as: the
  source's manifest at the **same version number**, every file without a base pointed at a
  new base (id = the largest existing id + 1, or 0), indices too, a ``Clone`` transaction
  (``is_shallow``, ``ref_version``, ``ref_path``), no tags, V2 manifest naming;
* :func:`own_files` — which files of a version lie under the dataset's own root (cleanup
  deletes nothing else, so cleaning a clone never touches its source).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Set, Tuple, Union

from lancepy import _lancepy
from lancepy._table import manifest as _manifest
from lancepy._table import transaction as _transaction
from lancepy._table.tags import Tags
from lancepy.exceptions import DatasetAlreadyExistsError, InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = ["DatasetBasePath", "base_paths_of", "register_initial_bases", "resolve_target_base", "shallow_clone", "own_files"]

#: A version reference as pylance takes it: a version number, a tag name, or
#: ``(branch, version)`` (``None`` parts mean the default branch / its latest version).
Reference = Union[int, str, Tuple[Optional[str], Optional[int]]]


@dataclass(frozen=True)
class DatasetBasePath:
    """One registered storage root of a dataset (pylance's ``lance.DatasetBasePath``).

    `path` is a URI or an absolute local path. `is_dataset_root` says whether it is laid out
    like a dataset root (files under ``data/`` and ``_deletions/``) or is a plain directory
    of data files. `id` is assigned when the base is registered unless given.
    """

    path: str
    name: Optional[str] = None
    is_dataset_root: bool = False
    id: Optional[int] = None

    def _to_json(self) -> Dict[str, Any]:
        return {"id": self.id, "name": self.name, "is_dataset_root": self.is_dataset_root, "path": self.path}

    @classmethod
    def _from_json(cls, d: Dict[str, Any]) -> "DatasetBasePath":
        return cls(path=d.get("path", ""), name=d.get("name"), is_dataset_root=bool(d.get("is_dataset_root")), id=d.get("id", 0))


def absolute_uri(uri: str) -> str:
    """`uri` as a base path records it: URIs as given, local paths made absolute (a base
    path is resolved from wherever the dataset is opened, not from the current directory)."""
    if "://" in uri:
        return uri.rstrip("/")
    return os.path.abspath(os.path.expanduser(uri) if uri.startswith("~") else uri)


def normalize_base_store_params(params: Any) -> Optional[Dict[str, Dict[str, str]]]:
    """pylance's `base_store_params` (storage options per base path URI, used for it instead
    of the dataset's), checked, with the base URIs spelled as base paths record them."""
    if params is None:
        return None
    from lancepy._core.storage import normalize_storage_options

    if not isinstance(params, dict):
        raise InvalidArgumentError(f"base_store_params must be a dict of base path URI to storage options, got {params!r}")
    out: Dict[str, Dict[str, str]] = {}
    for uri, options in params.items():
        if not isinstance(uri, str) or not isinstance(options, dict):
            raise InvalidArgumentError(f"base_store_params: {uri!r} must map a base path URI to a dict of options")
        out[absolute_uri(uri)] = normalize_storage_options(options) or {}
    return out


def options_for(uri: str, options: Optional[Dict[str, str]], params: Optional[Dict[str, Dict[str, str]]]) -> Optional[Dict[str, str]]:
    """The storage options for a file or root at `uri`: those of the longest base in
    `params` that `uri` lies under, else the dataset's `options` (pylance's rule)."""
    best = None
    for root in params or {}:
        r = root.rstrip("/")
        if (uri == r or uri.startswith(r + "/")) and (best is None or len(r) > len(best)):
            best = root
    if best is None:
        return options
    return params[best]  # type: ignore[index]


def _canonical(uri: str) -> str:
    """`uri` spelled one way per place, for comparisons (``file://`` URIs and relative paths
    become absolute paths)."""
    if uri.startswith("file://"):
        uri = uri[len("file://"):]
    return absolute_uri(uri).rstrip("/")


def base_paths_of(entries: List[Dict[str, Any]]) -> Dict[int, DatasetBasePath]:
    """The base paths a manifest registers (its ``base_paths`` entries), by id."""
    out: Dict[int, DatasetBasePath] = {}
    for b in entries:
        base = DatasetBasePath._from_json(b)
        out[int(base.id or 0)] = base
    return out


def register_initial_bases(bases: Sequence[DatasetBasePath]) -> List[Dict[str, Any]]:
    """The ``base_paths`` entries for `initial_bases` of a new dataset: ids given are kept,
    the others numbered 1, 2, ... (skipping used ones), as pylance does. Duplicate ids, names
    or paths are an :class:`InvalidArgumentError`."""
    given: List[DatasetBasePath] = []
    for b in bases:
        if not isinstance(b, DatasetBasePath):
            # pylance's own DatasetBasePath objects are accepted too (they report id 0 when
            # none was given, so 0 means "assign one").
            if not all(hasattr(b, a) for a in ("path", "name", "is_dataset_root")):
                raise InvalidArgumentError(f"initial_bases entries must be DatasetBasePath, got {type(b).__name__}")
            b = DatasetBasePath(b.path, b.name, bool(b.is_dataset_root), getattr(b, "id", None) or None)
        given.append(b)
    out: List[Dict[str, Any]] = []
    used = set()
    for b in given:
        if not b.path:
            raise InvalidArgumentError("a base path needs a non-empty path")
        if b.id is not None:
            if isinstance(b.id, bool) or not isinstance(b.id, int) or b.id < 0 or b.id >= 1 << 32:
                raise InvalidArgumentError(f"base path id {b.id!r} is not a 32-bit unsigned integer")
            if b.id in used:
                raise InvalidArgumentError(f"two initial bases have id {b.id}")
            used.add(b.id)
    next_id = 1
    names, paths = set(), set()
    for b in given:
        bid = b.id
        if bid is None:
            while next_id in used:
                next_id += 1
            bid = next_id
            used.add(bid)
        path = absolute_uri(os.fspath(b.path))
        if b.name is not None:
            if b.name in names:
                raise InvalidArgumentError(f"two initial bases are named {b.name!r}")
            names.add(b.name)
        if path in paths:
            raise InvalidArgumentError(f"two initial bases have the path {path!r}")
        paths.add(path)
        out.append({"id": bid, "name": b.name, "is_dataset_root": bool(b.is_dataset_root), "path": path})
    return out


def resolve_target_base(bases: Sequence[Dict[str, Any]], reference: str) -> Dict[str, Any]:
    """The registered base a ``target_bases`` entry names: by name first, then by path."""
    if not isinstance(reference, str):
        raise InvalidArgumentError(f"target_bases entries are base names or paths, got {reference!r}")
    for b in bases:
        if b.get("name") is not None and b.get("name") == reference:
            return b
    wanted = absolute_uri(reference)
    for b in bases:
        if b.get("path", "").rstrip("/") == wanted:
            return b
    known = [b.get("name") or b.get("path") for b in bases]
    raise InvalidArgumentError(f"target base {reference!r} is not registered in the dataset; its bases are {known}")


def base_dir(base: Dict[str, Any]) -> Tuple[str, str]:
    """``(root, data_dir)`` where new data files of `base` go (``data_dir`` relative to root)."""
    return base["path"].rstrip("/"), ("data" if base.get("is_dataset_root") else "")


def _file_uri(root: str, bases: Dict[int, Dict[str, Any]], base_id: Optional[int], subdir: str, name: str) -> Optional[str]:
    if base_id is None:
        return f"{root}/{subdir}/{name}"
    base = bases.get(base_id)
    if base is None:
        return None
    path = base["path"].rstrip("/")
    return f"{path}/{subdir}/{name}" if base.get("is_dataset_root") else f"{path}/{name}"


def own_files(loaded: "_manifest.LoadedManifest", root: str) -> Set[str]:
    """Paths (relative to `root`, the dataset's own root) of the files version `loaded` uses
    that lie under that root: its manifest, transaction, data and deletion files. Files under
    other base paths (a clone's source, another bucket) are left out: they are not ours."""
    out = {loaded.path}
    if loaded.transaction_file:
        out.add(f"{_manifest.TRANSACTIONS_DIR}/{loaded.transaction_file}")
    own = _canonical(root)
    prefix = own + "/"
    paths, uris = loaded.file_paths(own)
    out.update(paths)
    for uri in uris:  # (under a base path, which may spell this root another way; or oddly named)
        uri = _canonical(uri)
        if uri.startswith(prefix):
            out.add(uri[len(prefix):])
    return out


def _resolve_reference(store: Any, reference: Reference) -> int:
    if isinstance(reference, bool):
        raise InvalidArgumentError(f"reference must be a version number, a tag name or (branch, version), got {reference!r}")
    if isinstance(reference, int):
        return reference
    if isinstance(reference, str):
        return Tags(store).get_version(reference)
    if isinstance(reference, tuple) and len(reference) == 2:
        branch, version = reference
        if branch not in (None, "main"):
            raise UnsupportedError(f"branches are not supported by lancepy (reference {reference!r})")
        return _manifest.latest_version(store)[0] if version is None else _resolve_reference(store, version)
    raise InvalidArgumentError(f"reference must be a version number, a tag name or (branch, version), got {reference!r}")


def clone_manifest(source: "_manifest.LoadedManifest", source_uri: str) -> Tuple[Dict[str, Any], Optional[bytes], Dict[str, Any]]:
    """The first manifest of a shallow clone of `source` (a version of the dataset at
    `source_uri`), its index section and its ``Clone`` transaction."""
    m = json.loads(source.json)
    bases = list(m.get("base_paths") or [])
    new_id = max((int(b.get("id", 0)) for b in bases), default=-1) + 1
    bases.append({"id": new_id, "name": None, "is_dataset_root": True, "path": source_uri})
    for frag in m.get("fragments", []):
        for seq in ("row_id_sequence", "last_updated_at_version_sequence", "created_at_version_sequence"):
            value = frag.get(seq)
            if isinstance(value, dict) and any(k.startswith("External") for k in value):
                raise UnsupportedError(
                    f"cannot clone {source_uri}: fragment {frag.get('id', 0)} keeps its {seq} in an external file"
                )
        for df in frag.get("files", []):
            if df.get("base_id") is None:
                df["base_id"] = new_id
        d = frag.get("deletion_file")
        if d and d.get("base_id") is None:
            d["base_id"] = new_id
    index_section = source.index_section
    if index_section is not None:
        index_section = _lancepy.rebase_index_section(index_section, new_id)
    version = source.version
    txn = _transaction.new_transaction(
        version,
        "Clone",
        {"is_shallow": True, "ref_name": None, "ref_version": version, "ref_path": source_uri, "branch_name": None},
    )

    m["base_paths"] = bases
    m["version"] = version
    now = time.time()
    m["timestamp"] = {"seconds": int(now), "nanos": int((now % 1) * 1e9)}
    m["tag"] = ""
    m["transaction_file"] = f"{version}-{txn['uuid']}.txn"
    m["writer_version"] = {"library": _manifest.WRITER_LIBRARY, "version": _lancepy.__version__}
    m["reader_feature_flags"] = m.get("reader_feature_flags", 0) | _manifest.FLAG_BASE_PATHS
    m["writer_feature_flags"] = m.get("writer_feature_flags", 0) | _manifest.FLAG_BASE_PATHS
    for k in ("index_section", "inline_transaction_position", "transaction_section"):
        m.pop(k, None)
    return m, index_section, txn


def shallow_clone(
    source_store: Any,
    target: str,
    reference: Reference,
    storage_options: Optional[Dict[str, str]] = None,
) -> None:
    """Creates a dataset at `target` whose only version is version `reference` of the
    dataset at `source_store`, referring to its files instead of copying them (see
    :meth:`LanceDataset.shallow_clone`).

    The clone is published by one put-if-not-exists of its manifest, after its transaction
    file: a failure leaves no version readers could see (and the transaction file is
    removed again).
    """
    version = _resolve_reference(source_store, reference)
    source = _manifest.load_manifest(source_store, version)
    _manifest.check_feature_flags(source, write=True, uri=source_store.uri)
    source_uri = absolute_uri(source_store.uri)
    store = _lancepy.Store(target, storage_options)
    if _manifest.latest_version(store)[0] > 0:
        raise DatasetAlreadyExistsError(f"a dataset already exists at {target}")
    manifest, index_section, txn = clone_manifest(source, source_uri)
    txn_bytes = _lancepy.encode_transaction(json.dumps(txn))
    txn_path = f"{_manifest.TRANSACTIONS_DIR}/{manifest['transaction_file']}"
    path = _manifest.manifest_name(version, "v2")
    data = _lancepy.write_manifest(json.dumps(manifest), txn_bytes, index_section)
    published = False
    try:
        store.put_if_not_exists(txn_path, txn_bytes)
        if _manifest.latest_version(store)[0] > 0 or not store.put_if_not_exists(path, data):
            raise DatasetAlreadyExistsError(f"a dataset was created at {target} while cloning into it")
        published = True
    finally:
        if not published:
            try:
                store.delete([txn_path])
            except Exception:  # noqa: BLE001 - best effort; the original error matters
                pass
    _manifest.write_hint(store, version)
