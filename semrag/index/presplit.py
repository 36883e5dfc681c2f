"""Moved to :mod:`semrag.index.ingest.presplit` in 0.3; this path warns and goes in 0.4."""

from semrag._moved import reexport

reexport(__name__, globals())
