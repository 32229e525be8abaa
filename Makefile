# Two commands for a newcomer: `make demo` (install + lintf verify + a short numerical demo)
# and `make test` (install + the test suite).  Everything lives in ./.venv.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
LINTF   = $(VENV)/bin/lintf
STAMP   = $(VENV)/.installed

.PHONY: demo test test-slow verify install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

verify: $(STAMP)
	$(LINTF) verify

demo: $(STAMP)
	$(LINTF) verify
	$(PY) -m numerics.demo

test: $(STAMP)
	$(PY) -m pytest -q

test-slow: $(STAMP)
	HYPOTHESIS_PROFILE=slow $(PY) -m pytest -q -m "slow or not slow"

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
