"""Lazy loaders for heavy dependencies, with install hints."""

from __future__ import annotations

from typing import Any

from semrag.errors import missing_dependency

__all__ = ["faiss"]


def faiss() -> Any:
    """Import and return the ``faiss`` module."""
    try:
        import faiss as module
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise missing_dependency("faiss", "all") from exc
    return module
