"""The broker's metrics, served for Prometheus under the names Kafka's MBeans get.

Kafka measures itself with Yammer meters, gauges and histograms registered as JMX MBeans
(`kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=t`); the Prometheus JMX
exporter turns them into metric names (`kafka_server_brokertopicmetrics_messagesin_total`).
kafka-ref records the same quantities where each concept lives and serves them under those
names over HTTP (`metrics.listener`, `kafka-ref broker --metrics HOST:PORT`):

* `recorders.py` - the counters and histograms, bumped as things happen;
* `collector.py` - the scrape: the names, and the gauges read from the broker's state;
* `exporter.py` - the per-broker registry and its HTTP server.

Rules: MET-1..MET-7 (spec/metrics.md); docs/metrics.md lists every metric.
"""
