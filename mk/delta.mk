# Delta Lake: delta-rs (deltalake 1.6.6, its own venv) reads, value by value, a table the
# gateway wrote through ADBC ingest (TestDeltaThroughTheGateway; docs/delta.md).
DELTA_VENV := .venv-delta

$(DELTA_VENV)/.installed: integration/delta/requirements.txt
	python3 -m venv $(DELTA_VENV)
	$(DELTA_VENV)/bin/pip install -q --disable-pip-version-check -r integration/delta/requirements.txt
	touch $@

.PHONY: delta-check
delta-check: $(DELTA_VENV)/.installed
	FLIGHTGW_DELTALAKE=$(CURDIR)/$(DELTA_VENV)/bin/python $(GO) test -count=1 -run '^TestDeltaThroughTheGateway$$' ./integration

TEST_TARGETS += delta-check
