"""The conformance suite as a product: judge any Kafka broker against kafka-ref's spec.

* `wire.py`: a blocking protocol client built on kafka-ref's codecs, for exact requests;
* `capabilities.py`: what a target can do, probed over the wire or declared;
* `targets.py`: the brokers a run can judge (kafka-ref, a mutant, Tansu, any bootstrap);
* `plugin.py`: the pytest plugin (`--target`, fixtures, the per-rule report hooks);
* `report.py`: one row per spec rule, as JSON and Markdown;
* `matrix.py`: every report of a directory side by side, one column per broker;
* `mutants.py`, `mutant_broker.py`: kafka-ref with known bugs, to prove the suite catches them;
* `history.py`: a Jepsen-style checker of send/poll histories;
* `campaign.py`: a fault campaign on a real local cluster (`kafka-ref chaos`), from its
  `workload.py` (producer, consumer group, final read), `nemesis.py` (kill, term, pause,
  partitions), `proxy.py` (the cuttable loopback links) and `liveness.py` (the time from
  a whole cluster to the next acknowledgement).

Run it from a checkout: `pytest tests/conformance --target kafka_ref` (docs/conformance.md).
"""
