# The two commands of the README. Each sets up what it needs on a fresh machine.
#   make demo   a new project from the template, played offline (no key, no network)
#   make test   the whole test suite (.ci/run calls exactly this)

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO := demo

.PHONY: demo test clean

$(BIN)/convy: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/convy
	$(BIN)/convy init $(DEMO)
	cd $(DEMO) && ../$(BIN)/convy run

test: $(BIN)/convy
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) $(DEMO)
