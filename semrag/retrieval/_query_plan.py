"""Query intent without an LLM: the rules that classify a query and plan its channels' weights.

Also the LLM path's prompt and schema (used only when the retriever is given an LLM).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from semrag.errors import ConfigError
from semrag.index.fusion import normalise_weights
from semrag.text.phrases import QUESTION_WORDS, content_words, entities

CHANNELS = ("dense", "sparse", "extended")
INTENTS = ("entity", "explanatory", "multi_hop", "general")
INTENT_WEIGHTS: Mapping[str, tuple[float, float, float]] = {
    "entity": (0.35, 0.50, 0.15),
    "explanatory": (0.60, 0.15, 0.25),
    "multi_hop": (0.20, 0.20, 0.60),
    "general": (0.50, 0.30, 0.20),
}
"""Channel weights ``(dense, sparse, extended)`` of each intent when no LLM is given."""

_FACTOID_HOW = "many much long old far big tall often large high deep wide fast few".split()
_EXPLAIN_OPEN = re.compile(
    r"^\s*(why\b|how\b(?!\s+(?:" + "|".join(_FACTOID_HOW) + r")\b)|explain\b|describe\b"
    r"|what\s+(?:causes?|caused|happens|happened|leads?\s+to|led\s+to)\b"
    r"|what\s+(?:is|are|was|were)\s+the\s+(?:reasons?|causes?|effects?|purpose|benefits?"
    r"|advantages?|consequences?|significance|importance)\b|in\s+what\s+way)",
    re.IGNORECASE,
)
_EXPLAIN_ANY = re.compile(
    r"\b(difference between|reasons? (?:for|why)|cause of|effects? of|impact of|purpose of"
    r"|explain|compared? to)\b",
    re.IGNORECASE,
)
# Nouns that do not add a hop: attributes of what they govern ("the name of the village"
# asks for the village) and, before "of", appositive heads ("the city of Paris" is Paris;
# "the city where ..." is still a relation).
_ATTRIBUTES = frozenset(
    "name names type kind sort number numbers term title part size percentage amount year date "
    "first last most least rest majority use form version end beginning start time way lack "
    "level role case result results".split()
)
_APPOSITIVES = frozenset(
    "city town village state province county region colony kingdom empire republic island "
    "islands river lake age era period battle war siege treaty port district department "
    "area".split()
)
_OPENER = r"(?:what|which|who|whom|whose|where|when|how)"
# "the director of (film) X", "the actress in My Fair Lady", "the star of the ...".
_OF_LINK = re.compile(
    r"\bthe\s+(?:[a-z][\w-]*\s+)?(?P<head>[a-z][\w-]*)\s+(?:of|in|behind|from)\s+"
    r"(?:(?:the|a|an)\s+)?(?:[a-z]+\s+)?(?=[A-Z0-9\"“‘]|the\s)"
)
# "the film whose star ...", "the country where ...", "the president under whom ...".
_CLAUSE_LINK = re.compile(
    r"\bthe\s+(?:[a-z][\w-]*\s+)?(?P<head>[a-z][\w-]*)\s+(?:(?:under|in|at|for|by|with)\s+)?"
    r"(?:who|whom|whose|that|which|where)\b"
)
# "John Smith's successor".
_POSSESSIVE_LINK = re.compile(
    r"(?:[A-Z][\w.\-]*|[\"”)])(?:'s|’s)\s+(?P<head>[a-z][\w-]*)|[a-z]s['’]\s+(?P<plural>[a-z][\w-]*)"
)
# Kinship terms that are two relations in one word ("grandfather" = father's father).
_COMPOSITE_RELATION = re.compile(
    r"\b(?:grand(?:father|mother|son|daughter|child|parent)|great-\w+"
    r"|(?:father|mother|son|daughter|brother|sister)s?-in-law"
    r"|step(?:father|mother|son|daughter)|uncle|aunt|nephew|niece|cousin)s?\b",
    re.IGNORECASE,
)
# The copular answer slot: in "Who is the author of Hamlet?" the relation *is* the answer
# (but not in "What nationality is the author of Hamlet?" or "Where was the author born?").
_ANSWER_SLOT = re.compile(
    r"^\s*(?:what|which|who)\s+(?:is|was|are|were)\s+(?:the\s+(?:"
    + "|".join(sorted(_ATTRIBUTES))
    + r")\s+of\s+)?(?=the\b|[A-Z])",
    re.IGNORECASE,
)
# A yes/no question checks one relation; it adds no hop of its own.
_YES_NO = re.compile(
    r"^\s*(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b",
    re.IGNORECASE,
)
# Two named things compared or intersected: "X or Y", "both X and Y", "the same ...".
_COMPARISON = re.compile(
    r"\b(?:both|same|different|either|neither|compared?|out of|between)\b|,?\s+or\s+",
    re.IGNORECASE,
)
_FACTOID_OPEN = re.compile(
    r"^\s*(who|whom|whose|when|where|which|what\s+(?:year|date|city|country|name|number)"
    r"|how\s+(?:" + "|".join(_FACTOID_HOW) + r"))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """How one query is searched: its sub-queries, its intent and the channel weights."""

    query: str
    """The original query."""
    dense_queries: tuple[str, ...]
    """``P_d``: the query and its paraphrases (each embedded)."""
    sparse_queries: tuple[str, ...]
    """``P_s``: keyword/entity queries for BM25."""
    intent: str
    """One of :data:`INTENTS`."""
    weights: Mapping[str, float]
    """``{"dense": a, "sparse": b, "extended": c}``, summing to 1."""
    rules: tuple[str, ...] = ()
    """Why this intent (the rules that fired), or ``("llm",)``."""
    source: str = "rules"
    """``"rules"``, ``"llm"``, ``"llm+rule_weights"`` (the LLM's sub-queries with the rules'
    weights, because its weights were all zero or not finite) or ``"fixed"`` (weights given
    by the user)."""
    note: str = ""
    """Set whenever a fallback happened: what failed, and what was used instead."""

    def to_metadata(self) -> dict[str, Any]:
        """The plan as plain JSON-able values."""
        return {
            "intent": self.intent,
            "weights": dict(self.weights),
            "dense_queries": list(self.dense_queries),
            "sparse_queries": list(self.sparse_queries),
            "rules": list(self.rules),
            "plan_source": self.source,
            **({"note": self.note} if self.note else {}),
        }


def classify_intent(query: str) -> tuple[str, tuple[str, ...]]:
    """The query's intent and the rules that decided it (see the module docstring).

    Examples:
        >>> classify_intent("Why did the Roman Empire fall?")[0]
        'explanatory'
        >>> classify_intent("When was the performer of Sexy Back born?")[0]
        'multi_hop'
        >>> classify_intent("Where is the Eiffel Tower?")[0]
        'entity'
    """
    if _EXPLAIN_OPEN.search(query):
        return "explanatory", ("explanatory opener",)
    if _EXPLAIN_ANY.search(query):
        return "explanatory", ("asks for a reason, cause, effect or difference",)
    ents = [p for p in entities(query) if p.kind != "number"]
    hops, why = relation_hops(query)
    fired = [why] if hops >= 2 else []
    named = len(ents) + sum(" and " in p.text for p in ents)
    if named >= 2 and (_COMPARISON.search(query) or _joined(query, ents)):
        fired.append(f"{named} entities compared or joined")
    if fired:
        return "multi_hop", tuple(fired)
    if ents or any(p.kind == "number" for p in entities(query)):
        return "entity", ("names an entity",)
    if _FACTOID_OPEN.search(query):
        return "entity", ("factoid question word",)
    return "general", ()


def relation_hops(query: str) -> tuple[int, str]:
    """How many relations ``query`` chains, counted from its surface, and the evidence.

    Each relational noun phrase tied to something else ("the director of film X", "the
    country where ...", "X's successor") is one relation; a composite kinship term
    ("grandfather", "mother-in-law") is two; attribute and appositive heads ("the name of",
    "the city of Paris") are none. The question's own relation adds one more, unless the
    phrase *is* the answer ("Who is the author of Hamlet?" is one relation, "When was the
    author of Hamlet born?" two).

    Examples:
        >>> relation_hops("Who is the author of Hamlet?")
        (1, 'relation: author')
        >>> relation_hops("When was the director of film Blind Shaft born?")[0]
        2
    """
    links: list[tuple[int, str]] = []
    for pattern, skip in (
        (_OF_LINK, _ATTRIBUTES | _APPOSITIVES),
        (_CLAUSE_LINK, _ATTRIBUTES),
        (_POSSESSIVE_LINK, _ATTRIBUTES),
    ):
        for m in pattern.finditer(query):
            head = m["head"] or m.groupdict().get("plural") or ""
            if head and head.lower() not in skip:
                links.append((m.start(), head))
    composite = [(m.start(), m[0]) for m in _COMPOSITE_RELATION.finditer(query)]
    if not links and not composite:
        return 0, ""
    heads = sorted({h for _, h in links} | {h for _, h in composite})
    hops = len({pos for pos, _ in links}) + 2 * len(composite)
    slot = _ANSWER_SLOT.match(query)
    first = min(pos for pos, _ in links + composite)
    if not (slot and first <= slot.end()) and not _YES_NO.match(query):
        hops += 1  # the phrase is not the answer: the question's own relation is one more
    return hops, "relation: " + ", ".join(heads)


def _joined(query: str, ents: Sequence[Any]) -> bool:
    """Two entities joined by "and" as the objects of one question ("through X and Y")."""
    pairs = zip(ents, ents[1:], strict=False)
    return any(" and " in p.text for p in ents) or any(
        query[a.end : b.start].strip(" ,") in ("and", "or") for a, b in pairs
    )


def _declarative(query: str) -> str:
    words = [w for w in re.findall(r"[\w'’\-]+", query) if w.lower() not in QUESTION_WORDS]
    aux = {"is", "are", "was", "were", "did", "does", "do", "has", "have", "had"}
    while words and words[0].lower() in aux:
        words.pop(0)
    return " ".join(words)


def plan_query(
    query: str,
    *,
    weights: Mapping[str, tuple[float, float, float]] | None = None,
    max_sparse: int = 8,
) -> QueryPlan:
    """The rule-based plan of ``query`` (no LLM).

    Args:
        query: the user's query.
        weights: intent -> ``(dense, sparse, extended)``; default :data:`INTENT_WEIGHTS`.
        max_sparse: at most this many sparse sub-queries (each a BM25 search): the
            query's content words first, then its entities in order, case-insensitive
            duplicates dropped. A long query still costs ``max_sparse`` searches.

    Examples:
        >>> plan = plan_query("Who founded the University of Chicago?")
        >>> plan.intent, plan.sparse_queries
        ('entity', ('founded university chicago', 'University of Chicago'))
    """
    table = {**INTENT_WEIGHTS, **(weights or {})}
    intent, rules = classify_intent(query)
    dense = [query]
    declarative = _declarative(query)
    if declarative and declarative.lower() != query.strip(" ?!.").lower():
        dense.append(declarative)
    if max_sparse < 1:
        raise ConfigError(f"max_sparse must be >= 1, got {max_sparse}")
    words = content_words(query)
    candidates = ([" ".join(words)] if words else []) + [p.text for p in entities(query)]
    unique: dict[str, str] = {}
    for c in candidates:
        unique.setdefault(c.lower(), c)
    sparse = list(unique.values())[:max_sparse]
    if not sparse and query.strip():
        sparse = [query]
    w = normalise_weights(dict(zip(CHANNELS, table[intent], strict=True)))
    return QueryPlan(query, tuple(dense), tuple(sparse), intent, w, rules)


PLAN_SCHEMA = {
    "type": "object",
    "required": ["paraphrases", "keywords", "weights"],
    "properties": {
        "intent": {"type": "string"},
        "paraphrases": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
        "keywords": {"type": "array", "items": {"type": "string"}, "maxItems": 16},
        "weights": {
            "type": "object",
            "required": ["dense", "sparse", "extended"],
            "properties": {c: {"type": "number", "minimum": 0, "maximum": 1} for c in CHANNELS},
        },
    },
}

PLAN_PROMPT = """You prepare a search query for a hybrid retriever with three channels:
dense (semantic similarity), sparse (BM25 keywords) and extended (graph neighbours).
QUERY: {query}
Reply with JSON only, in this format:
{{"intent": "entity" | "explanatory" | "multi_hop" | "general",
 "paraphrases": ["up to {n_para} rewrites of the query with the same meaning"],
 "keywords": ["up to {n_kw} keywords, named entities or rare terms from the query"],
 "weights": {{"dense": <0-1>, "sparse": <0-1>, "extended": <0-1>}}}}
Give "sparse" more weight for questions about named entities, "dense" for explanations,
and balance all three for questions that chain several facts.
Your response:"""
