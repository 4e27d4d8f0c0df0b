# The two commands of the README. Each sets up what it needs on a fresh machine.
#   make demo   a new project from the template, played offline (no key, no network)
#   make test   the type checker, then the whole test suite on the oldest Python convy supports,
#               then part of it on the newest (.ci/run calls exactly this)

# convy supports Python 3.11 and newer (pyproject.toml's requires-python). `make test` plays the
# whole suite on PYTHON, in .venv: the oldest, python3.11, where it runs (else python3, so that
# `make demo` works on a machine without it); then the tests of NEWEST_TESTS on Python NEWEST, in a
# venv of its own (.venv-3.13). Each part starts by saying which Python it plays on.
#
# Why part of the suite on the newest: CI has 2 cores, and the whole suite takes 12 to 15 minutes
# there on 3.11 alone (2,796 tests in clean clones of December 2026, 110 to 113; 2,210 took 7 when
# this was first written): already past the 10 we keep it under, which is the work in hand (issue
# 30's closing notes say where the time goes: the Ray group most). Twice over it would take twice
# that (with this part, 1.5 to 1.9 minutes, and mypy, 7 seconds), and two at once on 2 cores would
# only slow each other. What a newer Python changes is the interpreter and the compiled wheels, so the newest
# plays the tests of the code that leans on them: asyncio
# (deadlines, places, cancellation, the stand-in server's own event loop), ssl, signals and
# subprocesses, typing and imports (the docstring examples, what a command loads), the pytest
# plugin, pydantic-settings, msgspec and PyYAML's errors, RE2, Ray's wheel (one spread run on a
# Ray of its own: the rest of test_spread plays Ray's and convy's logic again, not the wheel), and
# the command's exit codes end to end. Left to the oldest alone: the pages in Chromium (the same
# browser drawing the same files), LiteLLM's proxy (a program of its own, in .venv-proxy), Ray's own
# behaviour, the workflow's shell steps, the audits, which play again paths the rest covers, and
# the tests that kill a run at many moments (NEWEST_LEFT).
# Measured on clean clones of December 2026: this part took 1.5 to 1.9 minutes (877 tests). Setting up
# .venv-3.13 on a fresh clone adds about 2 minutes of installing.
#
# The newest is found as pythonNEWEST on the PATH, or else as pyenv's (whose shims run only the
# versions pyenv has selected). `make test NEWEST=` plays the oldest alone, saying so; CI never does.
OLDEST := 3.11
PYTHON ?= $(shell python$(OLDEST) -c "" 2>/dev/null && echo python$(OLDEST) || echo python3)
NEWEST ?= 3.13
VENV := .venv
BIN := $(VENV)/bin
NEWER := .venv-$(NEWEST)
PROXY := .venv-proxy
DEMO := demo
NEWEST_TESTS := tests/unit/test_examples.py tests/unit/test_http_tls.py tests/unit/test_api.py \
	tests/unit/test_deadlines.py tests/unit/test_busy.py tests/unit/test_faults.py \
	tests/e2e/test_process.py tests/e2e/test_imports.py tests/unit/cli/test_pytest_plugin.py \
	tests/e2e/test_settings_errors.py tests/unit/test_scenario_errors.py tests/unit/test_secrets.py \
	tests/unit/test_standin.py tests/unit/test_attempts.py tests/e2e/test_exit_codes.py \
	tests/e2e/test_check.py tests/e2e/test_spelling.py \
	tests/e2e/test_spread.py::test_two_workers_on_a_ray_of_the_runs_own_write_what_one_process_writes
# Of those, the tests that kill a process at many moments (kill -9 at seeded points, a Ray worker or
# driver killed) stay on the oldest: what they hold is the run folder's, not the interpreter's, and
# they took nearly a third of this part's time.
NEWEST_LEFT := seeded_moments or killed
# Both parts play on WORKERS pytest-xdist workers, three on CI's two cores: the suite waits more
# than it works (for the `convy` a test started, a server, a browser, Ray), so a third worker keeps
# the cores busy while two wait (two workers used about 58% of the two cores). A worker takes a
# whole test file at a time, the longest first (tests/conftest.py says how the groups are made, and
# why it writes them where pytest 9.2 reads them), so a module's fixtures are made once and the
# session's Ray cluster and LiteLLM proxy start in one worker only.
# `make test WORKERS=0` plays the suite in one process, as before.
WORKERS ?= 3
XDIST := -n $(WORKERS) --dist loadgroup

