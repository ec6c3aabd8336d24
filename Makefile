# The two entry points the README promises: `make run` and `make test`.
# Each creates .venv on first use and installs what it needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run demo test test-long system-packages apache-kafka spark-connector franz-go lint bench docs clean conformance conformance-tansu conformance-kafka lab

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,docs,bench,spark,labs]'
	touch $(STAMP)

# The main job: one broker on 127.0.0.1:9092 with embedded metadata (no ZooKeeper).
# group.initial.rebalance.delay.ms=0 as in the server.properties Kafka ships for development:
# a lone consumer gets its partitions at once instead of after Kafka's 3 s default.
run: $(STAMP)
	$(BIN)/kafka-ref broker --listen $${LISTEN:-127.0.0.1:9092} --data-dir $${DATA_DIR:-/tmp/kafka-ref-data} \
		--config group.initial.rebalance.delay.ms=0

demo: $(STAMP)
	$(BIN)/kafka-ref demo --data-dir $${DATA_DIR:-/tmp/kafka-ref-demo}

# What the tests need beyond Python, from Debian: a JDK (ZooKeeper, Spark and Apache Kafka run
# on Java; tests/java, the harness of Kafka's Java clients, is compiled), zookeeper
# (tests/cluster runs a real ZooKeeper server), chromium (tests/test_docs_build.py renders the
# site's diagrams headless), maven (it fetches Apache Kafka and Spark's Kafka connector, the
# references kafka-ref is checked against, from Maven Central, and builds the harness) and
# golang (it builds franz-go's kgo tests; an older Go fetches the toolchain franz-go's go.mod
# asks for from the Go module proxy itself). Installed quietly, only when missing, with
# `sudo -n` when not root; when that cannot work, one line names the command to run. The
# tests that need a missing part then fail, never skip.
system-packages:
	@missing=""; \
	command -v javac >/dev/null 2>&1 || missing="$$missing default-jdk-headless"; \
	[ -e /usr/share/java/zookeeper.jar ] || missing="$$missing zookeeper"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v mvn >/dev/null 2>&1 || missing="$$missing maven"; \
	command -v go >/dev/null 2>&1 || missing="$$missing golang"; \
	if [ -n "$$missing" ]; then \
		sudo=""; [ "$$(id -u)" -eq 0 ] || sudo="sudo -n"; \
		echo "installing Debian packages:$$missing"; \
		if ! { command -v apt-get >/dev/null 2>&1 \
			&& $$sudo apt-get update -qq >/dev/null \
			&& DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; }; then \
			echo "could not install$$missing: run 'sudo apt-get install -y$$missing', then 'make test' again" >&2; \
		fi; \
	fi

# Three workers, each taking whole files (module fixtures stay in one process): most of the
# suite waits on brokers, ZooKeeper sessions and Spark rather than computing, so three workers
# on two cores halve the time. PYTEST_ARGS="-n 0" runs it in one process.
PYTEST_ARGS ?= -n 3 --dist loadfile

# Apache Kafka's jars (kafka_ref/apache/pom.xml), fetched once with Maven and cached; the Java
# harness of tests/java_clients built against them (cached too, by the hash of its sources).
apache-kafka: $(STAMP) system-packages
	$(BIN)/kafka-ref reference-kafka --fetch
	$(BIN)/python -c 'from tests.java_clients.harness import harness_jar; print(harness_jar())'

# Spark's own Kafka connector (kafka_ref/spark/pom.xml), fetched once with Maven and cached.
spark-connector: $(STAMP) system-packages
	$(BIN)/python -m kafka_ref.spark.connector --fetch

# franz-go's kgo tests: the module from the Go module proxy, its test binary built once, cached.
franz-go: $(STAMP) system-packages
	$(BIN)/python -m kafka_ref.conformance.franz_go --fetch

# The suite runs twice: everything against kafka-ref, then the conformance suite against
# Apache Kafka itself, the judge of every rule (a one-node KRaft Kafka and the siblings some
# rules ask for; the 3-node cluster is left to `make conformance-kafka`). It fails if Kafka
# cannot be fetched or started, or if Kafka breaks a rule that claims to describe it.
test: $(STAMP) system-packages apache-kafka spark-connector franz-go
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=30 $(PYTEST_ARGS)
	$(BIN)/python -m pytest tests/conformance -q -p no:cacheprovider -n 0 \
		--target apache_kafka --capabilities=-cluster

# The long forms of the campaigns (tests/conftest.py `campaign`): run on demand, not in CI.
test-long: $(STAMP) system-packages apache-kafka spark-connector franz-go
	KAFKA_REF_LONG=1 $(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Grade a lab's solution: `make lab LAB=02` (kafka-ref lab check; --reference for ours).
lab: $(STAMP)
	$(BIN)/kafka-ref lab check $${LAB:?which lab? make lab LAB=02}

bench: $(STAMP)
	$(BIN)/kafka-ref bench storage

# The conformance suite against kafka-ref, against Apache Kafka (every rule, the replication
# rules on three brokers and a KRaft controller), and against Tansu, with the reports in the
# docs; writing a report regenerates docs/conformance/matrix.md, every report side by side.
conformance: $(STAMP)
	$(BIN)/python -m pytest tests/conformance -q -p no:cacheprovider --target kafka_ref --conformance-report docs/conformance

conformance-kafka: $(STAMP) apache-kafka
	$(BIN)/python -m pytest tests/conformance -q -p no:cacheprovider -n 0 --target apache_kafka --conformance-report docs/conformance

conformance-tansu: $(STAMP)
	-$(BIN)/python -m pytest tests/conformance -q -p no:cacheprovider --target tansu --conformance-report docs/conformance

docs: $(STAMP)
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) site .pytest_cache .hypothesis
