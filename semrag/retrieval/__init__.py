"""Retrievers over a :class:`~semrag.index.SemanticIndex`."""

from __future__ import annotations

from semrag.retrieval.check import CheckResult, RetrieveAndCheck, Round
from semrag.retrieval.intent import (
    INTENT_WEIGHTS,
    INTENTS,
    IntentAwareRetriever,
    QueryPlan,
    classify_intent,
    plan_query,
)
from semrag.retrieval.ssg import ALGORITHMS, SSGRetriever, Step, Traversal

__all__ = [
    "ALGORITHMS",
    "CheckResult",
    "INTENTS",
    "INTENT_WEIGHTS",
    "IntentAwareRetriever",
    "QueryPlan",
    "RetrieveAndCheck",
    "Round",
    "SSGRetriever",
    "Step",
    "Traversal",
    "classify_intent",
    "plan_query",
]
