"""A blocking wire client for conformance tests: exact requests, decoded responses.

A conformance test must be able to send *exactly* the request a rule talks about: a fetch at
an offset in the middle of a batch, the same idempotent batch twice, a SyncGroup from a stale
generation. A real client hides all of that, so the suite speaks the protocol itself with
kafka-ref's own codecs (`kafka_ref.protocol`): `Wire.request(api_key, version, body)` sends
one frame and decodes the answer at that version. The helpers below build the common bodies
(produce, fetch, create a topic, the group APIs) with every field a broker may read set to a
sensible value, so a test only spells out what its rule is about.

Nothing here knows which broker it talks to; the target (targets.py) supplies host and port.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from kafka_ref.protocol import frames
from kafka_ref.protocol.messages import (
    ApiKey,
    ApiVersionsRequest,
    CreateTopicsRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from kafka_ref.record.batch import HEADER_SIZE, BatchHeader, RecordBatch, build_batch
from kafka_ref.record.record import Record

T0 = 1_700_000_000_000


class Wire:
    """One Kafka connection: send requests, read responses in order."""

    def __init__(self, host: str, port: int, timeout: float = 15.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation = 0
        self.pending: list[tuple[int, int, int]] = []  # (correlation, key, version)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def frame(self, api_key: int, version: int, body: Any, client_id: str = "conformance") -> bytes:
        """The next request's frame, its answer expected in order (send it yourself, or cut it)."""
        self.correlation += 1
        self.pending.append((self.correlation, api_key, version))
        return frames.encode_request(api_key, version, self.correlation, client_id, body)

    def send(self, api_key: int, version: int, body: Any, client_id: str = "conformance") -> int:
        self.sock.sendall(self.frame(api_key, version, body, client_id))
        return self.correlation

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            chunk = self.sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise ConnectionError("closed by the broker")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def receive_numbered(self) -> tuple[int, Any]:
        """(correlation id, body) of the next response, decoded as the oldest pending request's."""
        payload = self.read_frame()
        correlation, key, version = self.pending.pop(0)
        header, body = frames.decode_response(payload, key, version)
        assert header.correlation_id == correlation, "responses out of order"
        return correlation, body

    def receive(self) -> Any:
        """The body of the next response, decoded as the oldest pending request's answer."""
        return self.receive_numbered()[1]

    def request(self, api_key: int, version: int, body: Any) -> Any:
        self.send(api_key, version, body)
        return self.receive()

    def is_closed(self, timeout: float = 5.0) -> bool:
        """True when the broker closed this connection (EOF or a reset)."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    # -------------------------------------------------------------- common requests
    def api_versions(self, version: int = 0) -> Any:
        body = ApiVersionsRequest(
            client_software_name="kafka-ref-conformance", client_software_version="1.0"
        )
        return self.request(ApiKey.API_VERSIONS, version, body)

    def create_topic(
        self, name: str, partitions: int = 1, replication_factor: int = 1, **configs: str
    ) -> int:
        """The CreateTopics error code (0 = created); configs by Kafka's names."""
        body = CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=replication_factor,
                    assignments=[],
                    configs=[
                        CreateTopicsRequest.CreatableTopicConfig(name=k, value=str(v))
                        for k, v in configs.items()
                    ],
                )
            ],
            timeout_ms=10000,
            validate_only=False,
        )
        code = self.request(ApiKey.CREATE_TOPICS, 4, body).topics[0].error_code
        if code == 0:
            self.wait_for_leader(name, partitions)
        return code

    def wait_for_leader(self, topic: str, partitions: int, timeout: float = 10.0) -> None:
        """Until every partition has a leader that serves it: Metadata names one (a broker
        may create topics lazily), and ListOffsets answers without an error (a KRaft broker
        names a leader in Metadata a moment before that broker acts as one)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            meta = self.metadata([topic], auto=False)
            parts = meta.topics[0].partitions if meta.topics else []
            if len(parts) == partitions and all(p.leader_id >= 0 for p in parts):
                serving = [self.list_offset(topic, p.partition_index, -1) for p in parts]
                if all(answer.error_code == 0 for answer in serving):
                    return
            time.sleep(0.05)

    def produce(
        self,
        topic: str,
        partition: int,
        records: bytes | None,
        acks: int = -1,
        version: int = 7,
        transactional_id: str | None = None,
    ) -> Any:
        """The partition response (error_code, base_offset, ...); None for acks=0."""
        body = produce_body(topic, partition, records, acks, transactional_id=transactional_id)
        if acks == 0:
            self.sock.sendall(frames.encode_request(ApiKey.PRODUCE, version, 0, "c", body))
            return None
        return self.request(ApiKey.PRODUCE, version, body).responses[0].partition_responses[0]

    def fetch(self, topic: str, partition: int, offset: int, **kw: Any) -> Any:
        """The one partition's fetch response (error_code, high_watermark, records...).

        Waits up to 100 ms for data, as real consumers do (they wait 500 ms): some brokers
        answer a max_wait_ms=0 fetch without the partition at all (see BROKER-21's test)."""
        kw.setdefault("max_wait_ms", 100)
        return self.fetch_many([(topic, partition, offset)], **kw).responses[0].partitions[0]

    def fetch_many(self, parts: list[tuple[str, int, int]], version: int = 10, **kw: Any) -> Any:
        """The whole Fetch response for (topic, partition, offset) triples; see fetch_body."""
        return self.request(ApiKey.FETCH, version, fetch_body(parts, **kw))

    def metadata(self, topics: list[str] | None, version: int = 5, auto: bool = False) -> Any:
        body = MetadataRequest(
            topics=None
            if topics is None
            else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=auto,
        )
        return self.request(ApiKey.METADATA, version, body)

    def list_offset(
        self, topic: str, partition: int, timestamp: int, isolation_level: int = 0
    ) -> Any:
        """ListOffsets v2 for one partition: -2 earliest, -1 latest, else a timestamp;
        isolation_level 1 (read_committed) makes latest the last stable offset."""
        body = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=isolation_level,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(
                            partition_index=partition, timestamp=timestamp
                        )
                    ],
                )
            ],
        )
        return self.request(ApiKey.LIST_OFFSETS, 2, body).topics[0].partitions[0]

    def read_all(self, topic: str, partition: int = 0, start: int = 0) -> list[Record]:
        """Every record from `start` to the high watermark, fetching batch after batch."""
        out: list[Record] = []
        offset = start
        while True:
            part = self.fetch(topic, partition, offset)
            assert part.error_code == 0, f"fetch at {offset}: error {part.error_code}"
            batches = decode_batches(part.records)
            records = [r for b in batches for r in b.records if r.offset >= offset]
            out.extend(records)
            if not batches or offset >= part.high_watermark:
                return out
            offset = batches[-1].last_offset + 1
            if offset >= part.high_watermark:
                return out


