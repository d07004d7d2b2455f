# The two commands of the README: `make demo` and `make test`. Both create .venv and install
# what they need first, with the versions CI tested (constraints.txt; `make lock` refreshes it);
# `make test` also installs headless Chromium for the browser tests (scripts/ensure_chromium.sh)
# and, in a git work tree, the commit-msg hook of scripts/hooks/.
# On machines without a local CPU wheel of torch, pass the PyTorch CPU index, e.g.
# `make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu`.

PYTHON ?= python3
VENV ?= .venv
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?=
CONSTRAINTS ?= constraints.txt
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --quiet --constraint $(CONSTRAINTS)
TORCH := torch==$(TORCH_VERSION) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))

.PHONY: install demo test lint lock clean chromium

# Candor and what it runs on; the demo needs no more.
$(BIN)/candor: pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --constraint $(CONSTRAINTS) pip
	$(PIP) $(TORCH)
	$(PIP) -e .
	touch $@

# The test extras on top (pytest, ruff, mypy, ...).
$(VENV)/.test-extras: $(BIN)/candor
	$(PIP) -e '.[test]'
	touch $@

install: $(BIN)/candor

# Headless Chromium for the browser tests: Debian's package, through apt-get (sudo when not root),
# or a message saying what to install where that cannot be done.
chromium:
	bash scripts/ensure_chromium.sh

demo: install
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/demo.py

test: $(VENV)/.test-extras chromium
	@# the commit-msg hook (subjects of 72 characters at most), in a git work tree; never fails the run
	-@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then git config core.hooksPath scripts/hooks || true; fi
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest
	$(BIN)/ruff check rag bot migrations tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/lint-imports

lint: $(VENV)/.test-extras
	$(BIN)/ruff check rag bot migrations tests benchmarks scripts
	$(BIN)/ruff format --check rag bot migrations
	$(BIN)/mypy
	$(BIN)/lint-imports

# Re-resolve every dependency to its newest allowed version in a scratch venv and write the
# versions to constraints.txt (torch is pinned by TORCH_VERSION, not here). Run the tests after.
lock:
	rm -rf .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet --upgrade pip
	.lock-venv/bin/python -m pip install --quiet $(TORCH)
	.lock-venv/bin/python -m pip install --quiet -e '.[test]'
	.lock-venv/bin/python -m pip freeze --exclude-editable > .lock-venv/freeze.txt
	{ echo "# The versions CI tested: make demo, make test and .ci/run install with these."; \
	  echo "# Refresh with 'make lock' (then run 'make test'); pyproject.toml keeps the ranges."; \
	  .lock-venv/bin/python -m pip --version | sed 's/^pip \([^ ]*\).*/pip==\1/'; \
	  grep -v -i '^torch==' .lock-venv/freeze.txt; } > .lock-venv/constraints.txt
	mv .lock-venv/constraints.txt $(CONSTRAINTS)
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) .lock-venv build *.egg-info
