"""A pylance user can switch imports: lancepy's public callables have pylance 14's signatures.

For every public callable both libraries have (module functions, methods of the dataset,
scanner, fragment, file reader/writer, merge-insert builder, optimizer, tags and the
``LanceOperation`` classes), :func:`signature_problems` compares ``inspect.signature``:

* every parameter pylance names exists in lancepy, in the same order and of the same kind
  (positional-or-keyword / keyword-only), with the same default;
* lancepy's own extra parameters are keyword-only and come after pylance's;
* lancepy has no catch-all ``**kwargs`` (an option pylance has that lancepy does not build
  raises :class:`lancepy.exceptions.NotSupportedError` naming it);
* a name that is a property in pylance is a property in lancepy, a method a method.

The checker is itself tested on a reordered signature, so the walk cannot pass vacuously.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
from typing import Any, Callable, Iterator, List, Tuple

import pyarrow as pa
import pytest

import lancepy
import lancepy.file as lp_file
import lancepy.fragment as lp_fragment
from lancepy.exceptions import NotSupportedError

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
import importlib  # noqa: E402

lp_dataset = importlib.import_module("lancepy.dataset")
# ``lance.dataset`` is also the name of a function; import the modules by name.
pl_dataset = importlib.import_module("lance.dataset")
pl_file = importlib.import_module("lance.file")
pl_fragment = importlib.import_module("lance.fragment")

pytestmark = pytest.mark.interop

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _params(fn: Callable[..., Any]) -> List[inspect.Parameter]:
    """The parameters a caller can pass: no ``self``/``cls``, no private ``_name`` ones."""
    ps = list(inspect.signature(fn).parameters.values())
    if ps and ps[0].name in ("self", "cls"):
        ps = ps[1:]
    return [p for p in ps if not p.name.startswith("_")]


def _kind(p: inspect.Parameter) -> str:
    if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        return "positional"
    if p.kind == inspect.Parameter.KEYWORD_ONLY:
        return "keyword-only"
    return "*args" if p.kind == inspect.Parameter.VAR_POSITIONAL else "**kwargs"


def _same_default(a: Any, b: Any) -> bool:
    """`a` (lancepy's default) equals `b` (pylance's). A dataclass ``<factory>`` default (a
    fresh empty list) matches ``None`` meaning the same."""
    factory = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None)
    if a is factory or b is factory:
        return a is b or (b is factory and a is None)
    if a is inspect.Parameter.empty or b is inspect.Parameter.empty:
        return a is b
    if isinstance(a, enum.Enum) and isinstance(b, enum.Enum):
        # lancepy's copy of a pylance enum (it cannot import pylance's): same name, same value
        return type(a).__name__ == type(b).__name__ and a.name == b.name and a.value == b.value
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - objects without a usable ==
        return a is b


def signature_problems(ours: Callable[..., Any], theirs: Callable[..., Any]) -> List[str]:
    """How `ours` differs from `theirs` (pylance's), in words; empty when it conforms."""
    o, t = _params(ours), _params(theirs)
    problems = []
    # (`to_pandas` forwards its keywords to pyarrow's, as pylance's does: pyarrow refuses
    # unknown ones, so nothing is swallowed)
    forwarded = getattr(ours, "__name__", "") == "to_pandas"
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in o) and not forwarded:
        problems.append("has a catch-all **kwargs")
    t_var = [p for p in t if p.kind == inspect.Parameter.VAR_POSITIONAL]
    if t_var and not any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in o):
        problems.append(f"lacks *{t_var[0].name}")
    o_named = [p for p in o if p.kind not in _VARIADIC]
    t_named = [p for p in t if p.kind not in _VARIADIC]
    o_names = [p.name for p in o_named]
    t_names = [p.name for p in t_named]
    missing = [n for n in t_names if n not in o_names]
    if missing:
        problems.append(f"lacks pylance's parameters {missing}")
    common = [n for n in t_names if n in o_names]
    order = [n for n in o_names if n in common]
    if order != common:
        problems.append(f"parameter order {order}, pylance's is {common}")
    by_name = {p.name: p for p in o_named}
    for tp in t_named:
        op = by_name.get(tp.name)
        if op is None:
            continue
        if _kind(op) != _kind(tp):
            problems.append(f"{tp.name} is {_kind(op)}, pylance's is {_kind(tp)}")
        if not _same_default(op.default, tp.default):
            problems.append(f"{tp.name} defaults to {op.default!r}, pylance's to {tp.default!r}")
    last_common = max((o_names.index(n) for n in common), default=-1)
    for i, p in enumerate(o_named):
        if p.name in t_names:
            continue
        if p.kind != inspect.Parameter.KEYWORD_ONLY:
            problems.append(f"extra parameter {p.name} is not keyword-only")
        elif i < last_common:
            problems.append(f"extra parameter {p.name} comes before pylance's parameters")
    return problems


