"""Document identity: the one rule that names every document semrag indexes.

Every entry point (the chunkers and splitters, ``SemanticIndex.add_documents`` and
``add_chunks``, both adapters' vector stores, SPC) names a document by the same rule, so
the id a splitter writes on its chunks is the id the index files them under and the id
``delete`` takes: **an explicit id** (a framework's document id, else the metadata key
``doc_id``), else **the source** (``metadata["source"]`` with the place inside it:
``"report.pdf#page=3"``), else **the content** (``"sha256:"`` and 16 hex digits of the
text's SHA-256). An id never depends on the position of a document in a call. The whole
rule, for each framework's records, is in ``docs/identity.md``.

What happens when an id is already indexed is the caller's choice (:data:`ON_CONFLICT`):
``"error"`` (the default; :class:`~semrag.errors.DocumentConflictError` names the ids),
``"replace"`` (an upsert) or ``"skip"`` (left out, with a note).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from semrag.errors import ConfigError
from semrag.types import Document

__all__ = [
    "CHUNK_POSITION_KEYS",
    "ON_CONFLICT",
    "POSITION_KEYS",
    "OnConflict",
    "as_documents",
    "check_on_conflict",
    "chunk_document_id",
    "content_id",
    "document_id",
    "entry_id",
    "explicit_id",
    "source_id",
]

OnConflict = Literal["error", "replace", "skip"]
ON_CONFLICT: tuple[str, ...] = ("error", "replace", "skip")
"""What an add does with a document whose id is already indexed."""

POSITION_KEYS = ("page", "page_number", "row", "seq_num")
"""Metadata keys that place a loader's document inside its source file (PDF pages, CSV
rows, JSON records); they are appended to the source in the id."""

CHUNK_POSITION_KEYS = ("start_index",)
"""Metadata keys that place a chunk inside its document (a splitter's ``start_index``):
part of the id of a chunk stored as a document of its own, never of the document a chunk
names."""

RECORDED_KEY = "semrag_doc_id"
"""The key under which semrag's splitters and retrievers record a chunk's document id."""


def content_id(text: str) -> str:
    """The id of a document that names itself by nothing but its text.

    Examples:
        >>> content_id("Bees dance.") == content_id("Bees dance."), len(content_id("Bees dance."))
        (True, 23)
    """
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"sha256:{digest[:16]}"


def _present(value: object) -> bool:
    return value is not None and value != ""


def explicit_id(obj: object = None, metadata: Mapping[str, Any] | None = None) -> str | None:
    """Rule 1: the id the caller gave, or ``None``.

    ``obj`` is a framework document (``id`` / ``id_``) or ``None``; ``metadata["doc_id"]``
    is read after it.
    """
    for attr in ("id", "id_"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return value
    if metadata is not None and _present(metadata.get("doc_id")):
        return str(metadata["doc_id"])
    return None


def _places(metadata: Mapping[str, Any], *, chunk_places: bool) -> list[str]:
    keys = (*POSITION_KEYS, *CHUNK_POSITION_KEYS) if chunk_places else POSITION_KEYS
    return [f"{k}={metadata[k]}" for k in keys if _present(metadata.get(k))]


def source_id(metadata: Mapping[str, Any], *, chunk_places: bool = True) -> str | None:
    """Rule 2: the source, with the place inside it, or ``None``.

    ``chunk_places=False`` leaves a chunk's own place (:data:`CHUNK_POSITION_KEYS`) out:
    the id of the document the chunk was cut from.

    Examples:
        >>> source_id({"source": "report.pdf", "page": 3})
        'report.pdf#page=3'
        >>> source_id({"source": "notes.txt"}), source_id({"page": 3})
        ('notes.txt', None)
        >>> source_id({"source": "a.txt", "start_index": 80}, chunk_places=False)
        'a.txt'
    """
    source = metadata.get("source")
    if not _present(source):
        return None
    places = _places(metadata, chunk_places=chunk_places)
    return str(source) + ("#" + "&".join(places) if places else "")


def document_id(text: str, metadata: Mapping[str, Any] | None = None, obj: object = None) -> str:
    """The id of a whole document under the rule (explicit id, source, content).

    Examples:
        >>> document_id("Chess is old.", {"source": "chess.txt"})
        'chess.txt'
        >>> document_id("Chess is old.", {"source": "chess.txt", "doc_id": "c1"})
        'c1'
        >>> document_id("Chess is old.") == content_id("Chess is old.")
        True
    """
    meta = metadata or {}
    return explicit_id(obj, meta) or source_id(meta) or content_id(text)


def entry_id(text: str, metadata: Mapping[str, Any] | None = None, obj: object = None) -> str:
    """The id of a vector store's entry (a chunk stored as it is).

    :func:`document_id`, with the content hash as the place of an entry that has a source
    and no place of its own.

    Examples:
        >>> entry_id("Rooks move straight.", {"source": "chess.txt"})[:17]
        'chess.txt#sha256:'
        >>> entry_id("Rooks move straight.", {"source": "chess.txt", "start_index": 0})
        'chess.txt#start_index=0'
    """
    meta = metadata or {}
    found = explicit_id(obj, meta)
    if found is not None:
        return found
    if not _present(meta.get("source")):
        return content_id(text)
    places = _places(meta, chunk_places=True) or [content_id(text)]
    return f"{meta['source']}#" + "&".join(places)


def chunk_document_id(metadata: Mapping[str, Any], ref_doc_id: str | None = None) -> str | None:
    """The id of the document a chunk was cut from, or ``None`` if it names none.

    Read in order: ``semrag_doc_id`` (recorded by semrag's splitters and retrievers), the
    node's ``ref_doc_id`` (LlamaIndex), ``doc_id``, then the source (rule 2). A chunk's
    content is not its document's, so there is no content rule here.

    Examples:
        >>> chunk_document_id({"source": "a.pdf", "page": 1, "start_index": 80})
        'a.pdf#page=1'
        >>> chunk_document_id({"source": "a.txt", "semrag_doc_id": "a"})
        'a'
    """
    if _present(metadata.get(RECORDED_KEY)):
        return str(metadata[RECORDED_KEY])
    if _present(ref_doc_id):
        return str(ref_doc_id)
    return explicit_id(None, metadata) or source_id(metadata, chunk_places=False)


def check_on_conflict(value: Any) -> OnConflict:
    """``value`` if it is one of :data:`ON_CONFLICT`.

    Raises:
        ConfigError: otherwise, naming the choices.
    """
    if value not in ON_CONFLICT:
        raise ConfigError(f"on_conflict must be one of {list(ON_CONFLICT)}, got {value!r}")
    return value


def _framework_document(d: object) -> Document | None:
    """A LangChain or LlamaIndex document (duck-typed: the core imports neither), or None.

    LangChain: ``page_content`` and ``metadata``; LlamaIndex documents and nodes:
    ``get_content()`` without metadata, and ``metadata``. The id follows
    :mod:`semrag.identity`; a LlamaIndex document or node handed over as a document is
    named by its own ``node_id`` (its ``id_``).
    """
    text = getattr(d, "page_content", None)
    if isinstance(text, str):
        meta = dict(getattr(d, "metadata", None) or {})
        return Document(id=document_id(text, meta, d), text=text, metadata=meta)
    get_content = getattr(d, "get_content", None)
    node_id = getattr(d, "node_id", None)
    if callable(get_content) and node_id:
        content = get_content(metadata_mode="none")
        if isinstance(content, str):
            meta = dict(getattr(d, "metadata", None) or {})
            return Document(id=str(node_id), text=content, metadata=meta)
    return None


def as_documents(documents: Iterable[Any]) -> list[Document]:
    """Semrag documents from any supported kind, named by :mod:`semrag.identity`.

    Strings are named by their content (never by their position in the call).

    Raises:
        TypeError: for a single text or document instead of a list, or an item of an
            unsupported kind.
    """
    if isinstance(documents, (str, Document)):
        raise ConfigError("pass a list of documents, or use chunk() for a single text")
    docs: list[Document] = []
    for d in documents:
        if isinstance(d, Document):
            docs.append(d)
        elif isinstance(d, str):
            docs.append(Document(id=content_id(d), text=d))
        elif (converted := _framework_document(d)) is not None:
            docs.append(converted)
        else:
            raise ConfigError(
                "documents must be semrag Documents, str, or LangChain / LlamaIndex "
                f"documents; got {type(d).__name__}"
            )
    return docs
