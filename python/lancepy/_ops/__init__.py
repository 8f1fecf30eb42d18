"""The operations layer: what a dataset method does, as functions.

Writing (:mod:`.write`: the one write routine, commits of operations), random access
(:mod:`.take`), row mutations (:mod:`.mutations`), schema evolution (:mod:`.evolution`),
config and metadata (:mod:`.config`), indices (:mod:`.indices`, :mod:`.ivf`,
:mod:`.ivf_build`). Most take the dataset object they serve as their first argument and
are called by its methods; they import the table and core layers, and a ``LanceDataset``
only for annotations. See ``ARCHITECTURE.md``.
"""
