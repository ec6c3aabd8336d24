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

The proxy decodes every produce request and answer it passes on (kafka-ref's protocol
codecs): for each request its batches (producer id, epoch, first sequence, values), for
each answer its error and base offset, or that it was lost. A lost answer closes the
connection, and with it the answers of every request in flight behind it on that
connection. The first lost answer of each setting is followed: its batch, the requests
lost with it, the retry of the batch and what the broker answered, and the offsets where
its values are in the log.

PySpark then reads every topic back with the `kafka_ref` source (a consumer, through the
same proxy) and counts, per setting, the records, the distinct values and the values
written more than once; it reads the segment files with `kafka_ref_segments` for the
batches in the log and where each followed value is. `lab06.png` and `lab06.md` answer the
handout's questions.
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
from dataclasses import dataclass, field

from kafka_ref.protocol.frames import decode_request, decode_response
from kafka_ref.record.batch import RecordBatch, iter_batch_headers
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


@dataclass
class ProduceExchange:
    """One produce request through the proxy and what became of its answer."""

    connection: int
    correlation: int
    version: int
    # (topic, producer id, producer epoch, first sequence, first value, last value)
    batches: list[tuple]
    # "lost", or (error code, base offset) per partition answered
    answer: object = None
    closed_connection: bool = False  # its answer was the one the proxy dropped
    in_flight_behind: list = field(default_factory=list)

    @property
    def topic(self) -> str:
        return self.batches[0][0]


def produce_exchange(connection: int, frame: bytes) -> ProduceExchange:
    header, body = decode_request(memoryview(frame)[4:])
    batches = []
    for topic_data in body.topic_data:
        for partition in topic_data.partition_data:
            for pos, batch in iter_batch_headers(partition.records):
                values = [r.value for r in RecordBatch(partition.records, pos).records()]
                batches.append(
                    (
                        topic_data.name,
                        batch.producer_id,
                        batch.producer_epoch,
                        batch.base_sequence,
                        int(values[0]),
                        int(values[-1]),
                    )
                )
    return ProduceExchange(connection, header.correlation_id, header.request_api_version, batches)


class LossyProxy:
    """127.0.0.1:`port` forwards Kafka connections to the broker at `upstream` (set once
    the broker runs); the answer to a produce request is lost with probability `loss`:
    the connection closes instead, as when a network drops it."""

    def __init__(self, seed: int) -> None:
        self.upstream, self.loss, self.rng = 0, 0.0, random.Random(seed)
        self.lost = 0
        self.exchanges: list[ProduceExchange] = []
        self._lock = threading.Lock()
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
            produces: dict[int, ProduceExchange] = {}
            threading.Thread(
                target=self._requests, args=(client, broker, produces), daemon=True
            ).start()
            threading.Thread(
                target=self._answers, args=(broker, client, produces), daemon=True
            ).start()

    @staticmethod
    def _frame(sock: socket.socket) -> bytes | None:
        """One size-prefixed frame, or None when the connection is gone."""
        data = b""
        try:
            while len(data) < 4 or len(data) < 4 + _SIZE.unpack_from(data)[0]:
                need = (
                    4 - len(data) if len(data) < 4 else 4 + _SIZE.unpack_from(data)[0] - len(data)
                )
                chunk = sock.recv(min(need, 65536))  # never into the next frame
                if not chunk:
                    return None
                data += chunk
        except OSError:
            return None
        return data

    def _requests(self, client: socket.socket, broker: socket.socket, produces: dict) -> None:
        connection = client.fileno()
        while (frame := self._frame(client)) is not None:
            api_key, correlation = _KEY_AND_CORRELATION.unpack_from(frame, 4)
            if api_key == PRODUCE:
                exchange = produce_exchange(connection, frame)
                with self._lock:
                    produces[correlation] = exchange
                    self.exchanges.append(exchange)
            try:
                broker.sendall(frame)
            except OSError:
                break
        self._close(client, broker)

    def _answers(self, broker: socket.socket, client: socket.socket, produces: dict) -> None:
        while (frame := self._frame(broker)) is not None:
            correlation = _CORRELATION.unpack_from(frame, 4)[0]
            exchange = produces.get(correlation)
            if exchange is not None and self.rng.random() < self.loss:
                self.lost += 1
                with self._lock:  # every request still waiting on this connection loses it
                    behind = [e for e in produces.values() if e.answer is None]
                    for waiting in behind:
                        waiting.answer = "lost"
                    exchange.in_flight_behind = [e for e in behind if e is not exchange]
                    exchange.closed_connection = True
                break  # the answer is lost with the connection
            if exchange is not None:
                _, body = decode_response(memoryview(frame)[4:], PRODUCE, exchange.version)
                exchange.answer = [
                    (p.error_code, p.base_offset)
                    for t in body.responses
                    for p in t.partition_responses
                ]
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


