"""`kafka-ref bench storage`: the storage engine alone, on real files (TOOLS-4).

* **append**: MB/s of `Log.append` with ~1 MB batches of 1 KB records, against a raw
  `file.write` of the very same bytes in the same run (the ratio is what matters: the log's
  own work, validating the CRC, stamping the offset, indexing, should cost little);
* **read**: MB/s of sequential `Log.read` calls over what was appended, reading the bytes
  of each returned file slice;
* **lookup**: microseconds per random-offset lookup in logs of 10^4, 10^6 and 10^7
  records: the sparse index plus binary search over segments keeps it flat;
* **rss**: how much the process grew while appending (the page cache holds the data, not
  the process).

Each measurement prints as one line; `--json` prints one JSON object per measurement. The
command line of every bench is kafka_ref/tools/bench.py.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import time
from collections.abc import Callable

from kafka_ref.clock import SystemClock
from kafka_ref.config import LogConfig
from kafka_ref.log.log import Log
from kafka_ref.record.batch import build_batch
from kafka_ref.record.record import Record

MB = 1024 * 1024


def add_parser(sub) -> None:
    """`bench storage` and its options, under the `bench` command's sub-parsers."""
    storage = sub.add_parser("storage", help="the storage engine on real files")
    storage.add_argument("--dir", help="where to write (default: a temporary directory)")
    storage.add_argument("--total-mb", type=int, default=2048, help="bytes to append (MB)")
    storage.add_argument("--record-bytes", type=int, default=1024, help="value size")
    storage.add_argument("--batch-mb", type=float, default=1.0, help="batch size (MB)")
    storage.add_argument(
        "--lookup-sizes",
        default="10000,1000000,10000000",
        help="record counts of the logs the lookup test builds",
    )
    storage.add_argument("--lookups", type=int, default=20000, help="lookups per size")
    storage.add_argument("--json", action="store_true", help="one JSON object per measurement")


def rss_bytes() -> int:
    """Resident set size of this process, from /proc (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def make_batch(record_bytes: int, count: int) -> bytes:
    value = os.urandom(record_bytes // 2).hex().encode()[:record_bytes]
    now = int(time.time() * 1000)
    return build_batch([Record(None, value, now) for _ in range(count)])


def bench_storage(base: str, args: argparse.Namespace, emit: Callable[[dict], None]) -> None:
    count = max(1, int(args.batch_mb * MB) // (args.record_bytes + 8))
    batch = make_batch(args.record_bytes, count)
    appends = max(1, args.total_mb * MB // len(batch))
    total = appends * len(batch)

    raw_path = os.path.join(base, "raw.bin")
    start = time.perf_counter()
    with open(raw_path, "wb", buffering=0) as raw:
        for _ in range(appends):
            raw.write(batch)
    raw_seconds = time.perf_counter() - start
    os.unlink(raw_path)
    raw_mbs = total / MB / raw_seconds
    emit({"what": "raw file.write", "MB": total // MB, "MB/s": round(raw_mbs, 1)})

    config = LogConfig.from_properties({"max.message.bytes": 64 * MB})
    log_dir = os.path.join(base, "bench-0")
    log = Log.open(log_dir, config, SystemClock())
    rss_before = rss_bytes()
    start = time.perf_counter()
    for _ in range(appends):
        log.append(batch)
    append_seconds = time.perf_counter() - start
    rss_growth = rss_bytes() - rss_before
    append_mbs = total / MB / append_seconds
    emit(
        {
            "what": "Log.append",
            "MB": total // MB,
            "MB/s": round(append_mbs, 1),
            "vs raw": round(append_mbs / raw_mbs, 2),
            "records/s": round(appends * count / append_seconds),
        }
    )
    emit({"what": "rss growth (append)", "MB": round(rss_growth / MB, 1)})

    start = time.perf_counter()
    offset, read_total = log.log_start_offset, 0
    while offset < log.log_end_offset:
        info = log.read(offset, MB)
        for piece in info.slices:
            read_total += len(piece.read_bytes())
        offset = info.next_offset
    read_seconds = time.perf_counter() - start
    emit(
        {
            "what": "Log.read sequential",
            "MB": read_total // MB,
            "MB/s": round(read_total / MB / read_seconds, 1),
        }
    )
    log.close()
    shutil.rmtree(log_dir, ignore_errors=True)

    for size in (int(s) for s in args.lookup_sizes.split(",") if s):
        emit(bench_lookup(base, size, args.lookups))


def bench_lookup(base: str, records: int, lookups: int) -> dict:
    """Build a log of `records` small records, then time random-offset reads of one batch."""
    per_batch = 100
    batch = make_batch(16, per_batch)
    log_dir = os.path.join(base, f"lookup{records}-0")
    config = LogConfig.from_properties({"segment.bytes": 64 * MB})
    log = Log.open(log_dir, config, SystemClock())
    for _ in range(max(1, records // per_batch)):
        log.append(batch)
    rng = random.Random(records)
    end = log.log_end_offset
    targets = [rng.randrange(end) for _ in range(lookups)]
    start = time.perf_counter()
    for target in targets:
        log.read(target, 1)
    micros = (time.perf_counter() - start) / lookups * 1e6
    result = {
        "what": f"lookup {records:.0e} records",
        "segments": len(log.segments),
        "us/lookup": round(micros, 1),
    }
    log.close()
    shutil.rmtree(log_dir, ignore_errors=True)
    return result
