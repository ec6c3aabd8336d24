"""A simulated run told step by step: what a student reads to explain a lost write.

The cluster simulator (kafka_ref/sim) is deterministic: the same seed and the same calls
give the same run, event for event. So an analysis that found an acknowledged write lost
in some run plays that seed again with a `TracedCluster`, which keeps, with every event of
the run that matters to replication, what each replica held at that moment:

    with TracedCluster(brokers=3, seed=8, truncation="high-watermark",
                       follow=(b"w17", 12)) as cluster:
        ...the same calls as the first time...
    print(history_table(cluster.steps, brokers=3))

The events are the faults (a broker killed, stopped cleanly, started, cut off; the network
healed), the controller's decisions (a broker's session expired, a new leader in a new
epoch, an unclean election), a leader's ISR changes, every follower truncation with what
decided it (the HW rule, an OffsetsForLeaderEpoch answer, a diverging epoch), and the
followed write sent and acknowledged. Each replica is shown as its role and the epoch it
knows, its log end offset (LEO), its high watermark (HW), and whether its log holds the
followed write at the write's offset.

Rules: LAB-4 (spec/labs.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka_ref.sim import SimCluster
from kafka_ref.sim.cluster import CLIENT
from kafka_ref.tools.lab_analysis import markdown_table


@dataclass(frozen=True)
class Step:
    """One event of a run and each replica's state just after it: `replicas` in words,
    `holds` whether each replica's log holds the followed write (None: down), and
    `elected` the leader the controller chose, if the event is an election."""

    ms: int
    event: str
    replicas: tuple[str, ...]
    holds: tuple[bool | None, ...] = ()
    elected: int | None = None


class TracedCluster(SimCluster):
    """A `SimCluster` that keeps its history as `steps` (see the module docstring).

    `follow`: (value, offset) of the write to watch; each replica says whether it holds
    that value at that offset."""

    def __init__(self, *args: Any, follow: tuple[bytes, int] | None = None, **kwargs: Any):
        self.follow = follow
        self.steps: list[Step] = []
        super().__init__(*args, **kwargs)

    def record(self, what: str, *args: Any) -> None:
        super().record(what, *args)
        event = self._event(what, args)
        if event is None:
            return
        holds = tuple(map(self.holds, self.brokers))
        replicas = tuple(self.replica_state(b, holds[b]) for b in self.brokers)
        elected = args[0].leader if what == "state" else None
        self.steps.append(Step(self.now, event, replicas, holds, elected))

    def holds(self, broker_id: int) -> bool | None:
        """Does the replica's log hold the followed write at its offset? None: down."""
        if self.partition(broker_id) is None or not self.brokers[broker_id].alive:
            return None
        if self.follow is None:
            return False
        value, offset = self.follow
        return any(r.offset == offset and r.value == value for r in self.records(broker_id))

    def replica_state(self, broker_id: int, holds: bool | None) -> str:
        """`leader (epoch 3), LEO 32, HW 30, has w17`, or `down`."""
        p = self.partition(broker_id)
        if holds is None or p is None:
            return "down"
        role = "leader" if p.is_leader else "follower"
        if self.network.is_cut(broker_id, CLIENT):
            role += ", cut off"
        text = f"{role} (epoch {p.leader_epoch}), LEO {p.log_end_offset}, HW {p.high_watermark}"
        if self.follow is not None:
            text += f", {'has' if holds else 'lacks'} {self.follow[0].decode()}"
        return text

    def _event(self, what: str, args: tuple) -> str | None:
        """The event in words, or None for one left out (other writes, brokers applying
        the controller's state, which the truncations that follow show)."""
        followed = self.follow is not None and args and args[0] == self.follow[0]
        if what == "produce":
            acks = "acks=all" if args[1] == "acks=-1" else args[1]
            return f"{args[0].decode()} sent to broker {args[3]} ({acks})" if followed else None
        if what == "ack":
            return f"{args[0].decode()} acknowledged ({args[1]})" if followed else None
        if what == "error":
            return f"{args[0].decode()} refused: {args[1]}" if followed else None
        if what == "crash":
            power = f": power loss, {args[1]}" if args[1] else " (kill -9)"
            return f"broker {args[0]} dies{power}"
        if what == "truncate":
            return f"broker {args[0]} truncates its log {args[1]} {args[2]}"
        if what in ("state", "isr"):
            state = args[0]
            isr = list(state.isr)
            if what == "isr":
                return f"leader {state.leader} changes the ISR to {isr} (AlterIsr)"
            if state.leader is None:
                return (
                    f"controller: no leader can be elected (epoch {state.leader_epoch}), ISR {isr}"
                )
            return f"controller: broker {state.leader} leads epoch {state.leader_epoch}, ISR {isr}"
        words = {
            "stop": "broker {} stops cleanly (flush, HW checkpoint)",
            "start": "broker {} starts: recovers its log, HW from its last checkpoint",
            "isolate": "broker {} is cut off from the other brokers and the client",
            "heal": "the network heals",
            "session expired": "controller: broker {}'s session expired",
            "unclean election": "unclean election: broker {} leads though not in the ISR",
        }
        return words[what].format(*args) if what in words else None


def until_lost(steps: list[Step], value: bytes) -> tuple[list[Step], int]:
    """The steps up to the election that lost the followed write: the first controller
    decision, after the write's acknowledgement, for a leader whose log lacks it. Returns
    those steps and how many came after."""
    acked = False
    for i, step in enumerate(steps):
        acked = acked or step.event.startswith(f"{value.decode()} acknowledged")
        if acked and step.elected is not None and not step.holds[step.elected]:
            return steps[: i + 1], len(steps) - i - 1
    return steps, 0


def history_table(steps: list[Step], brokers: int) -> str:
    """The steps as a Markdown table: time, event, then one column per broker."""
    header = ["ms", "event", *(f"broker {b}" for b in range(brokers))]
    return markdown_table(header, [[s.ms, s.event, *s.replicas] for s in steps])
