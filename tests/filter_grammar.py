"""A seeded random generator of SQL filters, and the data they run over.

Shared by ``tests/test_differential_filters.py`` (lancepy against pylance, many seeds) and
``benches/diff_filters.py`` (the same comparison at a larger count). Everything here is
deterministic given the seed: ``make_fragments(seed)`` builds the rows, ``FilterGenerator(seed)``
the filters, so a failing filter is reproduced from the seed and its index.

The grammar (``FilterGenerator.predicate``) covers what pylance's filters accept:

* comparisons ``= != <> < <= > >=`` between column expressions and literals of every column
  type (and, now and then, a literal of the wrong type or out of the column's range);
* arithmetic ``+ - * / %`` and unary minus on the numeric columns (wrapping integers, NaN,
  infinities, signed zeros), ``CAST`` to other types, ``||``, ``lower``/``upper``;
* ``IN`` / ``NOT IN`` lists (with and without ``NULL``), ``BETWEEN`` / ``NOT BETWEEN``;
* ``LIKE`` / ``ILIKE`` / ``NOT LIKE`` / ``NOT ILIKE`` with ``%``, ``_`` and backslash escapes
  over values that hold ``%``, ``_``, backslashes and non-ASCII letters;
* ``IS [NOT] NULL``, ``IS [NOT] TRUE``, ``IS [NOT] FALSE``, boolean columns alone;
* ``DATE '...'``, ``TIMESTAMP '...'`` (with and without an offset) literals and casts;
* ``regexp_match`` / ``regexp_like``, ``array_has``, ``array_length`` and ``array_empty`` on a
  list column;
* ``AND`` / ``OR`` / ``NOT`` nested up to three deep.
"""

from __future__ import annotations

import collections
import concurrent.futures
import datetime
import random
from typing import Callable, List, Optional

import pyarrow as pa

FRAGMENTS = 4
ROWS_PER_FRAGMENT = 100
# Rows deleted after the appends (a predicate on `id`), so every fragment has a deletion file.
DELETE_PREDICATE = "id % 7 = 3 OR id = 150"

I32 = [0, 1, -1, 2, 3, 5, 7, 10, -10, 42, 100, -100, 2**31 - 1, -(2**31)]
I64 = [0, 1, -1, 3, 10, 1000, -1000, 2**40, 2**62, -(2**62), 2**63 - 1, -(2**63)]
U32 = [0, 1, 2, 3, 7, 100, 2**31, 2**32 - 1]
F64 = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, -2.25, 3.0, 100.0, 1e300, -1e300, 1e-300,
       float("nan"), float("inf"), float("-inf")]
STRINGS = ["", "a", "abc", "ABC", "Abc", "a%c", "a_c", "50%", "100%", "_x", "x_", "a\\b", "a\\%",
           "äbc", "ÄBC", "Émile", "émile", "naïve", "straße", "日本語", "über", "Über", "hello world",
           " ", "xyz", "it's", "a.c", "a*c", "(x)"]
CATEGORIES = ["red", "green", "blue", "Red", "ä"]
DATES = [datetime.date(2000, 1, 1) + datetime.timedelta(days=k) for k in range(6)] + [
    datetime.date(1970, 1, 1), datetime.date(1969, 12, 31), datetime.date(2038, 1, 19)]
TIMES = [datetime.datetime(2000, 1, 1, 0, 0, 0), datetime.datetime(2000, 1, 1, 5, 0, 0),
         datetime.datetime(2000, 1, 1, 5, 0, 0, 500000), datetime.datetime(2000, 1, 2, 23, 59, 59),
         datetime.datetime(2000, 1, 3), datetime.datetime(1969, 12, 31, 23, 0, 0),
         datetime.datetime(1970, 1, 1), datetime.datetime(2038, 1, 19, 3, 14, 7)]
