"""The local model's text rules (no model is loaded here)."""

from __future__ import annotations

import pytest

from semrag.graph import communities, extract
from semrag.index.ingest import ingestion as _ingest
from semrag.local_llm import _ASKS_FOR_OBJECT, _json_closed
from semrag.postprocess import _spc_prompts as spc
from semrag.retrieval import _query_plan, ppr, sketch, ssg

PROMPTS = {
    "themes": _ingest._THEME_PROMPT,
    "extraction": extract._EXTRACT_PROMPT,
    "report": communities._REPORT_PROMPT,
    "guided traversal": ssg._LLM_PROMPT,
    "ppr entities": ppr._NER_PROMPT,
    "sketch entities": sketch._NER_PROMPT,
    "iar plan": _query_plan.PLAN_PROMPT,
    "spc refine": spc.REFINE_PROMPT,
    "spc damage": spc.DAMAGE_PROMPT,
    "spc compress": spc.COMPRESS_PROMPT,
    "spc elements": spc.ELEMENTS_PROMPT,
    "spc entail": spc.ENTAIL_PROMPT,
}


@pytest.mark.parametrize("name", list(PROMPTS))
def test_every_semrag_prompt_is_seen_to_ask_for_an_object(name):
    assert _ASKS_FOR_OBJECT.search(PROMPTS[name]), name


def test_other_prompts_get_no_prefill():
    assert not _ASKS_FOR_OBJECT.search("Write a haiku about JSON.")
    assert not _ASKS_FOR_OBJECT.search("Summarise the text.\n{text}")


@pytest.mark.parametrize(
    ("text", "closed"),
    [
        ('{"a": 1}', True),
        ('Sure! {"a": [1, 2]} and more', True),
        ('{"a": "}"', False),
        ('{"a": "\\"}"}', True),
        ("[1, [2]", False),
        ("no json at all", False),
        ("}{", False),
    ],
)
def test_json_closed(text, closed):
    assert _json_closed(text) is closed
