"""SQL predicates → ``pyarrow.compute`` expressions that give pylance's answers.

Filters (``to_table(filter=...)``, ``count_rows(filter=...)``, ``delete``, ``update``) are
SQL-style predicate strings as pylance accepts them, or ``pyarrow.compute.Expression``
objects. Strings are parsed by `sqlglot <https://github.com/tobymao/sqlglot>`_ with a dialect
shaped like pylance's parser (backticks quote identifiers; single *and* double quotes quote
strings; a backslash in a string is an ordinary character; ``TIMESTAMP`` has no time zone) and
translated node by node, with types, into an Arrow compute expression.

pylance plans a filter with DataFusion; the translation follows its rules:

* **Types.** A literal facing a column at the top of the filter (through ``AND``/``OR``, in
  ``IN`` lists and ``BETWEEN`` bounds) takes the column's type, as pylance coerces it (so
  ``i32_col = 2147483647 + 1`` wraps in 32 bits; where it does not fit, pylance refuses the
  filter and lancepy compares in the common type); elsewhere both sides are coerced to a
  common type: integers widen, an integer meeting a float becomes ``DOUBLE``, a string meeting
  a number or a date is parsed as one, a string meeting bytes is its UTF-8 bytes, a date
  meeting an integer is its count of days, a ``BIGINT UNSIGNED`` meeting a signed integer is
  compared exactly.
* **NULL.** Three-valued logic throughout: ``NOT NULL`` is ``NULL``; ``x IN (1, NULL)`` is
  ``NULL`` unless ``x = 1``; ``x NOT IN (..)`` is never true for a ``NULL`` ``x`` or a list
  holding ``NULL``; a row is returned only where the filter is true.
* **Floats** compare in IEEE-754 total order, as Arrow's Rust kernels do: ``NaN`` equals
  ``NaN`` and is greater than ``+inf`` (a negative ``NaN``, as ``inf - inf`` gives, is below
  ``-inf``), except that a comparison with a zero constant treats ``-0.0`` and ``0.0`` as one
  number. Integer arithmetic wraps on overflow; ``/`` and ``%`` on integers truncate and fail
  on a zero divisor; ``%`` on floats is ``fmod``.
* **Simplification.** pylance simplifies a filter before it runs it, and some rewrites decide
  rows: ``NOT`` is pushed through ``AND``/``OR``; ``TRUE``/``FALSE`` (also folded ones, like
  ``NULL IS NULL``) absorb their sibling, so an error there is not raised; two ``IN`` lists on
  the same expression joined by ``AND``/``OR`` (``x = 1 OR x = 2`` counting as one, and
  ``x = 0.0`` being ``x IN (-0.0, 0.0)``) are merged with set operations that disregard
  ``NULL`` (``x IN (1, 2) AND x NOT IN (2, NULL)`` returns the rows where ``x = 1``;
  ``x IN (1) AND x NOT IN (1)`` is ``FALSE`` even for a ``NULL`` x). lancepy applies the same
  rewrites.
* **LIKE / ILIKE** (``NOT LIKE``, ``NOT ILIKE``): ``%`` any run of characters, ``_`` one
  character, a backslash makes the next character literal (``ESCAPE '\\'`` is the default;
  another escape character is refused as pylance refuses it, unless the pattern is all ``%``
  or, for ``LIKE``, has no wildcard, which pylance rewrites before it looks at the escape);
  ``ILIKE`` folds case by Unicode rules, ``upper``/``lower`` map case as Rust does.
* **Time zones.** A ``TIMESTAMP`` literal with an offset is converted to UTC; columns with a
  zone other than UTC are not supported.

Supported: comparisons (``= == != <> < <= > >=``), ``AND OR NOT``, ``IN``/``NOT IN``,
``BETWEEN``/``NOT BETWEEN``, ``IS [NOT] NULL``, ``IS [NOT] TRUE/FALSE``, ``LIKE``/``ILIKE``,
arithmetic (``+ - * / %``, unary minus), ``||``, ``CAST(x AS type)`` (``TINYINT`` ...
``BIGINT [UNSIGNED]``, ``FLOAT``, ``DOUBLE``, ``STRING``, ``BOOLEAN``, ``DATE``,
``TIMESTAMP[(p)]``, ``DATETIME``), literals (numbers, strings, ``X'..'`` hex binaries,
booleans, ``NULL``, ``DATE '...'``, ``TIMESTAMP '...'`` with or without a UTC offset), struct
fields (``a.b``, ``a['b']``) and the functions ``lower``, ``upper``,
``length``/``character_length``, ``abs``, ``starts_with``, ``ends_with``, ``contains``, ``is_valid``, ``regexp_like``,
``regexp_match`` (true where it matches), ``array_has``/``array_contains``. Anything else raises
:class:`~lancepy.exceptions.NotSupportedError` naming the construct, and a filter pylance
refuses (a literal that does not fit its column, comparing a string with a boolean, ...) raises
:class:`~lancepy.exceptions.InvalidArgumentError` where lancepy cannot give it a meaning.

Compiled filters are cached by (text, schema); :func:`evaluate` runs an expression over a table.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError
from lancepy.filters.parsing import _dialect, _parse, dialect, parse_sql
from lancepy.filters.translate import _Translator

__all__ = ["Filter", "compile_filter", "compile_expression", "compile_node", "parse_sql", "dialect", "evaluate"]

FilterLike = Union[str, "pc.Expression", None]


@dataclass(frozen=True)
class Filter:
    """A compiled filter: the Arrow expression and the columns it reads.

    ``columns`` is ``None`` when unknown (a ``pyarrow.compute.Expression`` given directly),
    in which case every column must be read.
    """

    expression: pc.Expression
    columns: Optional[List[str]]
    text: str


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def evaluate(table: pa.Table, expr: pc.Expression) -> pa.ChunkedArray:
    """`expr` over the rows of `table`, in order (Acero, one thread: a fraction of the cost of
    a ``pyarrow.dataset`` scan for the small batches filters see)."""
    try:
        import pyarrow.acero as acero
    except ImportError:  # pragma: no cover - pyarrow without Acero
        import pyarrow.dataset as pads

        return pads.dataset(table).to_table(columns={"v": expr}).column("v")
    plan = acero.Declaration.from_sequence([
        acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
        acero.Declaration("project", acero.ProjectNodeOptions([expr], ["v"])),
    ])
    return plan.to_table(use_threads=False).column("v")


def compile_node(node: Any, schema: Optional[pa.Schema] = None, *, text: Optional[str] = None, condition: bool = True) -> Filter:
    """Compiles a parsed sqlglot node (a condition, or a value with ``condition=False``)."""
    t = _Translator(schema)
    expr = t.condition(node) if condition else t.visit(node)
    return Filter(expression=expr, columns=sorted(t.columns), text=text if text is not None else node.sql(dialect=_dialect()))


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


def compile_filter(filter: FilterLike, schema: Optional[pa.Schema] = None) -> Optional[Filter]:
    """Compiles a filter given as SQL text or a ``pyarrow.compute.Expression``."""
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        return Filter(expression=filter, columns=None, text=str(filter))
    if isinstance(filter, str):
        if not filter.strip():
            return None
        return _compile_text(filter, schema)
    raise InvalidArgumentError(
        f"a filter must be a SQL string or a pyarrow.compute.Expression, got {type(filter).__name__}"
    )
