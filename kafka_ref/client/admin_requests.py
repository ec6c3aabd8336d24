"""Where the admin client sends each request, and how it reads the errors it gets back.

Every admin operation is one request or a few (KIP-4); what differs is the broker that can
answer it. Kafka's `KafkaAdminClient` names that choice a `NodeProvider` (the controller,
any broker, a given broker) or, for groups and transactions, a `CoordinatorStrategy`.
`AdminRequests` offers the same routes, each as one call that sends and waits:

* `send(None, ...)`: any broker (the least loaded);
* `send(node, ...)`: that broker;
* `to_controller`: the controller, Metadata's `controller_id`; after NOT_CONTROLLER the
  metadata is refreshed and the request sent once more (the controller moved);
* `to_coordinator`: the coordinator of a group or of a transactional id, found with
  FindCoordinator; after NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
  COORDINATOR_LOAD_IN_PROGRESS it is found again, until `request.timeout.ms`.

Each of the admin client's areas (admin_groups.py, admin_acls.py, ...) is an object
constructed with the routes it uses, and `check` turns an error code into the
`KafkaError` every operation raises, naming what failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka_ref.client.cluster_view import Cluster, Metadata, Node, error_code
from kafka_ref.client.network_client import NetworkClient, now_ms
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import FindCoordinatorRequest

RETRY_COORDINATOR = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)

ErrorOf = Callable[[Any], ErrorCode]  # a response's error that decides a retry
SendToAny = Callable[[ApiKey, Any], Any]  # a request to any broker -> its response


def check(what: str, code: int, message: str | None = None) -> None:
    """Raise `KafkaError` for an error code: `what` failed, with the broker's message."""
    error = error_code(code)
    if error != ErrorCode.NO_ERROR:
        raise KafkaError(f"{what}: {message or error.name}", code=error)


class AdminRequests:
    """The admin client's routes to the brokers, over one `NetworkClient`."""

    def __init__(self, client: NetworkClient, metadata: Metadata, timeout_ms: int) -> None:
        self.client = client
        self.metadata = metadata
        self.timeout_ms = timeout_ms  # request.timeout.ms, for every call

    def cluster(self, refresh: bool = False) -> Cluster:
        """The cluster as the last Metadata answer has it; a new one first if asked, or if
        only the bootstrap servers are known yet."""
        if refresh or self.metadata.fetch().is_bootstrap:
            self.client.await_metadata(self.timeout_ms)
        return self.metadata.fetch()

    def send(self, node: int | None, api_key: ApiKey, body: Any) -> Any:
        """To broker `node`, or to any broker (None); the response."""
        return self.client.send_and_wait(node, api_key, body, self.timeout_ms)

    def send_to_any(self, api_key: ApiKey, body: Any) -> Any:
        """To any broker: for what every broker can answer (ACLs, quotas, SCRAM users)."""
        return self.send(None, api_key, body)

    def to_controller(self, api_key: ApiKey, body: Any, error_of: ErrorOf) -> Any:
        """To the controller; if `error_of(response)` is NOT_CONTROLLER, it moved: refresh
        the metadata and send once more."""
        for attempt in range(2):
            controller = self.cluster(refresh=attempt > 0).controller_id
            response = self.send(controller if controller >= 0 else None, api_key, body)
            if error_of(response) != ErrorCode.NOT_CONTROLLER:
                break
        return response

    def find_coordinator(self, key: str, key_type: int = 0) -> Node:
        """The coordinator of a group (key type 0) or a transactional id (1), by
        FindCoordinator to any broker, retried while it is not available yet (e.g. while
        __consumer_offsets is created)."""
        deadline = now_ms() + self.timeout_ms
        while True:
            self.cluster()
            response = self.client.send_and_wait(
                None,
                ApiKey.FIND_COORDINATOR,
                FindCoordinatorRequest(key=key, key_type=key_type),
                max(deadline - now_ms(), 1),
            )
            code = error_code(response.error_code)
            if code == ErrorCode.NO_ERROR:
                node = Node(response.node_id, response.host, response.port)
                if self.metadata.fetch().node(node.node_id) != node:
                    self.client.add_node(node)
                return node
            if not code.retriable or now_ms() >= deadline:
                what = "transactional id" if key_type else "group"
                raise KafkaError(f"find the coordinator of {what} {key}", code=code)
            self.client.poll(min(100, max(deadline - now_ms(), 0)))

    def to_coordinator(
        self, key: str, api_key: ApiKey, body: Any, error_of: ErrorOf, key_type: int = 0
    ) -> tuple[Node, Any]:
        """To the coordinator of `key`; found again while `error_of(response)` says it
        moves or loads. The coordinator and its response."""
        deadline = now_ms() + self.timeout_ms
        while True:
            node = self.find_coordinator(key, key_type)
            response = self.client.send_and_wait(
                node.node_id, api_key, body, max(deadline - now_ms(), 1)
            )
            code = error_of(response)
            if code not in RETRY_COORDINATOR or now_ms() >= deadline:
                return node, response
            self.client.poll(min(100, max(deadline - now_ms(), 0)))
