"""Lab 11 grader: the share-partition's acknowledgement, lock timeout and start offset rules
(SHARE-2, SHARE-4..SHARE-7, SHARE-12).

First your three functions alone, on cases worked out by hand for each rule: who may
acknowledge a record and what each acknowledgement type does to it, where the delivery
limit archives, when a lock expires, what RENEW keeps, where the start offset (SPSO) stops.

Then your functions inside kafka-ref's real `SharePartition` (kafka_ref/share/share_partition.py),
on histories hypothesis draws: three members fetch from a log with holes (compacted
offsets) and aborted batches, acknowledge with every type (their own records mostly,
sometimes others'), let the clock run, let the lock timer run, and leave. A model that knows
only what the share-partition answered and what the rules say watches every step: no
record is handed to a member while another holds it under a lock that has not expired
(SHARE-2, SHARE-6); an acknowledgement is applied exactly when its member holds every
record it names, and a record accepted or rejected is never delivered again (SHARE-4); a
record's delivery count counts its acquisitions, and a record given back after its last
delivery is archived (SHARE-5); the SPSO passes every done record and no other (SHARE-7).
Each failure names the history's step that broke the rule, and hypothesis shrinks the
history first: the counter-example is short.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock
from kafka_ref.errors import ErrorCode
from kafka_ref.share import share_partition
from kafka_ref.share.persister import RecordState, ShareState
from kafka_ref.share.share_partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquireMode,
    FetchedBatch,
    InFlightState,
    SharePartition,
    SharePartitionConfig,
)

AVAILABLE, ACQUIRED = RecordState.AVAILABLE, RecordState.ACQUIRED
ACKNOWLEDGED, ARCHIVED = RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
GAP, ACCEPT, RELEASE = AcknowledgeType.GAP, AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE
REJECT, RENEW = AcknowledgeType.REJECT, AcknowledgeType.RENEW
OK, REFUSED = ErrorCode.NO_ERROR, ErrorCode.INVALID_RECORD_STATE
LIMIT = 3  # group.share.delivery.count.limit in the cases by hand and the SHARE-5 property

# ------------------------------------------------------------------------ by hand


def held(by: str = "m1", count: int = 1, until: int = 5_000) -> InFlightState:
    """A record ACQUIRED by `by`, delivered `count` times, locked until `until` ms."""
    return InFlightState(ACQUIRED, count, by, until)


def settled(state: RecordState, count: int = 1) -> InFlightState:
    """A record nobody holds: AVAILABLE again, or done."""
    return InFlightState(state, count)


def describe(record: InFlightState) -> str:
    times = f"delivered {record.delivery_count} time{'s' * (record.delivery_count != 1)}"
    if record.state is ACQUIRED:
        lock = f"locked until {record.lock_deadline_ms} ms"
        return f"a record ACQUIRED by {record.member_id} ({times}, {lock})"
    return f"a record {record.state.name} ({times})"


def name(value: object, kind: type) -> str:
    """An enum member's name, or the value itself if it is none of the enum's."""
    try:
        return kind(value).name
    except (ValueError, TypeError):
        return repr(value)


def check_ack(record, member, ack, limit, error, state=None, count=None, renew=False):
    got = share_partition.acknowledge_record(record, member, ack, limit)
    where = f"{describe(record)}; {member} sends {ack.name} (delivery limit {limit})"
    if error != OK:
        assert got.error == error, (
            f"{where}: refuse it with {error.name}, got {name(got.error, ErrorCode)}"
        )
        return
    wanted = f"NO_ERROR, {state.name}, delivery count {count}"
    wanted += ", renew_lock=True" if renew else ""
    assert got.error == OK, f"{where}: {wanted}; got {name(got.error, ErrorCode)}"
    assert got.state == state, f"{where}: {wanted}; got state {name(got.state, RecordState)}"
    assert got.delivery_count == count, f"{where}: {wanted}; got count {got.delivery_count}"
    if state is ACQUIRED:
        assert got.renew_lock is renew, f"{where}: {wanted}; got renew_lock={got.renew_lock!r}"


def applied(record, member, ack, state, count, why):
    return pytest.param(record, member, ack, OK, state, count, id=why)


def refused(record, member, ack, why):
    return pytest.param(record, member, ack, REFUSED, None, None, id=why)


ACKNOWLEDGEMENTS = [
    applied(held(), "m1", ACCEPT, ACKNOWLEDGED, 1, "the holder ACCEPTs: ACKNOWLEDGED"),
    applied(held(), "m1", REJECT, ARCHIVED, 1, "the holder REJECTs: ARCHIVED"),
    applied(held(), "m1", GAP, ARCHIVED, 1, "the holder says GAP: ARCHIVED"),
    applied(held(count=2), "m1", REJECT, ARCHIVED, 2, "REJECT at count 2: ARCHIVED"),
    applied(held(count=2), "m1", ACCEPT, ACKNOWLEDGED, 2, "ACCEPT at count 2: ACKNOWLEDGED"),
    applied(held(), "m1", RELEASE, AVAILABLE, 1, "the holder RELEASEs: AVAILABLE"),
    refused(held("m2"), "m1", ACCEPT, "m2 holds it, m1 ACCEPTs: refused"),
    refused(held("m2"), "m1", RELEASE, "m2 holds it, m1 RELEASEs: refused"),
    refused(held("m2"), "m1", REJECT, "m2 holds it, m1 REJECTs: refused"),
    refused(settled(AVAILABLE), "m1", ACCEPT, "AVAILABLE, ACCEPT: refused"),
    refused(settled(ACKNOWLEDGED), "m1", ACCEPT, "ACCEPTed already, ACCEPT: refused"),
    refused(settled(ACKNOWLEDGED), "m1", REJECT, "ACCEPTed already, REJECT: refused"),
    refused(settled(ARCHIVED), "m1", RELEASE, "ARCHIVED, RELEASE: refused"),
    refused(settled(AVAILABLE, 2), "m1", GAP, "AVAILABLE, GAP: refused"),
]


@pytest.mark.spec("SHARE-4")
@pytest.mark.parametrize(("record", "member", "ack", "error", "state", "count"), ACKNOWLEDGEMENTS)
def test_acknowledgements_on_cases_worked_by_hand(record, member, ack, error, state, count):
    check_ack(record, member, ack, LIMIT, error, state, count)


LIMITS = [
    pytest.param(1, 3, AVAILABLE, id="released after 1 delivery of 3: AVAILABLE"),
    pytest.param(2, 3, AVAILABLE, id="released after 2 deliveries of 3: AVAILABLE"),
    pytest.param(3, 3, ARCHIVED, id="released after 3 deliveries of 3: ARCHIVED"),
    pytest.param(4, 5, AVAILABLE, id="released after 4 deliveries of 5: AVAILABLE"),
    pytest.param(5, 5, ARCHIVED, id="released after 5 deliveries of 5: ARCHIVED"),
    pytest.param(1, 2, AVAILABLE, id="released after 1 delivery of 2: AVAILABLE"),
    pytest.param(2, 2, ARCHIVED, id="released after 2 deliveries of 2: ARCHIVED"),
]


@pytest.mark.spec("SHARE-5")
@pytest.mark.parametrize(("count", "limit", "state"), LIMITS)
def test_the_delivery_limit_on_cases_worked_by_hand(count, limit, state):
    """The holder's RELEASE, and the lock timer at the deadline, give the record back: the
    same state either way, and the delivery count as it was."""
    check_ack(held(count=count), "m1", RELEASE, limit, OK, state, count)
    record = held(count=count, until=2_000)
    got = share_partition.release_on_lock_timeout(record, 2_000, limit)
    assert got == state, (
        f"{describe(record)}; the lock timer runs at 2000 ms (delivery limit {limit}): "
        f"{state.name}, got {name(got, RecordState)}"
    )


LOCK_TIMEOUTS = [
    pytest.param(1_000, 999, ACQUIRED, id="1 ms before the deadline: still ACQUIRED"),
    pytest.param(1_000, 0, ACQUIRED, id="long before the deadline: still ACQUIRED"),
    pytest.param(1_000, 1_000, AVAILABLE, id="at the deadline: AVAILABLE"),
    pytest.param(1_000, 7_500, AVAILABLE, id="well past the deadline: AVAILABLE"),
    pytest.param(30_000, 29_999, ACQUIRED, id="a 30 s lock, 1 ms before: still ACQUIRED"),
]


@pytest.mark.spec("SHARE-6")
@pytest.mark.parametrize(("deadline", "now", "state"), LOCK_TIMEOUTS)
def test_lock_timeouts_on_cases_worked_by_hand(deadline, now, state):
    record = held(count=1, until=deadline)
    got = share_partition.release_on_lock_timeout(record, now, LIMIT)
    assert got == state, (
        f"{describe(record)}; the lock timer runs at {now} ms (delivery limit {LIMIT}): "
        f"{state.name}, got {name(got, RecordState)}: a lock holds until its deadline, and "
        f"at the deadline the record is released"
    )


RENEWALS = [
    pytest.param(held(count=1), "m1", OK, 1, id="the holder RENEWs: ACQUIRED, lock again"),
    pytest.param(held(count=2), "m1", OK, 2, id="RENEW at count 2: the count stays 2"),
    pytest.param(held(count=3), "m1", OK, 3, id="RENEW at the limit: ACQUIRED, not archived"),
    pytest.param(held("m2"), "m1", REFUSED, None, id="m2 holds it, m1 RENEWs: refused"),
    pytest.param(settled(AVAILABLE), "m1", REFUSED, None, id="AVAILABLE, RENEW: refused"),
]


@pytest.mark.spec("SHARE-12")
@pytest.mark.parametrize(("record", "member", "error", "count"), RENEWALS)
def test_renew_on_cases_worked_by_hand(record, member, error, count):
    check_ack(record, member, RENEW, LIMIT, error, ACQUIRED, count, renew=True)


STARTS = [
    pytest.param(0, 5, {0: ACKNOWLEDGED, 1: ARCHIVED, 2: ACQUIRED, 3: ACKNOWLEDGED}, 2, id="2"),
    pytest.param(0, 3, {0: ACQUIRED, 1: ACKNOWLEDGED, 2: ACKNOWLEDGED}, 0, id="held first: 0"),
    pytest.param(0, 3, {0: AVAILABLE, 1: ACKNOWLEDGED}, 0, id="AVAILABLE first: stays"),
    pytest.param(4, 8, {4: ARCHIVED, 5: ARCHIVED, 6: AVAILABLE}, 6, id="over ARCHIVED: 6"),
    pytest.param(0, 4, {0: ACKNOWLEDGED, 1: ARCHIVED, 2: ARCHIVED, 3: ACKNOWLEDGED}, 4, id="4"),
    pytest.param(0, 6, {0: ACKNOWLEDGED, 2: ARCHIVED, 3: ACQUIRED}, 3, id="over a gap: 3"),
    pytest.param(0, 6, {2: AVAILABLE}, 2, id="a gap first, then AVAILABLE: 2"),
    pytest.param(3, 7, {}, 7, id="no record at all: the SPEO"),
    pytest.param(5, 5, {}, 5, id="nothing in flight: stays"),
    pytest.param(10, 20, {10: ARCHIVED, 12: ACKNOWLEDGED, 13: ACQUIRED, 15: ARCHIVED}, 13, id="13"),
]


def states_text(states: dict[int, RecordState]) -> str:
    return ", ".join(f"{o} {s.name}" for o, s in sorted(states.items())) or "none"


@pytest.mark.spec("SHARE-7")
@pytest.mark.parametrize(("start", "end", "states", "expected"), STARTS)
def test_the_start_offset_on_cases_worked_by_hand(start, end, states, expected):
    got = share_partition.next_start_offset(start, end, states)
    assert got == expected, (
        f"SPSO {start}, SPEO {end}, in-flight records {states_text(states)} (every other "
        f"offset between them holds no record): the SPSO moves to {expected}, got {got}"
    )


# ------------------------------------------------------------------------ properties

LOCK_MS = 1_000
MEMBERS = ("m1", "m2", "m3")
HIGH_LIMIT = 100  # where a test is not about the limit, it is never reached


@st.composite
def logs(draw) -> list[FetchedBatch]:
    """Batches over offsets 0..~40, some offsets missing (compacted away), a few single
    records aborted (archived when read, never delivered)."""
    out, offset = [], 0
    for _ in range(draw(st.integers(3, 10))):
        offset += draw(st.sampled_from([0, 0, 0, 1, 2]))  # a hole before the batch
        size = draw(st.integers(1, 4))
        out.append(FetchedBatch(offset, offset + size - 1, draw(st.booleans()) and size == 1))
        offset += size
    return out


OPS = st.one_of(
    st.tuples(st.just("fetch"), st.sampled_from(MEMBERS), st.integers(1, 6), st.booleans()),
    st.tuples(
        st.just("ack"),
        st.sampled_from(MEMBERS),
        st.integers(0, 40),  # which held record (mostly its own), or an offset
        st.integers(0, 3),  # how many offsets after it
        st.sampled_from(list(AcknowledgeType)),
    ),
    st.tuples(st.just("wait"), st.integers(0, LOCK_MS)),
    st.tuples(st.just("timer")),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
)
HISTORIES = st.lists(OPS, min_size=10, max_size=60)


class Model:
    """What the rules say of each record, from what the share-partition answered: who holds
    it until when, its delivery count, what made it done."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.holder: dict[int, tuple[str, int]] = {}  # offset -> (member, lock deadline)
        self.count: dict[int, int] = {}
        self.done: dict[int, str] = {}  # offset -> how it became done
        self.renewed: dict[int, int] = {}  # offset -> when its lock was last renewed

    def give_back(self, offset: int, why: str) -> str:
        """The record is released (RELEASE, timeout, leave): the state it must be in."""
        self.holder.pop(offset, None)
        self.renewed.pop(offset, None)
        if self.count[offset] >= self.limit:
            self.done[offset] = f"archived: {why} after its {self.count[offset]}th delivery"
            return "ARCHIVED"
        return "AVAILABLE"


