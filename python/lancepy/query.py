"""Full-text query objects (pylance's ``lance.query`` names): what a scanner's
``full_text_query=`` takes besides a string, each answered as pylance 14 answers it (see
:mod:`lancepy._ops.fts_search`)."""

from __future__ import annotations

from enum import Enum
from typing import Any, List, Optional, Tuple

from lancepy._ops.scalar_index import DocumentGranularity

__all__ = [
    "FullTextQueryType",
    "FullTextOperator",
    "DocumentGranularity",
    "Occur",
    "FullTextQuery",
    "MatchQuery",
    "PhraseQuery",
    "BoostQuery",
    "MultiMatchQuery",
    "CombinedFieldsQuery",
    "BooleanQuery",
]


class FullTextQueryType(Enum):
    MATCH = "match"
    MATCH_PHRASE = "match_phrase"
    BOOST = "boost"
    MULTI_MATCH = "multi_match"
    COMBINED_FIELDS = "combined_fields"
    BOOLEAN = "boolean"


class FullTextOperator(Enum):
    AND = "AND"
    OR = "OR"


class Occur(Enum):
    SHOULD = "SHOULD"
    MUST = "MUST"
    MUST_NOT = "MUST_NOT"


class FullTextQuery:
    """A full-text query; ``a & b`` and ``a | b`` make a :class:`BooleanQuery`."""

    def query_type(self) -> FullTextQueryType:  # pragma: no cover - every subclass names its own
        raise NotImplementedError

    def __and__(self, other: "FullTextQuery") -> "FullTextQuery":
        return BooleanQuery([(Occur.MUST, self), (Occur.MUST, other)])

    def __or__(self, other: "FullTextQuery") -> "FullTextQuery":
        return BooleanQuery([(Occur.SHOULD, self), (Occur.SHOULD, other)])


class MatchQuery(FullTextQuery):
    """Documents of `column` holding the tokens of `query`: any of them (``operator`` OR) or
    all (AND); scores multiplied by `boost`. `fuzziness` other than 0 (``None`` counts as 0, as
    in pylance 14) matches each query token as the index's tokens within that many edits of
    it that share its first `prefix_length` bytes, `max_expansions` of them at most in all."""

    def __init__(
        self,
        query: str,
        column: str,
        *,
        boost: float = 1.0,
        fuzziness: Optional[int] = 0,
        max_expansions: int = 50,
        operator: FullTextOperator = FullTextOperator.OR,
        prefix_length: int = 0,
        document_granularity: Optional[DocumentGranularity] = None,
    ) -> None:
        if not isinstance(operator, FullTextOperator):
            operator = FullTextOperator(str(operator).upper())
        self.query, self.column, self.boost = query, column, boost
        self.fuzziness, self.max_expansions, self.operator = fuzziness, max_expansions, operator
        self.prefix_length, self.document_granularity = prefix_length, document_granularity
        if document_granularity is not None and str(getattr(document_granularity, "value", document_granularity)) != "row":
            from lancepy.exceptions import NotSupportedError

            raise NotSupportedError("MatchQuery(document_granularity=list_element): lancepy indexes rows only")

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MATCH


class PhraseQuery(FullTextQuery):
    """Documents of `column` holding the tokens of `query` in order, at most `slop`
    positions apart (needs an index with ``with_position``)."""

    def __init__(
        self, query: str, column: str, *, slop: int = 0, document_granularity: Optional[DocumentGranularity] = None
    ) -> None:
        self.query, self.column, self.slop, self.document_granularity = query, column, slop, document_granularity
        if document_granularity is not None and str(getattr(document_granularity, "value", document_granularity)) != "row":
            from lancepy.exceptions import NotSupportedError

            raise NotSupportedError("PhraseQuery(document_granularity=list_element): lancepy indexes rows only")

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MATCH_PHRASE


class BoostQuery(FullTextQuery):
    """`positive`'s rows, each scoring its `positive` score less `negative_boost` times its
    `negative` score (where `negative` matches it)."""

    def __init__(self, positive: FullTextQuery, negative: FullTextQuery, *, negative_boost: float = 0.5) -> None:
        self.positive, self.negative, self.negative_boost = positive, negative, negative_boost

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.BOOST


class _ColumnsQuery(FullTextQuery):
    """A text matched over several columns, each with a weight (pylance's arguments)."""

    def __init__(
        self, query: str, columns: List[str], *, boosts: Optional[List[float]] = None,
        operator: FullTextOperator = FullTextOperator.OR,
    ) -> None:
        self.query, self.columns, self.boosts, self.operator = query, list(columns), boosts, operator


class MultiMatchQuery(_ColumnsQuery):
    """`query` matched in each of `columns` (scores weighted by `boosts`); a row scores its
    best column's score."""

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.MULTI_MATCH


class CombinedFieldsQuery(_ColumnsQuery):
    """`query` matched in `columns` taken together as one field (BM25F, as pylance 14 scores
    it): a row's term frequency and length are those of its columns added up, each times its
    column's weight in `boosts` (each at least 1; default 1); a term's document frequency is
    its largest in any one column, the document count and average length those of the
    columns' indices together. ``operator`` AND: every term in at least one column."""

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.COMBINED_FIELDS


class BooleanQuery(FullTextQuery):
    """Sub-queries combined by :class:`Occur`: rows matching every MUST query (or, without
    one, any SHOULD query), their MUST and SHOULD scores added, MUST_NOT rows removed."""

    def __init__(self, queries: List[Tuple[Occur, Any]]) -> None:
        self.queries = list(queries)

    def query_type(self) -> FullTextQueryType:
        return FullTextQueryType.BOOLEAN
