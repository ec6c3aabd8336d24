"""Running a broker: as the process `kafka-ref broker`, or on a thread of another program.

`serve` is the process's life (Kafka: `Kafka.main` -> `KafkaServer.startup`, a shutdown hook):
raise the open-files limit, start a `Broker` (broker.py), run until SIGTERM or SIGINT, or
until every log directory has failed, then shut down cleanly. A KRaft node's roles decide
what runs (Kafka: `KafkaRaftServer`): `process.roles=controller`, a voter alone
(controller_node.py); `broker,controller`, the controller first, then a broker on the
controller's own quorum client (combined mode); `broker`, a broker on an observer of the
quorum. At shutdown the broker goes first, with its controlled shutdown, while its
controller still answers. `BrokerThread` runs a broker
on its own event loop in a daemon thread, for tests, the labs' graders and programs that
embed one (the Spark bench).

Rules: BROKER-60, DUR-16.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import signal
import threading
from collections.abc import Callable

from kafka_ref.clock import Clock
from kafka_ref.server.broker import Broker
from kafka_ref.server.controller_node import (
    controller_server,
    is_controller_only,
    observer_raft,
    serve_controller,
)
from kafka_ref.server.kafka_config import KafkaConfig

logger = logging.getLogger("kafka_ref.server.broker")


def raise_descriptor_limit() -> int:
    """Raise this process's soft limit of open files to its hard limit (BROKER-60); returns
    the limit now in force.

    A broker holds a descriptor per partition (its active segment's `.log`; the index maps
    hold none, INDEX-8) and per connection. The usual soft limit is 1,024 while the hard
    one is far higher: with the soft one, a broker fails with EMFILE near a thousand
    partitions. Kafka's JVM raises it the same way at start (HotSpot's `MaxFDLimit`, on by
    default); a process may raise its soft limit up to its hard one without privileges."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard and soft != resource.RLIM_INFINITY:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as err:  # e.g. a hard limit above what the OS allows
            logger.warning("cannot raise the open files limit from %d to %d: %s", soft, hard, err)
    logger.info("open files limit: %s", "unlimited" if soft == resource.RLIM_INFINITY else soft)
    return soft


async def serve(config: KafkaConfig) -> int:
    """Run a broker until SIGTERM or SIGINT, then shut it down cleanly; 0, or 1 when it
    stopped because every log dir failed (DUR-16)."""
    raise_descriptor_limit()
    if is_controller_only(config):  # process.roles=controller: a voter of the quorum alone
        return await serve_controller(config)
    # A stop signal during the start (a KRaft broker listens before it is unfenced) is kept
    # and acted on once started, so the node still shuts down cleanly.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    controller, raft = None, None
    if "controller" in config.roles:  # combined mode: the broker rides the controller's quorum
        controller = controller_server(config)
        await controller.bind()
        await controller.start()
        raft = controller.raft
    elif config.roles:  # process.roles=broker: an observer of the quorum (KBROKER-17)
        raft = observer_raft(config)
        raft.start()
    broker = Broker(config, raft=raft)
    try:
        await broker.start()
    except BaseException:
        await _stop_quorum(controller, raft)
        raise
    waits = [loop.create_task(stop.wait()), loop.create_task(broker.all_log_dirs_failed.wait())]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if stop.is_set():
            logger.info("received a stop signal")
    finally:
        for wait in waits:
            wait.cancel()
        await broker.stop()
        await _stop_quorum(controller, raft)
    return 1 if broker.all_log_dirs_failed.is_set() else 0


async def _stop_quorum(controller, raft) -> None:
    """The node's part of the quorum goes last: its controller, or its observer."""
    if controller is not None:
        await controller.stop()
    elif raft is not None:
        await raft.shutdown()


class BrokerThread:
    """A broker on its own event loop in a daemon thread (tests, embedding)."""

    def __init__(self, config: KafkaConfig, clock: Clock | None = None) -> None:
        self.broker = Broker(config, clock)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="broker", daemon=True)

    def start(self, timeout: float = 30.0) -> BrokerThread:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.broker.start(), self.loop).result(timeout)
        return self

    @property
    def port(self) -> int:
        return self.broker.port

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def call(self, fn: Callable[[], object], timeout: float = 30.0) -> object:
        """Run `fn` on the broker's loop (the broker is not thread-safe) and return its result."""

        async def run() -> object:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.broker.stop(), self.loop).result(timeout)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
        self.loop.close()

    def __enter__(self) -> BrokerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
