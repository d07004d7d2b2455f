# The two commands of the README: `make demo` and `make test`. Both create .venv and install
# what they need first. On machines without a local CPU wheel of torch, pass the PyTorch CPU
# index, e.g. `make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu`.

PYTHON ?= python3
VENV ?= .venv
TORCH_VERSION ?= 2.13.0
TORCH_INDEX ?=
BIN := $(VENV)/bin

.PHONY: install demo test lint bench clean

$(BIN)/candor: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==$(TORCH_VERSION) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/candor

demo: install
	HF_HUB_OFFLINE=1 $(BIN)/python scripts/demo.py

test: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest
	$(BIN)/ruff check rag bot migrations tests benchmarks scripts
	$(BIN)/mypy

lint: install
	$(BIN)/ruff check rag bot migrations tests benchmarks scripts
	$(BIN)/ruff format --check rag bot migrations
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info
