"""Shared helpers for the protocol tests: values built from the schemas themselves.

* `schema_values` (fixture) builds, for any `Message` at any version, a hypothesis strategy of
  valid values (`.strategy(message, version)`) or a seeded random value without hypothesis
  (`.random(message, version, rng)`), by walking the same `Field` declarations the codec
  uses. A new API therefore gets round-trip and fuzz coverage with no new test code.
* `message_at_version` (parametrized fixture) is every (message, version) the registry
  declares, requests and responses, so a test that asks for it runs once per pair.
* `kafka_python` (fixture) finds kafka-python's own classes for the same API and version:
  the hand-written 2.x classes (`kafka.protocol.old`) and the 3.x classes generated from
  Kafka's JSON, the independent references our bytes are compared with (PROTO-17).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import random
import uuid
import warnings
from typing import Any, NamedTuple

import pytest
from hypothesis import strategies as st

from kafka_ref.protocol import types
from kafka_ref.protocol.messages import APIS
from kafka_ref.protocol.schema import Field, Message, StructCodec, StructSchema

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_BITS = {"uint16": 16, "uint32": 32}
_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)


class MessageAtVersion(NamedTuple):
    api_name: str
    kind: str  # "request" or "response"
    message: Message
    version: int


MESSAGE_VERSIONS = [
    MessageAtVersion(api.name, kind, getattr(api, kind), version)
    for api in APIS.values()
    for kind in ("request", "response")
    for version in api.versions
]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "message_at_version" in metafunc.fixturenames:
        metafunc.parametrize(
            "message_at_version",
            MESSAGE_VERSIONS,
            ids=[f"{m.message.name}-v{m.version}" for m in MESSAGE_VERSIONS],
        )


class SchemaValues:
    """Valid values for a schema at a version, from hypothesis or from a seeded Random."""

    @staticmethod
    def strategy(message: StructSchema, version: int) -> st.SearchStrategy:
        return _struct_strategy(message, version)

    @staticmethod
    def random(message: StructSchema, version: int, rng: random.Random) -> Any:
        return _random_struct(message, version, rng)


def _primitive_strategy(kind: str) -> st.SearchStrategy:
    if kind in _INT_BITS:
        bits = _INT_BITS[kind]
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if kind in _UINT_BITS:
        return st.integers(0, (1 << _UINT_BITS[kind]) - 1)
    return {
        "bool": st.booleans(),
        "float64": st.floats(allow_nan=False),
        "uuid": st.uuids() | st.just(types.ZERO_UUID),
        "string": _TEXT,
        "bytes": st.binary(max_size=16),
        "records": st.binary(max_size=48),
    }[kind]


def _field_strategy(field: Field, version: int, depth: int) -> st.SearchStrategy:
    if field.struct is not None:
        element = _struct_strategy(field.struct, version, depth + 1)
    else:
        element = _primitive_strategy(field.element_type)
    # Up to 3 elements at the top, 2 below: every nesting case, examples that stay quick.
    strategy = st.lists(element, max_size=3 if depth == 0 else 2) if field.is_array else element
    return st.none() | strategy if version in field.nullable_versions else strategy


def _struct_strategy(struct: StructSchema, version: int, depth: int = 0) -> st.SearchStrategy:
    present = {
        f.attr: _field_strategy(f, version, depth) for f in struct.fields if version in f.versions
    }
    return st.builds(struct.cls, **present)


def _random_primitive(kind: str, rng: random.Random) -> Any:
    if kind in _INT_BITS or kind in _UINT_BITS:
        bits = _INT_BITS.get(kind) or _UINT_BITS[kind]
        low = -(1 << (bits - 1)) if kind in _INT_BITS else 0
        high = low + (1 << bits) - 1
        return rng.choice([low, high, 0, -1 if low else 1, rng.randint(low, high)])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float64":
        return rng.uniform(-1e9, 1e9)
    if kind == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if kind == "string":
        return "".join(rng.choice("abcXYZ-._é€") for _ in range(rng.randint(0, 8)))
    return rng.randbytes(rng.randint(0, 40))


def _random_field(field: Field, version: int, rng: random.Random) -> Any:
    if version in field.nullable_versions and rng.random() < 0.2:
        return None

    def one() -> Any:
        if field.struct is not None:
            return _random_struct(field.struct, version, rng)
        return _random_primitive(field.element_type, rng)

    return [one() for _ in range(rng.randint(0, 3))] if field.is_array else one()


def _random_struct(struct: StructSchema, version: int, rng: random.Random) -> Any:
    return struct.cls(
        **{f.attr: _random_field(f, version, rng) for f in struct.fields if version in f.versions}
    )


@pytest.fixture(scope="session")
def schema_values() -> type[SchemaValues]:
    return SchemaValues


# kafka-python references: module and attribute of each API's request/response classes.
_OLD = {
    0: ("produce", "Produce"),
    1: ("fetch", "Fetch"),
    2: ("list_offsets", "ListOffsets"),
    3: ("metadata", "Metadata"),
    8: ("commit", "OffsetCommit"),
    9: ("commit", "OffsetFetch"),
    10: ("find_coordinator", "FindCoordinator"),
    11: ("group", "JoinGroup"),
    12: ("group", "Heartbeat"),
    13: ("group", "LeaveGroup"),
    14: ("group", "SyncGroup"),
    15: ("admin", "DescribeGroups"),
    16: ("admin", "ListGroups"),
    17: ("sasl_handshake", "SaslHandshake"),
    18: ("api_versions", "ApiVersions"),
    19: ("admin", "CreateTopics"),
    20: ("admin", "DeleteTopics"),
    21: ("admin", "DeleteRecords"),
    22: ("init_producer_id", "InitProducerId"),
    23: ("offset_for_leader_epoch", "OffsetForLeaderEpoch"),
    24: ("add_partitions_to_txn", "AddPartitionsToTxn"),
    25: ("add_offsets_to_txn", "AddOffsetsToTxn"),
    26: ("end_txn", "EndTxn"),
    27: ("", "WriteTxnMarkers"),  # brokers only: kafka-python 2.x has no class for it
    28: ("txn_offset_commit", "TxnOffsetCommit"),
    36: ("sasl_authenticate", "SaslAuthenticate"),
    60: ("", "DescribeCluster"),  # kafka-python 2.x has no class for it
    61: ("", "DescribeProducers"),  # kafka-python 2.x has no classes for these three
    65: ("", "DescribeTransactions"),
    66: ("", "ListTransactions"),
    29: ("admin", "DescribeAcls"),
    30: ("admin", "CreateAcls"),
    31: ("admin", "DeleteAcls"),
    32: ("admin", "DescribeConfigs"),
    33: ("admin", "AlterConfigs"),
    35: ("admin", "DescribeLogDirs"),
    37: ("admin", "CreatePartitions"),
    42: ("admin", "DeleteGroups"),
    43: ("admin", "ElectLeaders"),
    44: ("admin", "IncrementalAlterConfigs"),  # no hand-written 2.x class
    45: ("admin", "AlterPartitionReassignments"),
    46: ("admin", "ListPartitionReassignments"),
    48: ("admin", "DescribeClientQuotas"),
    49: ("admin", "AlterClientQuotas"),
    50: ("", "DescribeUserScramCredentials"),  # no hand-written 2.x classes for these two
    51: ("", "AlterUserScramCredentials"),
    47: ("", "OffsetDelete"),  # no hand-written 2.x class
    75: ("", "DescribeTopicPartitions"),  # newer than kafka-python 2.x
    55: ("", "DescribeQuorum"),  # KRaft's: kafka-python 3.x only
}
# Fields kafka-python 3.x renames (its `json_patch`), and decodes as a set of bit numbers
# (DescribeTopicPartitions' keeps its name and is an int).
_RENAMED = {
    "cluster_authorized_operations": "authorized_operations",
    "topic_authorized_operations": "authorized_operations",
    "authorized_operations": "authorized_operations",  # DescribeGroups v3+
}


def bitfield(bits: set[int] | None) -> int:
    """kafka-python's set of bit numbers (None: the -2^31 "not asked") as our signed int32."""
    value = sum(1 << bit for bit in ({31} if bits is None else bits))
    return value - ((value >> 31) << 32)


