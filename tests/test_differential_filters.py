"""lancepy's SQL filters give pylance's rows: a seeded differential test, and one regression
test per bug it found.

The differential part runs ``FILTERS_PER_SEED`` random filters per seed (``tests/filter_grammar.py``
builds them: comparisons, arithmetic, casts, IN / NOT IN with and without NULL, BETWEEN, LIKE /
ILIKE, IS [NOT] NULL / TRUE / FALSE, temporal literals, regexp and list functions, AND / OR / NOT
three deep) over one dataset written once per module (four appends, rows deleted, every column
type the grammar knows), and compares ``to_table(filter=f)`` (sorted by ``id``, floats bit for
bit) with pylance's on the same directory, and ``count_rows(f)`` with the number of rows
pylance returns. A filter pylance refuses is
not compared; one lancepy refuses while pylance answers counts as *refused*. Every seed asserts
no wrong answer and at most 1% refused, and prints its counts. Smaller runs check
``scanner(filter=).to_batches()``, ``delete(filter)`` and ``update(where=)`` (on copies of the
dataset, each implementation changing its own), and the data as pylance writes it.

``benches/diff_filters.py`` runs the same comparison at any count.
"""

from __future__ import annotations

import collections
import math
import os
import shutil
import sys

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError, LanceError, NotSupportedError

sys.path.insert(0, os.path.dirname(__file__))
import filter_grammar as grammar  # noqa: E402

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
pytestmark = pytest.mark.interop

SEEDS = list(range(20))
FILTERS_PER_SEED = 400  # 20 x 400 = 8,000 filters per run (benches/diff_filters.py runs more, any seed)
MAX_REFUSED = 0.01


def write_dataset(uri: str, writer: str, seed: int = 0) -> str:
    """The grammar's rows in `grammar.FRAGMENTS` appends, then some deleted, by `writer`."""
    for k, t in enumerate(grammar.make_fragments(seed)):
        mode = "create" if k == 0 else "append"
        if writer == "lancepy":
            lancepy.write_dataset(t, uri, mode=mode)
        else:
            lance.write_dataset(t, uri, mode=mode)
    (lancepy.dataset(uri) if writer == "lancepy" else lance.dataset(uri)).delete(grammar.DELETE_PREDICATE)
    return uri


@pytest.fixture(scope="module")
def uri(tmp_path_factory) -> str:
    return write_dataset(str(tmp_path_factory.mktemp("difffilters") / "lancepy.lance"), "lancepy")


@pytest.fixture(scope="module")
def pylance_uri(tmp_path_factory) -> str:
    return write_dataset(str(tmp_path_factory.mktemp("difffilters") / "pylance.lance"), "pylance")


def check(counts, bad, label) -> None:
    print(f"{label}: {dict(counts)}")
    wrong = [b for b in bad if b[0] == grammar.Outcome.WRONG]
    refused = [b for b in bad if b[0] == grammar.Outcome.REFUSED]
    assert not wrong, f"{len(wrong)} filters answered differently from pylance, e.g.\n" + "\n".join(
        f"  {f!r}: {d}" for _, f, d in wrong[:10])
    answered = counts[grammar.Outcome.COMPARED] + len(refused)
    assert len(refused) <= MAX_REFUSED * answered, f"{len(refused)} of {answered} filters refused, e.g.\n" + "\n".join(
        f"  {f!r}: {d}" for _, f, d in refused[:10])


@pytest.mark.parametrize("seed", SEEDS)
def test_random_filters_match_pylance(uri, seed) -> None:
    filters = grammar.FilterGenerator(seed).filters(FILTERS_PER_SEED)
    counts, bad = grammar.compare_filters(lancepy.dataset(uri), lance.dataset(uri), filters)
    assert sum(counts.values()) == FILTERS_PER_SEED
    # Most filters must be comparable, or the test checks little.
    assert counts[grammar.Outcome.COMPARED] >= 0.8 * FILTERS_PER_SEED, dict(counts)
    check(counts, bad, f"seed {seed}")


