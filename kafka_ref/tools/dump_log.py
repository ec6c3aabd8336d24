"""`kafka-ref dump-log`: look inside segment files, as `kafka-dump-log.sh --files` does.

A `.log` file prints one line per batch (base and last offset, record count, producer id,
epoch and sequences, whether it is transactional or a control batch, position, CreateTime,
size, magic, codec, CRC and whether it is valid); `--print-data` adds a line per record with
its key and value. A transaction's marker is a control batch whose one record is printed as
Kafka prints it, `endTxnMarker: COMMIT coordinatorEpoch: 0` (or ABORT), with the producer id
and epoch of the transaction on its batch line. An `.index` or `.timeindex` file prints its
entries and then checks each against the `.log` beside it, reporting every mismatch, so a
student can see the sparse index at work and a broken one is found, not guessed at. A
`.txnindex` file prints one line per aborted transaction: `version`, `producerId`,
`firstOffset`, `lastOffset` (its ABORT marker) and `lastStableOffset`.

Nothing here writes to the files it reads.

Kafka: `DumpLogSegments` (`dumpLog`, `dumpIndex`, `dumpTimeIndex`, `dumpTxnIndex`).
Spec rules: TOOLS-1, TOOLS-23 (spec/tools.md).
"""

from __future__ import annotations

import argparse
import mmap
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from kafka_ref.errors import KafkaError
from kafka_ref.log.offset_index import OffsetIndex
from kafka_ref.log.time_index import TimeIndex
from kafka_ref.log.txn_index import (
    CURRENT_VERSION,
    ENTRY_SIZE,
    TXN_INDEX_SUFFIX,
    CorruptTxnIndexError,
    TransactionIndex,
)
from kafka_ref.record.batch import BatchHeader, RecordBatch, validate_batch
from kafka_ref.record.control import read_marker


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help=".log, .index, .timeindex or .txnindex"
    )
    parser.add_argument(
        "--print-data", action="store_true", help="print each record's key and value"
    )
    parser.add_argument(
        "--max-bytes", type=int, default=2**31 - 1, help="stop a .log dump after this many bytes"
    )


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        print(f"Dumping {path}")
        try:
            if path.endswith(".log"):
                status |= dump_log_file(path, args.print_data, args.max_bytes, sys.stdout)
            elif path.endswith(".index"):
                status |= dump_offset_index(path, sys.stdout)
            elif path.endswith(".timeindex"):
                status |= dump_time_index(path, sys.stdout)
            elif path.endswith(TXN_INDEX_SUFFIX):
                status |= dump_txn_index(path, sys.stdout)
            else:
                print(
                    f"Ignoring {path}: not a .log, .index, .timeindex or .txnindex file",
                    file=sys.stderr,
                )
                status = 1
        except BrokenPipeError:
            raise
        except (OSError, KafkaError) as err:
            print(f"Cannot dump {path}: {err}", file=sys.stderr)
            status = 1
    return status


def base_offset_of(path: str) -> int:
    name = os.path.basename(path).split(".")[0]
    if not name.isdigit():
        raise KafkaError(f"{os.path.basename(path)} is not named by a 20-digit base offset")
    return int(name)


@contextmanager
def mapped(path: str) -> Iterator[memoryview]:
    """The file's bytes, memory-mapped read-only (an empty file is an empty view)."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            yield memoryview(b"")
            return
        with mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ) as mm:
            view = memoryview(mm)
            try:
                yield view
            finally:
                view.release()


def dump_log_file(path: str, print_data: bool, max_bytes: int, out) -> int:
    print(f"Log starting offset: {base_offset_of(path)}", file=out)
    with mapped(path) as data:
        position, end = 0, min(len(data), max_bytes)
        while position < end:
            try:
                header = BatchHeader.parse(data, position)
            except KafkaError as err:
                print(
                    f"Found {len(data) - position} invalid bytes at the end of "
                    f"{os.path.basename(path)}: {err}",
                    file=out,
                )
                return 1
            if position + header.size > len(data):
                print(
                    f"Found a truncated batch of {header.size} bytes at position "
                    f"{position}: {len(data) - position} bytes remain",
                    file=out,
                )
                return 1
            valid = _is_valid(data, position)
            print(describe_batch(header, position, valid), file=out)
            if print_data and valid:
                marker = _marker(data, position) if header.is_control else None
                for record in RecordBatch(data, position).records():
                    print(describe_record(header, record, marker), file=out)
            position += header.size
    return 0


def _is_valid(data: memoryview, position: int) -> bool:
    try:
        validate_batch(data, position, check_count=False)
        return True
    except KafkaError:
        return False


def describe_batch(header: BatchHeader, position: int, valid: bool) -> str:
    last_sequence = (
        header.base_sequence + header.last_offset_delta if header.base_sequence >= 0 else -1
    )
    time_name = "LogAppendTime" if header.timestamp_type else "CreateTime"
    codec = header.compression.name.lower() if valid else f"id {header.attributes & 7}"
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
        f"count: {header.records_count} baseSequence: {header.base_sequence} "
        f"lastSequence: {last_sequence} producerId: {header.producer_id} "
        f"producerEpoch: {header.producer_epoch} "
        f"partitionLeaderEpoch: {header.partition_leader_epoch} "
        f"isTransactional: {str(header.is_transactional).lower()} "
        f"isControl: {str(header.is_control).lower()} position: {position} "
        f"{time_name}: {header.max_timestamp} size: {header.size} magic: {header.magic} "
        f"compresscodec: {codec} crc: {header.crc} isvalid: {str(valid).lower()}"
    )


def _marker(data: memoryview, position: int) -> str:
    """A control record as Kafka's DumpLogSegments prints it."""
    try:
        marker = read_marker(data, position)
    except KafkaError:  # a control type other than a transaction marker
        return "controlType: unknown"
    return f"endTxnMarker: {marker.control_type.name} coordinatorEpoch: {marker.coordinator_epoch}"


