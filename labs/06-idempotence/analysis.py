"""Lab 06 analysis: duplicates written by retries, with idempotence off and on.

    kafka-ref lab analyse 06 --out /tmp/lab06        # your solution.py
    kafka-ref lab analyse 06 --reference --out /tmp/lab06-reference

A real kafka-ref broker sits behind a small TCP proxy that *loses answers*: it forwards
every request, but for a chosen share of produce requests it closes the connection instead
of forwarding the broker's answer. The records are in the log; the producer cannot know
that, and sends them again. A real client (librdkafka, through confluent-kafka) produces
numbered values with acks=all and retries, with `enable.idempotence` false and true, at
several loss rates, each to a topic of its own. With idempotence on, every retry carries
the batch's producer id, epoch and sequence, and your `check_client_batch` must recognise
it and answer the original offsets instead of writing the records again.

PySpark then reads every topic back with the `kafka_ref` source (a consumer, through the
same proxy) and counts, per setting, the records, the distinct values and the values
written more than once. `lab06.png` and `lab06.md` answer the handout's questions.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import struct
import sys
import tempfile
import threading

from kafka_ref.tools.lab_analysis import (
    create_topics,
    local_broker,
    markdown_table,
    parse_args,
    print_table,
    spark_for,
)
from kafka_ref.tools.plots import figure

LOSS_RATES = (0.0, 0.05, 0.2)
PRODUCE = 0  # the api key of Produce
_SIZE, _KEY_AND_CORRELATION, _CORRELATION = (
    struct.Struct(">i"),
    struct.Struct(">h2xi"),
    struct.Struct(">i"),
)


class LossyProxy:
    """127.0.0.1:`port` forwards Kafka connections to the broker at `upstream` (set once
    the broker runs); the answer to a produce request is lost with probability `loss`:
    the connection closes instead, as when a network drops it."""

    def __init__(self, seed: int) -> None:
        self.upstream, self.loss, self.rng = 0, 0.0, random.Random(seed)
        self.lost = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            broker = socket.create_connection(("127.0.0.1", self.upstream))
            produces: set[int] = set()
            threading.Thread(target=self._requests, args=(client, broker, produces),
                             daemon=True).start()  # fmt: skip
            threading.Thread(target=self._answers, args=(broker, client, produces),
                             daemon=True).start()  # fmt: skip

    @staticmethod
    def _frame(sock: socket.socket) -> bytes | None:
        """One size-prefixed frame, or None when the connection is gone."""
        data = b""
        try:
            while len(data) < 4 or len(data) < 4 + _SIZE.unpack_from(data)[0]:
                chunk = sock.recv(65536 if len(data) >= 4 else 4 - len(data))
                if not chunk:
                    return None
                data += chunk
        except OSError:
            return None
        return data

    def _requests(self, client: socket.socket, broker: socket.socket, produces: set) -> None:
        while (frame := self._frame(client)) is not None:
            api_key, correlation = _KEY_AND_CORRELATION.unpack_from(frame, 4)
            if api_key == PRODUCE:
                produces.add(correlation)
            try:
                broker.sendall(frame)
            except OSError:
                break
        self._close(client, broker)

    def _answers(self, broker: socket.socket, client: socket.socket, produces: set) -> None:
        while (frame := self._frame(broker)) is not None:
            correlation = _CORRELATION.unpack_from(frame, 4)[0]
            if correlation in produces and self.rng.random() < self.loss:
                self.lost += 1
                break  # the answer is lost with the connection
            try:
                client.sendall(frame)
            except OSError:
                break
        self._close(client, broker)

    @staticmethod
    def _close(*socks: socket.socket) -> None:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self._listener.close()


def topic(idempotent: bool, loss: float) -> str:
    return f"idempotence-{'on' if idempotent else 'off'}-loss-{int(loss * 100)}"


def produce(bootstrap: str, proxy: LossyProxy, records: int) -> dict[str, int]:
    """Every setting's values, 0..records-1, through the lossy proxy; the answers lost."""
    from confluent_kafka import Producer

    lost = {}
    for idempotent in (False, True):
        for loss in LOSS_RATES:
            name = topic(idempotent, loss)
            proxy.loss, before = loss, proxy.lost
            producer = Producer({
                "bootstrap.servers": bootstrap, "enable.idempotence": idempotent,
                "acks": "all", "linger.ms": 1, "batch.num.messages": 5, "log_level": 3,
                "max.in.flight.requests.per.connection": 5, "retry.backoff.ms": 10,
                "reconnect.backoff.ms": 10, "message.timeout.ms": 60_000,
            })  # fmt: skip
            for value in range(records):
                producer.produce(name, b"%d" % value)
                producer.poll(0)
            if producer.flush(60) != 0:
                raise RuntimeError(f"{name}: records not delivered in 60 s")
            lost[name] = proxy.lost - before
    proxy.loss = 0.0
    return lost


def analyse(spark, bootstrap: str) -> list[dict]:
    from pyspark.sql import functions as F

    rows = (
        spark.read.format("kafka_ref")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribePattern", "idempotence-.*")
        .load()
    )
    per_value = rows.groupBy("topic", "value").count()
    return [
        r.asDict()
        for r in per_value.groupBy("topic")
        .agg(
            F.sum("count").alias("records"),
            F.count("*").alias("values"),
            F.sum(F.when(F.col("count") > 1, 1).otherwise(0)).alias("duplicated"),
        )
        .orderBy("topic")
        .collect()
    ]


def report(out: str, rows: list[dict], lost: dict[str, int], records: int) -> None:
    by_topic = {r["topic"]: r for r in rows}
    with figure(os.path.join(out, "lab06.png"), size=(7, 4)) as (_fig, ax):
        for idempotent, marker in ((False, "o"), (True, "s")):
            names = [topic(idempotent, loss) for loss in LOSS_RATES]
            ax.plot([100 * loss for loss in LOSS_RATES],
                    [by_topic[n]["records"] - by_topic[n]["values"] for n in names], marker=marker,
                    label=f"enable.idempotence={str(idempotent).lower()}")  # fmt: skip
        ax.set(title=f"{records} values sent with acks=all and retries",
               xlabel="produce answers lost (%)", ylabel="extra copies in the log")  # fmt: skip
        ax.legend()
    table = markdown_table(
        ["topic", "values sent", "answers lost", "records in the log", "distinct values",
         "values written more than once", "values missing"],
        [[r["topic"], records, lost[r["topic"]], r["records"], r["values"], r["duplicated"],
          records - r["values"]] for r in (by_topic[topic(i, loss)] for i in (False, True)
                                           for loss in LOSS_RATES)],
    )  # fmt: skip
    with open(os.path.join(out, "lab06.md"), "w") as f:
        f.write("# Lab 06: retries and duplicates\n\n" + table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    records = max(200, int(2000 * args.scale))
    proxy = LossyProxy(seed=6)
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = os.path.join(scratch, "data")
        advertised = {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"}
        with local_broker(data_dir, **advertised) as broker:
            proxy.upstream = broker.port
            bootstrap = f"127.0.0.1:{proxy.port}"
            create_topics(bootstrap, {topic(i, loss): 1 for i in (False, True)
                                      for loss in LOSS_RATES})  # fmt: skip
            lost = produce(bootstrap, proxy, records)
            with spark_for(args.master, scratch) as spark:
                rows = analyse(spark, bootstrap)
    proxy.close()
    report(args.out, rows, lost, records)
    print_table(args.out, "lab06.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
