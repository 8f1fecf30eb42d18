"""``LanceDataset.sql``: SQL SELECT queries over one dataset, pylance's API.

    ds.sql("SELECT label, count(*) AS n, avg(score) FROM dataset WHERE score > 0.5 "
           "GROUP BY label HAVING count(*) > 10 ORDER BY n DESC LIMIT 5").build().to_batch_records()

The statement is parsed by sqlglot and run with lancepy's scan (only the columns the query
names are read; ``WHERE`` is pushed into the scan as a filter) and Arrow compute:

* ``SELECT`` of ``*``, columns, expressions (what filters support: arithmetic, comparisons,
  ``CAST``, ``lower``/``upper``/``length``/``abs``, ...) with ``AS`` aliases, ``DISTINCT``;
* aggregates ``count(*)``, ``count(x)``, ``count(DISTINCT x)``, ``sum``, ``avg``, ``min``,
  ``max`` (of columns or expressions), with or without ``GROUP BY`` (columns, expressions,
  aliases or 1-based positions), and ``HAVING``;
* ``ORDER BY`` (expressions, aliases or positions; ``ASC``/``DESC``; nulls last) and
  ``LIMIT`` / ``OFFSET``.

``FROM`` names the dataset (``dataset`` unless :meth:`SqlQueryBuilder.table_name` says
otherwise) or is omitted. Joins, subqueries, ``WITH``, set operations and window functions
raise :class:`~lancepy.exceptions.NotSupportedError`. Output columns are named by their alias,
the column name, or the expression's SQL text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from lancepy.exceptions import InvalidArgumentError, NotSupportedError

if TYPE_CHECKING:  # pragma: no cover
    from lancepy.dataset import LanceDataset

__all__ = ["SqlQuery", "SqlQueryBuilder"]

_AGGREGATES = {"Count": "count", "Sum": "sum", "Avg": "mean", "Min": "min", "Max": "max"}


class SqlQueryBuilder:
    """Configures a SQL query over a dataset (from :meth:`LanceDataset.sql`)."""

    def __init__(self, ds: "LanceDataset", sql: str) -> None:
        if not isinstance(sql, str) or not sql.strip():
            raise InvalidArgumentError("sql: expected a SELECT statement")
        self._ds = ds
        self._sql = sql
        self._table = "dataset"
        self._row_id = False
        self._row_addr = False

    def table_name(self, table_name: str) -> "SqlQueryBuilder":
        """The name the query's ``FROM`` uses for the dataset (default ``dataset``)."""
        if not isinstance(table_name, str) or not table_name:
            raise InvalidArgumentError("table_name must be a non-empty string")
        self._table = table_name
        return self

    def with_row_id(self, with_row_id: bool = True) -> "SqlQueryBuilder":
        """Makes the ``_rowid`` column available to the query (and to ``SELECT *``)."""
        self._row_id = bool(with_row_id)
        return self

    def with_row_addr(self, with_row_addr: bool = True) -> "SqlQueryBuilder":
        """Makes the ``_rowaddr`` column available to the query (and to ``SELECT *``)."""
        self._row_addr = bool(with_row_addr)
        return self

    def build(self) -> "SqlQuery":
        """Parses and checks the statement; the query runs when its results are asked for."""
        return SqlQuery(self._ds, _parse_select(self._sql, self._table), self._row_id, self._row_addr, self._table)


class SqlQuery:
    """A parsed query; run by :meth:`to_batch_records` or :meth:`to_stream_reader`."""

    def __init__(self, ds: "LanceDataset", select: Any, row_id: bool, row_addr: bool, table: str = "dataset") -> None:
        self._ds = ds
        self._table = table
        self._select = select
        self._row_id = row_id
        self._row_addr = row_addr

    def to_table(self) -> pa.Table:
        """The result as one table (lancepy's addition)."""
        return _run(self._ds, self._select, self._row_id, self._row_addr, self._table)

    def to_batch_records(self) -> List[pa.RecordBatch]:
        """The result as a list of record batches."""
        return self.to_table().to_batches()

    def to_stream_reader(self) -> pa.RecordBatchReader:
        """The result as a record batch reader."""
        t = self.to_table()
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())


