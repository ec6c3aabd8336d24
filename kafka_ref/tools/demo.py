"""`kafka-ref demo`: a partition's log on disk, in a minute.

Appends a few hundred keyed records to the partition `demo-0` under `--data-dir`, with a
small `segment.bytes` so the log rolls into several segments, then reads them back from
a middle offset and shows the files: each segment a `.log` named by its base offset, with
its sparse `.index` and its `.timeindex`. Run `kafka-ref dump-log` on the files it lists to
look inside them.
"""

from __future__ import annotations

import argparse
import os

from rich.console import Console
from rich.table import Table

from kafka_ref.clock import SystemClock
from kafka_ref.config import LogConfig
from kafka_ref.log.log import Log
from kafka_ref.record.batch import RecordBatch, build_batch, iter_batch_headers
from kafka_ref.record.record import Record


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default="/tmp/kafka-ref-demo", help="where to write")
    parser.add_argument("--records", type=int, default=500, help="records to append")
    parser.add_argument("--segment-bytes", type=int, default=16384, help="segment.bytes")


def run(args: argparse.Namespace) -> int:
    console = Console()
    config = LogConfig.from_properties(
        {"segment.bytes": args.segment_bytes, "index.interval.bytes": 1024}
    )
    clock = SystemClock()
    log = Log.open(os.path.join(args.data_dir, "demo-0"), config, clock)
    start_leo = log.log_end_offset
    for first in range(0, args.records, 10):
        records = [
            Record(f"user-{n % 7}".encode(), f"clicked page {n}".encode(), clock.milliseconds())
            for n in range(first, min(first + 10, args.records))
        ]
        log.append(build_batch(records))
    log.flush()
    console.print(
        f"appended offsets {start_leo}..{log.log_end_offset - 1} to [bold]{log.dir}[/bold]; "
        f"log start offset {log.log_start_offset}, log end offset {log.log_end_offset}"
    )

    table = Table(title="segments (base offset = file name)")
    for column in ("file", "bytes", "index entries", "time index entries"):
        table.add_column(column)
    for segment in log.segments:
        table.add_row(
            os.path.basename(segment.log.path),
            str(segment.size),
            str(segment.offset_index.entries),
            str(segment.time_index.entries),
        )
    console.print(table)

    middle = (log.log_start_offset + log.log_end_offset) // 2
    info = log.read(middle, 300)
    console.print(f"read({middle}, max_bytes=300) starts at the batch holding {middle}:")
    for piece in info.slices:
        data = piece.read_bytes()
        for position, _ in iter_batch_headers(data):
            for record in RecordBatch(data, position).records():
                console.print(f"  offset {record.offset}: {record.key!r} -> {record.value!r}")
    console.print(f"look inside: kafka-ref dump-log --print-data {log.segments[0].log.path}")
    log.close()
    return 0
