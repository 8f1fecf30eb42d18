"""The entry points: :class:`Filter`, :func:`compile_filter` (cached by (text, schema)),
:func:`compile_expression`, :func:`compile_node` and :func:`evaluate`.
"""

from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError, LanceError
from lancepy.filters.parsing import _dialect, _parse
from lancepy.filters.translate import _Translator

FilterLike = Union[str, "pc.Expression", None]


@dataclass(frozen=True)
class Filter:
    """A compiled filter: the Arrow expression and the columns it reads.

    ``columns`` is ``None`` when unknown (a ``pyarrow.compute.Expression`` given directly),
    in which case every column must be read.

    ``stored`` is the same filter over JSON columns read as stored (JSONB ``large_binary``,
    ``lance.json``) when it reads its JSON columns through JSON functions only (which select
    from JSONB directly; a scan then skips making text of every row); else ``None``.
    """

    expression: pc.Expression
    columns: Optional[List[str]]
    text: str
    stored: Optional["Filter"] = None


def evaluate(table: pa.Table, expr: pc.Expression) -> pa.ChunkedArray:
    """`expr` over the rows of `table`, in order (Acero, one thread: a fraction of the cost of
    a ``pyarrow.dataset`` scan for the small batches filters see)."""
    try:
        from pyarrow import acero
    except ImportError:  # pragma: no cover - pyarrow without Acero
        import pyarrow.dataset as pads

        return pads.dataset(table).to_table(columns={"v": expr}).column("v")
    plan = acero.Declaration.from_sequence([
        acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
        acero.Declaration("project", acero.ProjectNodeOptions([expr], ["v"])),
    ])
    return plan.to_table(use_threads=False).column("v")


def _binds(expr: pc.Expression, schema: pa.Schema) -> bool:
    """Whether `expr` binds to `schema` (every field it names is there)."""
    try:
        evaluate(schema.empty_table(), expr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowKeyError):
        return False
    return True


_columns_cache: "OrderedDict[Tuple[bytes, pa.Schema], Optional[List[str]]]" = OrderedDict()


def expression_columns(expr: pc.Expression, schema: Optional[pa.Schema]) -> Optional[List[str]]:
    """The top-level columns of `schema` a ``pyarrow.compute.Expression`` reads, or ``None``
    (read every column) without a schema, when it names fields by position, or when it does
    not bind to the whole schema (evaluation then reports the error).

    pyarrow does not list an expression's field references, so they are found exactly by
    binding: a column is read if and only if `expr` no longer binds once it is removed (a
    reference to a missing field is a bind error). Remembered per (expression, schema)."""
    if schema is None or "FieldPath(" in str(expr):
        return None
    key = (pickle.dumps(expr), schema)
    with _cache_lock:
        if key in _columns_cache:
            _columns_cache.move_to_end(key)
            return _columns_cache[key]
    names = list(schema.names)
    if len(set(names)) != len(names) or not _binds(expr, schema):
        used: Optional[List[str]] = None
    else:
        used = [n for i, n in enumerate(names) if not _binds(expr, schema.remove(i))]
    with _cache_lock:
        _columns_cache[key] = used
        while len(_columns_cache) > _CACHE_SIZE:
            _columns_cache.popitem(last=False)
    return used


def compile_node(node: Any, schema: Optional[pa.Schema] = None, *, text: Optional[str] = None, condition: bool = True) -> Filter:
    """Compiles a parsed sqlglot node (a condition, or a value with ``condition=False``)."""
    t = _Translator(schema)
    expr = t.condition(node) if condition else t.visit(node)
    text = text if text is not None else node.sql(dialect=_dialect())
    stored = None
    if condition and schema is not None and t.json_fn_columns and not (t.json_fn_columns & t.json_text_columns):
        # (compiled again over the JSON columns' stored type: the JSON functions' variants
        # that read JSONB; any other use of those columns keeps the text form)
        stored_schema = pa.schema([_stored_json_field(f) if f.name in t.json_fn_columns else f for f in schema],
                                  metadata=schema.metadata)
        s = _Translator(stored_schema)
        stored = Filter(expression=s.condition(node), columns=sorted(s.columns), text=text)
    return Filter(expression=expr, columns=sorted(t.columns), text=text, stored=stored)


def _stored_json_field(field: pa.Field) -> pa.Field:
    """A top-level JSON column's field as scans read it stored (JSONB in ``large_binary``)."""
    metadata = dict(field.metadata or {})
    metadata.update({b"ARROW:extension:name": b"lance.json", b"ARROW:extension:metadata": b""})
    return pa.field(field.name, pa.large_binary(), field.nullable, metadata)


def compile_expression(sql: str, schema: Optional[pa.Schema] = None) -> Filter:
    """Compiles one SQL value expression (a computed column, an update value) against `schema`."""
    return compile_node(_parse(sql), schema, text=sql, condition=False)


_CACHE_SIZE = 256
_cache: "OrderedDict[Tuple[str, Any], Filter]" = OrderedDict()
_cache_lock = threading.Lock()


def _compile_text(text: str, schema: Optional[pa.Schema]) -> Filter:
    """`compile_node(parse(text))`, remembered for the last few (text, schema) pairs: a scan
    and its count_rows, or a stream of scans, compile the same filter once."""
    try:
        key: Optional[Tuple[str, Any]] = (text, schema)
        hash(key)
    except TypeError:  # pragma: no cover - pa.Schema is hashable
        key = None
    if key is not None:
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
                return hit
    flt = compile_node(_parse(text), schema, text=text, condition=True)
    if key is not None:
        with _cache_lock:
            _cache[key] = flt
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return flt


def _user_input_error(e: Exception) -> Exception:
    """`e` again, its message prefixed with ``Invalid user input:``."""
    text = str(e)
    if text.startswith(USER_INPUT):
        return e
    try:
        return type(e)(f"{USER_INPUT} {text}")
    except TypeError:  # pragma: no cover - an exception class with another signature
        return e


#: How every message about a filter that cannot be planned or evaluated starts (pylance's words).
USER_INPUT = "Invalid user input:"


def compile_filter(filter: FilterLike, schema: Optional[pa.Schema] = None) -> Optional[Filter]:
    """Compiles a filter given as SQL text or a ``pyarrow.compute.Expression``."""
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        return Filter(expression=filter, columns=expression_columns(filter, schema), text=str(filter))
    if isinstance(filter, str):
        if not filter.strip():
            return None
        try:
            return _compile_text(filter, schema)
        except LanceError as e:
            # (pylance's wording for every filter it cannot plan, which callers match on)
            raise _user_input_error(e) from None
    raise InvalidArgumentError(
        f"a filter must be a SQL string or a pyarrow.compute.Expression, got {type(filter).__name__}"
    )
