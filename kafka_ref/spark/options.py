"""The options of the `kafka_ref` source and sink, named and checked like Spark's Kafka source.

    spark.read.format("kafka_ref")
        .option("kafka.bootstrap.servers", "127.0.0.1:9092")
        .option("subscribe", "clicks")              # or subscribePattern, or assign
        .option("startingOffsets", "earliest")      # earliest | latest | per-partition JSON
        .load()

Code written for Spark's `format("kafka")` must work here with only the format name changed,
so the names are Spark's (spark-sql-kafka's `KafkaSourceProvider`), matched case-insensitively
as Spark matches them:

| option                              | read | stream | write | meaning                       |
|-------------------------------------|------|--------|-------|-------------------------------|
| kafka.bootstrap.servers             | yes  | yes    | yes   | required                      |
| assign / subscribe / subscribePattern | yes | yes   |       | exactly one                   |
| startingOffsets / endingOffsets     | yes  | start  |       | earliest, latest, JSON        |
| startingTimestamp / endingTimestamp | yes  | start  |       | ms since the epoch, all parts |
| startingOffsetsByTimestamp / ending..| yes | start  |       | JSON of ms per partition      |
| startingOffsetsByTimestampStrategy  | yes  | yes    |       | error (default) or latest     |
| failOnDataLoss                      | yes  | yes    |       | true (default) or false       |
| kafkaConsumer.pollTimeoutMs         | yes  | yes    |       | fail a task after this long   |
| maxOffsetsPerTrigger                |      | yes    |       | rows per micro-batch, at most |
| minPartitions, maxRecordsPerPartition | yes | yes   |       | split offset ranges           |
| includeHeaders                      | yes  | yes    |       | add the `headers` column      |
| topic                               |      |        | yes   | overrides the `topic` column  |
| kafka.<consumer or producer config> | yes  | yes    | yes   | passed to our client          |

Spark silently ignores an option it does not know; here a misspelt or misplaced option is
one `KafkaRefOptionError` naming it, the nearest valid name and the valid ones: a wrong
option is one clear error. `kafka.*` options go to our consumer or producer by
Kafka's config name; the few that would break the source are refused with Spark's own
explanation (`kafka.auto.offset.reset`: use startingOffsets).

Spec rules: SPARK-1, SPARK-2 (spec/spark.md).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "KafkaRefOptionError",
    "SinkOptions",
    "SourceOptions",
    "parse_sink_options",
    "parse_source_options",
]


class KafkaRefOptionError(ValueError):
    """A wrong option of the kafka_ref source or sink (Spark raises IllegalArgumentException)."""


STRATEGIES = ("assign", "subscribe", "subscribePattern")
_SOURCE = (
    "kafka.bootstrap.servers",
    *STRATEGIES,
    "startingOffsets",
    "endingOffsets",
    "startingTimestamp",
    "endingTimestamp",
    "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "failOnDataLoss",
    "kafkaConsumer.pollTimeoutMs",
    "maxOffsetsPerTrigger",
    "minPartitions",
    "maxRecordsPerPartition",
    "includeHeaders",
)
_STREAM_ONLY = ("maxOffsetsPerTrigger",)
_BATCH_ONLY = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")
_SINK = ("kafka.bootstrap.servers", "topic")
# Spark adds these itself (load(path), writeStream's checkpoint); they are not user mistakes.
_SPARK_INTERNAL = {"path", "checkpointlocation", "queryname"}

# Kafka config name -> our client's keyword argument and its type.
CONSUMER_CONFIGS = {
    "isolation.level": ("isolation_level", str),
    "fetch.min.bytes": ("fetch_min_bytes", int),
    "fetch.max.wait.ms": ("fetch_max_wait_ms", int),
    "fetch.max.bytes": ("fetch_max_bytes", int),
    "max.partition.fetch.bytes": ("max_partition_fetch_bytes", int),
    "max.poll.records": ("max_poll_records", int),
    "check.crcs": ("check_crcs", "bool"),
    "request.timeout.ms": ("request_timeout_ms", int),
    "retry.backoff.ms": ("retry_backoff_ms", int),
    "default.api.timeout.ms": ("default_api_timeout_ms", int),
    "client.id": ("client_id", str),
}
PRODUCER_CONFIGS = {
    "acks": ("acks", str),
    "linger.ms": ("linger_ms", int),
    "batch.size": ("batch_size", int),
    "compression.type": ("compression_type", str),
    "retries": ("retries", int),
    "retry.backoff.ms": ("retry_backoff_ms", int),
    "delivery.timeout.ms": ("delivery_timeout_ms", int),
    "request.timeout.ms": ("request_timeout_ms", int),
    "max.in.flight.requests.per.connection": ("max_in_flight", int),
    "max.block.ms": ("max_block_ms", int),
    "max.request.size": ("max_request_size", int),
    "buffer.memory": ("buffer_memory", int),
    "enable.idempotence": ("enable_idempotence", "bool"),
    "client.id": ("client_id", str),
}
# Spark's KafkaSourceProvider refuses these, with these reasons.
_REFUSED_SOURCE = {
    "auto.offset.reset": "Instead set the source option 'startingOffsets' to 'earliest' or "
    "'latest' to specify where to start. Structured Streaming manages which offsets are "
    "consumed internally, rather than relying on the kafkaConsumer to do it.",
    "key.deserializer": "All keys are read as bytes (the binary 'key' column); use "
    "DataFrame operations to deserialize them.",
    "value.deserializer": "All values are read as bytes (the binary 'value' column); use "
    "DataFrame operations to deserialize them.",
    "enable.auto.commit": "Spark tracks the offsets in its checkpoint, not in Kafka.",
    "group.id": "The source reads assigned partitions; it does not join a consumer group.",
}
_REFUSED_SINK = {
    "key.serializer": "The 'key' column is sent as bytes (a string column as UTF-8).",
    "value.serializer": "The 'value' column is sent as bytes (a string column as UTF-8).",
}


@dataclass(frozen=True)
class SourceOptions:
    """The validated options of a read; a plain value, so it pickles to the executors."""

    bootstrap_servers: str
    strategy: str  # assign | subscribe | subscribePattern
    strategy_value: str
    starting: str  # earliest | latest | JSON offsets
    ending: str = "latest"
    starting_timestamp: str | None = None  # one timestamp, or JSON per partition
    ending_timestamp: str | None = None
    timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    poll_timeout_ms: int = 120_000
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    consumer_configs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None = None
    producer_configs: dict = field(default_factory=dict)


def _fail(message: str) -> None:
    raise KafkaRefOptionError(message)


def _unknown(name: str, valid: list[str], what: str) -> None:
    near = difflib.get_close_matches(name.lower(), [v.lower() for v in valid], n=1)
    hint = ""
    if near:
        hint = f" Did you mean '{next(v for v in valid if v.lower() == near[0])}'?"
    _fail(f"Unknown option '{name}' for the {what}.{hint} Valid options: {', '.join(valid)}.")


def _lookup(options: Mapping[str, str]) -> dict[str, str]:
    # Spark hands a case-insensitive dict (keys lower-cased); accept any mapping the same way.
    return {str(k).lower(): str(v) for k, v in options.items()}


def _client_configs(
    opts: dict[str, str], known: dict, refused: dict[str, str], what: str
) -> dict[str, object]:
    configs: dict[str, object] = {}
    for key, raw in opts.items():
        if not key.startswith("kafka.") or key == "kafka.bootstrap.servers":
            continue
        name = key[len("kafka.") :]
        if name in refused:
            _fail(f"Kafka option '{name}' is not supported. {refused[name]}")
        if name not in known:
            _unknown(f"kafka.{name}", [f"kafka.{k}" for k in known], f"{what} (Kafka configs)")
        argument, kind = known[name]
        configs[argument] = _convert(key, raw, kind)
    return configs


def _convert(key: str, raw: str, kind) -> object:
    if kind == "bool":
        return _bool(key, raw)
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            _fail(f"Option '{key}' must be an integer, not {raw!r}")
    return raw


def _bool(name: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text not in ("true", "false"):
        _fail(f"Option '{name}' must be 'true' or 'false', not {raw!r}")
    return text == "true"


def _positive(name: str, raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        _fail(f"Option '{name}' must be a positive integer, but got {raw!r}")
    return value


def _check_offsets_text(name: str, text: str, allowed: tuple[str, ...]) -> str:
    """earliest/latest or Kafka's JSON {"topic": {"0": 23}}; the JSON is checked here."""
    if text.strip().lower() in allowed:
        return text.strip().lower()
    try:
        parsed = json.loads(text)
        ok = isinstance(parsed, dict) and all(
            isinstance(parts, dict)
            and all(p.lstrip("-").isdigit() and isinstance(o, int) for p, o in parts.items())
            for parts in parsed.values()
        )
    except ValueError:
        ok = False
    if not ok:
        choices = " or ".join(f"'{a}'" for a in allowed)
        _fail(
            f"Option '{name}' must be {choices} or JSON like "
            f'{{"topicA":{{"0":23,"1":-1}}}}, not {text!r}'
        )
    return text


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Check a read's options the way Spark's KafkaSourceProvider does, then some more."""
    opts = _lookup(options)
    what = "kafka_ref streaming source" if streaming else "kafka_ref batch source"
    valid = [n for n in _SOURCE if n not in (_BATCH_ONLY if streaming else _STREAM_ONLY)]
    for key in opts:
        if key.startswith("kafka.") or key in _SPARK_INTERNAL:
            continue
        if key not in {v.lower() for v in valid}:
            if streaming and key in {n.lower() for n in _BATCH_ONLY}:
                _fail(f"Option '{key}' is not valid in streaming queries")
            if not streaming and key in {n.lower() for n in _STREAM_ONLY}:
                _fail(f"Option '{key}' is only valid in streaming queries")
            _unknown(key, valid, what)
    servers = opts.get("kafka.bootstrap.servers", "").strip()
    if not servers:
        _fail("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    chosen = [s for s in STRATEGIES if s.lower() in opts]
    if len(chosen) != 1:
        which = "One of" if not chosen else "Only one of"
        verb = "must" if not chosen else "can"
        _fail(
            f"{which} the following options {verb} be specified for Kafka source: "
            f"{', '.join(STRATEGIES)}. See the docs for more details."
        )
    strategy, value = chosen[0], opts[chosen[0].lower()].strip()
    _check_strategy(strategy, value)
    default_start = "latest" if streaming else "earliest"
    starting = _check_offsets_text(
        "startingOffsets", opts.get("startingoffsets", default_start), ("earliest", "latest")
    )
    ending = _check_offsets_text("endingOffsets", opts.get("endingoffsets", "latest"), ("latest",))
    if not streaming and starting == "latest":
        _fail("starting offset can't be latest for batch queries on Kafka")
    if not streaming:
        _check_batch_json("startingOffsets", starting, -1, "latest")
        _check_batch_json("endingOffsets", ending, -2, "earliest")
    strategy_name = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy_name not in ("error", "latest"):
        _fail(
            "Option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
            f"not {strategy_name!r}"
        )
    return SourceOptions(
        bootstrap_servers=servers,
        strategy=strategy,
        strategy_value=value,
        starting=starting,
        ending=ending,
        starting_timestamp=_timestamp_option(opts, "starting"),
        ending_timestamp=None if streaming else _timestamp_option(opts, "ending"),
        timestamp_strategy=strategy_name,
        fail_on_data_loss=_bool("failOnDataLoss", opts.get("failondataloss", "true")),
        poll_timeout_ms=_positive(
            "kafkaConsumer.pollTimeoutMs", opts.get("kafkaconsumer.polltimeoutms", "120000")
        ),
        max_offsets_per_trigger=_positive("maxOffsetsPerTrigger", opts.get("maxoffsetspertrigger")),
        min_partitions=_positive("minPartitions", opts.get("minpartitions")),
        max_records_per_partition=_positive(
            "maxRecordsPerPartition", opts.get("maxrecordsperpartition")
        ),
        include_headers=_bool("includeHeaders", opts.get("includeheaders", "false")),
        consumer_configs=_client_configs(opts, CONSUMER_CONFIGS, _REFUSED_SOURCE, what),
    )


def _check_strategy(strategy: str, value: str) -> None:
    if strategy == "assign":
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict) or not all(
            isinstance(ps, list) and all(isinstance(p, int) for p in ps) for ps in parsed.values()
        ):
            _fail(
                f'Option \'assign\' must be JSON like {{"topicA":[0,1],"topicB":[2,4]}}, '
                f"not {value!r}"
            )
    elif strategy == "subscribe":
        if not [t for t in value.split(",") if t.strip()]:
            _fail("No topics to subscribe to as specified value for option 'subscribe' is ''")
    elif not value:
        _fail(
            "Pattern to subscribe is empty as specified value for option 'subscribePattern' is ''"
        )


def _check_batch_json(name: str, text: str, forbidden: int, word: str) -> None:
    if text in ("earliest", "latest"):
        return
    for topic, parts in json.loads(text).items():
        for partition, offset in parts.items():
            if offset == forbidden:
                what = "starting" if name.startswith("starting") else "ending"
                _fail(
                    f"{what} offset for {topic}-{partition} can't be {word} for batch "
                    "queries on Kafka"
                )


def _timestamp_option(opts: dict[str, str], which: str) -> str | None:
    """`<which>Timestamp` (one value) wins over `<which>OffsetsByTimestamp` (JSON), as in Spark."""
    single = opts.get(f"{which}timestamp")
    if single is not None:
        if not single.strip().isdigit():
            _fail(f"Option '{which}Timestamp' must be milliseconds since the epoch, not {single!r}")
        return single.strip()
    by_partition = opts.get(f"{which}offsetsbytimestamp")
    if by_partition is not None:
        return _check_offsets_text(f"{which}OffsetsByTimestamp", by_partition, ())
    return None


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = _lookup(options)
    for key in opts:
        if not key.startswith("kafka.") and key not in _SPARK_INTERNAL and key != "topic":
            _unknown(key, list(_SINK), "kafka_ref sink")
    servers = opts.get("kafka.bootstrap.servers", "").strip()
    if not servers:
        _fail("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer")
    configs = _client_configs(opts, PRODUCER_CONFIGS, _REFUSED_SINK, "kafka_ref sink")
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        _fail("Option 'topic' must not be empty")
    return SinkOptions(servers, topic.strip() if topic else None, configs)
