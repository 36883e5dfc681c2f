"""SPC's LLM prompts and the JSON schemas of their replies (the LLM path only)."""

from __future__ import annotations

REFINE_PROMPT = """Rate how useful each passage is for answering the query, from 0 (useless)
to 10 (answers it).
QUERY: {query}
PASSAGES:
{passages}
Reply with JSON only: {{"scores": [<one number 0-10 per passage, in order>]}}
Your response:"""
REFINE_SCHEMA = {
    "type": "object",
    "required": ["scores"],
    "properties": {
        "scores": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 10}}
    },
}
DAMAGE_PROMPT = """Is this passage semantically complete on its own? Look for a sentence cut
off, a pronoun or "this"/"these" whose referent is missing, a conclusion without its premise,
or a list that is announced but not given.
PASSAGE:
{text}
Reply with JSON only: {{"score": <0 = badly fragmented ... 1 = complete>, "problems": ["..."]}}
Your response:"""
DAMAGE_SCHEMA = {
    "type": "object",
    "required": ["score"],
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "problems": {"type": "array", "items": {"type": "string"}},
    },
}
COMPRESS_PROMPT = """Rewrite the text below into at most {budget} words that keep every fact
needed to answer the query, with pronouns replaced by what they refer to. Use only facts
from the text.
QUERY: {query}
TEXT:
{text}
Reply with JSON only: {{"text": "..."}}
Your response:"""
COMPRESS_SCHEMA = {
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string", "minLength": 1}},
}
ELEMENTS_PROMPT = """List the key information elements a complete answer to the query must
be supported by (entities, relations, attributes), each in a few words.
QUERY: {query}
Reply with JSON only: {{"elements": ["...", "..."]}}
Your response:"""
ELEMENTS_SCHEMA = {
    "type": "object",
    "required": ["elements"],
    "properties": {"elements": {"type": "array", "items": {"type": "string"}, "maxItems": 12}},
}
ENTAIL_PROMPT = """For each element, rate from 0 to 1 how well the evidence supports it
(1 = stated in the evidence, 0 = absent). Also give a search query that would find what is
missing.
QUERY: {query}
ELEMENTS:
{elements}
EVIDENCE:
{evidence}
Reply with JSON only:
{{"scores": [<0-1 per element, in order>], "follow_up": ["<query per element>"]}}
Your response:"""
ENTAIL_SCHEMA = {
    "type": "object",
    "required": ["scores"],
    "properties": {
        "scores": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}},
        "follow_up": {"type": "array", "items": {"type": "string"}},
    },
}