@pytest.mark.parametrize("seed", [1000])
def test_random_filters_on_data_pylance_wrote(pylance_uri, seed) -> None:
    filters = grammar.FilterGenerator(seed).filters(FILTERS_PER_SEED)
    counts, bad = grammar.compare_filters(lancepy.dataset(pylance_uri), lance.dataset(pylance_uri), filters)
    assert counts[grammar.Outcome.COMPARED] >= 0.8 * FILTERS_PER_SEED, dict(counts)
    check(counts, bad, f"pylance-written, seed {seed}")


def test_random_filters_streamed_in_batches(uri) -> None:
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    counts: collections.Counter = collections.Counter()
    bad = []
    for flt in grammar.FilterGenerator(2000).filters(120):
        try:
            want = theirs.scanner(filter=flt).to_table()
        except Exception:
            counts[grammar.Outcome.THEIRS_REFUSED] += 1
            continue
        try:
            batches = list(ours.scanner(filter=flt, batch_size=37).to_batches())
        except LanceError as e:
            counts[grammar.Outcome.REFUSED] += 1
            bad.append((grammar.Outcome.REFUSED, flt, str(e)))
            continue
        got = pa.Table.from_batches(batches, schema=want.schema) if batches else want.schema.empty_table()
        if grammar.canonical(got).equals(grammar.canonical(want)):
            counts[grammar.Outcome.COMPARED] += 1
        else:
            counts[grammar.Outcome.WRONG] += 1
            bad.append((grammar.Outcome.WRONG, flt, f"{got.num_rows} rows vs {want.num_rows}"))
    assert counts[grammar.Outcome.COMPARED] >= 90, dict(counts)
    check(counts, bad, "to_batches")


def _mutations(tmp_path, uri, seed, n, mutate) -> None:
    """Runs `mutate(dataset, filter)` with each implementation on its own copy of `uri`, for
    `n` random filters, and compares the datasets afterwards (as pylance reads them both)."""
    counts: collections.Counter = collections.Counter()
    bad = []
    for i, flt in enumerate(grammar.FilterGenerator(seed).filters(n)):
        ours_uri, theirs_uri = str(tmp_path / f"ours{i}.lance"), str(tmp_path / f"theirs{i}.lance")
        shutil.copytree(uri, ours_uri)
        shutil.copytree(uri, theirs_uri)
        try:
            mutate(lance.dataset(theirs_uri), flt)
        except Exception:
            counts[grammar.Outcome.THEIRS_REFUSED] += 1
            continue
        try:
            mutate(lancepy.dataset(ours_uri), flt)
        except LanceError as e:
            counts[grammar.Outcome.REFUSED] += 1
            bad.append((grammar.Outcome.REFUSED, flt, str(e)))
            continue
        want = grammar.canonical(lance.dataset(theirs_uri).to_table())
        got = grammar.canonical(lance.dataset(ours_uri).to_table())
        mine = grammar.canonical(lancepy.dataset(ours_uri).to_table())
        if got.equals(want) and mine.equals(want):
            counts[grammar.Outcome.COMPARED] += 1
        else:
            counts[grammar.Outcome.WRONG] += 1
            bad.append((grammar.Outcome.WRONG, flt, f"{got.num_rows} rows vs {want.num_rows}"))
        shutil.rmtree(ours_uri)
        shutil.rmtree(theirs_uri)
    assert counts[grammar.Outcome.COMPARED] >= 0.7 * n, dict(counts)
    check(counts, bad, mutate.__name__)


def test_random_filters_delete(tmp_path, uri) -> None:
    def delete(ds, flt):
        ds.delete(flt)

    _mutations(tmp_path, uri, 3000, 50, delete)


def test_random_filters_update(tmp_path, uri) -> None:
    def update(ds, flt):
        ds.update({"s": "'updated'", "i64": "i64 + 1"}, where=flt)

    _mutations(tmp_path, uri, 4000, 50, update)


