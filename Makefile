# Everything a fresh machine needs: `make run` (train ACER on CartPole-v1) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION := 2.13.0
STAMP := $(VENV)/.sb3-acer-installed

.PHONY: install run test lint typecheck unit slow bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# torch is pinned and installed first so that no other requirement pulls a (multi-GB) CUDA build.
$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet "torch==$(TORCH_VERSION)"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) -m sb3_acer.examples.cartpole

lint: $(STAMP)
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .

typecheck: $(STAMP)
	$(PY) -m mypy

unit: $(STAMP)
	$(PY) -m pytest -q

test: lint typecheck unit

slow: $(STAMP)
	$(PY) -m pytest -q -m slow

bench: $(STAMP)
	$(PY) benchmarks/classic_control.py

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache
