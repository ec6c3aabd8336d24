"""A stop signal stops a cluster broker cleanly, even while it replicates and serves clients.

A broker of a cluster has more to stop than a single broker: replica fetchers that wait in
long fetches to their leaders, delayed acks=all produces in the purgatory, its ZooKeeper
session and watches. A shutdown that waits on any of them forever is a hang; `ServerProcess`
would then kill the broker after its stop timeout, and the exit code would say so (-9).

Each broker in turn gets SIGTERM while a producer sends acks=all to a topic whose leaders
are spread over all three, and must exit with code 0 and say it shut down cleanly; its next
start must find the clean-shutdown marker (DUR-6: no recovery), and nothing acknowledged is
lost.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

from tests.cluster.conftest import wait_for
from tests.cluster.test_controller import create_topic
from tests.cluster.test_replication import consume_all, produce_stream, wait_full_isr

pytestmark = pytest.mark.timeout(240)

PARTITIONS = 3


@pytest.mark.spec("BROKER-39", "DUR-6")
def test_sigterm_stops_each_cluster_broker_cleanly_mid_stream(cluster, topic_name):
    create_topic(cluster, topic_name, PARTITIONS, 3, configs={"min.insync.replicas": "2"})
    stop = threading.Event()
    result: list = []
    thread = threading.Thread(
        target=lambda: result.append(produce_stream(cluster, topic_name, PARTITIONS, stop))
    )
    thread.start()
    try:
        for broker_id in (1, 2, 3):
            broker = cluster.brokers[broker_id]
            before = len(broker.log())
            time.sleep(1.0)  # the stream is flowing through every broker
            code = broker.stop(signal.SIGTERM)
            assert code == 0, f"broker {broker_id} exited with {code}:\n{broker.tail(40)}"
            assert f"broker {broker_id} shut down cleanly" in broker.log()[before:]
            broker.start()
            cluster.wait_registered()
            wait_for(
                lambda b=broker, n=before: "(clean shutdown)" in b.log()[n:],
                what=f"broker {broker_id} to load its logs",
            )
            wait_full_isr(cluster, topic_name, PARTITIONS)
    finally:
        stop.set()
        thread.join(90)
    acked, failed = result[0]
    assert sum(map(len, acked.values())) > 0 and not failed
    consumed = consume_all(cluster, topic_name, PARTITIONS)
    for p in range(PARTITIONS):
        assert set(acked[p]) <= set(consumed[p]), f"partition {p} lost acknowledged writes"
