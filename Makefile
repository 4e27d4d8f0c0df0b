# The two commands of the README. Each sets up what it needs on a fresh machine.
#   make demo   a new project from the template, played offline (no key, no network)
#   make test   the type checker, then the whole test suite (.ci/run calls exactly this)

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PROXY := .venv-proxy
DEMO := demo

.PHONY: demo test clean browser

# convy alone, for the demo.
$(VENV)/.convy: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

# convy with what the tests use (mypy, pytest, scipy, statsmodels, pandas, polars, playwright, trustme),
# and Ray, for the distributed runs the suite plays on a real two-node cluster of this machine.
$(VENV)/.dev: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,ray]'
	touch $(VENV)/.convy $@

# convy is in .venv, not on PATH: the last line says how to reach it, whatever the run's exit code.
demo: $(VENV)/.convy
	$(BIN)/convy init $(DEMO)
	cd $(DEMO) && ../$(BIN)/convy run; code=$$?; \
		echo "convy is installed in $(VENV): . $(VENV)/bin/activate && cd $(DEMO) && convy report (or: cd $(DEMO) && ../$(BIN)/convy report)"; \
		exit $$code

test: $(VENV)/.dev browser $(PROXY)/.litellm
	$(BIN)/mypy
	$(BIN)/python -m pytest

# LiteLLM's proxy, a Chat Completions server nobody on this team wrote, which tests/test_proxy.py
# starts offline with mock models. Its own venv, so its pins never touch convy's.
$(PROXY)/.litellm: tests/proxy-requirements.txt
	$(PYTHON) -m venv $(PROXY)
	$(PROXY)/bin/pip install --quiet --upgrade pip
	$(PROXY)/bin/pip install --quiet -r tests/proxy-requirements.txt
	touch $@

# The pages are tested in a real headless Chromium: Debian's package, driven by Playwright
# (never a browser downloaded by Playwright itself).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing Debian's chromium for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

clean:
	rm -rf $(VENV) $(PROXY) $(DEMO)
