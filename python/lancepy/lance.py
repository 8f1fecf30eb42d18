"""pylance's native module ``lance.lance`` under its own name: the names pylance code imports
from it that lancepy has, each the same object as in lancepy's public modules (so
``from lance.lance import Compaction`` works against lancepy)."""

from __future__ import annotations

from typing import Any

from lancepy._core.iostats import IOStats
from lancepy._table.manifest import needs_migration
from lancepy.optimize import Compaction, CompactionMetrics, CompactionPlan, CompactionTask, RewriteResult

__all__ = ["IOStats", "Compaction", "CompactionMetrics", "CompactionPlan", "CompactionTask", "RewriteResult", "manifest_needs_migration"]


def manifest_needs_migration(dataset: Any) -> bool:
    """Whether the latest manifest of `dataset` (a :class:`lancepy.LanceDataset`) lacks facts
    that current writers record (see :func:`lancepy._table.manifest.needs_migration`)."""
    latest = dataset.checkout_version(dataset.latest_version)
    return needs_migration(latest._view.loaded.manifest, latest._index_entries())
