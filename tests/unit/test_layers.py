"""The floors of the code: what import-linter checks, and what it cannot see."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("semrag", "langchain_semrag", "llama_index_semrag")


def modules() -> list[Path]:
    return [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]


def test_no_module_climbs_to_its_package_root():
    """``from semrag import X`` inside semrag runs semrag/__init__ (which imports every
    floor) from a low floor; the contracts do not see the root, so this test does."""
    climbing = []
    for path in modules():
        if path.name == "__init__.py" and path.parent.name in PACKAGES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in PACKAGES[:1]:
                climbing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.Import):
                climbing += [
                    f"{path.relative_to(ROOT)}:{node.lineno}"
                    for a in node.names
                    if a.name == "semrag"
                ]
    # the adapters are above the core: they may import its public root
    assert [c for c in climbing if c.startswith("semrag/")] == []


def test_import_contracts_hold():
    lint = shutil.which("lint-imports")
    assert lint, "import-linter is in the dev extra: pip install -e '.[dev]'"
    out = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "Contracts: 2 kept, 0 broken." in out.stdout


MAX_LINES = 600

# A facade is the exception, with its own bound: one class users build, whose public
# methods (and their documentation) delegate to the objects it holds, each under the cap.
FACADES = {"semrag/index/semantic_index.py": 1250}


def test_no_module_is_over_600_lines():
    """A module a maintainer can read in one sitting; split by role, not by line count."""
    long = {
        name: n
        for p in modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines()))
        > FACADES.get(name := str(p.relative_to(ROOT)), MAX_LINES)
    }
    assert long == {}


def _protocol_members(cls: ast.ClassDef) -> set[str]:
    """The members a ``Protocol`` class declares in its own body (public ones)."""
    names = {s.name for s in cls.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    names |= {
        s.target.id
        for s in cls.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }
    return {n for n in names if not n.startswith("_") or n in ("__contains__", "__len__")}


def test_every_protocol_declares_at_most_ten_members():
    """A capability a reader or store implements is small; bigger ones are unions of them."""

    def is_protocol(base: ast.expr) -> bool:
        return (isinstance(base, ast.Name) and base.id == "Protocol") or (
            isinstance(base, ast.Attribute) and base.attr == "Protocol"
        )

    sizes = {
        f"{p.relative_to(ROOT)}:{node.name}": len(_protocol_members(node))
        for p in modules()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and any(is_protocol(b) for b in node.bases)
    }
    assert sizes["semrag/graph/types.py:GraphReads"] == 10  # the check sees the store split
    assert {k: n for k, n in sizes.items() if n > 10} == {}


def test_a_facade_delegates():
    """Every method of a facade is short: the work is in the objects it holds.

    The constructor excepted: it checks the parameters and wires those objects."""
    long = []
    for name in FACADES:
        tree = ast.parse((ROOT / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name != "__init__"
            ):
                body = node.body[1:] if ast.get_docstring(node) else node.body
                lines = body[-1].end_lineno - body[0].lineno + 1 if body else 0
                if lines > 40:
                    long.append(f"{name}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


def test_no_module_imports_a_private_name_of_another():
    """Private modules hold public names (``semrag.neo4j._cypher.SCHEMA``); a leading
    underscore on the imported *name* means it was never meant to leave its module."""
    found = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES:
                found += [
                    f"{path.relative_to(ROOT)}:{node.lineno} {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert found == []


def test_records_are_written_only_while_they_are_made():
    """``object.__setattr__`` (writing a frozen object) only in ``__init__``/``__post_init__``.

    A record's vectors move to a part's rows through its ``RecordRows``, never by
    rewriting the frozen record from outside.
    """
    found = []
    for path in modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "__setattr__"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "object"
                    and fn.name not in ("__init__", "__post_init__")
                ):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} in {fn.name}")
    assert found == []
