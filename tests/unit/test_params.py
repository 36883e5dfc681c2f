"""Parameters declared once: the signature and its constraints agree, and ``repr`` /
``get_params`` come from the same declaration (scikit-learn's contract)."""

from __future__ import annotations

import inspect

import pytest

from semrag import SPC, Document, IntentAwareRetriever, SemanticIndex, SSGRetriever
from semrag._validation import INT, Interval, Params
from semrag.errors import ConfigError
from semrag.graph import KnowledgeGraph
from semrag.retrieval import (
    CommunityRetriever,
    PPRRetriever,
    RetrieveAndCheck,
    SketchRetriever,
)
from semrag.testing import FakeEmbedder


@pytest.fixture(scope="module")
def made():
    index = SemanticIndex(embedder=FakeEmbedder(), ssg=True)
    index.add_documents([Document("a", "Ada Lovelace met Charles Babbage. Cats nap in London.")])
    kg = KnowledgeGraph.build(index)
    return {
        "ssg": SSGRetriever(index, k=3, strategy="ssg_traversal"),
        "ppr": PPRRetriever(index, k=4, damping=0.7),
        "iar": IntentAwareRetriever(index, k=2, max_keywords=5),
        "sketch": SketchRetriever(index, kg, depth=2),
        "community": CommunityRetriever(index, kg, strategy="global", k=2),
        "spc": SPC(index, k=3, delta=0.4),
        "check": RetrieveAndCheck(PPRRetriever(index), SPC(index), max_rounds=2),
    }


NAMES = ["ssg", "ppr", "iar", "sketch", "community", "spc", "check"]


@pytest.mark.parametrize("name", NAMES)
def test_get_params_names_every_parameter_of_the_signature(made, name):
    obj = made[name]
    signature = [
        p.name
        for p in list(inspect.signature(type(obj).__init__).parameters.values())[1:]
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    assert list(obj.get_params()) == signature
    assert set(type(obj)._parameter_constraints) == set(signature)


@pytest.mark.parametrize("name", NAMES)
def test_repr_shows_exactly_the_parameters_that_differ_from_their_defaults(made, name):
    obj = made[name]
    text = repr(obj)
    assert text.startswith(type(obj).__name__ + "(")
    for p in list(inspect.signature(type(obj).__init__).parameters.values())[1:]:
        if p.kind is p.VAR_KEYWORD:  # old spellings of renamed parameters, not parameters
            continue
        value = obj.get_params()[p.name]
        plain = isinstance(value, (bool, int, float, str, tuple, type(None)))
        differs = p.default is p.empty or not (plain and value == p.default)
        assert (f"{p.name}=" in text) == differs, (p.name, text)


@pytest.mark.parametrize("name", ["ssg", "ppr", "sketch", "community", "spc", "check"])
def test_a_copy_from_get_params_has_the_same_params(made, name):
    obj = made[name]
    again = type(obj)(**obj.get_params())
    assert repr(again) == repr(obj)
    assert {k: v for k, v in again.get_params().items()} == obj.get_params()


def test_a_class_whose_constraints_and_signature_disagree_is_refused_when_defined():
    with pytest.raises(ConfigError, match=r"without a constraint \['m'\]"):

        class Missing(Params):
            _parameter_constraints = {"k": [Interval(INT, 1, None)]}

            def __init__(self, k: int = 1, m: int = 2) -> None:
                self.k, self.m = k, m

    with pytest.raises(ConfigError, match=r"constrained but not a parameter \['z'\]"):

        class Extra(Params):
            _parameter_constraints = {"k": [Interval(INT, 1, None)], "z": [object]}

            def __init__(self, k: int = 1) -> None:
                self.k = k


def test_every_constrained_value_is_checked_from_the_signature(made):
    index = made["ppr"].index
    with pytest.raises(ConfigError, match="PPRRetriever: damping=1.5"):
        PPRRetriever(index, damping=1.5)
    with pytest.raises(ConfigError, match="SketchRetriever: hop_decay=2"):
        SketchRetriever(index, made["sketch"].graph, hop_decay=2)
    with pytest.raises(ConfigError, match="RetrieveAndCheck: max_rounds=0"):
        RetrieveAndCheck(made["ppr"], made["spc"], max_rounds=0)
