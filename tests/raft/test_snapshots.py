"""Snapshots of the quorum's log (KIP-630): written only at committed offsets, the log cut
behind them, a follower too far behind catching up by FetchSnapshot, a listener rebuilding
from one (spec/raft.md RAFT-21..RAFT-24)."""

from __future__ import annotations

import dataclasses

import pytest

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.api_keys import ApiKey
from kafka_ref.protocol.frames import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from kafka_ref.raft import wire
from kafka_ref.raft.control_records import data_batch
from kafka_ref.raft.kafka_raft_log import KafkaRaftLog
from kafka_ref.raft.messages import (
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
)
from kafka_ref.raft.replicated_log import snapshot_for_fetch
from kafka_ref.sim.raft_checks import decode_state
from kafka_ref.sim.raft_cluster import SIM_QUORUM_CONFIG, RaftSimConfig, RaftSimulation
from tests.raft.voters import Voter, log_of, open_log

SNAPSHOTTING = dataclasses.replace(
    SIM_QUORUM_CONFIG,
    max_bytes_between_snapshots=300,
    max_retention_bytes=0,  # cut the log at every snapshot
    fetch_snapshot_max_bytes=1024,  # a snapshot in several chunks
)


def leader_of_epoch_one(tmp_path, entries: int) -> Voter:
    """A single voter that leads epoch 1 and committed `entries` one-record batches."""
    voter = Voter(tmp_path, voters=(0,))
    voter.client.poll(10_000)  # a quorum of one elects itself
    for i in range(entries):
        voter.client.append([b"v%d" % i], 10_000)
    return voter


@pytest.mark.spec("RAFT-21")
def test_a_snapshot_only_at_a_committed_offset(tmp_path):
    voter = Voter(tmp_path, log=log_of(tmp_path, [(1, 5)]))
    voter.client._maybe_transition(1, 1, 0)  # a follower: nothing committed yet
    with pytest.raises(ValueError, match="above the high watermark"):
        voter.client.create_snapshot(3, b"state", 0)
    assert voter.log.latest_snapshot_id is None
    voter.client.quorum.update_high_watermark(3)
    # the id is the end offset and the epoch of the record before it
    assert voter.client.create_snapshot(3, b"state", 0) == OffsetAndEpoch(1, 3)
    assert voter.log.read_snapshot(OffsetAndEpoch(1, 3)) == b"state"
    assert voter.client.create_snapshot(2, b"older", 0) is None  # not past the latest


@pytest.mark.spec("RAFT-22")
def test_the_log_is_cut_up_to_the_latest_snapshot_and_no_further(tmp_path):
    log = log_of(tmp_path, [(1, 5), (2, 5)])
    assert not log.maybe_clean(0, max_bytes=0, max_ms=10**9)  # no snapshot: nothing to cut
    log.create_snapshot(OffsetAndEpoch(1, 4), b"a")
    log.create_snapshot(OffsetAndEpoch(2, 7), b"b")
    assert not log.maybe_clean(0, max_bytes=10**9, max_ms=10**9)  # within retention
    assert log.maybe_clean(0, max_bytes=0, max_ms=10**9)  # over: cut at the latest
    assert (log.start_offset, log.end_offset) == (7, 10)
    assert log.latest_snapshot_id == log.earliest_snapshot_id == OffsetAndEpoch(2, 7)
    assert log.read_snapshot(OffsetAndEpoch(1, 4)) is None  # the older snapshot went first
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 10)
    with pytest.raises(AssertionError, match="below the log start"):
        log.truncate_to(6)
    log.close()
    reopened = open_log(tmp_path)  # the log start is the earliest snapshot's end
    assert (reopened.start_offset, reopened.end_offset) == (7, 10)
    assert reopened.last_fetched_epoch == 2


@pytest.mark.spec("RAFT-22")
def test_the_log_is_cut_once_its_first_record_is_older_than_the_retention(tmp_path):
    log = log_of(tmp_path, [(1, 4)])  # appended at time 0
    log.create_snapshot(OffsetAndEpoch(1, 2), b"a")
    assert not log.maybe_clean(1_000, max_bytes=10**9, max_ms=1_000)
    assert log.maybe_clean(1_001, max_bytes=10**9, max_ms=1_000)
    assert log.start_offset == 2


