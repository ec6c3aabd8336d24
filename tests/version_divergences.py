"""PROTO-19's table of divergences from Apache Kafka's version ranges, read from the spec.

spec/protocol.md lists, under PROTO-19, every API whose range kafka-ref serves differs from
the one Apache Kafka 4.4 serves, with both ranges and the reason. The tests read the table
here rather than keep a copy, so the spec cannot drift from what they check:
tests/unit/protocol/test_messages.py compares the kafka-ref column with the registry,
tests/apache/test_api_versions.py both columns with the two brokers' ApiVersions answers.
"""

from __future__ import annotations

import pathlib
import re
from typing import NamedTuple

SPEC = pathlib.Path(__file__).resolve().parent.parent / "spec" / "protocol.md"
_SECTION = re.compile(r"^### PROTO-19 .*?(?=^### )", re.M | re.S)
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


class Divergence(NamedTuple):
    name: str
    api_key: int
    kafka_ref: tuple[int, int] | None  # None: not served
    kafka: tuple[int, int] | None
    why: str


def parse_range(text: str) -> tuple[int, int] | None:
    """ "0-11" -> (0, 11), "4" -> (4, 4), "none" -> None."""
    if text == "none":
        return None
    found = _RANGE.match(text)
    assert found, f"not a version range: {text!r}"
    low = int(found.group(1))
    return low, int(found.group(2) or low)


def divergences() -> dict[int, Divergence]:
    """The table's rows by API key."""
    section = _SECTION.search(SPEC.read_text())
    assert section, f"no PROTO-19 section in {SPEC}"
    rows = {}
    for line in section.group(0).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[1].isdigit():
            continue  # the header, its rule, and the prose around the table
        name, key, ours, theirs, why = cells
        assert int(key) not in rows, f"API key {key} listed twice"
        rows[int(key)] = Divergence(name, int(key), parse_range(ours), parse_range(theirs), why)
    assert rows, "PROTO-19's table has no rows"
    return rows
