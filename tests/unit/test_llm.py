from __future__ import annotations

import pytest

from semrag.errors import ConfigError, LLMOutputError
from semrag.llm import acomplete_json, complete_json, extract_json, validate_json
from semrag.testing import FakeLLM

SCHEMA = {
    "type": "object",
    "required": ["entities"],
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "score"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "score": {"type": "number", "minimum": 0, "maximum": 1},
                },
            },
        }
    },
}
GOOD = '{"entities": [{"name": "Marie Curie", "score": 0.9}]}'


@pytest.mark.parametrize(
    "reply",
    [
        GOOD,
        f"```json\n{GOOD}\n```",
        f"Sure! Here is the JSON:\n{GOOD}\nHope this helps.",
    ],
)
def test_extract_json_tolerates_fences_and_prose(reply):
    assert extract_json(reply)["entities"][0]["name"] == "Marie Curie"


def test_extract_json_raises_without_json():
    with pytest.raises(ValueError, match="no JSON value found in the reply"):
        extract_json("no json here {")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({}, "missing required key 'entities'"),
        ({"entities": "x"}, "expected array"),
        ({"entities": [{"name": "", "score": 0.5}]}, "shorter than 1"),
        ({"entities": [{"name": "a", "score": 2}]}, "above the maximum"),
        ({"entities": [{"name": "a", "score": True}]}, "expected number, got bool"),
    ],
)
def test_validate_json_names_the_violation(value, message):
    with pytest.raises(ValueError, match=message):
        validate_json(value, SCHEMA)


def test_validate_json_unknown_type_is_config_error():
    with pytest.raises(ConfigError, match="unsupported schema type 'decimal' at"):
        validate_json(1, {"type": "decimal"})


def test_complete_json_first_try():
    llm = FakeLLM([GOOD])
    assert complete_json(llm, "extract", SCHEMA)["entities"][0]["score"] == 0.9
    assert len(llm.prompts) == 1


def test_complete_json_retries_once_with_the_error():
    llm = FakeLLM(['{"entities": [{"name": "x"}]}', GOOD])
    assert complete_json(llm, "extract", SCHEMA)["entities"][0]["name"] == "Marie Curie"
    assert len(llm.prompts) == 2
    assert "missing required key 'score'" in llm.prompts[1]


def test_complete_json_raises_after_retry():
    llm = FakeLLM(["not json", "still not json"])
    with pytest.raises(LLMOutputError, match="LLM reply failed validation after 2") as info:
        complete_json(llm, "extract", SCHEMA)
    assert info.value.reply == "still not json"
    assert "no JSON value" in info.value.problem
    assert len(llm.prompts) == 2


async def test_acomplete_json_matches_sync():
    llm = FakeLLM(["oops", GOOD])
    value = await acomplete_json(llm, "extract", SCHEMA)
    assert value == extract_json(GOOD)
    with pytest.raises(LLMOutputError, match="LLM reply failed validation after 2"):
        await acomplete_json(FakeLLM(["{}", "{}"]), "extract", SCHEMA)


def test_fake_llm_script_exhausted():
    llm = FakeLLM(["one"])
    llm.complete("a")
    with pytest.raises(RuntimeError, match="exhausted"):
        llm.complete("b")
