"""Retrievers over a :class:`~semrag.index.SemanticIndex`."""

from __future__ import annotations

from semrag.retrieval.check import CheckResult, RetrieveAndCheck
from semrag.retrieval.community import CommunityRetriever
from semrag.retrieval.graph import STRATEGIES, GraphRetriever, construct, parameters
from semrag.retrieval.intent import (
    INTENT_WEIGHTS,
    INTENTS,
    IntentAwareRetriever,
    QueryPlan,
    classify_intent,
    plan_query,
)
from semrag.retrieval.ppr import (
    PassageGraph,
    PPRRetriever,
    personalized_pagerank,
)
from semrag.retrieval.sketch import SketchRetriever
from semrag.retrieval.ssg import ALGORITHMS, SSGRetriever, Traversal
from semrag.retrieval.strategies import Strategy, register
from semrag.types import Retriever

__all__ = [
    "ALGORITHMS",
    "STRATEGIES",
    "CheckResult",
    "CommunityRetriever",
    "GraphRetriever",
    "INTENTS",
    "INTENT_WEIGHTS",
    "IntentAwareRetriever",
    "PPRRetriever",
    "PassageGraph",
    "QueryPlan",
    "RetrieveAndCheck",
    "Retriever",
    "SSGRetriever",
    "SketchRetriever",
    "Strategy",
    "Traversal",
    "classify_intent",
    "construct",
    "parameters",
    "personalized_pagerank",
    "plan_query",
    "register",
]