def _member_kind(cls: type, name: str) -> str:
    static = inspect.getattr_static(cls, name)
    if isinstance(static, property) or type(static).__name__ == "getset_descriptor":
        return "property"
    if isinstance(static, (staticmethod, classmethod)) or callable(static):
        return "method"
    return "attribute"


# The classes whose public members are walked: (name, lancepy class, pylance class).
CLASSES: List[Tuple[str, type, type]] = [
    ("LanceDataset", lancepy.LanceDataset, pl_dataset.LanceDataset),
    ("LanceScanner", lancepy.LanceScanner, pl_dataset.LanceScanner),
    ("MergeInsertBuilder", lp_dataset.MergeInsertBuilder, pl_dataset.MergeInsertBuilder),
    ("DatasetOptimizer", lp_dataset.DatasetOptimizer, pl_dataset.DatasetOptimizer),
    ("Tags", lp_dataset.Tags, pl_dataset.Tags),
    ("LanceStats", lp_dataset.LanceStats, pl_dataset.LanceStats),
    ("LanceFragment", lancepy.LanceFragment, pl_fragment.LanceFragment),
    ("FragmentMetadata", lancepy.FragmentMetadata, pl_fragment.FragmentMetadata),
    ("DataFile", lp_fragment.DataFile, pl_fragment.DataFile),
    ("DeletionFile", lp_fragment.DeletionFile, pl_fragment.DeletionFile),
    ("LanceFileReader", lp_file.LanceFileReader, pl_file.LanceFileReader),
    ("LanceFileWriter", lp_file.LanceFileWriter, pl_file.LanceFileWriter),
    ("ReaderResults", lp_file.ReaderResults, pl_file.ReaderResults),
]
# Constructors users do not call (pylance's take internal handles).
SKIP_INIT = {"LanceDataset", "LanceScanner", "MergeInsertBuilder", "DatasetOptimizer", "Tags", "LanceStats", "ReaderResults"}

FUNCTIONS: List[Tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("dataset", lancepy.dataset, lance.dataset),
    ("write_dataset", lancepy.write_dataset, lance.write_dataset),
    ("fragment.write_fragments", lp_fragment.write_fragments, pl_fragment.write_fragments),
]


def shared_callables() -> Iterator[Tuple[str, Callable[..., Any], Callable[..., Any]]]:
    """Every public callable both libraries have, with a readable name."""
    yield from FUNCTIONS
    for cname, ours, theirs in CLASSES:
        for name in sorted(set(dir(theirs)) & set(dir(ours))):
            if name.startswith("_") and name != "__init__":
                continue
            if name == "__init__" and cname in SKIP_INIT:
                continue
            if name == "__init__":  # the class's signature (native classes have no __init__ one)
                yield f"{cname}.__init__", ours, theirs
                continue
            if _member_kind(theirs, name) != "method" or _member_kind(ours, name) != "method":
                continue
            yield f"{cname}.{name}", getattr(ours, name), getattr(theirs, name)
    for name in sorted(n for n in dir(pl_dataset.LanceOperation) if not n.startswith("_")):
        ours = getattr(lp_dataset.LanceOperation, name, None)
        if ours is not None:
            yield f"LanceOperation.{name}", ours, getattr(pl_dataset.LanceOperation, name)


def test_the_checker_notices_a_reordered_parameter() -> None:
    def theirs(data, uri=None, schema=None, mode="create", *, max_rows_per_file=1024):  # noqa: ANN001
        ...

    def reordered(data, schema=None, uri=None, mode="create", *, max_rows_per_file=1024):  # noqa: ANN001
        ...

    def other_default(data, uri=None, schema=None, mode="append", *, max_rows_per_file=1024):  # noqa: ANN001
        ...

    def positional_extra(data, uri=None, schema=None, mode="create", extra=1, *, max_rows_per_file=1024):  # noqa: ANN001
        ...

    def catch_all(data, uri=None, schema=None, mode="create", **kwargs):  # noqa: ANN001, ANN003
        ...

    def made_keyword_only(data, uri=None, schema=None, *, mode="create", max_rows_per_file=1024):  # noqa: ANN001
        ...

    assert signature_problems(theirs, theirs) == []
    assert any("order" in p for p in signature_problems(reordered, theirs))
    assert any("defaults" in p for p in signature_problems(other_default, theirs))
    assert any("not keyword-only" in p for p in signature_problems(positional_extra, theirs))
    assert any("**kwargs" in p for p in signature_problems(catch_all, theirs))
    assert any("lacks" in p for p in signature_problems(catch_all, theirs))
    assert any("mode is keyword-only" in p for p in signature_problems(made_keyword_only, theirs))