# The suite starts Python over and over (each `convy` a test plays, each Ray worker, each pytest
# worker), and where no bytecode cache is kept Python compiles every module it imports from source
# at each start: convy's own modules cost some 0.15 s of CPU a start that way (`convy check`, 0.43 s
# where 0.30 with the caches), on CI's two cores. PYTHONDONTWRITEBYTECODE, set on some machines and
# images, stops the caches being written, so make does not pass it on to what it starts: the caches
# go in __pycache__ folders, which git ignores.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test newest clean browser

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
	$(BIN)/pip install --quiet -e '.[dev,ray,mcp,openai-agents,pydantic-ai,langgraph]'
	touch $(VENV)/.convy $@

# convy is in .venv, not on PATH: the last line says how to reach it, whatever the run's exit code.
# Played again where it was made before (convy init refuses a folder that holds a project, and a
# second `make demo` exited 2): the same project, a new run beside the last.
demo: $(VENV)/.convy
	@if [ -d $(DEMO) ]; then echo "$(DEMO) is there already (make clean removes it): playing it again"; \
		else $(BIN)/convy init $(DEMO); fi
	cd $(DEMO) && ../$(BIN)/convy run; code=$$?; \
		echo "convy is installed in $(VENV): . $(VENV)/bin/activate && cd $(DEMO) && convy report (or: cd $(DEMO) && ../$(BIN)/convy report)"; \
		exit $$code

test: $(VENV)/.dev browser $(PROXY)/.litellm
	$(BIN)/mypy
	@$(BIN)/python -c "import sys; print('the whole suite on Python', sys.version.split()[0])"
	$(BIN)/python -m pytest $(XDIST) --durations=30
	$(MAKE) --no-print-directory newest

ifeq ($(NEWEST),)
newest:
	@echo "make test: NEWEST is empty, so no test was played on the newest Python"
else
# The tests of NEWEST_TESTS on the newest Python (see the top of this file for which and why).
newest: $(NEWER)/.dev
	@$(NEWER)/bin/python -c "import sys; print('part of the suite on Python', sys.version.split()[0])"
	$(NEWER)/bin/python -m pytest $(XDIST) $(NEWEST_TESTS) -k "not ($(NEWEST_LEFT))"

$(NEWER)/.dev: pyproject.toml
	@python=$$(command -v python$(NEWEST) >/dev/null 2>&1 && python$(NEWEST) -c "" 2>/dev/null && echo python$(NEWEST) \
		|| { prefix=$$(pyenv prefix $(NEWEST) 2>/dev/null) && echo "$$prefix/bin/python$(NEWEST)"; }); \
	if [ -z "$$python" ]; then \
		echo "make test: Python $(NEWEST) not found (neither python$(NEWEST) nor pyenv's); install it, or play the oldest alone with: make test NEWEST=" >&2; \
		exit 1; \
	fi; \
	echo "$(NEWER): $$python"; \
	$$python -m venv $(NEWER)
	$(NEWER)/bin/pip install --quiet --upgrade pip
	$(NEWER)/bin/pip install --quiet -e '.[dev,ray,mcp,openai-agents,pydantic-ai,langgraph]'
	touch $@
endif

# LiteLLM's proxy, a Chat Completions server nobody on this team wrote, which tests/support/litellmproxy.py
# starts offline with mock models, once a session. Its own venv, so its pins never touch convy's.
$(PROXY)/.litellm: tests/support/proxy-requirements.txt
	$(PYTHON) -m venv $(PROXY)
	$(PROXY)/bin/pip install --quiet --upgrade pip
	$(PROXY)/bin/pip install --quiet -r tests/support/proxy-requirements.txt
	touch $@

# The pages are tested in a real headless Chromium: Debian's package, driven by Playwright
# (never a browser downloaded by Playwright itself).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing Debian's chromium for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

clean:
	rm -rf $(VENV) $(NEWER) $(PROXY) $(DEMO)
