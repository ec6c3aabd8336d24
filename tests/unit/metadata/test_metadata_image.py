"""The metadata image: replay, strictness, and the image as records (META-7..META-9)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.metadata import records as r
from kafka_ref.metadata.image import (
    EMPTY,
    MetadataDelta,
    MetadataReplayError,
    load,
)
from kafka_ref.metadata.serde import ApiMessageAndVersion
from kafka_ref.metadata.snapshot import (
    OffsetAndEpoch,
    read_snapshot,
    snapshot_batches,
    write_snapshot,
)

A = ApiMessageAndVersion.of
TOPIC = uuid.UUID(int=7)


def register(broker_id: int, epoch: int, fenced: bool = True) -> ApiMessageAndVersion:
    return A(
        r.RegisterBrokerRecord(
            broker_id=broker_id,
            incarnation_id=uuid.UUID(int=broker_id),
            broker_epoch=epoch,
            end_points=[
                r.RegisterBrokerRecord.BrokerEndpoint(
                    name="PLAINTEXT", host="h", port=9092, security_protocol=0
                )
            ],
            rack="r1",
            fenced=fenced,
        )
    )


CLUSTER = [
    A(r.FeatureLevelRecord(name="metadata.version", feature_level=27)),
    register(1, 10),
    register(2, 11),
    A(r.UnfenceBrokerRecord(id=1, epoch=10)),
    A(r.TopicRecord(name="clicks", topic_id=TOPIC)),
    A(
        r.PartitionRecord(
            partition_id=0,
            topic_id=TOPIC,
            replicas=[1, 2],
            isr=[1, 2],
            leader=1,
            leader_epoch=0,
            partition_epoch=0,
        )
    ),
]


@pytest.mark.spec("META-7")
def test_replay_builds_brokers_topics_and_partition_changes():
    image = load(
        [
            *CLUSTER,
            A(r.PartitionChangeRecord(partition_id=0, topic_id=TOPIC, isr=[1])),
            A(
                r.PartitionChangeRecord(
                    partition_id=0, topic_id=TOPIC, leader=2, eligible_leader_replicas=[1]
                )
            ),
            A(r.BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=11, fenced=-1)),
            A(r.ConfigRecord(resource_type=2, resource_name="clicks", name="a", value="1")),
            A(r.ConfigRecord(resource_type=2, resource_name="clicks", name="b", value="2")),
            A(r.ConfigRecord(resource_type=2, resource_name="clicks", name="a", value=None)),
            A(r.ProducerIdsRecord(broker_id=1, broker_epoch=10, next_producer_id=2000)),
            A(r.FeatureLevelRecord(name="transaction.version", feature_level=2)),
            A(r.FeatureLevelRecord(name="transaction.version", feature_level=0)),
        ]
    )
    assert not image.brokers[1].fenced and not image.brokers[2].fenced
    assert image.brokers[1].rack == "r1" and image.brokers[1].listeners[0].port == 9092
    partition = image.topic_by_name("clicks").partitions[0]
    assert partition.isr == (1,) and partition.leader == 2 and partition.elr == (1,)
    assert (partition.leader_epoch, partition.partition_epoch) == (1, 2)
    assert partition.replicas == (1, 2)  # unchanged: the records left it null
    assert image.configs == {(2, "clicks"): {"b": "2"}}
    assert image.next_producer_id == 2000
    assert image.features == {"metadata.version": 27}


@pytest.mark.spec("META-7")
def test_a_metadata_transaction_applies_whole_or_not_at_all():
    other = uuid.UUID(int=8)
    begin = A(r.BeginTransactionRecord(name="create"))
    topic = A(r.TopicRecord(name="other", topic_id=other))
    committed = load([*CLUSTER, begin, topic, A(r.EndTransactionRecord())])
    aborted = load([*CLUSTER, begin, topic, A(r.AbortTransactionRecord(reason="x"))])
    still_open = load([*CLUSTER, begin, topic])
    assert other in committed.topics
    assert other not in aborted.topics and other not in still_open.topics


@pytest.mark.spec("META-8")
@pytest.mark.parametrize(
    ("record", "says"),
    [
        (r.PartitionRecord(partition_id=0, topic_id=uuid.UUID(int=99)), "unknown topic id"),
        (r.PartitionChangeRecord(partition_id=5, topic_id=TOPIC), "partition clicks:5"),
        (r.RemoveTopicRecord(topic_id=uuid.UUID(int=99)), "no such topic found"),
        (r.FenceBrokerRecord(id=3, epoch=1), "broker 3, but that broker was not registered"),
        (r.UnfenceBrokerRecord(id=2, epoch=99), "did not match the current broker epoch, 11"),
        (r.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=5), "fenced"),
        (r.RemoveAccessControlEntryRecord(id=uuid.UUID(int=1)), "existing ACL"),
        (r.TopicRecord(name="clicks", topic_id=uuid.UUID(int=5)), "already exists"),
    ],
)
def test_a_record_that_makes_no_sense_is_refused(record, says):
    delta = MetadataDelta(load(CLUSTER))
    with pytest.raises(MetadataReplayError) as caught:
        delta.replay(A(record))
    assert says in str(caught.value) and "\n" not in str(caught.value)


# -- META-9: random valid histories, written as records and read back ------------------------

ids = st.integers(1, 6)
uuids = st.integers(1, 2**128 - 1).map(lambda n: uuid.UUID(int=n))
brokers_lists = st.lists(ids, max_size=3, unique=True)


@st.composite
def histories(draw) -> list[ApiMessageAndVersion]:
    """A sequence of records that each make sense after the ones before."""
    out = [A(r.FeatureLevelRecord(name="metadata.version", feature_level=draw(st.integers(7, 33))))]
    brokers: dict[int, int] = {}
    topics: dict[uuid.UUID, set[int]] = {}
    acls: set[uuid.UUID] = set()
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(range(13)))
        if kind == 0:
            broker, epoch = draw(ids), draw(st.integers(0, 100))
            brokers[broker] = epoch
            out.append(register(broker, epoch, draw(st.booleans())))
        elif kind == 1 and brokers:
            broker = draw(st.sampled_from(sorted(brokers)))
            fenced, shutdown = draw(st.sampled_from([-1, 0, 1])), draw(st.sampled_from([0, 1]))
            change = r.BrokerRegistrationChangeRecord(
                broker_id=broker,
                broker_epoch=brokers[broker],
                fenced=fenced,
                in_controlled_shutdown=shutdown,
                log_dirs=draw(st.lists(uuids, max_size=2)),
            )
            out.append(A(change))
        elif kind == 2 and brokers:
            broker = draw(st.sampled_from(sorted(brokers)))
            del brokers[broker]
            out.append(A(r.UnregisterBrokerRecord(broker_id=broker, broker_epoch=0)))
        elif kind == 3:
            topic = draw(uuids.filter(lambda u: u not in topics))
            topics[topic] = set()
            out.append(A(r.TopicRecord(name=f"t-{topic.hex}", topic_id=topic)))
        elif kind == 4 and topics:
            topic = draw(st.sampled_from(sorted(topics)))
            index = draw(st.integers(0, 3))
            topics[topic].add(index)
            replicas = draw(brokers_lists)
            partition = r.PartitionRecord(
                partition_id=index,
                topic_id=topic,
                replicas=replicas,
                isr=replicas[: draw(st.integers(0, len(replicas)))],
                leader=replicas[0] if replicas else -1,
                leader_epoch=draw(st.integers(0, 9)),
                partition_epoch=draw(st.integers(0, 9)),
                eligible_leader_replicas=draw(st.none() | brokers_lists.filter(bool)),
            )
            out.append(A(partition))
        elif kind == 5 and any(topics.values()):
            topic = draw(st.sampled_from(sorted(t for t, p in topics.items() if p)))
            change = r.PartitionChangeRecord(
                partition_id=draw(st.sampled_from(sorted(topics[topic]))),
                topic_id=topic,
                isr=draw(st.none() | brokers_lists),
                leader=draw(st.sampled_from([-2, -1, 1, 2])),
                eligible_leader_replicas=draw(st.none() | brokers_lists),
                last_known_elr=draw(st.none() | brokers_lists),
            )
            out.append(A(change))
        elif kind == 6 and topics:
            topic = draw(st.sampled_from(sorted(topics)))
            del topics[topic]
            out.append(A(r.RemoveTopicRecord(topic_id=topic)))
        elif kind == 7:
            config = r.ConfigRecord(
                resource_type=draw(st.sampled_from([2, 4])),
                resource_name=draw(st.sampled_from(["", "a", "1"])),
                name=draw(st.sampled_from(["x", "y"])),
                value=draw(st.none() | st.text(max_size=3)),
            )
            out.append(A(config))
        elif kind == 8:
            acl = draw(uuids)
            acls.add(acl)
            entry = r.AccessControlEntryRecord(
                id=acl,
                resource_type=2,
                resource_name="t",
                pattern_type=3,
                principal="User:a",
                host="*",
                operation=draw(st.integers(2, 12)),
                permission_type=3,
            )
            out.append(A(entry))
        elif kind == 9 and acls:
            acl = draw(st.sampled_from(sorted(acls)))
            acls.discard(acl)
            out.append(A(r.RemoveAccessControlEntryRecord(id=acl)))
        elif kind == 10:
            user, mechanism = draw(st.sampled_from(["alice", "bob"])), draw(st.sampled_from([1, 2]))
            if draw(st.booleans()):
                credential = r.UserScramCredentialRecord(
                    name=user,
                    mechanism=mechanism,
                    salt=b"s",
                    stored_key=b"k",
                    server_key=b"v",
                    iterations=draw(st.integers(4096, 8192)),
                )
                out.append(A(credential))
            else:
                out.append(A(r.RemoveUserScramCredentialRecord(name=user, mechanism=mechanism)))
        elif kind == 11:
            quota = r.ClientQuotaRecord(
                entity=[
                    r.ClientQuotaRecord.EntityData(
                        entity_type="user", entity_name=draw(st.none() | st.just("alice"))
                    )
                ],
                key=draw(st.sampled_from(["producer_byte_rate", "request_percentage"])),
                value=draw(st.floats(0, 1e9)),
                remove=draw(st.booleans()),
            )
            out.append(A(quota))
        elif kind == 12:
            out.append(A(r.ProducerIdsRecord(next_producer_id=draw(st.integers(0, 10**6)))))
    return out


@pytest.mark.spec("META-9")
@given(histories())
def test_an_image_written_as_records_and_replayed_is_the_same_image(history):
    image = load(history)
    assert load(image.records()) == image
    assert load(history, EMPTY) == image  # replay is a pure fold


@pytest.mark.spec("META-9")
@given(histories())
def test_an_image_read_back_from_a_snapshot_is_the_same_image(tmp_path_factory, history):
    image = load(history)
    sid = OffsetAndEpoch(len(history), 1)
    data = snapshot_batches(sid, image.records(), last_contained_log_timestamp=0, now=0)
    directory = str(tmp_path_factory.mktemp("snapshot"))
    assert load(read_snapshot(write_snapshot(directory, sid, data)).records) == image
