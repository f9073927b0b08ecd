# The README's two commands: `make demo` and `make test`. Each sets up what it needs first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: setup demo test lint typecheck unit clean docs

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

# Most tests wait on DynamoDB Local, the fault proxy or a child process, not on a core: four
# workers (each with its own embedded DynamoDB Local) finish in about a third of the time.
test: setup lint typecheck
	$(BIN)/pytest -n 4 --dist worksteal --durations=15

docs: $(VENV)/.installed
	$(BIN)/python -m ddbkeys._cli.reference --write
	$(BIN)/python scripts/public_api.py --write

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