# --------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------


def _parse_select(sql: str, table: str) -> Any:
    import sqlglot
    from sqlglot import exp

    from lancepy.filters import dialect

    try:
        statements = sqlglot.parse(sql, read=dialect())
    except sqlglot.errors.ParseError as e:
        raise InvalidArgumentError(f"cannot parse SQL {sql!r}: {e}") from None
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise InvalidArgumentError(f"sql: expected one SELECT statement, got {len(statements)}")
    node = statements[0]
    if not isinstance(node, exp.Select):
        if isinstance(node, (exp.Query, exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Merge)):
            raise NotSupportedError(f"sql: only SELECT statements are supported, got {type(node).__name__.upper()}")
        raise InvalidArgumentError(f"sql: not a SELECT statement: {sql!r}")
    for kind, what in ((exp.Join, "joins"), (exp.Subquery, "subqueries"), (exp.With, "WITH"), (exp.Window, "window functions"),
                       (exp.Union, "set operations"), (exp.Lateral, "LATERAL")):
        if node.find(kind) is not None:
            raise NotSupportedError(f"sql: {what} are not supported by lancepy")
    if any(isinstance(n, exp.Select) for n in node.find_all(exp.Select) if n is not node):
        raise NotSupportedError("sql: subqueries are not supported by lancepy")
    src = node.args.get("from") or node.args.get("from_")
    if src is not None:
        tables = list(src.find_all(exp.Table))
        if len(tables) != 1 or tables[0].name.lower() != table.lower():
            raise InvalidArgumentError(f"sql: FROM must name the dataset as {table!r} (got {src.sql()})")
    return node


# --------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------


_OPERATORS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Mod": "%", "EQ": "=", "NEQ": "!=", "GT": ">",
              "GTE": ">=", "LT": "<", "LTE": "<=", "And": "AND", "Or": "OR"}


def _name_of(node: Any, table: str = "dataset", top: bool = True) -> str:
    """An output column's name, spelled as pylance (DataFusion) spells it: the alias, the
    column's name, or the expression with qualified columns and typed literals
    (``sum(dataset.x + Int64(1))``)."""
    from sqlglot import exp

    def name(n: Any) -> str:
        return _name_of(n, table, top=False)

    kind = type(node).__name__
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Column):
        return node.name if top else f"{table}.{node.name}"
    if isinstance(node, exp.Literal):
        if node.is_string:
            return f'Utf8("{node.this}")'
        return f"Int64({node.this})" if node.this.lstrip("-").isdigit() else f"Float64({node.this})"
    if isinstance(node, exp.Boolean):
        return f"Boolean({str(bool(node.this)).lower()})"
    if isinstance(node, exp.Null):
        return "NULL"
    if isinstance(node, (exp.Paren, exp.Cast, exp.TryCast)):
        return _name_of(node.this, table, top)
    if isinstance(node, exp.Neg):
        return f"(- {name(node.this)})"
    if isinstance(node, exp.Star):
        return "*"
    if isinstance(node, exp.Distinct):
        return "DISTINCT " + ", ".join(name(e) for e in node.expressions)
    if isinstance(node, exp.AggFunc) or kind in ("Lower", "Upper", "Abs", "Length"):
        return f"{kind.lower()}({name(node.this) if node.this is not None else '*'})"
    if kind in _OPERATORS:
        return f"{name(node.this)} {_OPERATORS[kind]} {name(node.expression)}"
    return node.sql(dialect="databricks").lower()


def _columns_of(nodes: List[Any]) -> List[str]:
    from sqlglot import exp

    out: List[str] = []
    for n in nodes:
        if n is None:
            continue
        for c in n.find_all(exp.Column):
            name = c.parts[0].name
            if name not in out:
                out.append(name)
    return out


def _evaluate(node: Any, table: pa.Table) -> pa.ChunkedArray:
    """Evaluates a scalar expression over `table`'s rows."""
    from sqlglot import exp

    from lancepy.filters import _Translator, evaluate

    if isinstance(node, exp.Column) and len(node.parts) == 1 and node.name in table.column_names:
        return table.column(node.name)
    expr = _Translator(table.schema).visit(node)
    out = evaluate(table, expr)
    return out