class WatchedSharePartition(SharePartition):
    """kafka-ref's SharePartition, its SPSO checked after every move against the rule itself
    (SHARE-7), on the states it held just before: what your other functions made of the
    records is not this check's business."""

    def _advance_start(self) -> None:
        before = (self.start_offset, self.end_offset)
        states = {o: (r.state, r.member_id) for o, r in self.records.items()}
        super()._advance_start()
        story = getattr(self, "history", None)
        if story is not None:
            story.check_start(*before, states)


def spso_by_the_rule(start: int, end: int, states: dict) -> int:
    """SHARE-7: over done records and offsets without one, up to the first record that is
    AVAILABLE or ACQUIRED, or the SPEO."""
    while start < end and states.get(start, (ARCHIVED, None))[0] in (ACKNOWLEDGED, ARCHIVED):
        start += 1
    return start


class History:
    """One drawn history played on a real SharePartition with your functions, watched for
    the rules in `rules`. `follow_locks`: the model takes the share-partition's word for
    which locks expired (a test not about locks); else it expects the rule's."""

    def __init__(self, log, rules: set[str], limit: int, follow_locks: bool) -> None:
        self.log, self.rules, self.follow_locks = log, rules, follow_locks
        self.clock = ManualClock(0)
        config = SharePartitionConfig(limit, LOCK_MS, max_record_locks=12)
        self.sp = WatchedSharePartition.from_state(ShareState(), 0, config, self.clock)
        self.model = Model(limit)
        self.steps: list[str] = []
        if "SHARE-7" in rules:
            self.sp.history = self

    def fail(self, message: str) -> None:
        steps = "; ".join(self.steps[-8:])
        raise AssertionError(f"{message}. The last steps: {steps}")

    def now(self) -> int:
        return self.clock.milliseconds()

    def play(self, ops) -> None:
        for op in ops:
            getattr(self, op[0])(*op[1:])
            if "SHARE-2" in self.rules:
                self.check_holders()

    # -- the steps

    def fetch(self, member: str, max_records: int, record_limit: bool) -> None:
        sp, model = self.sp, self.model
        mode = AcquireMode.RECORD_LIMIT if record_limit else AcquireMode.BATCH_OPTIMIZED
        start = sp.next_fetch_offset()
        fetched = [b for b in self.log if b.last_offset >= start]
        for b in fetched:
            for offset in range(b.first_offset, b.last_offset + 1):
                if b.aborted and offset >= sp.start_offset and offset not in model.count:
                    model.done.setdefault(offset, "archived: an aborted transaction's")
        self.steps.append(f"at {self.now()} ms {member} fetches from offset {start}")
        runs = sp.acquire(member, fetched, max_records, bound=10_000, mode=mode)
        got = [o for r in runs for o in range(r.first_offset, r.last_offset + 1)]
        if got:
            self.steps[-1] = f"at {self.now()} ms {member} fetched {got}"
        else:
            self.steps.pop()
        for run in runs:
            for offset in range(run.first_offset, run.last_offset + 1):
                self.acquired(member, offset, run.delivery_count)

    def acquired(self, member: str, offset: int, count: int) -> None:
        model, now = self.model, self.now()
        if "SHARE-2" in self.rules and offset in model.holder:
            other, until = model.holder[offset]
            renewed = model.renewed.get(offset)
            lock = f"its lock until {until} ms" + (
                f", renewed at {renewed} ms" if renewed is not None else ""
            )
            self.fail(
                f"offset {offset} was handed to {member} at {now} ms while {other} held it "
                f"({lock}): a record is held by one member at a time, and its lock holds "
                f"until its deadline (SHARE-2, SHARE-6)"
            )
        if "SHARE-4" in self.rules and offset in model.done:
            self.fail(
                f"offset {offset}, {model.done[offset]}, was delivered again to {member} at "
                f"{now} ms: an accepted or rejected record is done, never delivered again "
                f"(SHARE-4)"
            )
        expected = model.count.get(offset, 0) + 1
        if "SHARE-5" in self.rules and count != expected:
            self.fail(
                f"offset {offset} was delivered to {member} for the {ordinal(expected)} time "
                f"with delivery count {count}: the count counts acquisitions, and neither an "
                f"acknowledgement nor a timeout changes it (SHARE-5)"
            )
        model.count[offset] = count
        model.done.pop(offset, None)
        model.holder[offset] = (member, now + LOCK_MS)

    def ack(self, member: str, pick: int, length: int, kind: AcknowledgeType) -> None:
        sp, model = self.sp, self.model
        mine = sorted(o for o, (m, _) in model.holder.items() if m == member)
        first = mine[pick % len(mine)] if mine and pick < 35 else pick  # mostly its own
        named = range(first, first + length + 1)
        start, end = sp.start_offset, sp.end_offset
        what = f"{kind.name} of {first}..{named[-1]}" if length else f"{kind.name} of {first}"
        self.steps.append(f"at {self.now()} ms {member} sends {what}")
        error = sp.acknowledge(member, [AcknowledgementBatch(first, named[-1], (int(kind),))])
        self.steps[-1] = f"at {self.now()} ms {member} sent {what}: {error.name}"
        live = [o for o in named if o >= start]  # below the SPSO: done already, ignored
        if any(o >= end for o in named):
            return  # never delivered: INVALID_REQUEST, the share-partition's own check
        others = {o: model.holder.get(o) for o in live if model.holder.get(o, ("",))[0] != member}
        if "SHARE-4" in self.rules:
            if error == OK and others:
                o, holder = next(iter(others.items()))
                whose = f"held by {holder[0]}" if holder else self.state_words(o)
                self.fail(
                    f"{member} sent {what} and it was applied, though offset {o} is not "
                    f"{member}'s (it is {whose}): only the holder acknowledges, and one wrong "
                    f"offset refuses the whole acknowledgement with INVALID_RECORD_STATE "
                    f"(SHARE-4)"
                )
            if error != OK and not others:
                self.fail(
                    f"{member} sent {what}, every offset of it held by {member}, and was "
                    f"refused with {error.name}: the holder's acknowledgement is applied "
                    f"(SHARE-4)"
                )
        if error != OK:
            return
        for offset in live:
            self.acknowledged(member, offset, kind, what)

    def acknowledged(self, member: str, offset: int, kind: AcknowledgeType, what: str) -> None:
        model = self.model
        if kind is RENEW:
            model.holder[offset] = (member, self.now() + LOCK_MS)
            model.renewed[offset] = self.now()
            return
        if kind is RELEASE:
            must = model.give_back(offset, f"{member}'s RELEASE")
            self.check_given_back(offset, must, f"{member}'s RELEASE")
            return
        model.holder.pop(offset, None)
        verdict = {ACCEPT: "accepted", REJECT: "rejected"}.get(kind, "archived as a GAP")
        model.done[offset] = f"{verdict} by {member}"
        must = ACKNOWLEDGED if kind is ACCEPT else ARCHIVED
        state = self.state_of(offset)
        if "SHARE-4" in self.rules and state not in (None, must):
            self.fail(
                f"{member} sent {what}: offset {offset} must be {must.name} now, it is "
                f"{state.name} (SHARE-4)"
            )

    def wait(self, ms: int) -> None:
        self.clock.advance(ms)
        if ms:
            self.steps.append(f"the clock moved to {self.now()} ms")

    def timer(self) -> None:
        sp, model, now = self.sp, self.model, self.now()
        before = dict(model.holder)
        self.steps.append(f"at {now} ms the lock timer ran")
        sp.expire_locks()
        for offset, (member, until) in before.items():
            if self.follow_locks:
                record = self.sp.records.get(offset)
                if record is not None and record.member_id == member:
                    continue  # still held: the share-partition says the lock holds
            elif until > now:
                continue
            must = model.give_back(offset, f"its lock's expiry at {until} ms")
            self.check_given_back(offset, must, f"its lock expired at {until} ms")

    def leave(self, member: str) -> None:
        model = self.model
        self.steps.append(f"at {self.now()} ms {member} left")
        self.sp.release_member(member)
        for offset, (holder, _) in list(model.holder.items()):
            if holder == member:
                must = model.give_back(offset, f"{member}'s leaving")
                self.check_given_back(offset, must, f"{member} left")

    # -- the checks

    def state_of(self, offset: int) -> RecordState | None:
        """The record's state in the share-partition, None below the SPSO (forgotten)."""
        if offset < self.sp.start_offset:
            return None
        record = self.sp.records.get(offset)
        return None if record is None else record.state

    def state_words(self, offset: int) -> str:
        state = self.state_of(offset)
        return "below the SPSO" if state is None else state.name

    def check_given_back(self, offset: int, must: str, why: str) -> None:
        if "SHARE-5" not in self.rules:
            return
        state, count = self.state_of(offset), self.model.count[offset]
        if state is not None and state.name != must:
            self.fail(
                f"offset {offset}, delivered {count} time{'s' * (count != 1)} (delivery limit "
                f"{self.model.limit}), was given back ({why}): it must be {must}, it is "
                f"{state.name} (SHARE-5)"
            )

    def check_holders(self) -> None:
        """SHARE-2, SHARE-6: every record the model says a member holds, the share-partition
        says so too (or has passed it: the SPSO's business)."""
        for offset, (member, until) in self.model.holder.items():
            record = self.sp.records.get(offset)
            if offset < self.sp.start_offset or record is None:
                continue
            if record.state is not ACQUIRED or record.member_id != member:
                holder = f" by {record.member_id}" if record.member_id else ""
                self.fail(
                    f"at {self.now()} ms offset {offset} is {record.state.name}{holder}, "
                    f"though {member} holds it under a lock until {until} ms: a lock holds "
                    f"until its deadline (SHARE-6)"
                )
        for offset, record in self.sp.records.items():
            if record.state is ACQUIRED and offset not in self.model.holder:
                self.fail(
                    f"at {self.now()} ms offset {offset} is still ACQUIRED by "
                    f"{record.member_id}, though its lock expired and the lock timer ran: at "
                    f"its deadline a record is released (SHARE-6)"
                )

    def check_start(self, start: int, end: int, states: dict) -> None:
        """SHARE-7: the SPSO moved where the rule says, from `start` with the SPEO at `end`
        and the records in `states` (offset -> (state, holder)) just before."""
        expected, got = spso_by_the_rule(start, end, states), self.sp.start_offset
        if got == expected:
            return

        def words(offset: int) -> str:
            state, holder = states.get(offset, (None, None))
            if state is None:
                return f"{offset} no record"
            return f"{offset} {state.name}" + (f" by {holder}" if holder else "")

        shown = ", ".join(words(o) for o in range(start, min(end, max(got, expected) + 1)))
        where = (
            f"{self.steps[-1] if self.steps else 'at the start'}, the SPSO {start}, the SPEO "
            f"{end}, the offsets from the SPSO on: {shown or 'none'}"
        )
        if got > expected:
            self.fail(
                f"{where}; the SPSO moved to {got}, past offset {expected} ({words(expected)}),"
                f" which is not done: it never passes an AVAILABLE or ACQUIRED record, and "
                f"stops there (SHARE-7)"
            )
        moved = f"stayed at {got}" if got == start else f"moved to {got}"
        self.fail(
            f"{where}; the SPSO {moved}, not {expected}: it passes every done record "
            f"(ACKNOWLEDGED or ARCHIVED) and every offset without a record (SHARE-7)"
        )


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 < 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


