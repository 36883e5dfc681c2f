from __future__ import annotations

import gzip
import io
import json
import tarfile

import numpy as np
import pytest

from semrag.errors import ConfigError
from semrag.eval.datasets import read_choi, read_squad_articles
from semrag.eval.metrics import boundaries_from_offsets, default_k, pk, window_diff, word_starts


def test_perfect_and_worst_segmentations():
    ref = [0, 0, 1, 0, 0, 1, 0, 0]
    assert pk(ref, ref) == 0.0 and window_diff(ref, ref) == 0.0
    assert pk(ref, [0] * 8, k=2) == pytest.approx(4 / 7)


def test_window_diff_counts_extra_boundaries_pk_does_not():
    ref = [0, 0, 0, 1, 0, 0, 0]
    hyp = [0, 0, 1, 1, 0, 0, 0]  # one extra boundary next to the true one
    assert window_diff(ref, hyp, k=3) > pk(ref, hyp, k=3)


def test_default_k_and_errors():
    assert default_k([0, 0, 0, 1, 0, 0, 0]) == 2
    with pytest.raises(ConfigError, match="reference has 2 gaps, hypothesis 3"):
        pk([0, 1], [0, 1, 0])
    with pytest.raises(ConfigError, match="k must be >= 1, got 0"):
        window_diff([0, 1], [0, 1], k=0)


def test_boundaries_from_offsets_maps_to_the_next_word():
    text = "aa bb cc dd"
    starts = word_starts(text)
    assert starts == [0, 3, 6, 9]
    assert boundaries_from_offsets(starts, [0, 3, 7]).tolist() == [True, False, True]


def test_readers(tmp_path):
    squad = {
        "data": [{"title": "T", "paragraphs": [{"context": "One. Two."}, {"context": "Three."}]}]
    }
    p = tmp_path / "squad.json.gz"
    with gzip.open(p, "wt") as f:
        json.dump(squad, f)
    (doc,) = read_squad_articles(p)
    assert doc.text == "One. Two. Three." and doc.section_starts == (0, 10)

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        body = b"==========\nA b .\nC d .\n==========\nE f .\n==========\n"
        for n in range(3):
            info = tarfile.TarInfo(f"choi/1/3-5/{n}.ref")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    t = tmp_path / "choi.tar.gz"
    t.write_bytes(buf.getvalue())
    names = [d.id for d in read_choi(t)]
    assert [d.id for d in read_choi(t, every=2)] == names[::2]
    assert [d.id for d in read_choi(t, every=2, offset=1)] == names[1::2]
    doc = read_choi(t, limit=1)[0]
    assert doc.text == "A b . C d . E f ." and doc.section_starts == (0, 12)
    assert np.array_equal(
        boundaries_from_offsets(word_starts(doc.text), doc.section_starts[1:]),
        [False, False, False, False, False, True, False, False],
    )


def test_missing_data_set_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        read_squad_articles(tmp_path / "nope.json")


def test_boundary_f1():
    from semrag.eval.metrics import boundary_f1

    assert boundary_f1([0, 1, 0, 1], [0, 1, 0, 1]) == (1.0, 1.0, 1.0)
    p, r, f = boundary_f1([0, 1, 0, 0, 0, 1], [1, 0, 0, 0, 0, 0])
    assert (p, r) == (0.0, 0.0) and f == 0.0
    p, r, f = boundary_f1([0, 1, 0, 0, 0, 1], [1, 0, 0, 0, 0, 0], tolerance=1)
    assert (p, r) == (1.0, 0.5)
    # One gold boundary cannot be matched twice.
    assert boundary_f1([0, 1, 0], [1, 1, 1], tolerance=1)[0] == pytest.approx(1 / 3)
    assert boundary_f1([0, 0], [0, 0]) == (1.0, 1.0, 1.0)