_NEW = {0: "producer", 1: "consumer", 2: "consumer", 3: "metadata", 18: "metadata", 22: "producer"}
_NEW.update(dict.fromkeys((8, 9, 11, 12, 13, 14), "consumer.group"))  # Heartbeat is not exported
_NEW[10] = "metadata"
_NEW[47] = "consumer"
_NEW[23] = "consumer"
_NEW[17] = _NEW[36] = "sasl"
_NEW.update(dict.fromkeys((24, 25, 26, 27, 28), "producer"))  # kafka.protocol.producer

# kafka-python 3.x loads Kafka's JSON through a deprecated importlib API at import time;
# importing its protocol modules once here keeps those warnings out of every test report.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    for _module in ("producer", "consumer", "metadata", "admin"):
        with contextlib.suppress(ImportError):  # kafka-python 2.x has no such modules
            importlib.import_module(f"kafka.protocol.{_module}")


class KafkaPython:
    """kafka-python's classes for an API and version, and ways to compare with ours."""

    @staticmethod
    def old_class(api_key: int, kind: str, version: int) -> Any:
        """The hand-written 2.x class (`kafka.protocol.old`), or None if it has no such version."""
        module, name = _OLD[api_key]
        if not module:
            return None
        old = importlib.import_module(f"kafka.protocol.old.{module}")
        classes = getattr(old, name + kind, ())
        found = classes[version] if version < len(classes) else None
        # kafka-python's list AlterConfigsResponse holds AlterConfigsRequest_v1 as its v1:
        # a class of the other direction is no oracle. Nor is a class of a flexible version
        # that kafka-python left with a classic schema (DescribeAclsRequest_v2 says "Enable
        # flexible version" but reuses v1's SCHEMA and FLEXIBLE_VERSION False).
        if found is None or kind not in found.__name__:
            return None
        flexible = APIS[api_key].request if kind == "Request" else APIS[api_key].response
        if flexible.is_flexible(version) and not found.FLEXIBLE_VERSION:
            return None
        return found

    @staticmethod
    def new_class(api_key: int, kind: str) -> Any:
        """The 3.x class generated from Kafka's JSON (`kafka.protocol.<area>`)."""
        module = importlib.import_module(f"kafka.protocol.{_NEW.get(api_key, 'admin')}")
        return getattr(module, _OLD[api_key][1] + kind)

    @staticmethod
    def new_roundtrip(cls: Any, data: bytes, version: int) -> tuple[Any, bytes]:
        """Decode with a 3.x class, and encode what it decoded again."""
        decoded = cls.decode(data, version=version)
        decoded._header = None  # decode leaves this slot unset, and encode reads it
        return decoded, bytes(decoded.encode(version=version))

    @staticmethod
    def old_decode(cls: Any, data: bytes) -> Any:
        """Decode with an old class and insist that it consumed every byte."""
        stream = io.BytesIO(data)
        obj = cls.decode(stream)
        assert stream.tell() == len(data), f"{cls.__name__} left {len(data) - stream.tell()} bytes"
        return obj

    @staticmethod
    def our_leaves(codec: types.Codec, value: Any, out: list) -> list:
        """Our value flattened at a version: wire fields in order, arrays as ('len', n)."""
        if isinstance(codec, StructCodec):
            for attr, field_codec in codec.wire:
                KafkaPython.our_leaves(field_codec, getattr(value, attr), out)
        elif isinstance(codec, types.Array):
            if value is None:
                out.append(None)
            else:
                out.append(("len", len(value)))
                for item in value:
                    KafkaPython.our_leaves(codec.element, item, out)
        else:
            out.append(bytes(value) if isinstance(value, memoryview) else value)
        return out

    @staticmethod
    def their_leaves(value: Any, out: list, kind: Any = None) -> list:
        """An old kafka-python object flattened the same way (tag dicts carry no fields),
        walked with its schema's types so that a BitField (authorized operations) reads
        as our int32."""
        from kafka.protocol.old import types as old_types

        schema = getattr(value, "SCHEMA", None)
        if schema is None:
            schema = kind
        if isinstance(schema, old_types.Schema):
            items = [getattr(value, n) for n in schema.names] if kind is None else value
            # strict=False: a decoded tuple may lack its trailing tag buffer
            for item, field in zip(items, schema.fields, strict=False):
                KafkaPython.their_leaves(item, out, field)
        elif isinstance(value, list):
            element = getattr(kind, "array_of", None)
            out.append(("len", len(value)))
            for item in value:
                KafkaPython.their_leaves(item, out, element)
        elif kind is old_types.BitField:  # a set of bit numbers; None is -2^31
            out.append(bitfield(value))
        elif not isinstance(value, dict):
            out.append(value)
        return out

    @staticmethod
    def assert_same_values(codec: types.Codec, ours: Any, theirs: Any, path: str = "") -> None:
        """Field by field (wire and tagged) against a kafka-python 3.x decoded object."""
        if isinstance(codec, StructCodec):
            fields = [(a, c) for a, c in codec.wire] + [(a, c) for a, _, c, _ in codec.tagged]
            for attr, field_codec in fields:
                name = attr if hasattr(theirs, attr) else _RENAMED.get(attr, attr)
                their_value = getattr(theirs, name)
                if attr in _RENAMED and not isinstance(their_value, int):
                    their_value = bitfield(their_value)  # decoded as a set of bit numbers
                KafkaPython.assert_same_values(
                    field_codec, getattr(ours, attr), their_value, f"{path}.{attr}"
                )
        elif isinstance(codec, types.Array) and ours is not None:
            assert theirs is not None and len(ours) == len(theirs), path
            for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
                KafkaPython.assert_same_values(codec.element, a, b, f"{path}[{i}]")
        elif isinstance(codec, types.NullableStruct):
            assert (ours is None) == (theirs is None), f"{path}: null on one side only"
            if ours is not None:
                KafkaPython.assert_same_values(codec.struct, ours, theirs, path)
        else:
            if codec is types.UUID and theirs is None:
                theirs = types.ZERO_UUID  # kafka-python's name for Kafka's ZERO_UUID
            assert ours == theirs, f"{path}: ours {ours!r} != kafka-python {theirs!r}"


@pytest.fixture(scope="session")
def kafka_python() -> type[KafkaPython]:
    return KafkaPython
