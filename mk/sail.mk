# Sail (PyPI pysail 0.7.2, its own venv) as an upstream of a flightsql
# catalog: TestSail starts `sail flight server` on loopback (docs/upstream.md).
# Adds about 30 s to a cold `make test` (20 s to install the wheel, 170 MB
# unpacked; 5 s with the pip cache warm), the test itself under 1 s.
SAIL_VENV := .venv-sail
SAIL_REQS := catalogs/flightsql/testdata/sail-requirements.txt

$(SAIL_VENV)/.installed: $(SAIL_REQS)
	python3 -m venv $(SAIL_VENV)
	$(SAIL_VENV)/bin/pip install -q --disable-pip-version-check -r $(SAIL_REQS)
	touch $@

.PHONY: sail-check
sail-check: $(SAIL_VENV)/.installed
	FLIGHTGW_SAIL=$(CURDIR)/$(SAIL_VENV)/bin/sail $(GO) test -count=1 -run '^TestSail$$' ./catalogs/flightsql

TEST_TARGETS += sail-check
