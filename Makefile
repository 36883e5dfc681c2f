# Shortcuts for contributors (CONTRIBUTING.md). CI runs `bash .ci/run`, the full suite.
FAST = not neo4j and not llm and not model and not ray

.PHONY: test test-all lint docs results release

test:  ## the fast lane: no Neo4j server, no real LLM, no MiniLM (about 2 min on 2 cores)
	HF_HUB_OFFLINE=1 python -m pytest -m "$(FAST)" -q

test-all:  ## what CI runs: every test, the real Neo4j server and models included
	HF_HUB_OFFLINE=1 python -m pytest

lint:  ## style and the import floors
	ruff check . && ruff format --check . && lint-imports

docs:  ## the documentation site, strict (warnings fail), into site/
	NO_MKDOCS_2_WARNING=1 mkdocs build --strict

results:  ## benchmarks/RESULTS.md from the records in benchmarks/results/
	python benchmarks/report.py

release:  ## build, check and install the release in a fresh virtualenv (as CI does)
	bash .ci/release-check