LISTS = [[1, 2], [], [3], [1, None], [2, 2, 5], [0], [7, 1]]

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("i32", pa.int32()),
    pa.field("i64", pa.int64()),
    pa.field("u32", pa.uint32()),
    pa.field("f64", pa.float64()),
    pa.field("s", pa.string()),
    pa.field("b", pa.bool_()),
    pa.field("d", pa.date32()),
    pa.field("ts", pa.timestamp("us")),
    pa.field("tsz", pa.timestamp("us", tz="UTC")),
    pa.field("cat", pa.dictionary(pa.int32(), pa.string())),
    pa.field("li", pa.list_(pa.int64())),
])


def make_fragments(seed: int = 0) -> List[pa.Table]:
    """`FRAGMENTS` tables of `ROWS_PER_FRAGMENT` rows (ids continue across them)."""
    rng = random.Random(seed)

    def pick(pool, null=0.12):
        return None if rng.random() < null else rng.choice(pool)

    out = []
    for f in range(FRAGMENTS):
        ids = list(range(f * ROWS_PER_FRAGMENT, (f + 1) * ROWS_PER_FRAGMENT))
        n = len(ids)
        cat = [pick(CATEGORIES) for _ in ids]
        cols = {
            "id": pa.array(ids, pa.int64()),
            "i32": pa.array([pick(I32) for _ in ids], pa.int32()),
            "i64": pa.array([pick(I64) for _ in ids], pa.int64()),
            "u32": pa.array([pick(U32) for _ in ids], pa.uint32()),
            "f64": pa.array([pick(F64) for _ in ids], pa.float64()),
            "s": pa.array([pick(STRINGS) for _ in ids], pa.string()),
            "b": pa.array([pick([True, False], 0.25) for _ in ids], pa.bool_()),
            "d": pa.array([pick(DATES) for _ in ids], pa.date32()),
            "ts": pa.array([pick(TIMES) for _ in ids], pa.timestamp("us")),
            "tsz": pa.array([pick(TIMES) for _ in ids], pa.timestamp("us", tz="UTC")),
            "cat": pa.array(cat, pa.string()).dictionary_encode().cast(pa.dictionary(pa.int32(), pa.string())),
            "li": pa.array([pick(LISTS) for _ in ids], pa.list_(pa.int64())),
        }
        assert all(len(c) == n for c in cols.values())
        out.append(pa.table(cols, schema=SCHEMA))
    return out


def sql_string(s: str) -> str:
    """`s` as a SQL string literal (quotes doubled; backslashes are not escapes)."""
    return "'" + s.replace("'", "''") + "'"


INT_COLS = ["i32", "i64", "u32"]
NUM_COLS = INT_COLS + ["f64"]
STR_COLS = ["s", "cat"]
CMP_OPS = ["=", "!=", "<>", "<", "<=", ">", ">="]
INT_TYPES = ["INT", "BIGINT", "TINYINT", "SMALLINT", "INT UNSIGNED", "BIGINT UNSIGNED"]