@pytest.mark.spec("RAFT-23")
def test_a_fetch_below_the_log_start_is_answered_the_latest_snapshot(tmp_path):
    log = log_of(tmp_path, [(1, 5), (2, 5)])
    log.create_snapshot(OffsetAndEpoch(1, 5), b"a")
    log.create_snapshot(OffsetAndEpoch(2, 8), b"b")
    log.delete_before_snapshot(OffsetAndEpoch(1, 5))  # log [5, 10), snapshots at 5 and 8
    latest = OffsetAndEpoch(2, 8)
    assert snapshot_for_fetch(log, 0, -1) == latest  # an empty follower
    assert snapshot_for_fetch(log, 3, 1) == latest  # below the log start
    assert snapshot_for_fetch(log, 5, 0) == latest  # at it, with another epoch
    assert snapshot_for_fetch(log, 7, 0) == latest  # an epoch older than the snapshot's
    assert snapshot_for_fetch(log, 5, 1) is None  # at the log start, the snapshot's epoch
    assert snapshot_for_fetch(log, 9, 2) is None


@pytest.mark.spec("RAFT-23")
def test_a_follower_copies_the_snapshot_in_chunks_and_installs_it(tmp_path):
    leader = leader_of_epoch_one(tmp_path / "leader", 6)
    data = bytes(range(200))
    leader.client.create_snapshot(4, data, 0)
    leader.log.delete_before_snapshot(OffsetAndEpoch(1, 4))
    # a follower with an old history of its own: epoch 0, never committed
    follower = Voter(
        tmp_path / "follower", 1, voters=(0, 1, 2), log=log_of(tmp_path / "follower", [(0, 3)])
    )
    follower.client._maybe_transition(0, 1, 0)
    follower.client.poll(0)
    [(_, (fetch, _))] = follower.client._in_flight.items()
    assert isinstance(fetch, FetchRequest)
    answer = leader.ask(1, dataclasses.replace(fetch, current_leader_epoch=1))
    assert answer.snapshot_id == OffsetAndEpoch(1, 4) and answer.records == b""
    follower.client.handle(0, answer, 0)
    chunks = 0
    while follower.client._in_flight:
        [(_, (request, _))] = follower.client._in_flight.items()
        if not isinstance(request, FetchSnapshotRequest):
            break
        chunks += 1
        request = dataclasses.replace(request, max_bytes=64)
        follower.client.handle(0, leader.ask(1, request), 0)
    assert chunks == 4  # 200 bytes, 64 at a time
    assert follower.log.read_snapshot(OffsetAndEpoch(1, 4)) == data
    # the old log is gone: the log starts, empty, at the snapshot's end
    assert (follower.log.start_offset, follower.log.end_offset) == (4, 4)
    assert follower.log.last_fetched_epoch == 1
    assert follower.client.high_watermark == 4
    assert isinstance(request, FetchRequest) and (
        request.fetch_offset,
        request.last_fetched_epoch,
    ) == (4, 1)
    records = leader.ask(1, request)
    assert isinstance(records, FetchResponse) and records.snapshot_id is None and records.records


@pytest.mark.spec("RAFT-23")
def test_a_snapshot_the_leader_no_longer_holds_sends_the_follower_back_to_fetch(tmp_path):
    leader = leader_of_epoch_one(tmp_path / "leader", 3)
    gone = FetchSnapshotRequest("", 1, 1, OffsetAndEpoch(1, 2), 0)
    assert leader.ask(1, gone).error_code == ErrorCode.SNAPSHOT_NOT_FOUND
    leader.client.create_snapshot(2, b"abc", 0)
    past = FetchSnapshotRequest("", 1, 1, OffsetAndEpoch(1, 2), 4)
    assert leader.ask(1, past).error_code == ErrorCode.POSITION_OUT_OF_RANGE
    answer = leader.ask(1, dataclasses.replace(past, position=1))
    assert isinstance(answer, FetchSnapshotResponse)
    assert (answer.size, answer.position, answer.unaligned_records) == (3, 1, b"bc")