def describe_record(header: BatchHeader, record, marker: str | None = None) -> str:
    time_name = "LogAppendTime" if header.timestamp_type else "CreateTime"
    sequence = (
        header.base_sequence + record.offset - header.base_offset
        if header.base_sequence >= 0
        else -1
    )
    key_size = -1 if record.key is None else len(record.key)
    value_size = -1 if record.value is None else len(record.value)
    line = (
        f"| offset: {record.offset} {time_name}: {record.timestamp} keySize: {key_size} "
        f"valueSize: {value_size} sequence: {sequence} "
        f"headerKeys: [{','.join(h.key for h in record.headers)}]"
    )
    if marker is not None:  # a control record: its key and value are the marker
        return f"{line} {marker}"
    if record.key is not None:
        line += f" key: {_text(record.key)}"
    if record.value is not None:
        line += f" payload: {_text(record.value)}"
    return line


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="backslashreplace")


def _batch_at(data: memoryview, position: int) -> BatchHeader | None:
    try:
        header = BatchHeader.parse(data, position)
    except KafkaError:
        return None
    return header if position + header.size <= len(data) else None


def _batch_containing(data: memoryview, position: int, offset: int) -> BatchHeader | None:
    """Scan batch headers from `position` to the batch whose last offset >= offset."""
    while (header := _batch_at(data, position)) is not None:
        if header.last_offset >= offset:
            return header
        position += header.size
    return None


def _log_beside(index_path: str) -> str:
    return index_path.rsplit(".", 1)[0] + ".log"


def dump_offset_index(path: str, out) -> int:
    """Print (offset, position) entries; check each points at a batch ending at that offset."""
    index = OffsetIndex(path, base_offset_of(path), os.path.getsize(path))
    mismatches = []
    try:
        with mapped(_log_beside(path)) as data:
            for slot in range(index.entries):
                offset, position = index.entry(slot)
                print(f"offset: {offset} position: {position}", file=out)
                header = _batch_at(data, position)
                found = header.last_offset if header else -1
                if found != offset:
                    mismatches.append(f"  Index offset: {offset}, log offset: {found}")
    finally:
        index.close()
    return _report(path, mismatches, out)


def dump_time_index(path: str, out) -> int:
    """Print (timestamp, offset) entries; check each against the batch holding the offset."""
    base = base_offset_of(path)
    index = TimeIndex(path, base, os.path.getsize(path))
    offset_index_path = path.rsplit(".", 1)[0] + ".index"
    offsets = None
    if os.path.exists(offset_index_path):
        offsets = OffsetIndex(offset_index_path, base, os.path.getsize(offset_index_path))
    problems, previous = [], None
    try:
        with mapped(_log_beside(path)) as data:
            for slot in range(index.entries):
                timestamp, offset = index.entry(slot)
                print(f"timestamp: {timestamp} offset: {offset}", file=out)
                start = offsets.lookup(offset).position if offsets else 0
                header = _batch_containing(data, start, offset)
                if header is None or header.last_offset != offset:
                    found = header.last_offset if header else -1
                    problems.append(f"  Indexed offset: {offset}, found log offset: {found}")
                elif header.max_timestamp != timestamp:
                    problems.append(
                        f"  Index timestamp: {timestamp}, log timestamp: {header.max_timestamp}"
                    )
                if previous is not None and timestamp <= previous:
                    problems.append(
                        f"  Index timestamp: {timestamp}, previous: {previous} (out of order)"
                    )
                previous = timestamp
    finally:
        index.close()
        if offsets:
            offsets.close()
    return _report(path, problems, out)


def dump_txn_index(path: str, out) -> int:
    """Print each aborted transaction of a `.txnindex` (Kafka's dumpTxnIndex)."""
    size = os.path.getsize(path)
    try:
        index = TransactionIndex(path, base_offset_of(path))
    except CorruptTxnIndexError as err:
        print(f"Found a corrupt entry in {os.path.basename(path)}: {err}", file=out)
        return 1
    for txn in index.entries:
        print(
            f"version: {CURRENT_VERSION} producerId: {txn.producer_id} "
            f"firstOffset: {txn.first_offset} lastOffset: {txn.last_offset} "
            f"lastStableOffset: {txn.last_stable_offset}",
            file=out,
        )
    if size % ENTRY_SIZE:
        print(
            f"Found {size % ENTRY_SIZE} invalid bytes at the end of {os.path.basename(path)}",
            file=out,
        )
        return 1
    return 0


def _report(path: str, problems: list[str], out) -> int:
    if not problems:
        return 0
    print(f"Mismatches in :{path}", file=out)
    for line in problems:
        print(line, file=out)
    return 1
