"""The torch-free MiniLM: the vectors and the fingerprint of sentence-transformers' MiniLM.

Where torch is installed, its vectors are compared with sentence-transformers' on texts of
every length the index embeds (sentences, chunks, past the 256-piece cut); an index built
with one loads with the other.
"""

from __future__ import annotations

import numpy as np
import pytest

from semrag import Document, SemanticIndex
from semrag.embeddings import as_embedder
from semrag.errors import ConfigError
from semrag.fingerprint import EmbedderFingerprint
from semrag.minilm import MiniLMEmbedder

pytestmark = pytest.mark.model

TEXTS = [
    "a cat",
    "The Normans were the people who in the 10th and 11th centuries gave their name to "
    "Normandy, a region in France.",
    "Wie heißt du? ¿Dónde está la biblioteca? 東京は日本の首都です。",
    "x",
    "Beyoncé Giselle Knowles-Carter (born September 4, 1981) is an American singer, "
    "songwriter, record producer and actress. " * 20,  # longer than the model reads
    "   spaced    out\ttext\nwith lines  ",
    "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15",
    "The quick brown fox jumps over the lazy dog." * 3,
]


@pytest.fixture(scope="module")
def numpy_minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(cache_size=0, batch_size=3)  # several batches, padded apart


def test_the_default_embedder_is_the_torch_free_minilm():
    emb = as_embedder(None)
    assert isinstance(emb, MiniLMEmbedder)
    assert (emb.model_name, emb.dim, emb.max_seq_length) == ("all-MiniLM-L6-v2", 384, 256)


def test_vectors_are_unit_length_in_order_and_independent_of_the_batch(numpy_minilm):
    vecs = numpy_minilm.embed(TEXTS)
    assert vecs.shape == (len(TEXTS), 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    alone = np.stack([numpy_minilm.embed([t])[0] for t in TEXTS])  # no padding at all
    np.testing.assert_allclose(vecs, alone, atol=2e-5)


def test_vectors_equal_sentence_transformers(numpy_minilm):
    pytest.importorskip("sentence_transformers", reason="the comparison needs torch")
    from semrag.embeddings import SentenceTransformerEmbedder

    torch_minilm = SentenceTransformerEmbedder(cache_size=0)
    ours, theirs = numpy_minilm.embed(TEXTS), torch_minilm.embed(TEXTS)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() >= 0.9999, cosines
    assert EmbedderFingerprint.of(numpy_minilm) == EmbedderFingerprint.of(torch_minilm)
    assert numpy_minilm.weights_fingerprint() == torch_minilm.weights_fingerprint()
    # the word pieces the chunkers count are the model's
    assert numpy_minilm.tokenizer.count(TEXTS) == torch_minilm.tokenizer.count(TEXTS)


def test_an_index_built_with_sentence_transformers_loads_with_it(tmp_path, numpy_minilm):
    pytest.importorskip("sentence_transformers", reason="the comparison needs torch")
    from semrag.embeddings import SentenceTransformerEmbedder

    built = SemanticIndex(embedder=SentenceTransformerEmbedder())
    built.add_documents([Document(str(i), TEXTS[i]) for i in (1, 2, 6, 7)])
    built.save(tmp_path / "ix")
    loaded = SemanticIndex.load(tmp_path / "ix")  # the default: the numpy MiniLM
    for query in ("Normandy region", "a fox and a dog", "counting numbers"):
        want, got = built.search(query, k=4), loaded.search(query, k=4)
        assert [h.chunk for h in got] == [h.chunk for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-4)


def test_a_directory_without_the_model_files_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="never downloads"):
        MiniLMEmbedder(str(tmp_path)).embed(["a"])
    with pytest.raises(ConfigError, match="batch_size"):
        MiniLMEmbedder(batch_size=0)
