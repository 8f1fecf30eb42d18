"""Index names kept under pylance's module path ``lance.indices``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Dict

__all__ = ["IndexConfig", "IndexFileVersion"]


@dataclass
class IndexConfig:
    """An index type with its parameters, for ``create_scalar_index(column, IndexConfig(...))``
    (pylance's ``lance.indices.IndexConfig``). lancepy takes ``IndexConfig("json",
    {"target_index_type": "btree" | "bitmap", "path": "<JSONPath>"})``: an index over the value
    at one path of a JSON column (optional ``target_data_type``: ``"Boolean"``, ``"Int64"``,
    ``"Float64"`` or ``"Utf8"``, else the first non-null value's type); and the built-in types
    by name with empty parameters (``IndexConfig("btree", {})``)."""

    index_type: str
    parameters: Dict[str, Any]


class IndexFileVersion(str, Enum):
    """The layout of a vector index's files: ``V3`` (what lancepy writes and reads) or
    ``LEGACY`` (pylance's older one: neither written nor read by lancepy)."""

    LEGACY = "Legacy"
    V3 = "V3"
