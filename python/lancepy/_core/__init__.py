"""The core layer: what every other layer builds on, knowing nothing of datasets or versions.

URIs and storage options (:mod:`.paths`, :mod:`.storage`), schema helpers (:mod:`.schema`,
:mod:`.blobschema`), the ONE place any input becomes a stream of batches of the declared
schema (:mod:`.conform`), filter evaluation over Arrow tables (:mod:`.evaluate`) and argument
helpers (:mod:`.args`). It imports only :mod:`lancepy.exceptions`, the native module,
:mod:`lancepy.filters` and :mod:`lancepy.file` (both core-level). See ``ARCHITECTURE.md``.
"""