@pytest.mark.spec("RAFT-23", "RAFT-24")
def test_a_follower_away_while_the_log_was_cut_catches_up_by_snapshot(tmp_path, monkeypatch):
    installed = []
    install = KafkaRaftLog.install_snapshot

    def counting_install(self, snapshot_id, data):
        installed.append((self.log.dir, snapshot_id))
        install(self, snapshot_id, data)

    monkeypatch.setattr(KafkaRaftLog, "install_snapshot", counting_install)
    sim = RaftSimulation(
        tmp_path, voters=3, observers=1, seed=5, config=RaftSimConfig(quorum=SNAPSHOTTING)
    )
    sim.run(500)
    away = sim.followers()[0]
    sim.crash(away)
    sim.run(2_000)
    leader = sim.nodes[sim.leader()]
    assert leader.log.start_offset > 0  # the log was cut past what the follower holds
    sim.start(away)
    sim.settle(5_000)
    node = sim.nodes[away]
    assert node.log.start_offset > 0 and node.log.latest_snapshot_id is not None
    assert [i for i in installed if i[0] == node.dir]  # by FetchSnapshot from the leader
    # its application was rebuilt from the snapshot, then from the log: the leader's state
    hw = min(n.client.high_watermark for n in sim.nodes.values())
    assert [r for r in node.application.applied if r[0] < hw] == [
        r for r in leader.application.applied if r[0] < hw
    ]


@pytest.mark.spec("RAFT-24")
def test_a_restarted_node_loads_its_latest_snapshot_then_replays_the_log(tmp_path):
    sim = RaftSimulation(tmp_path, voters=1, seed=3, config=RaftSimConfig(quorum=SNAPSHOTTING))
    sim.run(1_500)
    node = sim.nodes[0]
    snapshot = node.log.latest_snapshot_id
    assert snapshot is not None and node.log.start_offset == snapshot.offset
    before = list(node.application.applied)
    sim.restart(0)
    restarted = sim.nodes[0].application
    # right after the restart, before any record is committed again: the snapshot's state
    assert restarted.next_offset == snapshot.offset
    assert restarted.applied == decode_state(sim.nodes[0].log.read_snapshot(snapshot))
    sim.run(500)
    assert restarted.applied[: len(before)] == before


@pytest.mark.spec("RAFT-14", "RAFT-23")
def test_fetch_snapshot_and_the_snapshot_id_travel_as_kafka_requests():
    """FetchSnapshot v1 and Fetch v17's SnapshotId, through their bytes and back."""
    request = FetchSnapshotRequest("c", 2, 7, OffsetAndEpoch(6, 1234), 512, 4096)
    api_key, version, body = wire.request_to_wire(request)
    frame = encode_request(api_key, version, 9, "raft-client-2", body)
    _, decoded = decode_request(frame[4:], "controller")
    assert wire.request_from_wire(api_key, decoded) == request
    chunk = FetchSnapshotResponse(
        ErrorCode.NO_ERROR, 1, 7, OffsetAndEpoch(6, 1234), 9000, 512, b"xyz"
    )
    for response, key in [
        (chunk, ApiKey.FETCH_SNAPSHOT),
        (
            FetchResponse(ErrorCode.NO_ERROR, 1, 7, 1300, snapshot_id=OffsetAndEpoch(6, 1234)),
            ApiKey.FETCH,
        ),
    ]:
        frame = encode_response(
            key, wire.VERSIONS[key], 9, wire.response_to_wire(response, wire.VERSIONS[key])
        )
        _, answer = decode_response(frame[4:], key, wire.VERSIONS[key])
        assert wire.response_from_wire(key, answer, 0) == response


@pytest.mark.spec("RAFT-22")
def test_the_segments_wholly_below_the_log_start_are_deleted(tmp_path):
    small = LogConfig(segment_bytes=300, segment_index_bytes=4096)  # a few batches each
    log = KafkaRaftLog.open(tmp_path, small, ManualClock(0))
    for _ in range(20):
        log.append_as_leader(data_batch([b"x" * 50], 1, 0), 1)
    log.flush()
    before = [s.base_offset for s in log.log.segments]
    log.create_snapshot(OffsetAndEpoch(1, 12), b"state")
    assert log.delete_before_snapshot(OffsetAndEpoch(1, 12))
    after = [s.base_offset for s in log.log.segments]
    assert len(before) > 3 and after == [b for b in before if b >= after[0]]
    assert after[0] <= 12 < (after[1] if len(after) > 1 else log.end_offset)  # holds 12
    segment_files = sorted(p.name for p in tmp_path.glob("*.log"))
    assert segment_files == [f"{b:020d}.log" for b in after]
    assert log.start_offset == 12 and log.read_all(0)  # a read from 0 starts at 12
