"""The on-disk format: atomic, versioned directories, and a SemanticIndex's save and load.

:mod:`~semrag.index.storage.persist` writes and checks the directories;
:mod:`~semrag.index.storage.saved` saves and restores an index's corpus and parts.
"""
