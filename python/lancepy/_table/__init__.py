"""The table layer: versions, manifests, transactions and the commit protocol.

It works on a ``_lancepy.Store`` and a :class:`~lancepy._table.manifest.LoadedManifest`
(one version's snapshot), never on a ``LanceDataset``: opening versions (:mod:`.manifest`),
the typed manifest pieces that travel between processes (:mod:`.fragments`), transactions
and conflicts (:mod:`.transaction`), operations in pylance's shape (:mod:`.operations`),
the commit loop (:mod:`.commit`), cleanup (:mod:`.cleanup`), tags (:mod:`.tags`), base paths
and shallow clones (:mod:`.bases`), validation (:mod:`.validate`), a version's native
snapshot and per-version caches (:mod:`.snapshot`). It imports the core layer
and nothing above it. See ``ARCHITECTURE.md``.
"""
