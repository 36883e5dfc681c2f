from __future__ import annotations

import asyncio
import os
import threading

import numpy as np
import pytest

from semrag.embeddings import BaseEmbedder, as_embedder, check_embeddings
from semrag.errors import ConfigError, EmbeddingError
from semrag.testing import FakeEmbedder


class Scripted(BaseEmbedder):
    """Returns whatever the test scripts, to exercise validation."""

    def __init__(self, fn, **kw):
        super().__init__(**kw)
        self.fn = fn
        self.calls: list[list[str]] = []

    def _embed_batch(self, texts):
        self.calls.append(list(texts))
        return self.fn(texts)


def ones(dim):
    return lambda texts: np.ones((len(texts), dim))


def test_vectors_are_normalised_float32():
    emb = Scripted(lambda t: np.full((len(t), 4), 2.0))
    out = emb.embed(["a", "b"])
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    assert emb.dim == 4


def test_wrong_count_raises():
    emb = Scripted(lambda t: np.ones((len(t) - 1, 4)))
    with pytest.raises(EmbeddingError, match=r"returned 1 vectors .* for 2 texts"):
        emb.embed(["a", "b"])


def test_wrong_dimension_raises_with_expected_and_got():
    dims = iter([4, 5])
    emb = Scripted(lambda t: np.ones((len(t), next(dims))))
    emb.embed(["a"])
    with pytest.raises(EmbeddingError, match="dimension 5; expected 4"):
        emb.embed(["b"])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_raises_naming_the_row(bad):
    def fn(texts):
        out = np.ones((len(texts), 3))
        out[1, 2] = bad
        return out

    with pytest.raises(EmbeddingError, match=r"row 1 \(text 'second'\)"):
        Scripted(fn).embed(["first", "second"])


def test_ragged_output_raises():
    with pytest.raises(EmbeddingError, match="not a numeric matrix"):
        Scripted(lambda t: [[1.0, 2.0], [1.0]]).embed(["a", "b"])


def test_zero_vectors_stay_zero():
    out = check_embeddings(np.zeros((1, 3)), ["x"], expected_dim=None, source="t")
    assert not np.isnan(out).any()


def test_cache_dedupes_and_counts():
    emb = Scripted(ones(3), cache_size=10)
    emb.embed(["a", "b", "a"])
    assert emb.calls == [["a", "b"]]
    emb.embed(["b", "c"])
    assert emb.calls[-1] == ["c"]
    info = emb.cache_info()
    assert (info.hits, info.misses, info.size, info.maxsize) == (2, 3, 3, 10)


def test_cache_is_size_limited_lru():
    emb = Scripted(ones(3), cache_size=2)
    emb.embed(["a", "b"])
    emb.embed(["a"])  # a is now most recent
    emb.embed(["c"])  # evicts b
    emb.embed(["a", "b"])
    assert emb.calls[-1] == ["b"]
    assert emb.cache_info().size == 2


def test_cache_holds_its_rows_not_the_batch():
    # A cached row that were a view of a bulk batch would keep the whole batch alive.
    emb = FakeEmbedder(dim=8, cache_size=3)
    texts = [f"text {i}" for i in range(50)]
    out = emb.embed(texts)
    cached = dict(emb._cache)
    assert list(cached) == texts[-3:]
    for text, vec in cached.items():
        assert vec.base is None and vec.shape == (8,)  # owns 8 floats, nothing more
        np.testing.assert_array_equal(vec, out[texts.index(text)])
    np.testing.assert_array_equal(emb.embed(texts[-3:]), out[-3:])


def test_cache_disabled():
    emb = Scripted(ones(3), cache_size=0)
    emb.embed(["a"])
    emb.embed(["a"])
    assert emb.calls == [["a"], ["a"]]
    assert emb.cache_info().size == 0


def test_negative_cache_size_is_config_error():
    with pytest.raises(ConfigError, match="cache_size must be >= 0, got -1"):
        Scripted(ones(3), cache_size=-1)


def test_non_str_items_raise_type_error():
    with pytest.raises(TypeError, match="texts must be str, got int"):
        FakeEmbedder().embed(["a", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="a sequence of strings, not a single str"):
        FakeEmbedder().embed("a single string")


def test_empty_input():
    assert FakeEmbedder(dim=8).embed([]).shape == (0, 8)


async def test_async_equals_sync():
    texts = ["red apple", "green pear", "red apple"]
    sync = FakeEmbedder().embed(texts)
    np.testing.assert_array_equal(await FakeEmbedder().aembed(texts), sync)


def test_concurrent_calls_are_consistent():
    emb = FakeEmbedder(cache_size=50)
    ref = FakeEmbedder(cache_size=0)
    texts = [f"word{i} shared" for i in range(200)]
    errors: list[BaseException] = []

    def work(offset):
        try:
            for i in range(0, 200, 7):
                batch = texts[(i + offset) % 200 :][:13]
                np.testing.assert_array_equal(emb.embed(batch), ref.embed(batch))
        except BaseException as exc:  # noqa: BLE001 - collected and re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert emb.cache_info().size <= 50


def test_as_embedder_wraps_protocol_objects_and_validates():
    class Plain:
        def embed(self, texts):
            return [[1.0, float("nan")] for _ in texts]

    wrapped = as_embedder(Plain())
    with pytest.raises(EmbeddingError, match="Plain returned NaN or inf in 1 of 1 vectors;"):
        wrapped.embed(["x"])
    with pytest.raises(TypeError, match="not an Embedder"):
        as_embedder(object())
    fake = FakeEmbedder()
    assert as_embedder(fake) is fake


def test_as_embedder_uses_native_async():
    class WithAsync:
        def __init__(self):
            self.async_calls = 0

        def embed(self, texts):
            raise AssertionError("the sync path must not be used from async code")

        async def aembed(self, texts):
            self.async_calls += 1
            return np.ones((len(texts), 2))

    inner = WithAsync()
    out = asyncio.run(as_embedder(inner).aembed(["a"]))
    assert out.shape == (1, 2) and inner.async_calls == 1


@pytest.mark.model
def test_minilm_offline_embeddings(minilm):
    out = minilm.embed(["A cat sat on the mat.", "A kitten sat on a rug.", "Stocks fell."])
    assert out.shape == (3, 384) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    sims = out @ out.T
    assert sims[0, 1] > sims[0, 2]
    assert minilm.dim == 384


@pytest.mark.model
def test_minilm_constructor_does_no_io():
    from semrag.embeddings import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(model_path="/nonexistent/model")
    assert emb._model is None  # nothing loaded until first use
    with pytest.raises(ConfigError, match="never downloads"):
        emb.embed(["x"])


@pytest.mark.model
def test_loading_the_model_prints_no_progress_bar_unless_asked():
    import subprocess
    import sys

    code = (
        "from semrag.embeddings import SentenceTransformerEmbedder as E; "
        "import sys; E(show_progress=sys.argv[1] == 'on').embed(['x'])"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    quiet = subprocess.run(
        [sys.executable, "-c", code, "off"], capture_output=True, text=True, env=env
    )
    loud = subprocess.run(
        [sys.executable, "-c", code, "on"], capture_output=True, text=True, env=env
    )
    assert quiet.returncode == loud.returncode == 0, quiet.stderr + loud.stderr
    assert "Loading weights" not in quiet.stderr
    assert "Loading weights" in loud.stderr


def test_cli_version(capsys):
    from semrag import __version__
    from semrag.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"semrag {__version__}"