def _run(ds: "LanceDataset", select: Any, row_id: bool, row_addr: bool, table_name: str = "dataset") -> pa.Table:
    from sqlglot import exp

    from lancepy.filters import compile_node

    projections = list(select.expressions)
    where = select.args.get("where")
    group = select.args.get("group")
    having = select.args.get("having")
    order = select.args.get("order")
    schema_names = list(ds.schema.names) + (["_rowid"] if row_id else []) + (["_rowaddr"] if row_addr else [])

    # `*` expands to every column (with the row id / address when asked for).
    expanded: List[Any] = []
    for p in projections:
        if isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star)):
            expanded += [exp.column(n) for n in schema_names]
        else:
            expanded.append(p)
    aliases = {p.alias: p.this for p in expanded if isinstance(p, exp.Alias)}

    def resolve(n: Any) -> Any:
        """An ORDER BY / GROUP BY item: a position, an alias, or an expression."""
        if isinstance(n, exp.Literal) and not n.is_string:
            i = int(n.this)
            if not 1 <= i <= len(expanded):
                raise InvalidArgumentError(f"sql: position {i} is not a column of the SELECT list")
            return expanded[i - 1].this if isinstance(expanded[i - 1], exp.Alias) else expanded[i - 1]
        if isinstance(n, exp.Column) and len(n.parts) == 1 and n.name in aliases and n.name not in schema_names:
            return aliases[n.name]
        return n

    group_items = [resolve(g) for g in (group.expressions if group is not None else [])]
    where_node = where.this if where is not None else None
    order_items = [(resolve(o.this), bool(o.args.get("desc"))) for o in (order.expressions if order is not None else [])]
    needed = _columns_of(expanded + group_items + [having.this if having is not None else None] + [o for o, _ in order_items])
    needed += [c for c in _columns_of([where_node]) if c not in needed]
    unknown = [c for c in needed if c not in schema_names and c not in aliases]
    if unknown:
        raise InvalidArgumentError(f"sql: unknown column(s) {unknown}; the dataset has {schema_names}")
    scan_cols = [c for c in needed if c in ds.schema.names]
    flt = None
    if where_node is not None:
        if any(isinstance(n, exp.AggFunc) for n in where_node.find_all(exp.AggFunc)):
            raise InvalidArgumentError("sql: aggregates are not allowed in WHERE (use HAVING)")
        flt = compile_node(where_node, ds.schema).expression
    table = ds.to_table(columns=scan_cols, filter=flt, with_row_id=row_id and "_rowid" in needed,
                        with_row_address=row_addr and "_rowaddr" in needed)

    aggs = [a for p in expanded + ([having.this] if having is not None else []) + [o for o, _ in order_items]
            for a in p.find_all(exp.AggFunc)]
    if group_items or aggs:
        table, mapping = _aggregate(table, group_items, aggs)

        def substitute(n: Any) -> Any:
            key = n.sql(dialect="databricks")
            if key in mapping:
                return exp.column(mapping[key])
            if isinstance(n, exp.AggFunc):
                raise NotSupportedError(f"sql: aggregate {n.sql()} is not supported")
            return n

        def grouped(n: Any) -> bool:
            """Whether `n` or an expression around it is a group key or an aggregate."""
            while n is not None:
                if isinstance(n, exp.AggFunc) or n.sql(dialect="databricks") in mapping:
                    return True
                n = n.parent
            return False

        for p in expanded:
            for c in p.find_all(exp.Column):
                if not grouped(c):
                    raise InvalidArgumentError(f"sql: column {c.sql()} must appear in GROUP BY or be inside an aggregate")
        names = [_name_of(p, table_name) for p in expanded]
        expanded = [p.transform(substitute) for p in expanded]
        order_items = [(o.transform(substitute), d) for o, d in order_items]
        if having is not None:
            keep = _evaluate(having.this.transform(substitute), table)
            table = table.filter(pc.fill_null(keep, False))

    # Projection (ORDER BY may also use columns the SELECT list drops: sort first).
    if not (group_items or aggs):
        names = [_name_of(p, table_name) for p in expanded]
    values = [_evaluate(p.this if isinstance(p, exp.Alias) else p, table) for p in expanded]
    if order_items:
        keys_table = {}
        sort_keys = []
        for i, (o, desc) in enumerate(order_items):
            name = _name_of(o, table_name)
            col = values[names.index(name)] if name in names else _evaluate(o, table)
            # nulls last ascending, first descending (as DataFusion): an is-null key first
            keys_table[f"n{i}"] = pc.is_null(col)
            keys_table[f"k{i}"] = col
            order_ = "descending" if desc else "ascending"
            sort_keys += [(f"n{i}", order_), (f"k{i}", order_)]
        idx = pc.sort_indices(pa.table(keys_table), sort_keys=sort_keys)
        values = [v.take(idx) for v in values]
    out = pa.table(dict(zip(_unique(names), values))) if values else pa.table({})
    if select.args.get("distinct") is not None:
        out = out.group_by(out.column_names, use_threads=False).aggregate([])
    offset = select.args.get("offset")
    limit = select.args.get("limit")
    start = int(_literal(offset.expression if offset is not None else None) or 0)
    count = _literal(limit.expression if limit is not None else None)
    if start or count is not None:
        out = out.slice(start, None if count is None else int(count))
    return out


