"""How the broker benches show themselves: a progress bar while they run, tables at the end.

`Progress` is a rich progress bar on stderr, shown only on a terminal, so `--json` output
on stdout stays one clean JSON object per line and tests see nothing else. The tables
go to stdout; a file or a pipe gets 120 columns, enough for every column of a row.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence

Tick = Callable[[int], None]
KAFKA_REF, KAFKA, TANSU = "kafka-ref", "kafka", "tansu"  # the brokers' labels in the rows
# What a broker's CPU costs per unit moved (the rows' figures, `figure`); lower is better.
CPU_PER_GB = "broker CPU s/GB"
CPU_PER_MILLION = "broker CPU s/M records"
THROUGHPUT_METRICS = ("msgs/s", "MB/s", CPU_PER_GB, CPU_PER_MILLION)


class Progress:
    """A rich progress bar on stderr (only on a terminal): measurements done, current phase."""

    def __init__(self, total_measurements: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        console = Console(stderr=True)
        self.bar = RichProgress(
            TextColumn("{task.description:<44}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not console.is_terminal,
            transient=True,
        )
        self.overall = self.bar.add_task("measurements", total=total_measurements)
        self.phase = self.bar.add_task("", total=1, visible=False)

    def __enter__(self) -> Progress:
        self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        self.bar.stop()

    @contextlib.contextmanager
    def step(self, description: str, total: int) -> Iterator[Tick]:
        self.bar.reset(self.phase, description=description, total=total, visible=True)
        try:
            yield lambda n: self.bar.advance(self.phase, n)
        finally:
            self.bar.advance(self.overall, 1)


def median_ratios(
    rows: list[dict],
    case: Callable[[dict], dict | None],
    metrics: Callable[[dict], Iterable[str]],
    value: Callable[[dict, str], float | None] = lambda row, metric: row[metric],
    peers: Sequence[str] = (TANSU,),
) -> list[dict]:
    """kafka-ref's figure over each peer's, each the median of its runs, per case and metric:
    the ratio rows every comparing bench reports.

    `case(row)` names the row's case as the fields the ratio row carries (None: the row
    is not compared); `metrics(row)` the metrics of a case, given its first kafka-ref
    row; `value(row, metric)` a row's figure (None: not measured in that run). A ratio
    row holds every broker's median under its label and, per peer, kafka-ref's median
    over the peer's under `ratio_key(peer)`. A case that lacks any broker's runs has no
    ratio row; a metric no run measured has medians and ratios of None."""
    brokers = (KAFKA_REF, *peers)
    cases: dict[tuple, dict[str, list[dict]]] = {}
    for row in rows:
        fields = case(row)
        if fields is not None:
            key = tuple(fields.items())
            cases.setdefault(key, {}).setdefault(row["broker"], []).append(row)
    out = []
    for key, runs in cases.items():
        if any(broker not in runs for broker in brokers):
            continue
        for metric in metrics(runs[KAFKA_REF][0]):
            medians = {b: _median([value(r, metric) for r in runs[b]]) for b in brokers}
            ours = medians[KAFKA_REF]
            ratio = {"what": "ratio", **dict(key), "metric": metric}
            ratio["runs"] = len(runs[KAFKA_REF])
            ratio |= medians
            ratio |= {ratio_key(p): _ratio(ours, medians[p]) for p in peers}
            out.append(ratio)
    return out


def ratio_key(peer: str) -> str:
    """The key of kafka-ref's median over `peer`'s in a ratio row: `kafka-ref/tansu`."""
    return f"{KAFKA_REF}/{peer}"


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    return round(ours / theirs, 2) if ours is not None and theirs else None


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def console():
    """A rich console on stdout; not a terminal (a file, a pipe) gets 100 columns."""
    from rich.console import Console

    out = Console(highlight=False)
    return out if out.is_terminal else Console(width=100, highlight=False)


def _table(title: str):
    from rich import box
    from rich.table import Table

    return Table(title=title, box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)


def _number(value) -> str:
    if value is None:
        return ""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def figure(row: dict, metric: str) -> float | None:
    """A measurement's figure for `metric`: a field of the row, or the broker's CPU seconds
    (`broker_cpu_s`) per GB of values or per million records (None: CPU not measured)."""
    if metric == CPU_PER_GB:
        moved = row["messages"] * row["msg_size"] / 2**30
    elif metric == CPU_PER_MILLION:
        moved = row["messages"] / 1e6
    else:
        return row[metric]
    if row["broker_cpu_s"] is None or not moved:
        return None
    return row["broker_cpu_s"] / moved


SHORT = {"produce latency": "latency", CPU_PER_GB: "CPU s/GB", CPU_PER_MILLION: "CPU s/M rec"}
NAMES = {KAFKA_REF: "kafka-ref", KAFKA: "Kafka", TANSU: "Tansu"}


def print_table(rows: list[dict]) -> None:
    """One line per measurement; messages and errors only when something failed."""
    measured = [row for row in rows if "rss_MB" not in row]
    table = _table("kafka-ref bench broker")
    headers = {
        "broker": "broker",
        "what": "what",
        "msg_size": "size",
        "acks": "acks",
        "partitions": "parts",
        "msgs/s": "msgs/s",
        "MB/s": "MB/s",
        "p50_ms": "p50",
        "p99_ms": "p99",
        "broker_cpu_s": "cpu s",
        CPU_PER_GB: "cpu s/GB",
        CPU_PER_MILLION: "cpu s/M",
    }
    repeated = any((row["run"] or 1) > 1 for row in measured)
    if repeated:
        headers = {"run": "#", **headers}
    for key, header in headers.items():
        table.add_column(header, justify="left" if key in ("broker", "what") else "right")
    numbers = ("msgs/s", "MB/s", "p50_ms", "p99_ms", "broker_cpu_s", CPU_PER_GB, CPU_PER_MILLION)
    for row in measured:
        cells = [str(row[k]) for k in ("broker", "what", "msg_size", "acks", "partitions")]
        cells[1] = SHORT.get(cells[1], cells[1])
        figures = (_number(figure(row, k)) for k in numbers)
        table.add_row(*[str(row["run"])] * repeated, *cells, *figures)
    out = console()
    out.print(table)
    for row in measured:
        if row["errors"]:
            out.print(
                f"{row['broker']} {row['what']} {row['msg_size']} B acks={row['acks']} "
                f"p={row['partitions']}: {row['errors']:,} of "
                f"{row['messages'] + row['errors']:,} messages failed"
            )
    if measured:
        out.print(
            f"client: {measured[0]['client']}; MB = 2**20 bytes of message values; "
            "p50/p99: produce latency in ms; cpu s: the broker's CPU time in the phase, "
            "also per GB of values and per million records"
        )
    for row in rows:
        if "rss_MB" in row:
            out.print(
                f"{row['broker']} broker RSS: {row['rss_MB']} MB (peak {row['peak_rss_MB']} MB)"
            )


def print_ratios(found: list[dict]) -> None:
    """The ratio rows of `median_ratios` as one table: every broker's median, then
    kafka-ref's over each peer's."""
    prefix = ratio_key("")
    peers = [key.removeprefix(prefix) for key in found[0] if key.startswith(prefix)]
    names = [NAMES.get(b, b) for b in (KAFKA_REF, *peers)]
    table = _table(f"{' / '.join(names)}, same run, same client (medians of the runs)")
    headers = ("what", "size", "acks", "parts", "runs", "metric", *names)
    headers += tuple(f"/{name}" for name in names[1:])
    for header in headers:
        table.add_column(header, justify="left" if header in ("what", "metric") else "right")
    for row in found:
        table.add_row(
            SHORT.get(row["of"], row["of"]),
            str(row["msg_size"]),
            row["acks"],
            str(row["partitions"]),
            str(row["runs"]),
            SHORT.get(row["metric"], row["metric"]),
            *(_number(row[b]) for b in (KAFKA_REF, *peers)),
            *("" if row[ratio_key(p)] is None else f"{row[ratio_key(p)]:.2f}" for p in peers),
        )
    out = console()
    out.print(table)
    out.print(
        f"/{names[1]}: kafka-ref's median over {names[1]}'s (likewise each peer). msgs/s and "
        "MB/s: above 1, kafka-ref is faster. Latency and CPU s/GB, CPU s/M rec (the broker's "
        "own CPU time per GB of values, per million records): below 1, kafka-ref needs less."
    )
