"""The fault campaign's parts on their own: the cuttable proxy, the liveness arithmetic and
the nemesis' schedule.

The proxy is tested with real sockets and a real second process as the caller, since what
it must get right is telling processes apart: a cut of one caller leaves the others
through, and the bytes sent across a cut arrive after it heals.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import threading

import pytest

from kafka_ref.conformance.liveness import WholeSampler, gaps, measure, stale_isr
from kafka_ref.conformance.nemesis import Fault, Nemesis
from kafka_ref.conformance.proxy import ANY, Proxy, socket_owner

pytestmark = pytest.mark.timeout(60)

# A caller in another process: connect to the port given, then echo-check lines forever.
CALLER = """
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("connected", flush=True)
for line in sys.stdin:
    s.sendall(line.encode())
    print(s.recv(100).decode().strip(), flush=True)
"""


def echo_server() -> socket.socket:
    server = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        while data := conn.recv(100):
            conn.sendall(data)

    def accept() -> None:
        while True:
            conn, _ = server.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server


def ask(conn: socket.socket, text: bytes, timeout: float) -> bytes | None:
    conn.settimeout(timeout)
    conn.sendall(text)
    try:
        return conn.recv(100)
    except TimeoutError:
        return None


@pytest.mark.spec("CHAOS-3")
def test_a_cut_stops_only_the_named_process_and_healing_delivers_what_was_held():
    upstream = echo_server()
    proxy = Proxy(upstream.getsockname()[1], identify=None)
    pids: dict[int, str] = {}
    proxy.identify = lambda peer, port: socket_owner(peer, port, pids)
    caller = subprocess.Popen(
        [sys.executable, "-c", CALLER, str(proxy.port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    pids[caller.pid] = "other"
    try:
        assert caller.stdout.readline().strip() == "connected"
        mine = socket.create_connection(("127.0.0.1", proxy.port))
        assert ask(mine, b"a", 5) == b"a"
        proxy.cut({"other"})
        assert ask(mine, b"b", 5) == b"b", "a cut of another process stopped this one"
        caller.stdin.write("held\n")
        caller.stdin.flush()
        readable, _, _ = select.select([caller.stdout], [], [], 1.5)
        assert not readable, "bytes crossed a cut link"
        proxy.heal({"other"})
        assert caller.stdout.readline().strip() == "held", "the held bytes did not flow on"
        proxy.cut({ANY})
        assert ask(mine, b"c", 1.0) is None, "a cut of every source let this process through"
        proxy.heal()
        assert mine.recv(100) == b"c"
    finally:
        caller.kill()
        proxy.close()


def test_socket_owner_names_the_process_holding_the_socket():
    server = socket.create_server(("127.0.0.1", 0))
    mine = socket.create_connection(("127.0.0.1", server.getsockname()[1]))
    peer_port = mine.getsockname()[1]
    assert socket_owner(peer_port, server.getsockname()[1], {os.getpid(): "me"}) == "me"
    assert socket_owner(peer_port, server.getsockname()[1], {1: "init"}) is None


@pytest.mark.spec("CHAOS-2")
def test_the_window_runs_from_whole_again_to_the_next_acknowledgement():
    sampler = WholeSampler(lambda: True, lambda: True, lambda: 0.0)
    # whole until 10, not whole 10-20 (a leader died), whole again from 20.0
    sampler.samples = [(t / 10, not 100 <= t < 200, True) for t in range(0, 400, 2)]
    acks = [1.0, 9.9, 18.0, 27.5, 30.0]  # 18.0: a partition with a leader, before whole
    fault = Fault(1, "kill", 1, 5.0, started=10.0, healed=15.0)
    late = Fault(2, "pause", 2, 5.0, started=31.0, healed=36.0)
    measure([fault, late], sampler, acks)
    assert fault.whole == pytest.approx(20.0)
    assert fault.next_ack == 27.5
    assert fault.window == pytest.approx(7.5)
    assert late.whole is not None and late.window is None  # no acknowledgement after it
    found = gaps(acks, sampler.samples, 0.0, 40.0)
    assert [g["seconds"] for g in found] == [10.0, 9.5, 8.9, 8.1, 2.5, 1.0]
    assert found[1]["from"] == 18.0
    assert found[1]["whole_seconds"] == pytest.approx(7.4)  # 20.0..27.4, sampled
    assert found[3]["whole_seconds"] == 0.0  # 9.9..18.0: not whole


class Cluster:
    """A stand-in target for the schedule alone: the nemesis' own logic, no processes."""

    def __init__(self) -> None:
        self.done: list[tuple[str, str, int]] = []

    def broker_ids(self) -> list[int]:
        return [1, 2, 3]

    def controller(self) -> int:
        return 2

    def leaders(self) -> list[int]:
        return [1, 2, 3]

    def start_fault(self, kind: str, broker: int) -> str:
        self.done.append(("start", kind, broker))
        return ""

    def stop_fault(self, kind: str, broker: int) -> str:
        self.done.append(("stop", kind, broker))
        return ""


def test_a_seed_fixes_the_schedule_and_every_fault_is_healed(monkeypatch):
    def schedule(seed: int) -> list[tuple[str, float]]:
        nemesis = Nemesis(Cluster(), seed, now=lambda: 0.0)
        monkeypatch.setattr(nemesis.stop, "wait", lambda _seconds: False)  # no real sleeping
        return [(f.kind, f.planned_s) for f in nemesis.run(faults=20)]

    assert schedule(7) == schedule(7)
    assert schedule(7) != schedule(8)
    target = Cluster()
    nemesis = Nemesis(target, 3, now=lambda: 0.0)
    monkeypatch.setattr(nemesis.stop, "wait", lambda s: False)
    log = nemesis.run(faults=10)
    assert [d[0] for d in target.done] == ["start", "stop"] * 10
    assert all(f.healed is not None for f in log)
    assert len({f.kind for f in log}) >= 3


@pytest.mark.spec("CHAOS-2")
def test_stale_isr_measures_how_long_an_isr_names_a_dead_broker():
    dead = [
        (0.0, frozenset()),
        (1.0, frozenset({(0, 3)})),
        (2.0, frozenset({(0, 3), (1, 3)})),
        (9.0, frozenset({(1, 3)})),
        (12.0, frozenset()),
    ]
    found = stale_isr(dead)
    assert found == [
        {"partition": 1, "broker": 3, "from": 2.0, "seconds": 10.0},
        {"partition": 0, "broker": 3, "from": 1.0, "seconds": 8.0},
    ]
    assert stale_isr([(0.0, frozenset({(2, 1)})), (4.0, frozenset({(2, 1)}))])[0]["seconds"] == 4.0