def _literal(node: Any) -> Optional[int]:
    from sqlglot import exp

    if node is None:
        return None
    if isinstance(node, exp.Literal) and not node.is_string:
        v = int(node.this)
        if v < 0:
            raise InvalidArgumentError("sql: LIMIT and OFFSET must not be negative")
        return v
    raise NotSupportedError(f"sql: LIMIT/OFFSET must be integer literals, got {node.sql()}")


def _unique(names: List[str]) -> List[str]:
    seen: Dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            n = f"{n}_{seen[n]}"
        else:
            seen[n] = 0
        out.append(n)
    return out


def _aggregate(table: pa.Table, group_items: List[Any], aggs: List[Any]) -> Tuple[pa.Table, Dict[str, str]]:
    """Groups `table` by `group_items` and computes `aggs`; returns the grouped table and a
    map from each group key's and aggregate's SQL text to its column there."""
    from sqlglot import exp

    work: Dict[str, Any] = {}
    mapping: Dict[str, str] = {}
    keys = []
    for i, g in enumerate(group_items):
        name = f"__g{i}"
        work[name] = _evaluate(g, table)
        keys.append(name)
        mapping[g.sql(dialect="databricks")] = name
    specs = []
    for j, a in enumerate(aggs):
        key = a.sql(dialect="databricks")
        if key in mapping:
            continue
        kind = type(a).__name__
        if kind not in _AGGREGATES:
            raise NotSupportedError(f"sql: aggregate {a.sql()} is not supported (count, sum, avg, min, max are)")
        arg = a.this
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            if kind != "Count" or len(arg.expressions) != 1:
                raise NotSupportedError(f"sql: {a.sql()}: DISTINCT is supported in count(DISTINCT x) only")
            arg = arg.expressions[0]
        src = f"__a{j}"
        if isinstance(arg, exp.Star) or arg is None:
            work[src] = pa.chunked_array([pa.array([1] * table.num_rows, pa.int64())]) if table.num_rows else pa.chunked_array([], pa.int64())
            func = "count"
            opts: Any = pc.CountOptions(mode="all")
        else:
            work[src] = _evaluate(arg, table)
            func = "count_distinct" if distinct else _AGGREGATES[kind]
            opts = pc.CountOptions(mode="only_valid") if func in ("count", "count_distinct") else None
        specs.append((src, func, opts))
        mapping[key] = f"{src}_{func}"
    grouped = pa.table(work) if work else pa.table({"__n": pa.array([0] * table.num_rows)})
    result = grouped.group_by(keys, use_threads=False).aggregate(specs)
    if not keys and table.num_rows == 0:
        # SQL: an aggregate over no rows is one row (count 0, others null).
        cols = {}
        for src, func, _ in specs:
            name = f"{src}_{func}"
            cols[name] = pa.array([0] if func in ("count", "count_distinct") else [None],
                                  pa.int64() if func in ("count", "count_distinct") else work[src].type)
        result = pa.table(cols)
    return result, mapping
