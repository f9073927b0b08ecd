# The README's two commands: `make demo` and `make test`. Each sets up what it needs first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: setup demo test lint typecheck unit clean docs docs-site

setup: $(VENV)/.installed
	@bash scripts/system-deps.sh
	@$(BIN)/ddbkeys local --fetch-only >/dev/null

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

demo: setup
	$(BIN)/ddbkeys demo

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed
	$(BIN)/mypy

# Most tests wait on DynamoDB Local, the fault proxy, a margin or a child process, not on a
# core: six workers (each with its own embedded DynamoDB Local) keep two cores busy (four: 964 s
# of pytest here, six: 823 s).
#
# The suite runs `ddbkeys` in hundreds of child processes. Where PYTHONDONTWRITEBYTECODE is set
# (as in CI), none of them saves the bytecode it compiles, so each would compile ddbkeys'
# modules again (0.2-0.3 s of a core a command): compiled once here, they are read instead.
test: setup lint typecheck
	$(BIN)/python -m compileall -q -j 0 src tests >/dev/null
	$(BIN)/pytest -n 6 --dist worksteal --durations=40

docs: $(VENV)/.installed
	$(BIN)/python -m ddbkeys._cli.reference --write
	$(BIN)/python scripts/public_api.py --write

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# The docs site (mkdocs.yml): README.md, docs/ and an API page per public module, built with
# --strict (a broken link or reference fails it; tests/docs/test_site.py runs it in CI too).
# `$(BIN)/mkdocs serve` serves it at http://127.0.0.1:8000 while you edit.
docs-site: $(VENV)/.installed
	$(BIN)/mkdocs build --strict
