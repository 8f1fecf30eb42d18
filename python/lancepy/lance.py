"""pylance's native module ``lance.lance`` under its own name: the names pylance code imports
from it that lancepy has, each the same object as in lancepy's public modules (so
``from lance.lance import Compaction`` works against lancepy)."""

from __future__ import annotations

from lancepy.optimize import Compaction, CompactionMetrics, CompactionPlan, CompactionTask, RewriteResult

__all__ = ["Compaction", "CompactionMetrics", "CompactionPlan", "CompactionTask", "RewriteResult"]