class FilterGenerator:
    """Random filters over `SCHEMA` from a seeded RNG (see the module docstring)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    # -- helpers ---------------------------------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(seq)

    def weighted(self, options: List[tuple]) -> Callable:
        total = sum(w for w, _ in options)
        r = self.rng.random() * total
        for w, f in options:
            r -= w
            if r <= 0:
                return f
        return options[-1][1]

    # -- literals --------------------------------------------------------------------------

    def int_literal(self, col: Optional[str] = None) -> str:
        pool = {"i32": I32, "i64": I64, "u32": U32}.get(col or "", I32)
        r = self.rng.random()
        if r < 0.45:
            v = self.pick(pool)
        elif r < 0.9:
            v = self.rng.randint(-12, 120)
        elif r < 0.95:
            v = self.pick([3000000000, -1, 2**31, -(2**31) - 1, 2**63 - 1])  # out of some ranges
        else:
            return self.pick(["1.5", "2.0", "0.0", "-0.5"])  # a float facing an integer
        return str(v)

    def float_literal(self) -> str:
        r = self.rng.random()
        if r < 0.5:
            v = self.pick([x for x in F64 if x == x and abs(x) != float("inf")])
            text = repr(v)
            return text.replace("e+", "e")
        if r < 0.75:
            return self.pick(["0", "1", "-1", "3", "100", "2"])
        if r < 0.92:
            return self.pick(["0.0", "-0.0", "2.5", "-3.0", "1e308", "-1e308", "0.25", "1.0"])
        return self.pick(["CAST('NaN' AS DOUBLE)", "CAST('inf' AS DOUBLE)", "CAST('-inf' AS DOUBLE)",
                          "CAST(0 AS DOUBLE)", "-(0.0)", "1 - 1"])

    def string_literal(self) -> str:
        r = self.rng.random()
        if r < 0.6:
            v = self.pick(STRINGS + CATEGORIES)
        elif r < 0.8:
            v = self.pick(STRINGS)
            v = v.upper() if self.chance(0.5) else v.lower()
        else:
            v = self.pick(["zzz", "b", "Ab", "a%", "abcd", "日本", "é", "ÉMILE", "Ä"])
        if self.chance(0.03):
            return self.pick(["\"abc\"", "\"red\""])  # double quotes are string literals too
        if self.chance(0.03):  # bytes: X'..' or 0x.. (compared with a string as its UTF-8 bytes)
            hexa = v.encode().hex()
            return f"X'{hexa}'" if self.chance(0.7) or not hexa else f"0x{hexa}"
        return sql_string(v)

    def date_literal(self) -> str:
        d = self.pick(DATES) if self.chance(0.8) else datetime.date(2000, 1, 1) + datetime.timedelta(days=self.rng.randint(-3, 9))
        text = d.isoformat()
        return self.pick([f"date '{text}'", f"DATE '{text}'", f"CAST('{text}' AS DATE)"])

    def timestamp_literal(self) -> str:
        t = self.pick(TIMES) if self.chance(0.7) else datetime.datetime(2000, 1, 1) + datetime.timedelta(
            seconds=self.rng.randint(-7200, 200000), microseconds=self.pick([0, 0, 500000, 1]))
        r = self.rng.random()
        if r < 0.5:
            text = t.isoformat(sep=" ")
        elif r < 0.65:
            text = t.isoformat(sep="T")
        elif r < 0.8:
            off = self.pick([1, -2, 5])
            text = (t + datetime.timedelta(hours=off)).isoformat(sep=" ") + f"{'+' if off >= 0 else '-'}{abs(off):02d}:00"
        elif r < 0.87:
            text = t.isoformat(sep="T") + "Z"
        else:
            text = t.date().isoformat()
        form = self.rng.random()
        if form < 0.7:
            return f"{self.pick(['timestamp', 'TIMESTAMP'])} '{text}'"
        if form < 0.95:
            return f"CAST('{text}' AS {self.pick(['TIMESTAMP', 'DATETIME'])})"
        return f"TIMESTAMP WITH TIME ZONE '{text}'"  # pylance refuses a zone in the type

    def literal_for(self, fam: str, col: Optional[str] = None) -> str:
        if self.chance(0.04):
            return "NULL"
        if self.chance(0.03):  # a literal of another type
            fam = self.pick(["int", "float", "str", "bool", "date"])
        if fam == "int":
            return self.int_literal(col)
        if fam == "float":
            return self.float_literal()
        if fam == "str":
            return self.string_literal()
        if fam == "bool":
            return self.pick(["TRUE", "FALSE", "true", "false"])
        if fam == "date":
            return self.date_literal()
        if fam in ("ts", "tsz"):
            return self.timestamp_literal()
        raise AssertionError(fam)

    # -- value expressions -----------------------------------------------------------------

    def value(self, fam: str) -> tuple:
        """(sql, column name or None) for an expression of family `fam`."""
        if fam == "int":
            col = self.pick(INT_COLS)
            r = self.rng.random()
            if r < 0.55:
                return col, col
            if r < 0.8:
                op = self.pick(["+", "-", "*", "/", "%"])
                k = self.rng.randint(-3, 9) if self.chance(0.9) else self.pick([2**31, 0, -1])
                if self.chance(0.5):
                    return f"{col} {op} {k}", col
                return f"({col} {op} {k})", col
            if r < 0.88:
                other = self.pick(INT_COLS)
                return f"({col} {self.pick(['+', '-', '*'])} {other})", None
            if r < 0.94:
                c = self.pick(["i32", "i64"])
                return f"-{c}", None
            return f"CAST({col} AS {self.pick(['BIGINT', 'INT', 'BIGINT UNSIGNED', 'SMALLINT'])})", None
        if fam == "float":
            r = self.rng.random()
            if r < 0.6:
                return "f64", "f64"
            if r < 0.8:
                op = self.pick(["+", "-", "*", "/", "%"])
                return f"(f64 {op} {self.pick(['2', '0.5', '0', '-1', '3.0', '1e300', 'i32'])})", "f64"
            if r < 0.88:
                return "-f64", None
            if r < 0.95:
                return f"CAST({self.pick(INT_COLS)} AS {self.pick(['DOUBLE', 'FLOAT'])})", None
            return f"({self.pick(INT_COLS)} {self.pick(['*', '+', '/'])} {self.pick(['1.5', '0.0', '-2.0', 'f64'])})", None
        if fam == "str":
            r = self.rng.random()
            if r < 0.55:
                return "s", "s"
            if r < 0.75:
                return "cat", "cat"
            if r < 0.85:
                return f"{self.pick(['lower', 'upper'])}({self.pick(STR_COLS)})", None
            if r < 0.93:
                return f"(s || {self.string_literal()})", None
            return f"CAST({self.pick(['i32', 'u32', 'd'])} AS STRING)", None
        if fam == "bool":
            return "b", "b"
        if fam == "date":
            if self.chance(0.9):
                return "d", "d"
            return f"CAST({self.pick(['ts', 'tsz'])} AS DATE)", None
        if fam == "ts":
            if self.chance(0.9):
                return "ts", "ts"
            return "CAST(d AS TIMESTAMP)", None
        if fam == "tsz":
            return "tsz", "tsz"
        raise AssertionError(fam)

    FAMILIES = [(4, "int"), (3, "float"), (3, "str"), (1, "bool"), (1.2, "date"), (1.2, "ts"), (1, "tsz")]

    def family(self) -> str:
        return self.weighted([(w, f) for w, f in self.FAMILIES])

    def lit_family(self, fam: str) -> str:
        return "date" if fam == "date" else fam

    # -- leaves ----------------------------------------------------------------------------

    def comparison(self) -> str:
        fam = self.family()
        left, col = self.value(fam)
        op = self.pick(CMP_OPS if fam != "bool" else ["=", "!=", "<>"])
        r = self.rng.random()
        if r < 0.75:
            right = self.literal_for(fam, col)
        elif r < 0.9:
            right, _ = self.value(fam)
        else:
            right = self.literal_for(fam, col)
            left, right = right, left
        if fam == "int" and col and self.chance(0.08):  # literal arithmetic facing a column
            right = f"{self.int_literal(col)} {self.pick(['+', '-', '*'])} {self.rng.randint(0, 3)}"
        return f"{left} {op} {right}"

    def in_list(self) -> str:
        fam = self.family()
        if fam == "bool":
            fam = "int"
        left, col = self.value(fam)
        n = self.rng.randint(1, 4)
        items = [self.literal_for(fam, col) for _ in range(n)]
        if self.chance(0.3):
            items.insert(self.rng.randint(0, len(items)), "NULL")
        neg = self.pick(["", "NOT "])
        return f"{left} {neg}IN ({', '.join(items)})"

    def between(self) -> str:
        fam = self.family()
        if fam == "bool":
            fam = "float"
        left, col = self.value(fam)
        lo, hi = self.literal_for(fam, col), self.literal_for(fam, col)
        neg = self.pick(["", "NOT "])
        return f"{left} {neg}BETWEEN {lo} AND {hi}"

    def like_pattern(self) -> str:
        base = self.pick(STRINGS + CATEGORIES + ["abc", "ab", "Äb"])
        r = self.rng.random()
        chars = list(base)
        if r < 0.25 and chars:
            k = self.rng.randint(0, len(chars))
            p = "".join(chars[:k]) + "%"
        elif r < 0.45 and chars:
            k = self.rng.randint(0, len(chars))
            p = "%" + "".join(chars[k:])
        elif r < 0.6 and chars:
            i = self.rng.randrange(len(chars))
            chars[i] = "_"
            p = "".join(chars)
        elif r < 0.7 and chars:
            i = self.rng.randrange(len(chars))
            p = "%" + "".join(chars[i:i + 2]) + "%"
        elif r < 0.82:
            p = self.pick(["%\\%", "%\\%%", "%\\_%", "\\_%", "a\\_c", "a\\%c", "%\\\\%", "a\\\\b",
                           "%\\\\", "50\\%", "a\\bc", "\\a%", "%.%", "a.c", "a*c", "(x)", "%)"])
        elif r < 0.9:
            p = self.pick(["%", "_", "__", "___", "", "%_%", "_%_", "%%"])
        else:
            p = base
        if self.chance(0.3):
            p = p.upper() if self.chance(0.5) else p.lower()
        return sql_string(p)

    def like(self) -> str:
        if self.chance(0.85):
            left = self.pick(["s", "s", "s", "cat"])
        else:
            left, _ = self.value("str")
        op = self.pick(["LIKE", "ILIKE", "NOT LIKE", "NOT ILIKE", "LIKE", "ILIKE"])
        pat = self.like_pattern() if self.chance(0.97) else "NULL"
        if self.chance(0.03):
            return f"{left} {op} {pat} ESCAPE {self.pick([chr(39) + '!' + chr(39), chr(39) + chr(92) + chr(39)])}"
        if self.chance(0.1):
            return f"NOT ({left} {op} {pat})"
        return f"{left} {op} {pat}"

    def is_null(self) -> str:
        r = self.rng.random()
        if r < 0.6:
            target = self.pick([f.name for f in SCHEMA if f.name != "id"])
        elif r < 0.9:
            target, _ = self.value(self.family())
        else:
            target = f"({self.comparison()})"
        return f"{target} IS {self.pick(['', 'NOT '])}NULL"

    def is_bool(self) -> str:
        target = "b" if self.chance(0.6) else f"({self.pick([self.comparison, self.like, self.in_list])()})"
        if self.chance(0.03):
            target = self.pick(["i32", "s"])  # not a boolean: pylance refuses
        return f"{target} IS {self.pick(['', 'NOT '])}{self.pick(['TRUE', 'FALSE'])}"

    def boolean(self) -> str:
        return self.pick(["b", "NOT b", "b = TRUE", "b = FALSE", "b != TRUE", "b IN (TRUE)",
                          "b IN (FALSE, NULL)", f"(b) = ({self.comparison()})"])

    def regexp(self) -> str:
        pat = self.pick(["^a", "b", "c$", "^$", "a.c", "^[aA]", "[%_]", "ä", "^日", "\\.", "x|y", "^(a|b)c?",
                         "e$", "[0-9]", "^.{3}$"])
        fn = self.pick(["regexp_match", "regexp_like"])
        flags = f", '{self.pick(['i', 'i', 's'])}'" if self.chance(0.25) else ""
        return f"{fn}({self.pick(['s', 's', 'cat'])}, {sql_string(pat)}{flags})"

    def array(self) -> str:
        return self.pick([f"array_has(li, {self.rng.randint(-1, 7)})", f"array_contains(li, {self.rng.randint(0, 5)})",
                          "li IS NULL", "li IS NOT NULL", "array_has(li, NULL)",
                          f"{self.pick(['array_length', 'list_length'])}(li) {self.pick(CMP_OPS)} {self.rng.randint(0, 3)}",
                          f"{self.pick(['array_empty', 'empty'])}(li)"])

    def constant(self) -> str:
        return self.pick(["TRUE", "FALSE", "NULL IS NULL", "NULL IS NOT NULL", "1 = 1", "1 = 0", "NULL = 1",
                          "NOT NULL", "1 < 2 AND NULL", "NULL OR TRUE"])

    def leaf(self) -> str:
        f = self.weighted([
            (10, self.comparison),
            (3, self.in_list),
            (2.5, self.between),
            (3, self.like),
            (2, self.is_null),
            (1.5, self.is_bool),
            (1, self.boolean),
            (0.6, self.regexp),
            (0.5, self.array),
            (0.3, self.constant),
        ])
        return f()

    def predicate(self, depth: int = 0) -> str:
        if depth >= 3 or self.chance(0.35 + 0.2 * depth):
            return self.leaf()
        r = self.rng.random()
        if r < 0.38:
            return f"({self.predicate(depth + 1)}) AND ({self.predicate(depth + 1)})"
        if r < 0.72:
            return f"({self.predicate(depth + 1)}) OR ({self.predicate(depth + 1)})"
        if r < 0.85:
            return f"NOT ({self.predicate(depth + 1)})"
        # Unparenthesised chains: AND binds tighter than OR, NOT tighter than both.
        a, b, c = self.leaf(), self.leaf(), self.leaf()
        return self.pick([f"{a} AND {b} OR {c}", f"{a} OR {b} AND {c}", f"NOT {a} AND {b}", f"{a} AND NOT {b}"])

    def filters(self, n: int) -> List[str]:
        return [self.predicate() for _ in range(n)]


# --------------------------------------------------------------------------------------------
# Running a filter on both implementations
# --------------------------------------------------------------------------------------------


def canonical(table: pa.Table, sort_by: str = "id") -> pa.Table:
    """`table` sorted by `sort_by`, one chunk per column, dictionaries decoded, floats as their
    bit patterns (so NaN equals NaN and -0.0 differs from 0.0 when tables are compared with
    ``equals``)."""
    import pyarrow.compute as pc

    if sort_by in table.column_names and table.num_rows:
        table = table.take(pc.sort_indices(table, [(sort_by, "ascending")]))
    cols = []
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if pa.types.is_floating(col.type):
            col = col.view(pa.int64() if col.type == pa.float64() else pa.int32())
        cols.append(col)
    return pa.table(cols, names=table.column_names)


#: The scalar indices of the indexed runs, one per column kind the planner reads: built by
#: lancepy or by pylance on every fragment but the last.
INDICES = [("id", "BTREE"), ("i32", "BTREE"), ("i64", "BTREE"), ("u32", "BTREE"), ("f64", "BTREE"),
           ("d", "BTREE"), ("ts", "BTREE"), ("s", "BTREE"), ("b", "BITMAP"), ("tsz", "BITMAP"),
           ("li", "LABEL_LIST")]
#: Kinds only pylance builds (lancepy scans past them): on pylance's indexed dataset too.
PYLANCE_ONLY_INDICES = [("i64", "ZONEMAP"), ("u32", "BLOOMFILTER"), ("s", "NGRAM")]
#: Rows deleted after the indices were built (some of them indexed rows).
AFTER_INDEX_DELETE = "id % 11 = 5"


def write_indexed_dataset(uri: str, builder: str, seed: int = 0) -> str:
    """The grammar's rows written by `builder` (``"lancepy"`` or ``"pylance"``): every
    fragment but the last, rows deleted, the `INDICES` built (and, by pylance, the
    `PYLANCE_ONLY_INDICES`); then the last fragment appended (no index covers it) and
    `AFTER_INDEX_DELETE` rows deleted."""
    import lancepy

    if builder == "lancepy":
        lib = lancepy
    else:
        import lance as lib
    tables = make_fragments(seed)
    for k, t in enumerate(tables[:-1]):
        lib.write_dataset(t, uri, mode="create" if k == 0 else "append")
    lib.dataset(uri).delete(DELETE_PREDICATE)
    specs = INDICES + (PYLANCE_ONLY_INDICES if builder == "pylance" else [])
    for column, kind in specs:
        lib.dataset(uri).create_scalar_index(column, kind, name=f"{column}_{kind.lower()}")
    lib.write_dataset(tables[-1], uri, mode="append")
    lib.dataset(uri).delete(AFTER_INDEX_DELETE)
    return uri


class Unindexed:
    """A pylance dataset that answers filters by scanning (``use_scalar_index=False``): the
    oracle of indexed runs, as pylance's own index plans give other rows than its scan for
    some filters (e.g. ``NOT (b IS TRUE)`` over a BITMAP index leaves out the NULLs)."""

    def __init__(self, dataset) -> None:
        self.dataset = dataset

    def to_table(self, filter: str):
        return self.dataset.to_table(filter=filter, use_scalar_index=False)


class Outcome:
    COMPARED = "compared"  # both answered the same
    WRONG = "wrong"  # both answered, differently
    REFUSED = "refused"  # lancepy raised where pylance answered
    THEIRS_REFUSED = "theirs_refused"  # pylance raised: not compared


def theirs_answer(theirs, flt: str):
    """pylance's ``(to_table(filter=flt), its row count)``, or the exception it raised.

    (lancepy's ``count_rows(flt)`` is held to the rows pylance returns: asking pylance's
    ``count_rows`` as well would double the oracle's time for the same number.)"""
    try:
        t = theirs.to_table(filter=flt)
        return t, t.num_rows
    except Exception as e:  # pylance refuses the filter: nothing to compare
        return e


def compare_answers(ours, flt: str, want) -> tuple:
    """(outcome, detail) of lancepy's answer to `flt` against pylance's (`theirs_answer`).

    lancepy raising anything but one of its own errors is a crash, counted as wrong."""
    from lancepy.exceptions import LanceError

    if isinstance(want, BaseException):
        text = str(want).splitlines()[0][:200] if str(want) else ""
        return Outcome.THEIRS_REFUSED, f"{type(want).__name__}: {text}"
    want_table, want_n = want
    try:
        got = ours.to_table(filter=flt)
        got_n = ours.count_rows(flt)
    except LanceError as e:
        return Outcome.REFUSED, f"{type(e).__name__}: {e}"
    except Exception as e:
        return Outcome.WRONG, f"lancepy crashed: {type(e).__name__}: {e}"
    a, b = canonical(got), canonical(want_table)
    if a.equals(b) and got_n == want_n == want_table.num_rows:
        return Outcome.COMPARED, ""
    ids_got = set(got.column("id").to_pylist()) if "id" in got.column_names else set()
    ids_want = set(want_table.column("id").to_pylist()) if "id" in want_table.column_names else set()
    return Outcome.WRONG, (f"count {got_n} vs {want_n}; rows only in lancepy {sorted(ids_got - ids_want)[:8]}, "
                           f"only in pylance {sorted(ids_want - ids_got)[:8]}; schemas equal {got.schema.equals(want_table.schema)}")


def run_filter(ours, theirs, flt: str) -> tuple:
    """(outcome, detail) of `to_table(filter=flt)` and `count_rows(flt)` on both datasets."""
    return compare_answers(ours, flt, theirs_answer(theirs, flt))


def compare_filters(ours, theirs, filters) -> tuple:
    """(Counter of outcomes, [(outcome, filter, detail)] of the wrong and refused ones).

    pylance's answers are computed on a second thread while lancepy answers on this one."""
    counts: collections.Counter = collections.Counter()
    bad = []
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answers = pool.map(lambda f: theirs_answer(theirs, f), filters)
        for flt, want in zip(filters, answers):
            outcome, detail = compare_answers(ours, flt, want)
            counts[outcome] += 1
            if outcome in (Outcome.WRONG, Outcome.REFUSED):
                bad.append((outcome, flt, detail))
    return counts, bad
