# Python end-to-end tests: real clients (ADBC Flight SQL driver, pyarrow)
# against a gateway binary, and independent readers (pyiceberg, DuckDB) of
# what it wrote.
VENV    := .venv
PYTHON  := $(VENV)/bin/python
PY_REQS := integration/python/requirements.txt

$(VENV)/.installed: $(PY_REQS)
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r $(PY_REQS)
	touch $@

.PHONY: venv test-python
venv: $(VENV)/.installed

# The tests start their own gateway from $(BIN) on a free loopback port.
test-python: venv build
	FLIGHTGW_BIN=$(abspath $(BIN)) $(PYTHON) -m pytest -q integration/python

TEST_TARGETS += test-python
