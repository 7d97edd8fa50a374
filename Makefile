# Two entry points (see README.md):
#   make demo   install into .venv, then datagen -> train -> decode -> evaluate
#               -> analyze on the embedded synthetic_syntax_reorder problem
#   make test   install into .venv (with test extras), then run the test suite
#
# The install step pins torch to the CPU build first: stanza depends on torch,
# and an unpinned torch pulls several GB of CUDA packages.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH ?= torch==2.13.0
DEMO ?= demo
DEMO_STEPS ?= 1500
# pytest-xdist workers; CI machines have 2 cores.
TEST_WORKERS ?= 2

.PHONY: install test test-fast demo clean-demo

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH)"
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -n $(TEST_WORKERS) -p no:cacheprovider tests

test-fast: install
	$(PY) -m pytest -n $(TEST_WORKERS) -p no:cacheprovider -m "not slow" tests

demo: install
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash docs/demo.sh "$(DEMO)" "$(DEMO_STEPS)"

clean-demo:
	rm -rf "$(DEMO)"
