"""Apache Kafka itself, run beside kafka-ref as the reference it is checked against.

kafka-ref teaches Kafka by being one; the rules it follows are only as good as their
agreement with the real thing. This package fetches the pinned Apache Kafka from Maven
Central (`classpath.py`) and runs it on loopback in KRaft mode, one combined node or three
(`cluster.py`), so the conformance suite, the differential tests, the benchmarks and the
interop tests can put the same question to both brokers and compare the answers.
"""