def produce(bootstrap: str, proxy: LossyProxy, records: int) -> None:
    """Every setting's values, 0..records-1, through the lossy proxy."""
    from confluent_kafka import Producer

    for idempotent in (False, True):
        for loss in LOSS_RATES:
            name = topic(idempotent, loss)
            proxy.loss = loss
            producer = Producer(
                {
                    "bootstrap.servers": bootstrap,
                    "enable.idempotence": idempotent,
                    "acks": "all",
                    "linger.ms": 1,
                    "batch.num.messages": 5,
                    "log_level": 3,
                    "max.in.flight.requests.per.connection": 5,
                    "retry.backoff.ms": 10,
                    "reconnect.backoff.ms": 10,
                    "message.timeout.ms": 60_000,
                }
            )
            for value in range(records):
                producer.produce(name, b"%d" % value)
                producer.poll(0)
            if producer.flush(60) != 0:
                raise RuntimeError(f"{name}: records not delivered in 60 s")
    proxy.loss = 0.0


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


def analyse_log(spark, data_dir: str, followed: list[tuple[str, int]]) -> tuple[dict, dict]:
    """From the segment files: batches per topic, and the offsets of each followed
    (topic, value) with the producer id and first sequence of its batch."""
    from pyspark.sql import functions as F

    log = spark.read.format("kafka_ref_segments").load(data_dir)
    log = log.where(F.col("topic").startswith("idempotence-"))
    batches = {
        r["topic"]: r["batches"]
        for r in log.groupBy("topic").agg(F.countDistinct("baseOffset").alias("batches")).collect()
    }
    wanted = F.lit(False)
    for topic_name, value in followed:
        wanted = wanted | ((F.col("topic") == topic_name) & (F.col("value") == str(value)))
    where: dict = {}
    found = log.where(wanted).select(
        "topic", F.col("value").cast("string"), "offset", "producerId", "baseSequence"
    )
    for r in found.orderBy("offset").collect():
        where.setdefault((r["topic"], int(r["value"])), []).append(r.asDict())
    return batches, where


def first_losses(exchanges: list[ProduceExchange]) -> list[tuple[ProduceExchange, object]]:
    """For each idempotence setting, the first dropped answer of its first lossy topic, and
    the first later request that sends its first value again (the retry)."""
    followed = []
    for idempotent in (False, True):
        names = [topic(idempotent, loss) for loss in LOSS_RATES]
        dropped = [e for e in exchanges if e.closed_connection and e.topic in names]
        if not dropped:
            continue
        first = dropped[0]
        value = first.batches[0][4]
        later = exchanges[exchanges.index(first) + 1 :]
        retry = next(
            (
                e
                for e in later
                if e.topic == first.topic
                and e.answer != "lost"
                and any(b[4] <= value <= b[5] for b in e.batches)
            ),
            None,
        )
        followed.append((first, retry))
    return followed


