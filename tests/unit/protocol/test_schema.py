"""The schema layer on a toy message that uses every feature Kafka's JSON format has."""

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.protocol.errors import (
    ProtocolDecodeError,
    ProtocolEncodeError,
    UnsupportedVersionError,
)
from kafka_ref.protocol.schema import Field, Message, parse_versions, snake_case

# v0-1 classic, v2+ flexible; fields come and go, one is tagged, one struct is nested.
Toy = Message(
    "ToyRequest",
    api_key=1000,
    valid_versions="0-3",
    flexible_versions="2+",
    fields=[
        Field("GroupId", "string", "0+", flexible_versions="none"),
        Field("Name", "string", "0+", nullable_versions="1+", default="n/a"),
        Field("OnlyV0", "int32", "0", default=7),
        Field("Epoch", "int64", "1+", default=-1),
        Field("Ids", "[]int32", "0+", nullable_versions="2+"),
        Field(
            "Parts",
            "[]Part",
            "0+",
            fields=[
                Field("Index", "int32", "0+"),
                Field("Data", "records", "0+", nullable_versions="0+"),
                Field(
                    "Hint",
                    "string",
                    "2+",
                    tagged_versions="2+",
                    tag=0,
                    default=None,
                    nullable_versions="2+",
                ),
            ],
        ),
        Field(
            "Leader",
            "Leader",
            "3+",
            tagged_versions="3+",
            tag=5,
            fields=[
                Field("Id", "int32", "3+", default=-1),
                Field("Epoch", "int32", "3+", default=-1),
            ],
        ),
        Field("Trace", "uuid", "2+", tagged_versions="2+", tag=1),
    ],
)


def sample(**changes):
    value = Toy(
        group_id="g",
        name="topic",
        epoch=9,
        ids=[1, 2],
        parts=[Toy.Part(index=0, data=b"xyz"), Toy.Part(index=1, data=None)],
    )
    for attr, new in changes.items():
        setattr(value, attr, new)
    return value


@pytest.mark.spec("PROTO-6")
def test_version_ranges_parse_like_kafkas_json():
    assert parse_versions("3+") == range(3, 0x8000)
    assert parse_versions("0-12") == range(0, 13)
    assert parse_versions("5") == range(5, 6)
    assert parse_versions("none") == range(0)
    assert snake_case("ThrottleTimeMs") == "throttle_time_ms"
    assert snake_case("timeoutMs") == "timeout_ms"
    assert snake_case("IsrNodes") == "isr_nodes"


@pytest.mark.spec("PROTO-6")
def test_fields_outside_their_versions_are_skipped_and_decode_to_defaults():
    value = sample(only_v0=123)
    v0 = Toy.encode(0, value)
    # v0: group_id, name, only_v0, ids, parts (no epoch): classic encodings throughout.
    assert v0.hex().startswith("0001" + "67" + "0005" + "746f706963" + "0000007b" + "00000002")
    decoded = Toy.decode(0, v0)
    assert decoded.only_v0 == 123 and decoded.epoch == -1  # epoch is v1+: its default
    v1 = Toy.decode(1, Toy.encode(1, value))
    assert v1.only_v0 == 7 and v1.epoch == 9  # only_v0 is v0-only: skipped, then default
    assert Toy.encode(1, sample(only_v0=1)) == Toy.encode(1, sample(only_v0=2))


@pytest.mark.spec("PROTO-16")
def test_null_only_where_nullable():
    with pytest.raises(ProtocolEncodeError, match="not nullable") as info:
        Toy.encode(0, sample(name=None))  # nullable from v1 only
    assert "ToyRequest.name" in str(info.value)
    assert Toy.decode(1, Toy.encode(1, sample(name=None))).name is None
    assert Toy.decode(2, Toy.encode(2, sample(ids=None))).ids is None
    with pytest.raises(ProtocolEncodeError, match=r"ToyRequest\.ids"):
        Toy.encode(1, sample(ids=None))


@pytest.mark.spec("PROTO-7")
def test_flexible_versions_switch_to_compact_forms_and_tag_buffers():
    v1, v2 = Toy.encode(1, sample()), Toy.encode(2, sample())
    # group_id keeps its int16 length (flexible_versions="none"); name becomes compact.
    assert v2.hex().startswith("0001" + "67" + "06" + "746f706963")
    assert v2[-1] == 0  # the top-level struct ends with an empty tag buffer
    assert len(v2) < len(v1)
    assert "_tagged_fields => TAG_BUFFER" in Toy.describe(2)
    assert "_tagged_fields" not in Toy.describe(1)


@pytest.mark.spec("PROTO-8")
def test_tagged_fields_are_written_only_when_not_default():
    plain = Toy.encode(3, sample())
    trace = uuid.UUID(int=5)
    tagged = Toy.encode(3, sample(trace=trace, leader=Toy.Leader(id=2, epoch=3)))
    # Two tagged fields, ascending: tag 1 (16-byte uuid), tag 5 (struct: 2 int32s + tags).
    assert tagged.endswith(
        bytes([2, 1, 16]) + trace.bytes + bytes([5, 9]) + bytes.fromhex("00000002000000030" + "0")
    )
    assert len(tagged) == len(plain) + 2 + 16 + 2 + 9
    decoded = Toy.decode(3, tagged)
    assert decoded.trace == trace and decoded.leader == Toy.Leader(id=2, epoch=3)
    assert Toy.decode(3, plain).leader == Toy.Leader()  # absent tag: the default struct
    # Tagged in v2, so a v1 encoding does not carry it at all.
    assert Toy.decode(1, Toy.encode(1, sample(trace=trace))).trace == uuid.UUID(int=0)


