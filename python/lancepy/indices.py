"""Index names kept under pylance's module path ``lance.indices``."""

from __future__ import annotations

from enum import Enum

__all__ = ["IndexFileVersion"]


class IndexFileVersion(str, Enum):
    """The layout of a vector index's files: ``V3`` (what lancepy writes and reads) or
    ``LEGACY`` (pylance's older one: neither written nor read by lancepy)."""

    LEGACY = "Legacy"
    V3 = "V3"