def story(first: ProduceExchange, retry, where: dict) -> str:
    name, pid, epoch, sequence, value, last = first.batches[0]
    identity = (
        f"producer id {pid}, epoch {epoch}, first sequence {sequence}"
        if pid >= 0
        else ("without a producer id: idempotence is off")
    )
    behind = first.in_flight_behind
    text = (
        f"\n## A lost answer in {name}\n\n"
        f"- Request {first.correlation} carried values {value}-{last}, {identity}. The broker "
        f"appended them and answered; the proxy dropped the answer and closed the "
        f"connection.\n"
        f"- {len(behind)} more requests were in flight behind it on that connection, "
        f"{sum(b[5] - b[4] + 1 for e in behind for b in e.batches)} values: their answers "
        f"were lost with the connection.\n"
    )
    if retry is not None:
        batch = next(b for b in retry.batches if b[4] <= value <= b[5])
        error, base = retry.answer[0]
        again = (
            f"producer id {batch[1]}, epoch {batch[2]}, first sequence {batch[3]}"
            if (batch[1] >= 0)
            else "without a producer id"
        )
        text += (
            f"- Request {retry.correlation}, on a new connection, sent values "
            f"{batch[4]}-{batch[5]} again, {again}; the broker answered error code {error}, "
            f"base offset {base}.\n"
        )
    copies = where.get((name, value), [])
    text += (
        f"- In the log, value {value} is at offset"
        f"{'s' if len(copies) != 1 else ''} {', '.join(str(c['offset']) for c in copies)}"
        f" ({len(copies)} cop{'ies' if len(copies) != 1 else 'y'}).\n"
    )
    return text


def report(out: str, rows: list[dict], exchanges: list, log: tuple, records: int) -> None:
    batches, where = log
    by_topic = {r["topic"]: r for r in rows}
    with figure(os.path.join(out, "lab06.png"), size=(7, 4)) as (_fig, ax):
        for idempotent, marker in ((False, "o"), (True, "s")):
            names = [topic(idempotent, loss) for loss in LOSS_RATES]
            ax.plot(
                [100 * loss for loss in LOSS_RATES],
                [by_topic[n]["records"] - by_topic[n]["values"] for n in names],
                marker=marker,
                label=f"enable.idempotence={str(idempotent).lower()}",
            )
        ax.set(
            title=f"{records} values sent with acks=all and retries",
            xlabel="produce answers lost (%)",
            ylabel="extra copies in the log",
        )
        ax.legend()

    def lost(name: str, closed: bool) -> int:
        return sum(
            1
            for e in exchanges
            if e.topic == name and e.answer == "lost" and (e.closed_connection or not closed)
        )

    table = markdown_table(
        [
            "topic",
            "values sent",
            "answers dropped (connections closed)",
            "answers lost (with those in flight)",
            "records in the log",
            "batches in the log",
            "distinct values",
            "values written more than once",
            "values missing",
        ],
        [
            [
                r["topic"],
                records,
                lost(r["topic"], True),
                lost(r["topic"], False),
                r["records"],
                batches.get(r["topic"], 0),
                r["values"],
                r["duplicated"],
                records - r["values"],
            ]
            for r in (by_topic[topic(i, loss)] for i in (False, True) for loss in LOSS_RATES)
        ],
    )
    table += "".join(story(first, retry, where) for first, retry in first_losses(exchanges))
    with open(os.path.join(out, "lab06.md"), "w") as f:
        f.write("# Lab 06: retries and duplicates\n\n" + table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    records = max(200, int(2000 * args.scale))
    proxy = LossyProxy(seed=6)
    with tempfile.TemporaryDirectory() as scratch, spark_for(args.master, scratch) as spark:
        data_dir = os.path.join(scratch, "data")
        advertised = {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"}
        with local_broker(data_dir, **advertised) as broker:
            proxy.upstream = broker.port
            bootstrap = f"127.0.0.1:{proxy.port}"
            create_topics(
                bootstrap, {topic(i, loss): 1 for i in (False, True) for loss in LOSS_RATES}
            )
            produce(bootstrap, proxy, records)
            rows = analyse(spark, bootstrap)
        followed = [(f.topic, f.batches[0][4]) for f, _ in first_losses(proxy.exchanges)]
        log = analyse_log(spark, data_dir, followed)
    proxy.close()
    report(args.out, rows, proxy.exchanges, log, records)
    print_table(args.out, "lab06.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