# --------------------------------------------------------------------------------------------
# Regression tests: one per bug the differential test (or the issue) found. Each checks the
# rows lancepy returns against the expected ids and against pylance's on a small table.
# --------------------------------------------------------------------------------------------

ROWS = {
    "id": pa.array(list(range(12)), pa.int64()),
    "i": pa.array([1, None, -3, 0, 5, 2**31 - 1, -(2**31), 7, None, 2, 3, 4], pa.int32()),
    "l": pa.array([1, None, -3, 0, 5, 2**62, -(2**63), 7, None, 2, 3, 4], pa.int64()),
    "u": pa.array([1, None, 3, 0, 5, 2**32 - 1, 0, 7, None, 2, 3, 4], pa.uint32()),
    "f": pa.array([1.5, None, math.nan, 0.0, -0.0, math.inf, -math.inf, 7.0, None, 2.0, -3.25, 1e300]),
    "s": pa.array(["abc", None, "a%c", "a_c", "ÄBC", "äbc", "", "ABC", None, "x\\y", "ß", "straße"]),
    "b": pa.array([True, None, False, True, False, None, True, False, True, None, False, True]),
    "d": pa.array([None if k % 5 == 0 else 10957 + k for k in range(12)], pa.int32()).cast(pa.date32()),
    "ts": pa.array([None if k % 5 == 0 else 946684800_000000 + k * 3600_000000 for k in range(12)], pa.int64()).cast(
        pa.timestamp("us")),
    "tz": pa.array([None if k % 5 == 0 else 946684800_000000 + k * 3600_000000 for k in range(12)], pa.int64()).cast(
        pa.timestamp("us", tz="UTC")),
    "li": pa.array([[1, 2], None, [], [3], [1], None, [2, 2], [5], [], [1, 3], None, [0]], pa.list_(pa.int64())),
}


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> str:
    u = str(tmp_path_factory.mktemp("filters") / "small.lance")
    table = pa.table(ROWS)
    lancepy.write_dataset(table.slice(0, 6), u)
    lancepy.write_dataset(table.slice(6), u, mode="append")
    return u


def ids(small_uri, flt, impl=None):
    ds = (impl or lancepy).dataset(small_uri)
    return sorted(ds.to_table(filter=flt, columns=["id"]).column("id").to_pylist())


def same(small_uri, flt, expected) -> None:
    """lancepy returns `expected` for `flt`, and so does pylance."""
    assert ids(small_uri, flt, lance) == expected, f"pylance: {flt}"
    assert ids(small_uri, flt) == expected, flt
    assert lancepy.dataset(small_uri).count_rows(flt) == len(expected), flt


def test_not_like_is_not_like(small) -> None:
    same(small, "s LIKE 'a%'", [0, 2, 3])
    same(small, "s NOT LIKE 'a%'", [4, 5, 6, 7, 9, 10, 11])
    same(small, "NOT (s LIKE 'a%')", [4, 5, 6, 7, 9, 10, 11])
    same(small, "s NOT ILIKE 'a%'", [4, 5, 6, 9, 10, 11])
    same(small, "NOT s NOT LIKE 'a%'", [0, 2, 3])


def test_not_in_excludes_nulls(small) -> None:
    same(small, "i NOT IN (1, 2)", [2, 3, 4, 5, 6, 7, 10, 11])  # NULL NOT IN (..) is NULL
    same(small, "i NOT IN (1, NULL)", [])  # never true
    same(small, "NOT (i IN (1, NULL))", [])
    same(small, "s NOT IN ('abc', NULL)", [])


