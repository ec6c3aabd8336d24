# The two entry points the README promises: `make run` and `make test`.
# Each creates .venv on first use and installs what it needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run demo test lint bench docs clean conformance conformance-tansu

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,docs,bench,spark]'
	touch $(STAMP)

# The main job: one broker on 127.0.0.1:9092 with embedded metadata (no ZooKeeper).
# group.initial.rebalance.delay.ms=0 as in the server.properties Kafka ships for development:
# a lone consumer gets its partitions at once instead of after Kafka's 3 s default.
run: $(STAMP)
	$(BIN)/kafka-ref broker --listen $${LISTEN:-127.0.0.1:9092} --data-dir $${DATA_DIR:-/tmp/kafka-ref-data} \
		--config group.initial.rebalance.delay.ms=0

demo: $(STAMP)
	$(BIN)/kafka-ref demo --data-dir $${DATA_DIR:-/tmp/kafka-ref-demo}

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/kafka-ref bench storage

# The conformance suite against kafka-ref, and against Tansu, with the reports in the docs;
# writing a report regenerates docs/conformance/matrix.md, every report side by side.
conformance: $(STAMP)
	$(BIN)/python -m pytest tests/conformance -q -p no:cacheprovider --target kafka_ref --conformance-report docs/conformance

conformance-tansu: $(STAMP)
	-$(BIN)/python -m pytest tests/conformance -q -p no:cacheprovider --target tansu --conformance-report docs/conformance

docs: $(STAMP)
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) site .pytest_cache .hypothesis
