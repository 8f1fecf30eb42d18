"""Reading filter text: the sqlglot dialect shaped like pylance's parser, parsing, and the tables
that name the comparison and arithmetic node classes (sqlglot is imported on first use).
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from lancepy.exceptions import InvalidArgumentError

_DIALECT_CLASS: Any = None


def _dialect() -> Any:
    """A sqlglot dialect that reads filters as pylance's parser (sqlparser) does."""
    global _DIALECT_CLASS
    if _DIALECT_CLASS is None:
        from sqlglot import exp
        from sqlglot.dialects.databricks import Databricks
        from sqlglot.tokens import TokenType

        class LanceFilterDialect(Databricks):
            class Tokenizer(Databricks.Tokenizer):
                # A backslash is an ordinary character in a string; '' is a quote.
                STRING_ESCAPES = ["'"]
                # TIMESTAMP is a timestamp without a time zone (TIMESTAMP WITH TIME ZONE is
                # another type, which pylance refuses).
                KEYWORDS = {**Databricks.Tokenizer.KEYWORDS, "TIMESTAMP": TokenType.TIMESTAMP}

            class Parser(Databricks.Parser):
                # pylance's JSON functions are plain calls (their paths stay strings).
                FUNCTIONS = {
                    k: v for k, v in Databricks.Parser.FUNCTIONS.items() if k not in ("JSON_EXTRACT", "JSON_ARRAY_CONTAINS")
                }

                def _negate_range(self, this: Any = None) -> Any:
                    # `x NOT IN (..)` / `x NOT BETWEEN ..` come back as NOT(..): mark them, as
                    # pylance types their literals like those of `x IN` / `x BETWEEN`.
                    node = super()._negate_range(this)
                    if isinstance(node, exp.Not):
                        node.meta["postfix_not"] = True
                    return node

        _DIALECT_CLASS = LanceFilterDialect
    return _DIALECT_CLASS


def dialect() -> Any:
    """The sqlglot dialect filters are parsed with (for code that parses whole statements)."""
    return _dialect()


def parse_sql(sql: str) -> Any:
    """Parses one SQL expression with the filter dialect (a sqlglot node)."""
    try:
        import sqlglot
    except ImportError as e:  # pragma: no cover - sqlglot is a dependency
        raise InvalidArgumentError("SQL filters need the 'sqlglot' package") from e
    try:
        return sqlglot.parse_one(sql, read=_dialect())
    except sqlglot.errors.ParseError as e:
        raise InvalidArgumentError(f"cannot parse filter {sql!r}: {e}") from None
    except sqlglot.errors.TokenError as e:
        raise InvalidArgumentError(f"cannot parse filter {sql!r}: {e}") from None


def _parse(sql: str) -> Any:
    return parse_sql(sql)


class _Sql:
    """A node's SQL text, generated only if an error message needs it."""

    __slots__ = ("node",)

    def __init__(self, node: Any) -> None:
        self.node = node

    def __str__(self) -> str:
        return self.node.sql(dialect=_dialect())

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def _comparison_classes() -> Dict[type, str]:
    from sqlglot import exp

    return {exp.EQ: "eq", exp.NEQ: "ne", exp.GT: "gt", exp.GTE: "ge", exp.LT: "lt", exp.LTE: "le"}


def _arithmetic_classes() -> Dict[type, str]:
    from sqlglot import exp

    return {exp.Add: "add", exp.Sub: "subtract", exp.Mul: "multiply", exp.Div: "divide", exp.Mod: "mod"}


class _LazyMap(dict):
    def __init__(self, build: Callable[[], Dict[type, str]]) -> None:
        super().__init__()
        self._build = build

    def get(self, key: Any, default: Any = None) -> Any:  # type: ignore[override]
        if not dict.__len__(self):
            self.update(self._build())
        return dict.get(self, key, default)

    def __contains__(self, key: Any) -> bool:
        if not dict.__len__(self):
            self.update(self._build())
        return dict.__contains__(self, key)

    def __getitem__(self, key: Any) -> Any:
        if not dict.__len__(self):
            self.update(self._build())
        return dict.__getitem__(self, key)


_COMPARISONS: Dict[type, str] = _LazyMap(_comparison_classes)
_ARITHMETIC: Dict[type, str] = _LazyMap(_arithmetic_classes)
