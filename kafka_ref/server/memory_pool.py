"""The memory pool: a budget for the bytes of requests the broker has read (KIP-72).

A broker holds a request's bytes from the moment it starts reading the frame until the
request is answered. Without a bound, memory grows with what clients send: a thousand
producers each sending a 1 MB batch at once cost a gigabyte, however slowly the log takes
them. Kafka bounds it with `queued.max.request.bytes` (KIP-72): the network layer takes
every request's buffer from a `MemoryPool` of that size, and when the pool is exhausted it
stops reading from the sockets - the bytes wait in the kernel's socket buffers and the
clients' TCP windows close, which is backpressure: nothing more is allocated, and senders
slow down instead of the broker running out of memory. When a request is answered its
memory goes back to the pool and reading resumes.

    frame size prefix read ──> try_allocate(size) ── yes ──> read the frame, queue it
                                      │                           │
                                      no                          v
                                      │                handled, answered: release(size)
                                      v                           │
                        pause reading; wait(processor) <── wake ──┘

Kafka's `SimpleMemoryPool` as the socket server uses it is *non-strict*: an allocation
succeeds whenever any memory is left, so the pool may dip below zero by up to one frame
(`socket.request.max.bytes`), and a frame larger than what is left still gets read instead
of waiting for ever; at most `queued.max.request.bytes + socket.request.max.bytes` bytes are
held. Because of that, Kafka requires the pool to be at least `socket.request.max.bytes`.

What the pool counts is the *announced* size of a frame, taken whole before its first byte
is stored; the buffer itself still grows only with the bytes that arrive (BROKER-51). A
connection that announces 100 MB and sends nothing therefore costs the pool 100 MB but the
process nothing, and it cannot hold part of the pool while waiting for the rest (two
half-read frames waiting for each other's memory would never finish). The default, -1,
is `UNBOUNDED` (Kafka: `MemoryPool.NONE`): nothing is counted and nothing waits.

Rules: BROKER-53, BROKER-54.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol


class MemoryWaiter(Protocol):
    """A connection that paused reading until the pool has memory again."""

    def memory_available(self) -> None: ...


class MemoryPool:
    """A non-strict pool of `size` bytes (Kafka: `SimpleMemoryPool`, strict=false)."""

    def __init__(self, size: int) -> None:
        if size <= 0:
            raise ValueError(f"a memory pool needs a positive size, not {size}")
        self.size = size
        self.available = size
        self._waiters: deque[MemoryWaiter] = deque()

    @property
    def used(self) -> int:
        return self.size - self.available

    @property
    def out_of_memory(self) -> bool:
        return self.available <= 0

    def try_allocate(self, nbytes: int) -> bool:
        """Take `nbytes` if any memory is left (non-strict); False: none is."""
        if self.available <= 0:
            return False
        self.available -= nbytes
        return True

    def release(self, nbytes: int) -> None:
        """Give memory back and wake the waiting connections, oldest first, while some is left."""
        self.available += nbytes
        while self._waiters and self.available > 0:
            self._waiters.popleft().memory_available()

    def wait(self, waiter: MemoryWaiter) -> None:
        """`waiter` found no memory: `memory_available` is called when some is released."""
        if waiter not in self._waiters:
            self._waiters.append(waiter)

    def forget(self, waiter: MemoryWaiter) -> None:
        """A closed connection waits for nothing."""
        if waiter in self._waiters:
            self._waiters.remove(waiter)

    @property
    def waiting(self) -> int:
        return len(self._waiters)


class UnboundedPool(MemoryPool):
    """No budget (`queued.max.request.bytes` <= 0, Kafka's default): every allocation succeeds."""

    def __init__(self) -> None:
        self.size = 0
        self.available = 0
        self._waiters = deque()

    @property
    def used(self) -> int:
        return 0

    @property
    def out_of_memory(self) -> bool:
        return False

    def try_allocate(self, nbytes: int) -> bool:
        return True

    def release(self, nbytes: int) -> None:
        pass


def memory_pool(queued_max_request_bytes: int) -> MemoryPool:
    """The pool for `queued.max.request.bytes`: bounded when positive, else unbounded."""
    if queued_max_request_bytes > 0:
        return MemoryPool(queued_max_request_bytes)
    return UnboundedPool()
