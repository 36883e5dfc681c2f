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
    # batches of 2 texts, of four different lengths, one at a time
    pairs = MiniLMEmbedder(cache_size=0, batch_size=2, threads=1).embed(TEXTS)
    np.testing.assert_allclose(pairs, vecs, atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    alone = np.stack([numpy_minilm.embed([t])[0] for t in TEXTS])  # no padding at all
    np.testing.assert_allclose(vecs, alone, atol=2e-5)


def test_passes_side_by_side_give_the_vectors_of_one_pass_at_a_time(numpy_minilm):
    spans = [[(0, len(t) // 2), (len(t) // 2, len(t))] for t in TEXTS]
    serial = MiniLMEmbedder(cache_size=0, batch_size=1, threads=1)
    parallel = MiniLMEmbedder(cache_size=0, batch_size=1, threads=3)  # 3 batches at once
    assert (serial.threads, parallel.threads) == (1, 3)
    one, one_pooled = serial.embed_pooled(TEXTS, spans)
    many, many_pooled = parallel.embed_pooled(TEXTS, spans)
    np.testing.assert_allclose(many, one, atol=1e-6)
    for a, b in zip(many_pooled, one_pooled, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_allclose(parallel.embed(TEXTS), many, atol=1e-6)


def test_a_batch_holds_texts_of_like_word_piece_counts_whatever_their_characters():
    # Equal characters, unequal word pieces: "word " is one piece, "x;" two. Sorted by
    # characters alone, every batch of 8 would mix them and pad the short texts 5-fold.
    short = [f"word{i % 10} " * 10 for i in range(12)]
    long = [f"{i % 10};" * 30 for i in range(12)]
    texts = [t for pair in zip(short, long, strict=True) for t in pair]
    assert {len(t) for t in texts} == {60}
    emb = MiniLMEmbedder(cache_size=0, batch_size=4, threads=1)
    batches = list(emb._passes(texts))
    assert sorted(i for rows, *_ in batches for i in rows.tolist()) == list(range(len(texts)))
    for rows, encoded, states, mask in batches:
        assert {len(e.ids) for e in encoded} == {mask.shape[1]}  # nothing padded
        assert {i % 2 for i in rows.tolist()} in ({0}, {1})
        assert states.shape[:2] == mask.shape


def test_passes_side_by_side_keep_their_order_and_raise_a_pass_failure():
    from semrag.minilm import _side_by_side

    assert list(_side_by_side(abs, range(-7, 0), workers=2)) == [7, 6, 5, 4, 3, 2, 1]

    def fails(i: int) -> int:
        if i == 3:
            raise ValueError("pass 3 failed")
        return i

    with pytest.raises(ValueError, match="pass 3 failed"):
        list(_side_by_side(fails, range(7), workers=2))


def test_the_graph_reads_back_as_the_onnx_model_written():
    onnx = pytest.importorskip("onnx", reason="reading the graph back needs the onnx package")
    from semrag.minilm import _graph

    emb = MiniLMEmbedder()
    model = onnx.load_from_string(_graph(emb.path))
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Attention") == ops.count("BiasGelu") == 6
    assert [i.name for i in model.graph.input] == ["ids", "positions", "mask"]
    norm = next(n for n in model.graph.node if n.op_type == "LayerNormalization")
    assert {a.name: onnx.helper.get_attribute_value(a) for a in norm.attribute} == {
        "axis": -1,
        "epsilon": pytest.approx(1e-12),
    }


def test_without_onnxruntime_the_first_embed_names_the_extra(monkeypatch):
    import sys

    from semrag import minilm
    from semrag.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # an import of it fails
    monkeypatch.setattr(minilm, "_BERTS", {})
    emb = MiniLMEmbedder(cache_size=0)  # the constructor reads nothing
    with pytest.raises(MissingDependencyError, match=r"'onnxruntime'.*semrag\[index\]"):
        emb.embed(["a cat"])


def test_threads_below_one_is_a_config_error():
    with pytest.raises(ConfigError, match="threads must be >= 1"):
        MiniLMEmbedder(threads=0)


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
    loaded = SemanticIndex.load(tmp_path / "ix")  # the default: the torch-free MiniLM
    for query in ("Normandy region", "a fox and a dog", "counting numbers"):
        want, got = built.search(query, k=4), loaded.search(query, k=4)
        assert [h.chunk for h in got] == [h.chunk for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-4)


def test_a_directory_without_the_model_files_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="never downloads"):
        MiniLMEmbedder(str(tmp_path)).embed(["a"])
    with pytest.raises(ConfigError, match="batch_size"):
        MiniLMEmbedder(batch_size=0)


# -- late chunking: span vectors from the same pass ----------------------------------------
def _states_mean(model: MiniLMEmbedder, text: str, a: int, b: int) -> np.ndarray:
    """A span's pooled vector computed the long way: every word piece's offsets checked."""
    bert, encoder = model._loaded()
    (enc,) = encoder.encode_batch([text])
    states = bert.states(np.asarray([enc.ids]), np.asarray([enc.attention_mask], np.int32))[0]
    pieces = zip(enc.offsets, enc.special_tokens_mask, strict=True)
    inside = [i for i, ((s, e), special) in enumerate(pieces) if not special and a <= s < e <= b]
    v = states[inside].mean(axis=0)
    return v / np.linalg.norm(v)


def test_pooled_texts_are_embed_and_spans_are_their_word_pieces_mean(numpy_minilm):
    text = TEXTS[1] + " " + TEXTS[7]
    spans = [(0, len(TEXTS[1])), (len(TEXTS[1]) + 1, len(text)), (4, 11)]
    vectors, pooled = numpy_minilm.embed_pooled([text, "a cat"], [spans, []])
    np.testing.assert_allclose(vectors, numpy_minilm.embed([text, "a cat"]), atol=2e-5)
    assert pooled[0].shape == (3, 384) and pooled[1].shape == (0, 384)
    for row, (a, b) in zip(pooled[0], spans, strict=True):
        np.testing.assert_allclose(row, _states_mean(numpy_minilm, text, a, b), atol=2e-5)
    # read in context, a sentence's vector is near its own (not equal: the context counts)
    alone = numpy_minilm.embed([text[a:b] for a, b in spans[:2]])
    assert ((pooled[0][:2] * alone).sum(axis=1) > 0.6).all()


def test_spans_past_the_cut_or_blank_are_embedded_alone(numpy_minilm):
    long = TEXTS[4]  # past the 256 word pieces the model reads
    tail = (len(long) - 60, len(long))
    blank = TEXTS[5].index("    ")
    spans = [tail, (blank, blank + 3)]
    _, (pooled, _) = numpy_minilm.embed_pooled([long, TEXTS[5]], [[tail], []])
    np.testing.assert_allclose(pooled[0], numpy_minilm.embed([long[slice(*tail)]])[0], atol=2e-5)
    _, (blanks,) = numpy_minilm.embed_pooled([TEXTS[5]], [spans[1:]])
    np.testing.assert_allclose(blanks[0], numpy_minilm.embed(["   "])[0], atol=2e-5)


def test_pooled_async_twin_and_a_wrong_span_count(numpy_minilm):
    import asyncio

    texts, spans = TEXTS[:3], [[(0, 5)], [(4, 20)], []]
    sync = numpy_minilm.embed_pooled(texts, spans)
    twin = asyncio.run(numpy_minilm.aembed_pooled(texts, spans))
    np.testing.assert_array_equal(sync[0], twin[0])
    for a, b in zip(sync[1], twin[1], strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ConfigError, match="2 span lists for 3 texts"):
        numpy_minilm.embed_pooled(texts, spans[:2])


def test_the_default_index_embeds_each_chunk_once_and_pools_its_sentences(numpy_minilm):
    """No sentence is embedded apart from its chunk; every sentence gets a unit vector."""
    calls: list[int] = []
    model = MiniLMEmbedder(cache_size=0)
    real = model.embed

    def counted(texts):
        calls.append(len(texts))
        return real(texts)

    model.embed = counted
    index = SemanticIndex(embedder=model, show_progress=False)
    run_on = " ".join(f"item{i} and" for i in range(200))  # one sentence over the token cap
    doc = Document("d", " ".join(TEXTS[1:3] + TEXTS[6:]) + "\n\n" + run_on + "\n\n" + TEXTS[4])
    index.add_documents([doc])
    record = index.reader().documents(["d"])["d"]
    vecs = np.asarray(record.sentence_vectors, np.float32)
    assert len(vecs) == len(record.sentences) > 5
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=2e-3)  # float16 rows
    chunks = index.chunks("d")
    assert calls == []  # one embed_pooled call; nothing embedded apart
    # a sentence no chunk holds whole (the token cap cut it) is read alone, in that call
    whole = {
        i
        for c in chunks
        for i, s in enumerate(record.sentences)
        if c.start <= s.start and s.end <= c.end
    }
    (cut,) = set(range(len(record.sentences))) - whole
    alone = real([record.sentences[cut].of(doc.text)])[0]
    np.testing.assert_allclose(vecs[cut], alone, atol=2e-3)
    # a sentence's vector is its chunk's word pieces' mean
    c = next(c for c in chunks if c.sentence_end - c.sentence_start > 1)
    s = record.sentences[c.sentence_start]
    expected = _states_mean(model, c.text, s.start - c.start, s.end - c.start)
    np.testing.assert_allclose(vecs[c.sentence_start], expected, atol=2e-3)
