# Everything a fresh machine needs: `make run` (train ACER on CartPole-v1) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION := 2.13.0
# Two stamps: `make run` needs only the package and torch; `make test` (and everything for maintainers) the
# [dev] extra on top, with Ray, MuJoCo, the zoo, ONNX and the docs tools.
CORE_STAMP := $(VENV)/.sb3-acer-core
STAMP := $(VENV)/.sb3-acer-installed

.PHONY: install run test lint typecheck unit docs docs-build slow bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# torch is pinned and installed first so that no other requirement pulls a (multi-GB) CUDA build.
$(CORE_STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet "torch==$(TORCH_VERSION)"
	$(PY) -m pip install --quiet -e .
	touch $(CORE_STAMP)

$(STAMP): $(CORE_STAMP)
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

run: $(CORE_STAMP)
	$(PY) -m sb3_acer.examples.cartpole

lint: $(STAMP)
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .

typecheck: $(STAMP)
	$(PY) -m mypy

unit: $(STAMP)
	$(PY) -m pytest -q

# The documentation site (MkDocs, docs/ and mkdocs.yml): `make docs` serves it with live reload, and
# `make test` builds it with --strict, so a broken link or API reference fails the build (not with --quiet,
# which hides the warnings that --strict counts). Offline: no plugin fetches anything at build time.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve

docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

test: lint typecheck unit docs-build

slow: $(STAMP)
	$(PY) -m pytest -q -m slow

bench: $(STAMP)
	$(PY) -m benchmarks.classic_control

clean:
	rm -rf $(VENV) build dist site *.egg-info .mypy_cache .ruff_cache .pytest_cache
