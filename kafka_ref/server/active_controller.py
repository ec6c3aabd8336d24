"""The quorum controller on the Raft quorum: decide, append, answer once committed (Kafka:
`QuorumController`'s event loop and its `QuorumMetaLogListener`).

`metadata/controller/quorum_controller.py` decides; this module runs it on a controller
node. Every controller, active or not, hears the metadata log through the quorum's listener
(RAFT-17) and folds each committed batch into its image. Then:

* **claim.** The listener is told that this node leads only once it has heard every batch
  before the epoch began, so the new active controller decides on an image that holds what
  every earlier controller committed. A cluster whose log has no features yet gets its
  bootstrap records now (KCTRL-1). Broker sessions start afresh: every registered broker
  has a full session timeout to send its next heartbeat.
* **decide.** A request is turned into a `ControllerResult` against the current image, its
  records are appended to the log as one batch, and the active controller replays them at
  once, so that the next decision sees them (Kafka replays its own writes before they
  commit, and keeps a snapshot to revert to). The response waits until the quorum has
  committed the batch; then the listener's commit releases it (KCTRL-17).
* **renounce.** A controller that loses the leadership forgets what it appended and did
  not see committed: it goes back to the image of committed records, and every response
  still waiting answers NOT_CONTROLLER, so the broker asks the new active controller.

Brokers that stop heartbeating are fenced by a periodic check (Kafka:
`maybeFenceOneStaleBroker`, one broker a run).

Rules: KCTRL-17.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from kafka_ref.errors import ErrorCode, KafkaError, NotLeaderOrFollowerError
from kafka_ref.metadata.controller.controller_config import ControllerConfig
from kafka_ref.metadata.controller.quorum_controller import QuorumController
from kafka_ref.metadata.controller.result import ControllerResult
from kafka_ref.metadata.image import EMPTY, MetadataImage, load
from kafka_ref.metadata.serde import deserialize, serialize
from kafka_ref.raft.listener import CommittedBatch, LeaderAndEpoch, LoadedSnapshot
from kafka_ref.server.metadata_snapshots import load_snapshot_image
from kafka_ref.server.raft_manager import RaftManager

logger = logging.getLogger("kafka_ref.server.active_controller")

FENCE_CHECK_INTERVAL_MS = 250  # how often stale broker sessions are looked for


class NotControllerError(KafkaError):
    code = ErrorCode.NOT_CONTROLLER


class ActiveController:
    """A controller node's `QuorumController`, driven by the Raft quorum it runs on."""

    def __init__(self, raft: RaftManager, cluster_id: str, config: ControllerConfig) -> None:
        self.raft = raft
        self.cluster_id = cluster_id
        self.config = config
        self.committed_image: MetadataImage = EMPTY  # every committed record replayed
        self.committed_offset = -1  # the last committed record's offset
        self.active_epoch: int | None = None  # the quorum epoch this node leads, if claimed
        self.controller = self._standby()
        self._pending: deque[tuple[int, asyncio.Future]] = deque()  # (last offset, answer)
        self._fence_timer: asyncio.TimerHandle | None = None
        raft.register(self)

    def _standby(self) -> QuorumController:
        """A controller over the committed image, numbering records from the log's end."""
        return QuorumController(
            self.cluster_id,
            self.config,
            image=self.committed_image,
            next_offset=self.committed_offset + 1,
            epoch_source=lambda: self.raft.log.end_offset if self.raft.log else 0,
        )

    @property
    def is_active(self) -> bool:
        return self.active_epoch is not None

    # ------------------------------------------------------------------ the listener
    def handle_commit(self, batch: CommittedBatch) -> None:
        records = [deserialize(value) for _, value in batch.records if value is not None]
        self.committed_image = load(records, self.committed_image)
        self.committed_offset = batch.last_offset
        if self.is_active:
            # everything committed in our epoch is our own, already replayed when appended
            assert batch.epoch == self.active_epoch, (
                f"a batch of epoch {batch.epoch} committed while active in {self.active_epoch}"
            )
        else:
            self.controller.next_offset = batch.base_offset
            self.controller.replay(records)
        while self._pending and self._pending[0][0] <= batch.last_offset:
            _, answer = self._pending.popleft()
            if not answer.done():
                answer.set_result(None)

    def handle_load_snapshot(self, snapshot: LoadedSnapshot) -> None:
        """Rebuild the committed image from a snapshot (RAFT-24): at a restart, or once the
        node copied the leader's; never while active (the leader's log holds its own)."""
        assert not self.is_active, "the active controller is told a snapshot"
        self.committed_image = load_snapshot_image(snapshot)
        self.committed_offset = snapshot.snapshot_id.offset - 1
        self.controller = self._standby()

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        if leader.leader_id == self.raft.node_id:
            self._claim(leader.epoch)
        elif self.is_active:
            self._renounce(leader)

    def _claim(self, epoch: int) -> None:
        self.active_epoch = epoch
        self.controller = self._standby()  # fresh sessions: each broker gets a full timeout
        logger.info(
            "controller %d is active in epoch %d at offset %d",
            self.raft.node_id,
            epoch,
            self.committed_offset,
        )
        loop = asyncio.get_running_loop()
        if not self.committed_image.features:  # a new cluster's log begins with them (KCTRL-1)
            loop.call_soon(self._bootstrap, epoch)
        self._fence_timer = loop.call_later(FENCE_CHECK_INTERVAL_MS / 1000, self._fence_stale)

    def _bootstrap(self, epoch: int) -> None:
        if self.active_epoch == epoch and not self.controller.image.features:
            self.submit(lambda controller, now_ms: controller.bootstrap())

    def _renounce(self, leader: LeaderAndEpoch) -> None:
        logger.info(
            "controller %d renounces: %d leads epoch %d",
            self.raft.node_id,
            leader.leader_id,
            leader.epoch,
        )
        self.active_epoch = None
        if self._fence_timer is not None:
            self._fence_timer.cancel()
            self._fence_timer = None
        self.controller = self._standby()  # what was appended and not committed is gone
        while self._pending:
            _, answer = self._pending.popleft()
            if not answer.done():
                answer.set_exception(NotControllerError("The active controller changed."))

    def _fence_stale(self) -> None:
        self._fence_timer = None
        if not self.is_active:
            return
        self.submit(lambda controller, now_ms: controller.fence_stale_broker(now_ms))
        loop = asyncio.get_running_loop()
        self._fence_timer = loop.call_later(FENCE_CHECK_INTERVAL_MS / 1000, self._fence_stale)

    # ------------------------------------------------------------------ deciding
    def submit(self, decide: Callable[[QuorumController, int], ControllerResult]) -> asyncio.Future:
        """Decide on the current image; a future of the response, set once the records are
        committed (at once if there are none). NOT_CONTROLLER if this node is not active."""
        answer: asyncio.Future = asyncio.get_running_loop().create_future()
        if not self.is_active:
            answer.set_exception(NotControllerError("This node is not the active controller."))
            return answer
        assert self.raft.log is not None
        controller = self.controller
        start = self.raft.log.end_offset
        controller.next_offset = start  # records are numbered as the log will number them
        result = decide(controller, self.raft.clock.milliseconds())
        if not result.records:
            answer.set_result(None)
            return _answered(answer, result.response)
        last = start + len(result.records) - 1
        self._pending.append((last, answer))  # a quorum of one commits inside append
        try:
            appended = self.raft.append([serialize(entry) for entry in result.records])
        except NotLeaderOrFollowerError:
            self._pending.pop()
            answer.set_exception(NotControllerError("This node is not the active controller."))
            return answer
        assert appended == last, f"appended up to {appended}, expected {last}"
        controller.next_offset = start
        controller.replay(result.records)
        return _answered(answer, result.response)


def _answered(committed: asyncio.Future, response: Any) -> asyncio.Future:
    """A future of `response`, set when `committed` is."""
    answer = asyncio.get_running_loop().create_future()

    def done(future: asyncio.Future) -> None:
        if answer.done():
            return
        if future.exception() is not None:
            answer.set_exception(future.exception())
        else:
            answer.set_result(response)

    committed.add_done_callback(done)
    return answer
