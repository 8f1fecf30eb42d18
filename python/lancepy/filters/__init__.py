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
``regexp_match`` (true where it matches), ``array_has``/``array_contains``, ``array_has_any``,
``array_has_all``, ``array_length``/``list_length`` (of the outer list) and ``array_empty``/``empty``. Anything else raises
:class:`~lancepy.exceptions.NotSupportedError` naming the construct, and a filter pylance
refuses (a literal that does not fit its column, comparing a string with a boolean, ...) raises
:class:`~lancepy.exceptions.InvalidArgumentError` where lancepy cannot give it a meaning.

Compiled filters are cached by (text, schema); :func:`evaluate` runs an expression over a table.

Layout of the package (each module imports only from those above it in this list, plus
``lancepy.exceptions`` and third-party modules; nothing else in lancepy):

* ``parsing``: the sqlglot dialect, :func:`parse_sql`, node classes → operator names, ``_Sql``.
* ``udfs``: the numpy compute functions Arrow lacks, registered as Arrow UDFs.
* ``typed``: ``_V`` (a typed sub-expression), type predicates and common types, ``_call``.
* ``casts``: literal coercion to a column's type, date / timestamp text, CAST, SQL type names.
* ``patterns``: LIKE → regular expression, regular-expression checks.
* ``simplify``: pylance's rewrites of condition trees (NOT pushdown, TRUE / FALSE, IN lists);
  it names ``_Translator`` in one annotation, imported only under ``TYPE_CHECKING``.
* ``compare``, ``functions``: the translator's comparisons / other node kinds (mixins).
* ``translate``: ``_Translator`` (dispatch, leaves, AND / OR / NOT).
* ``api``: :class:`Filter`, :func:`compile_filter`, :func:`compile_expression`,
  :func:`compile_node`, :func:`evaluate`.

This ``__init__`` only re-exports.
"""

from __future__ import annotations

from lancepy.filters.api import Filter, FilterLike, compile_expression, compile_filter, compile_node, evaluate
from lancepy.filters.parsing import dialect, parse_sql
from lancepy.filters.translate import _Translator

__all__ = ["Filter", "compile_filter", "compile_expression", "compile_node", "parse_sql", "dialect", "evaluate"]
