"""The share-group kill workload's checker (kafka_ref/conformance/share_workload.py) on
histories written by hand: it must see a lost record, a record accepted twice, and excuse
only what a killed member may have accepted without saying so."""

from __future__ import annotations

import json

import pytest

from kafka_ref.conformance.share_workload import ShareRun, check


def history(records: int, lines: list[tuple[int, str, int, int]], killed=()) -> ShareRun:
    """(member, kind, value, delivery count) lines, as the members print them."""
    run = ShareRun(records)
    for member, kind, value, count in lines:
        run.record(member, json.dumps({"kind": kind, "value": value, "count": count}))
    run.killed.extend(killed)
    return run


def accepted(member: int, value: int, count: int = 1) -> list[tuple[int, str, int, int]]:
    return [(member, "delivered", value, count), (member, "accepted", value, count)]


@pytest.mark.spec("SHARE-91")
def test_a_clean_history_is_valid_and_a_redelivery_after_a_kill_is_counted():
    run = history(
        3,
        [*accepted(0, 0), (1, "delivered", 1, 1), *accepted(2, 1, 2), *accepted(2, 2)],
        killed=[1],
    )
    verdict = check(run)
    assert verdict["valid"], verdict
    assert (verdict["redelivered"], verdict["redelivered_after_a_kill"]) == (1, 1)
    assert verdict["max_delivery_count"] == 2


@pytest.mark.spec("SHARE-91")
def test_a_record_never_accepted_is_lost_unless_a_killed_member_held_it_last():
    never = history(2, [*accepted(0, 0), (0, "delivered", 1, 1)])
    assert check(never)["lost"] == [1] and not check(never)["valid"]
    held_by_the_dead = history(2, [*accepted(0, 0), (1, "delivered", 1, 1)], killed=[1])
    assert check(held_by_the_dead)["valid"]
    undelivered = history(3, [*accepted(0, 0), *accepted(0, 1)])
    assert check(undelivered)["lost"] == [2]


@pytest.mark.spec("SHARE-91")
def test_a_record_accepted_twice_is_invalid():
    run = history(1, [*accepted(0, 0), *accepted(1, 0, 2)])
    verdict = check(run)
    assert verdict["accepted_twice"] == [0] and not verdict["valid"]
