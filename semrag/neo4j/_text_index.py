"""The chunks' full-text index: created with their id tokens, or given them once.

Scoring a few chunks (:data:`~semrag.neo4j._index_cypher.SPARSE_AMONG`) asks Lucene for
those chunks alone through their id tokens, so its cost follows the chunks asked, not the
corpus. A database written before the tokens has a full-text index of the words only; the
first writer of this version to open it gives every chunk its token and rebuilds the index
(full-text reads fail while it is rebuilt), then marks each stored index as keyed. Until
then, and for any state a writer without the tokens wrote last, the readers score the
chunks the old way: every chunk that shares a word with the query.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from semrag.neo4j._index_cypher import ID_TOKEN, TEXT_INDEX

if TYPE_CHECKING:
    from semrag.neo4j._session import Neo4jSession

logger = logging.getLogger(__name__)

TEXT_INDEX_FIELDS = (
    "SHOW FULLTEXT INDEXES YIELD name, properties WHERE name = 'semrag_chunk_text' "
    "RETURN properties"
)
GIVE_ID_TOKENS = (
    "MATCH (c:SemragChunk) WHERE c.id_token IS NULL "
    f"CALL (c) {{ SET c.id_token = {ID_TOKEN.format('c.id')} }} IN TRANSACTIONS OF 50000 ROWS"
)
MARK_KEYED = "MATCH (s:SemragIndexState) WHERE s.version IS NOT NULL SET s.id_tokens = s.version"


def ensure_text_index(session: Neo4jSession) -> None:
    """Create the chunks' full-text index, or rebuild one without the id tokens (once)."""
    fields = session.read_rows(TEXT_INDEX_FIELDS)
    if fields and "id_token" in fields[0]["properties"]:
        return
    if fields:
        logger.warning(
            "semrag_chunk_text predates the chunks' id tokens: giving every chunk its token "
            "and rebuilding the index (full-text reads fail until it is online)"
        )
        session.run_batched(GIVE_ID_TOKENS)
        session.write_rows("DROP INDEX semrag_chunk_text IF EXISTS")
    session.write_rows(TEXT_INDEX)
    session.read_rows("CALL db.awaitIndex('semrag_chunk_text', 600)")
    if fields:
        session.write_rows(MARK_KEYED)
