"""The ``lancepy`` command: look inside Lance files and datasets, and check them.

::

    lancepy inspect data.lance            # a dataset: versions, fragments, rows, deletions, ...
    lancepy inspect data/abc.lance        # one file: schema, version, rows, pages, encodings
    lancepy versions data.lance           # every version: time, operation, rows, tags
    lancepy validate data.lance           # manifests, data-file footers, deletion files

Every command prints for people, or JSON with ``--json``. ``validate`` exits with 1 when it
finds damage (each problem on its own line, naming the file), ``2`` when the path cannot be
read as a Lance file or dataset at all; ``0`` otherwise. Also runs as ``python -m lancepy``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

from lancepy import _lancepy
from lancepy._table import commit as _commit
from lancepy._table.validate import _validate_version
from lancepy.exceptions import LanceError

__all__ = ["main", "inspect_path", "list_versions", "validate_path"]

EXIT_OK = 0
EXIT_DAMAGED = 1
EXIT_UNREADABLE = 2


def _is_file(path: str, storage_options: Optional[Dict[str, str]] = None) -> bool:
    """Whether `path` names a single Lance file rather than a dataset (a local file; on
    object storage, a path with no ``_versions/`` under it)."""
    if "://" in path and not path.startswith("file://"):
        return not _lancepy.Store(path, storage_options).list(_commit.VERSIONS_DIR)
    local = path[len("file://") :] if path.startswith("file://") else path
    return os.path.isfile(local)


def _fmt_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _schema_json(schema: Any) -> List[Dict[str, Any]]:
    return [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in schema]


# -- inspect ------------------------------------------------------------------------------


def inspect_file(path: str, storage_options: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """What ``lancepy inspect FILE`` reports, as a dict."""
    from lancepy.file import LanceFileReader

    reader = LanceFileReader(path, storage_options)
    meta = reader.metadata()
    columns = []
    for i, c in enumerate(meta.columns):
        encodings = list(dict.fromkeys(p.encoding for p in c.pages))
        columns.append(
            {
                "index": i,
                "pages": len(c.pages),
                "rows": sum(p.num_rows for p in c.pages),
                "bytes": sum(size for p in c.pages for _pos, size in p.buffers),
                "encodings": encodings,
            }
        )
    return {
        "kind": "file",
        "path": path,
        "version": meta.version,
        "num_rows": meta.num_rows,
        "file_size": meta.file_size,
        "num_global_buffers": meta.num_global_buffers,
        "schema": _schema_json(reader.schema),
        "columns": columns,
    }


def inspect_dataset(uri: str, version: Optional[int] = None, storage_options: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """What ``lancepy inspect DATASET`` reports, as a dict."""
    from lancepy.dataset import LanceDataset

    ds = LanceDataset(uri, version, storage_options=storage_options)
    m = ds._view.loaded.manifest
    rows = ds._snapshot_rows()
    fragments = []
    for f in ds.get_fragments():
        phys, live = rows[f.fragment_id]
        fragments.append(
            {
                "id": f.fragment_id,
                "physical_rows": phys,
                "rows": live,
                "deleted_rows": phys - live,
                "data_files": [d.path for d in f.data_files()],
                "deletion_file": f.deletion_file(),
            }
        )
    listing = ds._view.store.list("")
    versions, _ = _commit.list_versions(ds._view.store)
    return {
        "kind": "dataset",
        "uri": ds.uri,
        "version": ds.version,
        "latest_version": max(versions),
        "num_versions": len(versions),
        "manifest_naming": ds.manifest_naming,
        "data_storage_version": ds.data_storage_version,
        "writer": m.get("writer_version") or {},
        "rows": sum(live for _phys, live in rows.values()),
        "deleted_rows": sum(phys - live for phys, live in rows.values()),
        "num_fragments": len(fragments),
        "num_data_files": sum(len(f["data_files"]) for f in fragments),
        "stable_row_ids": ds.has_stable_row_ids,
        "schema": _schema_json(ds.schema),
        "fragments": fragments,
        "indices": [dict(i, fragment_ids=sorted(i["fragment_ids"])) for i in ds.list_indices()],
        "tags": {name: t["version"] for name, t in sorted(ds.tags.list().items())},
        "config": ds.config(),
        "storage_bytes": sum(size for _path, size, _mtime in listing),
        "storage_files": len(listing),
    }


def inspect_path(
    path: str, version: Optional[int] = None, storage_options: Optional[Dict[str, str]] = None
) -> Dict[str, Any]:
    """A file's or a dataset's description (see :func:`inspect_file`, :func:`inspect_dataset`)."""
    if _is_file(path, storage_options):
        if version is not None:
            raise LanceError("--version applies to datasets, not to single files")
        return inspect_file(path, storage_options)
    return inspect_dataset(path, version, storage_options)


def _print_file(info: Dict[str, Any]) -> None:
    print(f"Lance file {info['path']}")
    print(f"  format version {info['version']}, {info['num_rows']} rows, {_fmt_bytes(info['file_size'])}")
    print("  schema:")
    for f in info["schema"]:
        print(f"    {f['name']}: {f['type']}{'' if f['nullable'] else ' not null'}")
    print("  columns:")
    for c in info["columns"]:
        print(f"    [{c['index']}] {c['pages']} page(s), {c['rows']} rows, {_fmt_bytes(c['bytes'])}: {', '.join(c['encodings']) or '-'}")


def _print_dataset(info: Dict[str, Any]) -> None:
    print(f"Lance dataset {info['uri']}")
    latest = " (latest)" if info["version"] == info["latest_version"] else f" (latest is {info['latest_version']})"
    print(f"  version {info['version']}{latest}; {info['num_versions']} version(s); manifest naming {info['manifest_naming']}")
    print(f"  data storage version {info['data_storage_version']}; written by {info['writer'].get('library', '?')} {info['writer'].get('version', '')}".rstrip())
    print(f"  {info['rows']} rows ({info['deleted_rows']} deleted) in {info['num_fragments']} fragment(s), {info['num_data_files']} data file(s)")
    print(f"  storage: {_fmt_bytes(info['storage_bytes'])} in {info['storage_files']} file(s)")
    if info["stable_row_ids"]:
        print("  stable row ids: yes")
    print("  schema:")
    for f in info["schema"]:
        print(f"    {f['name']}: {f['type']}{'' if f['nullable'] else ' not null'}")
    print("  fragments:")
    for f in info["fragments"]:
        deleted = f", {f['deleted_rows']} deleted" if f["deleted_rows"] else ""
        print(f"    {f['id']}: {f['rows']} rows{deleted}; files {', '.join(f['data_files'])}")
    print(f"  indices: {', '.join(i['name'] for i in info['indices']) or 'none'}")
    print(f"  tags: {', '.join(f'{k} -> {v}' for k, v in info['tags'].items()) or 'none'}")
    if info["config"]:
        print(f"  config: {', '.join(f'{k}={v}' for k, v in sorted(info['config'].items()))}")


# -- versions -----------------------------------------------------------------------------


def list_versions(uri: str, storage_options: Optional[Dict[str, str]] = None) -> List[Dict[str, Any]]:
    """Every version of a dataset, oldest first: number, time (UTC, ISO 8601), the
    operation that made it, rows, fragments and the tags on it."""
    store = _lancepy.Store(uri, storage_options)
    summaries = _lancepy.version_summaries(store)  # each version's totals, decoded natively
    if not summaries:
        _commit.load_manifest(store)  # the right DatasetNotFoundError
    tags: Dict[int, List[str]] = {}
    from lancepy._table.tags import Tags

    for name, t in Tags(store).list().items():
        tags.setdefault(t["version"], []).append(name)
    out = []
    for v, seconds, nanos, data_rows, _files, deleted_rows, _deletion_files, _size, fragments in summaries:
        when = datetime.datetime.fromtimestamp(seconds + nanos / 1e9, datetime.timezone.utc)
        out.append(
            {
                "version": v,
                "timestamp": when.isoformat(),
                "operation": _commit.operation_name(_commit.load_transaction(store, v)),
                "rows": data_rows - deleted_rows,
                "fragments": fragments,
                "tags": sorted(tags.get(v, [])),
            }
        )
    return out


def _print_versions(rows: List[Dict[str, Any]]) -> None:
    print(f"{'version':>8}  {'timestamp (UTC)':<26}  {'operation':<16}  {'rows':>10}  {'fragments':>9}  tags")
    for r in rows:
        print(
            f"{r['version']:>8}  {r['timestamp'][:26]:<26}  {r['operation'] or '?':<16}  {r['rows']:>10}  "
            f"{r['fragments']:>9}  {', '.join(r['tags'])}"
        )


# -- validate -----------------------------------------------------------------------------


def validate_path(path: str, storage_options: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """Checks a dataset (or one file); ``{"ok": bool, "checked": {...}, "problems": [...]}``.

    For a dataset: every manifest in ``_versions/`` decodes and names its own version; for
    the latest version, every data file's footer and metadata can be read, its row count
    equals the fragment's, its size is the recorded one and it has the columns the
    manifest maps; every deletion file can be read, holds the recorded number of rows and
    only rows that exist. Problems are collected, not raised.
    """
    problems: List[str] = []
    checked = {"manifests": 0, "data_files": 0, "deletion_files": 0}
    if _is_file(path, storage_options):
        try:
            info = inspect_file(path, storage_options)
            checked["data_files"] = 1
            if any(c["rows"] != info["num_rows"] for c in info["columns"] if c["pages"]):
                problems.append(f"{path}: columns disagree about the number of rows ({info['num_rows']})")
        except LanceError as e:
            problems.append(f"{path}: {e}")
        return {"ok": not problems, "path": path, "checked": checked, "problems": problems}

    store = _lancepy.Store(path, storage_options)
    versions, _ = _commit.list_versions(store)
    if not versions:
        _commit.load_manifest(store)  # raises DatasetNotFoundError
    latest = None
    for v in sorted(versions):
        try:
            loaded = _commit.load_manifest(store, v)
            checked["manifests"] += 1
            if v == max(versions):
                latest = loaded
        except LanceError as e:
            problems.append(f"manifest of version {v} ({versions[v]}): {e}")
    if latest is not None:
        _validate_version(store, latest, problems, checked, storage_options)
    elif versions:
        problems.append(f"the latest version {max(versions)} cannot be read, so its files were not checked")
    return {"ok": not problems, "path": path, "version": max(versions), "checked": checked, "problems": problems}


def _print_validation(report: Dict[str, Any]) -> None:
    c = report["checked"]
    what = f"{c['manifests']} manifest(s), {c['data_files']} data file(s), {c['deletion_files']} deletion file(s)"
    if report["ok"]:
        print(f"OK: {report['path']}: checked {what}")
        return
    print(f"DAMAGED: {report['path']}: {len(report['problems'])} problem(s) (checked {what})")
    for p in report["problems"]:
        print(f"  - {p}")


# -- entry point --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lancepy", description="Inspect and check Lance files and datasets.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--storage-option", "-o", action="append", default=[], metavar="KEY=VALUE",
        help="an object-store option (pylance's keys, e.g. aws_endpoint=http://127.0.0.1:9000); repeatable",
    )
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("inspect", help="describe a Lance file or dataset", parents=[common])
    i.add_argument("path", help="a dataset directory / URI or one .lance file")
    i.add_argument("--version", type=int, default=None, help="dataset version (default: the latest)")
    i.add_argument("--json", action="store_true", help="print JSON")
    v = sub.add_parser("versions", help="list a dataset's versions", parents=[common])
    v.add_argument("path")
    v.add_argument("--json", action="store_true", help="print JSON")
    c = sub.add_parser("validate", help="check manifests, data files and deletion files", parents=[common])
    c.add_argument("path")
    c.add_argument("--json", action="store_true", help="print JSON")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    options: Dict[str, str] = {}
    for item in args.storage_option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--storage-option takes KEY=VALUE, got {item!r}")
        options[key] = value
    opts = options or None
    try:
        if args.command == "inspect":
            info = inspect_path(args.path, args.version, opts)
            if args.json:
                print(json.dumps(info, indent=2, default=str))
            elif info["kind"] == "file":
                _print_file(info)
            else:
                _print_dataset(info)
            return EXIT_OK
        if args.command == "versions":
            rows = list_versions(args.path, opts)
            if args.json:
                print(json.dumps(rows, indent=2))
            else:
                _print_versions(rows)
            return EXIT_OK
        report = validate_path(args.path, opts)
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            _print_validation(report)
        return EXIT_OK if report["ok"] else EXIT_DAMAGED
    except LanceError as e:
        if getattr(args, "json", False):
            print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}))
        print(f"lancepy {args.command}: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_UNREADABLE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