def produce_body(
    topic: str,
    partition: int,
    records: bytes | None,
    acks: int = -1,
    timeout_ms: int = 10000,
    transactional_id: str | None = None,
) -> Any:
    return ProduceRequest(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=partition, records=records)
                ],
            )
        ],
    )


def fetch_body(
    parts: list[tuple[str, int, int]],
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 50 << 20,
    partition_max_bytes: int = 1 << 20,
    isolation_level: int = 0,
    session_epoch: int = -1,
    current_leader_epoch: int = -1,
) -> Any:
    topics: list[Any] = []
    for topic, partition, offset in parts:
        if not topics or topics[-1].topic != topic:
            topics.append(FetchRequest.FetchTopic(topic=topic, partitions=[]))
        topics[-1].partitions.append(
            FetchRequest.FetchPartition(
                partition=partition,
                current_leader_epoch=current_leader_epoch,  # -1: not fenced (KIP-320)
                fetch_offset=offset,
                log_start_offset=-1,
                partition_max_bytes=partition_max_bytes,
            )
        )
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        session_id=0,
        session_epoch=session_epoch,
        topics=topics,
        forgotten_topics_data=[],
    )


def batch(
    values: list[bytes], *, keys: list[bytes | None] | None = None, ts: int = T0, **kw: Any
) -> bytes:
    """A producer batch of `values` (keys optional), timestamps ts, ts+1, ...

    Keyword arguments go to `build_batch`: producer_id, producer_epoch, base_sequence,
    compression..."""
    keys = keys if keys is not None else [None] * len(values)
    records = [
        Record(k, v, timestamp=ts + i) for i, (k, v) in enumerate(zip(keys, values, strict=True))
    ]
    return build_batch(records, **kw)


class Batch:
    """A fetched batch: its header, its records (decoded), and its offsets."""

    def __init__(self, buf: bytes, pos: int) -> None:
        rb = RecordBatch(buf, pos)
        self.header: BatchHeader = rb.header
        self.records: list[Record] = list(rb.records())
        self.base_offset = rb.header.base_offset
        self.last_offset = rb.header.last_offset

    def __repr__(self) -> str:
        return f"Batch({self.base_offset}..{self.last_offset}, {len(self.records)} records)"


def decode_batches(data: Any) -> list[Batch]:
    """The whole batches in a fetch response's records.

    A broker may end a response with a partial batch when a size limit cuts it (Kafka does;
    clients skip it), so a trailing fragment is dropped, never an error."""
    if not data:
        return []
    buf, pos, out = bytes(data), 0, []
    while len(buf) - pos >= HEADER_SIZE:
        header = BatchHeader.parse(buf, pos)
        if pos + header.size > len(buf):
            break
        out.append(Batch(buf, pos))
        pos += header.size
    return out
