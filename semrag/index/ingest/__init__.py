"""Ingestion: documents in, :class:`~semrag.index.ingest.prepared.PreparedDocument` records out.

:mod:`~semrag.index.ingest.ingestion` chunks, embeds and themes;
:mod:`~semrag.index.ingest.prepared` is the record (and the batch a worker process
returns); :mod:`~semrag.index.ingest.presplit` places a splitter's chunks in their
documents.
"""
