"""Share sessions: what a share consumer fetches from one broker, kept between its requests.

A share consumer sends ShareFetch to each broker that leads partitions it is assigned, over
and over. Naming every partition every time would be wasteful, so, as a consumer's fetch
session does (KIP-227), a **share session** remembers them (Kafka `ShareSessionCache`,
`ShareSession`). It is keyed by (group id, member id) and stepped by the request's
`ShareSessionEpoch`:

* **0** opens a session (replacing one the member had: what it held is released), with the
  partitions the request names;
* **n > 0** continues it: n must be the epoch the broker expects (else
  INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND when there is no session), the request
  adds the partitions it names and drops its `ForgottenTopicsData`, and the broker then
  expects n + 1 (after 2^31 - 1 comes 1 again);
* **-1** closes it: the request may still acknowledge, but fetches nothing, and the records
  the member holds on those partitions are released at once.

ShareAcknowledge steps the same epoch but cannot open a session (epoch 0 is
INVALID_SHARE_SESSION_EPOCH). A broker keeps at most `group.share.max.share.sessions`
sessions; opening one more is SHARE_SESSION_LIMIT_REACHED. A session also ends with its
member's departure from the group, and with the connection it was opened on: a consumer
killed without a word cannot send epoch -1, so when the socket server closes a connection
(`SocketServer.disconnect_listeners`, Kafka's `ConnectionDisconnectListener`) the sessions
opened on it are removed (`remove_connection`) and their records released at once, rather
than when their locks expire.

Rules: SHARE-13 .. SHARE-16, SHARE-25.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafka_ref.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1

TopicIdPartition = tuple[uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch` (Kafka `ShareRequestMetadata.nextEpoch`): 1 after the last."""
    return 1 if epoch in (MAX_EPOCH, FINAL_EPOCH) else epoch + 1


@dataclass
class ShareSession:
    """One member's session on this broker: the partitions it fetches and the next epoch."""

    group_id: str
    member_id: str
    connection_id: str | None  # the connection it was opened on
    epoch: int = 1  # the epoch the next request must carry
    partitions: set[TopicIdPartition] = field(default_factory=set)

    def update(self, added: set[TopicIdPartition], forgotten: set[TopicIdPartition]) -> None:
        self.partitions |= added
        self.partitions -= forgotten


class ShareSessionCache:
    """The broker's share sessions (Kafka `ShareSessionCache`)."""

    def __init__(self, max_sessions: int) -> None:
        assert max_sessions >= 0, max_sessions
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        # the sessions opened on each connection, to end them when it closes (Kafka
        # `connectionIdToSessionMap`)
        self.by_connection: dict[str, set[tuple[str, str]]] = {}

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    def open(
        self, group_id: str, member_id: str, connection_id: str | None
    ) -> tuple[ShareSession | None, ShareSession | None, ErrorCode]:
        """Epoch 0: (new session, the one it replaced, error). The replaced session's
        records must be released by the caller."""
        replaced = self._pop(group_id, member_id)
        if len(self.sessions) >= self.max_sessions:  # a replaced session is gone all the same
            return None, replaced, ErrorCode.SHARE_SESSION_LIMIT_REACHED
        session = ShareSession(group_id, member_id, connection_id)
        self.sessions[(group_id, member_id)] = session
        if connection_id is not None:
            self.by_connection.setdefault(connection_id, set()).add((group_id, member_id))
        return session, replaced, ErrorCode.NO_ERROR

    def step(
        self, group_id: str, member_id: str, epoch: int
    ) -> tuple[ShareSession | None, ErrorCode]:
        """Epoch n > 0 or -1: the session it continues (removed from the cache if -1), or
        SHARE_SESSION_NOT_FOUND / INVALID_SHARE_SESSION_EPOCH."""
        assert epoch != INITIAL_EPOCH, "epoch 0 opens (open)"
        session = self.sessions.get((group_id, member_id))
        if session is None:
            return None, ErrorCode.SHARE_SESSION_NOT_FOUND
        if epoch == FINAL_EPOCH:
            self._pop(group_id, member_id)
            return session, ErrorCode.NO_ERROR
        if epoch != session.epoch:
            return None, ErrorCode.INVALID_SHARE_SESSION_EPOCH
        session.epoch = next_epoch(epoch)
        return session, ErrorCode.NO_ERROR

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        """The member left its group: its session goes."""
        return self._pop(group_id, member_id)

    def remove_connection(self, connection_id: str) -> list[ShareSession]:
        """The connection closed: the sessions opened on it go (Kafka
        `ClientConnectionDisconnectListener.onDisconnect`). A session its member has opened
        again on another connection since is not this connection's any more."""
        removed = []
        for key in sorted(self.by_connection.get(connection_id, ())):
            session = self._pop(*key)
            assert session is not None and session.connection_id == connection_id, session
            removed.append(session)
        assert connection_id not in self.by_connection, connection_id
        return removed

    def _pop(self, group_id: str, member_id: str) -> ShareSession | None:
        """Remove a session from the cache and from its connection's sessions."""
        session = self.sessions.pop((group_id, member_id), None)
        if session is not None and session.connection_id is not None:
            keys = self.by_connection[session.connection_id]
            keys.discard((group_id, member_id))
            if not keys:
                del self.by_connection[session.connection_id]
        return session