@pytest.mark.spec("SHARE-2", "SHARE-6")
@given(log=logs(), ops=HISTORIES)
def test_no_record_is_held_by_two_members(log, ops):
    """Every record a member holds stays its own until it acknowledges it, leaves, or the
    lock timer runs past its deadline (RENEW moves the deadline); then it is released."""
    History(log, {"SHARE-2"}, HIGH_LIMIT, follow_locks=False).play(ops)


@pytest.mark.spec("SHARE-4")
@given(log=logs(), ops=HISTORIES)
def test_an_acknowledgement_decides_the_records_fate(log, ops):
    """Applied exactly when the member holds every record it names (offsets below the SPSO
    aside); ACCEPT acknowledges, REJECT and GAP archive, and what was accepted or rejected
    is never delivered again."""
    History(log, {"SHARE-4"}, HIGH_LIMIT, follow_locks=True).play(ops)


@pytest.mark.spec("SHARE-5")
@given(log=logs(), ops=HISTORIES)
def test_the_delivery_limit_archives(log, ops):
    """Each delivery's count is one more than the last; a record given back (RELEASE, its
    lock's expiry, its member's leaving) after its third delivery is ARCHIVED, before it
    AVAILABLE."""
    History(log, {"SHARE-5"}, LIMIT, follow_locks=True).play(ops)


@pytest.mark.spec("SHARE-7")
@given(log=logs(), ops=HISTORIES)
def test_the_start_offset_passes_done_records_and_only_them(log, ops):
    """After every step the SPSO is the first record delivered and not done (held, or
    available again), or the SPEO if there is none."""
    History(log, {"SHARE-7"}, HIGH_LIMIT, follow_locks=True).play(ops)