@pytest.mark.spec("PROTO-8")
def test_unknown_tags_are_skipped_and_bad_known_tags_rejected():
    plain = Toy.encode(2, sample())
    with_unknown = plain[:-1] + bytes([2, 7, 3]) + b"abc" + bytes([9, 0])  # tags 7 and 9
    assert Toy.decode(2, with_unknown) == Toy.decode(2, plain)
    too_long = plain[:-1] + bytes([1, 1, 17]) + bytes(17)  # a uuid is 16 bytes, not 17
    with pytest.raises(ProtocolDecodeError, match="extra bytes"):
        Toy.decode(2, too_long)


@pytest.mark.spec("PROTO-10")
def test_a_message_must_be_consumed_exactly():
    data = Toy.encode(1, sample())
    with pytest.raises(ProtocolDecodeError, match="1 bytes left over"):
        Toy.decode(1, data + b"\x00")
    with pytest.raises(ProtocolDecodeError) as info:
        Toy.decode(1, data[:-2])
    assert str(info.value).startswith("INVALID_REQUEST: ToyRequest.parts[1].data")


@pytest.mark.spec("PROTO-6", "PROTO-7", "PROTO-8")
@given(data=st.data(), version=st.integers(0, 3))
def test_toy_round_trips_at_every_version(schema_values, data, version):
    value = data.draw(schema_values.strategy(Toy, version))
    encoded = Toy.encode(version, value)
    assert Toy.decode(version, encoded) == value
    assert Toy.encode(version, Toy.decode(version, encoded)) == encoded


@pytest.mark.spec("PROTO-11")
def test_versions_outside_the_declaration_are_refused_and_widening_adds_them():
    with pytest.raises(UnsupportedVersionError, match="v4 is not in 0-3"):
        Toy.encode(4, sample())
    wider = Toy.with_versions("0-4")
    assert wider.decode(4, wider.encode(4, sample())) == sample()
    assert wider.Part is Toy.Part  # same declaration, same value classes


def test_values_are_small_readable_structs():
    value = sample()
    assert repr(value.parts[0]) == "Part(index=0, data=b'xyz', hint=None)"
    decoded = Toy.decode(0, Toy.encode(0, value))
    assert "data=<3 bytes>" in repr(decoded.parts[0])
    assert decoded.to_dict()["parts"][0] == {"index": 0, "data": b"xyz", "hint": None}
    assert Toy().ids == [] and Toy().ids is not Toy().ids  # fresh mutable defaults
    assert Toy().name == "n/a" and Toy().leader == Toy.Leader(id=-1, epoch=-1)
    with pytest.raises(TypeError, match="no field"):
        Toy(nmae="typo")
    with pytest.raises(AttributeError):
        Toy.NoSuchStruct  # noqa: B018


@pytest.mark.parametrize(
    "field,error",
    [
        (lambda: Field("X", "[]Thing", "0+"), "needs inline fields"),
        (lambda: Field("X", "int33", "0+"), "unknown type"),
        (lambda: Field("X", "int32", "0+", tag=1), "needs both"),
        (lambda: Field("X", "int32", "0+", nullable_versions="0+"), "cannot be nullable"),
        (
            lambda: Message(
                "M",
                api_key=None,
                valid_versions="0-3",
                flexible_versions="2+",
                fields=[Field("X", "int32", "0+", tagged_versions="1+", tag=0)],
            ),
            "tagged outside flexible",
        ),
        (
            lambda: Message(
                "M",
                api_key=None,
                valid_versions="0",
                flexible_versions="none",
                fields=[Field("X", "int32", "0+"), Field("X", "int64", "0+")],
            ),
            "duplicate field",
        ),
    ],
)
def test_declarations_are_checked_like_kafkas_generator(field, error):
    with pytest.raises(ValueError, match=error):
        field()


@pytest.mark.spec("PROTO-20")
def test_a_nullable_struct_is_an_int8_marker_then_the_struct():
    from kafka_ref.protocol.messages import DescribeTopicPartitionsRequest as Request

    present = Request(
        topics=[Request.TopicRequest(name="a")],
        cursor=Request.Cursor(topic_name="a", partition_index=3),
    )
    # The bytes Kafka 4.4's DescribeTopicPartitionsRequestData writes for the same values.
    assert Request.encode(0, present).hex() == "02026100000007d0010261000000030000"
    assert Request.encode(0, Request(topics=[])).hex() == "01000007d0ff00"  # null: -1
    assert Request.decode(0, bytes.fromhex("01000007d0ff00")).cursor is None
    assert Request.decode(0, bytes.fromhex("01000007d08000")).cursor is None  # any negative
    assert Request.decode(0, Request.encode(0, present)) == present