def test_the_walk_covers_the_shared_api() -> None:
    names = {n for n, _, _ in shared_callables()}
    for expected in [
        "dataset",
        "write_dataset",
        "fragment.write_fragments",
        "LanceDataset.scanner",
        "LanceDataset.to_table",
        "LanceDataset.count_rows",
        "LanceDataset.head",
        "LanceDataset.insert",
        "LanceDataset.commit",
        "LanceScanner.to_table",
        "LanceFragment.to_table",
        "LanceFragment.scanner",
        "FragmentMetadata.__init__",
        "LanceFileReader.num_rows",
        "LanceFileReader.read_all",
        "LanceFileWriter.__init__",
        "MergeInsertBuilder.execute",
        "LanceOperation.Append",
        "LanceOperation.Overwrite",
        "LanceOperation.Delete",
        "LanceOperation.Merge",
        "LanceOperation.Project",
        "LanceOperation.UpdateConfig",
    ]:
        assert expected in names, f"{expected} is not walked (missing from lancepy?)"


def test_shared_signatures_match_pylance() -> None:
    problems = []
    for name, ours, theirs in shared_callables():
        for p in signature_problems(ours, theirs):
            problems.append(f"{name}: {p}")
    assert not problems, "signatures differ from pylance 14's:\n" + "\n".join(problems)


def test_shared_members_are_the_same_kind() -> None:
    """A property in pylance is a property in lancepy (``ds.schema``) and a method a method
    (``reader.num_rows()``, ``ds.config()``)."""
    problems = []
    for cname, ours, theirs in CLASSES:
        for name in sorted(set(dir(theirs)) & set(dir(ours))):
            if name.startswith("_"):
                continue
            a, b = _member_kind(ours, name), _member_kind(theirs, name)
            if a != b and "attribute" not in (a, b):
                problems.append(f"{cname}.{name} is a {a} in lancepy, a {b} in pylance")
    assert not problems, "\n".join(problems)


def _public_callables() -> Iterator[Tuple[str, Callable[..., Any]]]:
    for module in (lp_dataset, lp_fragment, lp_file, lancepy):
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj
            elif inspect.isclass(obj):
                for mname, member in inspect.getmembers(obj):
                    if (mname.startswith("_") and mname != "__init__") or not callable(member):
                        continue
                    if inspect.isclass(member):
                        if member.__init__ is not object.__init__:
                            yield f"{name}.{mname}", member.__init__
                        continue
                    if member is object.__init__:
                        continue
                    try:
                        inspect.signature(member)
                    except (TypeError, ValueError):
                        continue
                    yield f"{name}.{mname}", member


def test_no_catch_all_keyword_arguments() -> None:
    offenders = sorted(
        {
            name
            for name, fn in _public_callables()
            if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
        }
    )
    # to_pandas forwards its keywords to pyarrow.Table.to_pandas (as pylance's), which
    # refuses unknown ones (tests/test_blob_legacy.py checks that).
    offenders = [n for n in offenders if not n.endswith(".to_pandas")]
    assert not offenders, f"public callables with **kwargs: {offenders}"


# -- options pylance has and lancepy does not build -----------------------------------------


@pytest.fixture
def ds(tmp_path):
    return lancepy.write_dataset(pa.table({"a": list(range(10)), "b": [str(i) for i in range(10)]}), tmp_path / "d.lance")


@pytest.mark.parametrize(
    "call, option",
    [
        (lambda ds: ds.scanner(row_addr_allowlist=b"\x00"), "row_addr_allowlist"),
        (lambda ds: lancepy.dataset(ds.uri, block_size=4096), "block_size"),
        (lambda ds: lancepy.Session(index_cache_backend="moka://?capacity=1048576"), "index_cache_backend"),
        (lambda ds: lancepy.write_dataset(ds.to_table(), ds.uri, mode="append", namespace_client=object()), "namespace_client"),
    ],
)
def test_unbuilt_pylance_options_raise_not_supported(ds, call, option) -> None:
    with pytest.raises(NotSupportedError, match=option):
        call(ds)


def test_unknown_keywords_are_type_errors(ds) -> None:
    with pytest.raises(TypeError):
        ds.count_rows(no_such_option=1)
    with pytest.raises(TypeError):
        ds.head(1, no_such_option=1)
