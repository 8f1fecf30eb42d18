"""SQL predicates → ``pyarrow.compute`` expressions.

Filters (``to_table(filter=...)``, ``count_rows(filter=...)``, ``delete``, ``update``) are
SQL-style predicate strings as pylance accepts them, or ``pyarrow.compute.Expression``
objects. Strings are parsed by `sqlglot <https://github.com/tobymao/sqlglot>`_ (dialect
``databricks``: backticks quote identifiers, single quotes quote strings) and translated
node by node into an Arrow compute expression, which Arrow evaluates in C++.

Supported: comparisons (``= == != <> < <= > >=``), ``AND OR NOT``, ``IN``/``NOT IN``,
``BETWEEN``, ``IS [NOT] NULL``, ``IS [NOT] TRUE/FALSE``, ``LIKE``/``ILIKE``, arithmetic
(``+ - * / %``, unary minus), ``CAST(x AS type)``, literals (numbers, strings, booleans,
``NULL``, ``DATE '...'``, ``TIMESTAMP '...'``) and a few functions (``lower``, ``upper``,
``length``, ``abs``). A string literal compared with a date or timestamp column is read as a
date/timestamp.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set, Union

import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError

__all__ = ["Filter", "compile_filter", "compile_expression"]

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


def _parse(sql: str) -> Any:
    try:
        import sqlglot
    except ImportError as e:  # pragma: no cover - sqlglot is a dependency
        raise InvalidArgumentError("SQL filters need the 'sqlglot' package") from e
    try:
        return sqlglot.parse_one(sql, read="databricks")
    except sqlglot.errors.ParseError as e:
        raise InvalidArgumentError(f"cannot parse filter {sql!r}: {e}") from None


_ARROW_TYPES: Dict[str, pa.DataType] = {
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "UTINYINT": pa.uint8(),
    "USMALLINT": pa.uint16(),
    "UINT": pa.uint32(),
    "UBIGINT": pa.uint64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "DECIMAL": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "TEXT": pa.string(),
    "VARCHAR": pa.string(),
    "CHAR": pa.string(),
    "STRING": pa.string(),
    "BINARY": pa.binary(),
    "VARBINARY": pa.binary(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us"),
    "DATETIME": pa.timestamp("us"),
}


class _NotLiteral(Exception):
    pass


class _Translator:
    def __init__(self, schema: Optional[pa.Schema]) -> None:
        self.schema = schema
        self.columns: Set[str] = set()

    def field_type(self, node: Any) -> Optional[pa.DataType]:
        from sqlglot import exp

        if isinstance(node, exp.Column) and self.schema is not None:
            name = node.name if not node.table else node.table
            if name in self.schema.names and not node.table:
                return self.schema.field(name).type
        return None

    def python_literal(self, node: Any, other: Any) -> Any:
        """The Python value of literal `node` (typed after the column `other` if temporal)."""
        from sqlglot import exp

        t = self.field_type(other)
        if isinstance(node, exp.Paren):
            return self.python_literal(node.this, other)
        if isinstance(node, exp.Literal):
            if not node.is_string:
                try:
                    return int(node.this)
                except ValueError:
                    return float(node.this)
            if t is not None and pa.types.is_date(t):
                return datetime.date.fromisoformat(node.this)
            if t is not None and pa.types.is_timestamp(t):
                return datetime.datetime.fromisoformat(node.this)
            return node.this
        if isinstance(node, exp.Neg):
            return -self.python_literal(node.this, other)
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal) and node.this.is_string:
            to = str(node.to.this.name if hasattr(node.to.this, "name") else node.to.this).upper()
            if to == "DATE":
                return datetime.date.fromisoformat(node.this.this)
            if to in ("TIMESTAMP", "DATETIME"):
                return datetime.datetime.fromisoformat(node.this.this)
        raise _NotLiteral()

    def literal_for(self, node: Any, other: Any) -> Any:
        """Translates `node`; a string literal facing a temporal column becomes temporal."""
        from sqlglot import exp

        t = self.field_type(other)
        if isinstance(node, exp.Literal) and node.is_string and t is not None and (
            pa.types.is_date(t) or pa.types.is_timestamp(t)
        ):
            return pc.scalar(pa.scalar(self.python_literal(node, other), t))
        return self.visit(node)

    def binary(self, node: Any, fn: Callable[[Any, Any], Any]) -> Any:
        left, right = node.this, node.expression
        return fn(self.literal_for(left, right), self.literal_for(right, left))

    def visit(self, node: Any) -> Any:
        from sqlglot import exp

        if isinstance(node, exp.Paren):
            return self.visit(node.this)
        if isinstance(node, exp.Column):
            parts = [p.name for p in node.parts]  # `a.b` is struct field b of column a
            top = parts[0]
            if self.schema is not None and top not in self.schema.names:
                raise InvalidArgumentError(
                    f"filter refers to column {top!r}, which the dataset does not have; columns are {self.schema.names}"
                )
            self.columns.add(top)
            return pc.field(*parts) if len(parts) > 1 else pc.field(top)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return pc.scalar(node.this)
            text = node.this
            try:
                return pc.scalar(int(text))
            except ValueError:
                return pc.scalar(float(text))
        if isinstance(node, exp.Boolean):
            return pc.scalar(bool(node.this))
        if isinstance(node, exp.Null):
            return pc.scalar(None)
        if isinstance(node, exp.And):
            return self.visit(node.this) & self.visit(node.expression)
        if isinstance(node, exp.Or):
            return self.visit(node.this) | self.visit(node.expression)
        if isinstance(node, exp.Not):
            return ~self.visit(node.this)
        comparisons = {
            exp.EQ: lambda a, b: a == b,
            exp.NEQ: lambda a, b: a != b,
            exp.GT: lambda a, b: a > b,
            exp.GTE: lambda a, b: a >= b,
            exp.LT: lambda a, b: a < b,
            exp.LTE: lambda a, b: a <= b,
        }
        for cls, fn in comparisons.items():
            if type(node) is cls:
                return self.binary(node, fn)
        arithmetic = {
            exp.Add: pc.add_checked,
            exp.Sub: pc.subtract_checked,
            exp.Mul: pc.multiply_checked,
            exp.Div: pc.divide_checked,
        }
        for cls, fn in arithmetic.items():
            if type(node) is cls:
                return self.binary(node, fn)
        if isinstance(node, exp.Mod):
            a, b = self.visit(node.this), self.visit(node.expression)
            # SQL remainder keeps the dividend's sign: a - trunc(a / b) * b.
            return pc.subtract(a, pc.multiply(pc.divide(a, b), b))
        if isinstance(node, exp.Neg):
            return pc.negate_checked(self.visit(node.this))
        if isinstance(node, exp.Between):
            x = node.this
            return (self.visit(x) >= self.literal_for(node.args["low"], x)) & (
                self.visit(x) <= self.literal_for(node.args["high"], x)
            )
        if isinstance(node, exp.In):
            if node.args.get("query") is not None:
                raise InvalidArgumentError("subqueries are not supported in filters")
            try:
                values = [self.python_literal(v, node.this) for v in node.expressions]
            except _NotLiteral:
                raise InvalidArgumentError(f"IN lists must contain literals only: {node.sql()}") from None
            t = self.field_type(node.this)
            value_set = pa.array(values, type=t) if t is not None else pa.array(values)
            return pc.is_in(self.visit(node.this), value_set=value_set)
        if isinstance(node, exp.Is):
            target = node.expression
            x = self.visit(node.this)
            if isinstance(target, exp.Null):
                return x.is_null()
            if isinstance(target, exp.Boolean):
                want = bool(target.this)
                # IS TRUE / IS FALSE are never NULL.
                return pc.fill_null(x == pc.scalar(want), False)
            raise InvalidArgumentError(f"unsupported IS expression: {node.sql()}")
        if isinstance(node, (exp.Like, exp.ILike)):
            pattern = node.expression
            if not (isinstance(pattern, exp.Literal) and pattern.is_string):
                raise InvalidArgumentError("LIKE needs a string literal pattern")
            return pc.match_like(self.visit(node.this), pattern.this, ignore_case=isinstance(node, exp.ILike))
        if isinstance(node, (exp.Cast, exp.TryCast)):
            to = node.to.this.name if hasattr(node.to.this, "name") else str(node.to.this)
            target = _ARROW_TYPES.get(to.upper())
            if target is None:
                raise InvalidArgumentError(f"unsupported type in CAST: {node.to.sql()}")
            inner = node.this
            if isinstance(inner, exp.Literal) and inner.is_string and target == pa.date32():
                return pc.scalar(datetime.date.fromisoformat(inner.this))
            if isinstance(inner, exp.Literal) and inner.is_string and pa.types.is_timestamp(target):
                return pc.scalar(pa.scalar(datetime.datetime.fromisoformat(inner.this), target))
            return self.visit(inner).cast(target)
        functions = {exp.Lower: pc.utf8_lower, exp.Upper: pc.utf8_upper, exp.Length: pc.utf8_length, exp.Abs: pc.abs}
        for cls, fn in functions.items():
            if isinstance(node, cls):
                return fn(self.visit(node.this))
        raise InvalidArgumentError(f"unsupported expression in filter: {node.sql()} ({type(node).__name__})")


def compile_expression(sql: str, schema: Optional[pa.Schema] = None) -> Filter:
    """Compiles one SQL value expression or predicate against `schema`."""
    node = _parse(sql)
    t = _Translator(schema)
    return Filter(expression=t.visit(node), columns=sorted(t.columns), text=sql)


def compile_filter(filter: FilterLike, schema: Optional[pa.Schema] = None) -> Optional[Filter]:
    """Compiles a filter given as SQL text or a ``pyarrow.compute.Expression``."""
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        return Filter(expression=filter, columns=None, text=str(filter))
    if isinstance(filter, str):
        if not filter.strip():
            return None
        return compile_expression(filter, schema)
    raise InvalidArgumentError(
        f"a filter must be a SQL string or a pyarrow.compute.Expression, got {type(filter).__name__}"
    )