def test_in_list_with_null_is_null_unless_matched(small) -> None:
    same(small, "i IN (1, NULL)", [0])
    same(small, "(i IN (1, NULL)) IS NULL", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    same(small, "i IN (NULL)", [])


def test_not_propagates_null(small) -> None:
    same(small, "NOT (i > 2)", [0, 2, 3, 6, 9])
    same(small, "NOT (b AND i > 0)", [2, 3, 4, 6, 7, 10])  # NULL AND TRUE is NULL: not returned
    same(small, "NOT (b OR i > 100)", [2, 4, 7, 10])
    same(small, "NOT NULL", [])
    same(small, "NOT (NOT NULL)", [])


def test_not_between(small) -> None:
    same(small, "i NOT BETWEEN 1 AND 5", [2, 3, 5, 6, 7])
    same(small, "i NOT BETWEEN NULL AND 5", [5, 7])  # i > 5 is still true
    same(small, "f NOT BETWEEN 0 AND 1e308", [2, 5, 6, 10])  # NaN is above every number


def test_is_true_false_on_any_condition(small) -> None:
    same(small, "b IS TRUE", [0, 3, 6, 8, 11])
    same(small, "b IS NOT TRUE", [1, 2, 4, 5, 7, 9, 10])
    same(small, "b IS FALSE", [2, 4, 7, 10])
    same(small, "b IS NOT FALSE", [0, 1, 3, 5, 6, 8, 9, 11])
    same(small, "(i > 0) IS TRUE", [0, 4, 5, 7, 9, 10, 11])  # raised AttributeError before
    same(small, "(i > 0) IS NOT FALSE", [0, 1, 4, 5, 7, 8, 9, 10, 11])
    with pytest.raises(InvalidArgumentError):
        ids(small, "i IS TRUE")  # pylance refuses too: not a boolean


def test_timestamp_and_date_literals(small) -> None:
    same(small, "ts = timestamp '2000-01-01 01:00:00'", [1])
    same(small, "ts = TIMESTAMP '2000-01-01T01:00:00'", [1])
    same(small, "ts = timestamp '2000-01-01 03:00:00+02:00'", [1])  # the offset is applied
    same(small, "tz = timestamp '2000-01-01 01:00:00'", [1])
    same(small, "tz IN (timestamp '2000-01-01 01:00:00', timestamp '2000-01-01 02:00:00')", [1, 2])
    same(small, "ts > CAST('2000-01-01 08:00:00' AS TIMESTAMP)", [9, 11])
    same(small, "ts = timestamp(0) '2000-01-01 01:00:00'", [1])
    same(small, "d = date '2000-01-02'", [1])
    same(small, "d BETWEEN date '2000-01-02' AND date '2000-01-04'", [1, 2, 3])
    same(small, "CAST(ts AS DATE) = date '2000-01-01'", [1, 2, 3, 4, 6, 7, 8, 9, 11])
    same(small, "NOT (d = '2000-01-02')", [2, 3, 4, 6, 7, 8, 9, 11])  # the string is read as a date
    with pytest.raises(NotSupportedError, match="TIME ZONE"):
        ids(small, "tz = TIMESTAMP WITH TIME ZONE '2000-01-01 01:00:00'")  # pylance refuses


def test_floats_compare_in_total_order(small) -> None:
    same(small, "f > 1e308", [2, 5])  # NaN is above +inf
    same(small, "f = f", [0, 2, 3, 4, 5, 6, 7, 9, 10, 11])  # NaN equals NaN
    same(small, "f - f < 0", [5, 6])  # inf - inf is a negative NaN, below every number
    same(small, "f = CAST('NaN' AS DOUBLE)", [2])
    same(small, "f = -f", [])  # 0.0 and -0.0 differ (no zero constant)


def test_signed_zero_against_a_zero_constant(small) -> None:
    same(small, "f = 0", [3, 4])
    same(small, "f = -0.0", [3, 4])
    same(small, "f < 0", [6, 10])
    same(small, "f >= 0", [0, 2, 3, 4, 5, 7, 9, 11])
    same(small, "f IN (0.0, 1.5)", [0, 3, 4])
    same(small, "f * 0 = 0", [0, 3, 4, 7, 9, 10, 11])


def test_integer_arithmetic_wraps(small) -> None:
    same(small, "i + i < 0", [2, 5])  # INT + INT wraps in 32 bits
    same(small, "i * 2 < 0", [2, 6])  # INT * BIGINT is BIGINT
    same(small, "u * u = 1", [0, 5])  # UINT wraps
    same(small, "u - 1 < 0", [3, 6])  # UINT - BIGINT is BIGINT
    same(small, "i = 2147483647 + 1", [6])  # literals facing a column take its type
    same(small, "i > i + 1", [])  # not when a column is in the sum
    same(small, "l + 9223372036854775807 > 0", [2, 3])


def test_division_and_remainder_truncate(small) -> None:
    same(small, "i / 2 = 0", [0, 3])
    same(small, "i % 2 = -1", [2])
    same(small, "l % -1 = 0", [0, 2, 3, 4, 5, 6, 7, 9, 10, 11])  # MIN % -1 is 0
    same(small, "f % 2 = 1.5", [0])
    with pytest.raises(InvalidArgumentError):
        ids(small, "i / 0 = 1")


def test_literal_typing_at_the_top_and_under_not(small) -> None:
    same(small, "NOT (i = 1.5)", [0, 2, 3, 4, 5, 6, 7, 9, 10, 11])  # compared as DOUBLE
    same(small, "NOT (i > 3000000000)", [0, 2, 3, 4, 5, 6, 7, 9, 10, 11])
    same(small, "NOT (u > -1)", [])
    same(small, "NOT (i IN (1, '2'))", [2, 3, 4, 5, 6, 7, 10, 11])
    # -9223372036854775808 is a DOUBLE (pylance reads the digits first, then negates).
    same(small, "NOT (l = -9223372036854775808)", [0, 2, 3, 4, 5, 7, 9, 10, 11])


def test_like_escapes(small) -> None:
    same(small, "s LIKE 'a\\%c'", [2])
    same(small, "s LIKE 'a\\_c'", [3])
    same(small, "s LIKE 'a_c'", [0, 2, 3])
    same(small, "s LIKE '%\\\\%'", [9])  # an escaped backslash
    same(small, "s LIKE 'x\\y'", [])  # \y is y
    same(small, "s LIKE 'x\\\\y'", [9])
    same(small, "s LIKE 'a\\%c' ESCAPE '\\'", [2])
    same(small, "s LIKE '_'", [10])  # one character, not one byte
    same(small, "s LIKE '%' ESCAPE '!'", [0, 2, 3, 4, 5, 6, 7, 9, 10, 11])
    with pytest.raises(NotSupportedError, match="ESCAPE"):
        ids(small, "s LIKE 'a!%c' ESCAPE '!'")  # pylance refuses too


def test_ilike_and_case_functions_follow_unicode(small) -> None:
    same(small, "s ILIKE 'äBC'", [4, 5])
    same(small, "s ILIKE 'STRASSE'", [])
    same(small, "upper(s) = 'STRASSE'", [11])  # full case mapping, as Rust's
    same(small, "lower(s) = 'äbc'", [4, 5])


def test_struct_fields_by_subscript(tmp_path) -> None:
    u = str(tmp_path / "st.lance")
    lancepy.write_dataset(pa.table({"id": [0, 1, 2], "st": [{"a": 1, "b": "x"}, None, {"a": 3, "b": None}]}), u)
    same(u, "st['a'] = 1", [0])
    same(u, "st.a > 0", [0, 2])
    same(u, "ST.a > 0", [0, 2])  # column names resolve ignoring case
    same(u, "st['b'] IS NULL", [1, 2])


def test_backslash_and_double_quotes_in_strings(small) -> None:
    same(small, "s = 'x\\y'", [9])  # a backslash is not a string escape
    same(small, 's = "abc"', [0])  # double quotes quote strings
    same(small, "s = 'it''s' OR s = 'abc'", [0])


def test_in_lists_merged_as_pylance_merges_them(small) -> None:
    same(small, "i IN (1, 2) AND i NOT IN (2, NULL)", [0])
    same(small, "(i = 1 OR i = 2) AND i NOT IN (2, NULL)", [0])
    same(small, "NOT (i IN (1) AND i NOT IN (1))", list(range(12)))
    same(small, "NOT (i IN (21, 1.5) AND i IN (-10, 62))", [0, 2, 3, 4, 5, 6, 7, 9, 10, 11])
    same(small, "f NOT IN (-0.0, NULL) AND f IN (7, 0.0)", [7])
    # A comparison with a zero constant is the list (-0.0, 0.0), merged like the others.
    same(small, "(f NOT IN (1.0, -1, NULL, 1e300)) OR (f <> 0)", list(range(12)))
    same(small, "NOT ((f = -0.0) AND (f IN (3, 0.5, -2.25)))", list(range(12)))


def test_unsigned_bigint_meets_signed_exactly(small) -> None:
    same(small, "CAST(u AS BIGINT UNSIGNED) > -10", [0, 2, 3, 4, 5, 6, 7, 9, 10, 11])
    same(small, "l <= CAST(u AS BIGINT UNSIGNED)", [0, 2, 3, 4, 6, 7, 9, 10, 11])
    same(small, "CAST(l AS BIGINT UNSIGNED) > 0", [0, 4, 5, 7, 9, 10, 11])  # the cast is unwrapped


def test_dates_meet_integers_as_days(small) -> None:
    same(small, "NOT (d = 10958)", [2, 3, 4, 6, 7, 8, 9, 11])
    same(small, "NOT (l > date '2000-01-02')", [0, 2, 3, 4, 6, 7, 9, 10, 11])
    same(small, "CAST(u AS INT) != DATE '2000-01-01'", [0, 2, 3, 4, 5, 6, 7, 9, 10, 11])  # the cast is unwrapped


def test_regexp_and_list_functions(small) -> None:
    same(small, "regexp_match(s, '^a')", [0, 2, 3])
    same(small, "NOT regexp_match(s, '^a')", [1, 4, 5, 6, 7, 8, 9, 10, 11])  # no match counts as false
    same(small, "regexp_like(s, '^A', 'i')", [0, 2, 3, 7])
    same(small, "NOT regexp_like(s, '^a')", [4, 5, 6, 7, 9, 10, 11])
    same(small, "array_has(li, 1)", [0, 4, 9])
    same(small, "NOT array_has(li, 1)", [2, 3, 6, 7, 8, 11])
    same(small, "li IS NULL", [1, 5, 10])


def test_constant_branches_are_pruned_like_pylance(small) -> None:
    same(small, "(s LIKE 'a\\_c' ESCAPE '!') OR NULL IS NULL", list(range(12)))
    same(small, "FALSE AND (s LIKE 'a_%' ESCAPE '!')", [])
    same(small, "(s LIKE '_%_' ESCAPE '!') AND (NULL IS NOT NULL)", [])  # NOT of a folded constant
    same(small, "(s LIKE '_%_' ESCAPE '!') OR NOT (1 = 0)", list(range(12)))


def test_hex_literals_compare_as_bytes(small) -> None:
    same(small, "NOT (s = X'616263')", [2, 3, 4, 5, 6, 7, 9, 10, 11])  # pylance refuses it at the top
    same(small, "NOT (s = 0x616263)", [2, 3, 4, 5, 6, 7, 9, 10, 11])
    same(small, "NOT (s > X'61')", [6, 7])  # bytewise
    same(small, "NOT (s IN (X'616263', 'x'))", [2, 3, 4, 5, 6, 7, 9, 10, 11])


def test_null_only_in_list_and_null_comparisons_fold(small) -> None:
    same(small, "i NOT IN (NULL)", [])
    same(small, "(s <= DATE '1969-12-31') OR ((s IN (NULL)) IS NOT FALSE)", list(range(12)))  # never cast s
    same(small, "(u / 0) > NULL", [])  # the division never runs
    with pytest.raises(InvalidArgumentError):
        ids(small, "u / 0 > 1")


def test_unsupported_constructs_raise_not_supported(small) -> None:
    for flt in ["i IS DISTINCT FROM 1", "regexp_like(s, '\\d')", "CAST(i AS DECIMAL(10, 2)) = 1",
                "time '01:00:00' IS NULL"]:
        with pytest.raises(NotSupportedError):
            ids(small, flt)
