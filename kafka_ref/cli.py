"""The `kafka-ref` command, in the habits of Kafka's own tools.

Each subcommand lives in its own module, which provides `add_arguments(parser)` and
`run(args) -> int`; this file only wires them up. A wrong flag or a bad value prints one
readable line and exits with code 2; an operation that fails exits with code 1.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import logging
import sys

# subcommand -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("kafka_ref.tools.demo", "write and read a log on disk, showing its segments"),
    "dump-log": ("kafka_ref.tools.dump_log", "print the batches of .log/.index/.timeindex files"),
    "bench": ("kafka_ref.tools.bench", "measure throughput and latency"),
    "broker": ("kafka_ref.tools.broker", "run a broker"),
    "cluster": ("kafka_ref.tools.cluster", "run a local cluster: ZooKeeper and N brokers"),
    "topics": ("kafka_ref.tools.topics", "create, list, describe, alter and delete topics"),
    "configs": ("kafka_ref.tools.configs", "describe and change topic and broker configs live"),
    "log-dirs": ("kafka_ref.tools.log_dirs", "describe the log directories (kafka-log-dirs)"),
    "reassign": ("kafka_ref.tools.reassign", "move partitions between brokers"),
    "leader-election": ("kafka_ref.tools.leader_election", "elect preferred or unclean leaders"),
    "produce": ("kafka_ref.tools.console_producer", "send the lines of stdin as records"),
    "consume": ("kafka_ref.tools.console_consumer", "print the records of a topic"),
    "groups": ("kafka_ref.tools.groups", "list, describe, reset and delete consumer groups"),
    "share-groups": (
        "kafka_ref.tools.share_groups",
        "list, describe, reset and delete share groups (KIP-932)",
    ),
    "acls": ("kafka_ref.tools.acls", "add, list and remove ACLs (kafka-acls)"),
    "users": ("kafka_ref.tools.users", "add, change and list SCRAM users (kafka-configs users)"),
    "transactions": (
        "kafka_ref.tools.transactions",
        "list and describe transactions and a partition's producers",
    ),
    "storage": ("kafka_ref.tools.storage", "format a KRaft node's directories (kafka-storage)"),
    "metadata-quorum": (
        "kafka_ref.tools.metadata_quorum",
        "describe the KRaft quorum (kafka-metadata-quorum)",
    ),
    "reference-kafka": (
        "kafka_ref.tools.reference_kafka",
        "run Apache Kafka itself (KRaft, 1 or 3 nodes), fetched from Maven Central",
    ),
    "lab": ("kafka_ref.tools.lab", "grade a lab's solution and run its analysis"),
    "chaos": ("kafka_ref.tools.chaos", "run a fault campaign on a local cluster and judge it"),
}


# The servers log at INFO by default; the tools at WARNING.
SERVERS = {"broker", "cluster", "reference-kafka"}


class UsageError(Exception):
    """A bad argument: reported as one line, exit code 2."""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only`, that subcommand's arguments alone: the others
    keep their name and help, and their modules are not imported."""
    parser = argparse.ArgumentParser(prog="kafka-ref", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="how much is logged on stderr (default INFO for a broker or cluster, WARNING for "
        "the tools, as Kafka's tools do)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(module_name)
        # The docstring is the manual, laid out as written: examples one per line.
        cmd = sub.add_parser(
            name,
            help=help_text,
            description=inspect.cleandoc(module.__doc__ or ""),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def command_of(argv: list[str]) -> str | None:
    """The subcommand `argv` names (the first word after the options), if it is one."""
    words = iter(argv)
    for word in words:
        if word == "--log-level":
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def main(argv: list[str] | None = None) -> int:
    # Only the command that runs is imported: all of them together (the broker, the
    # controller, every tool) cost about a second of start-up to each `kafka-ref` run.
    parser = build_parser(command_of(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    level = args.log_level or ("INFO" if args.command in SERVERS else "WARNING")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args._run(args)
    except UsageError as err:
        print(f"kafka-ref {args.command}: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `kafka-ref dump-log ... | head`: the reader left, not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    # Run as `python -m kafka_ref.cli`, this file is loaded twice (as __main__ and as
    # kafka_ref.cli); the tools raise kafka_ref.cli.UsageError, so run that module's main.
    from kafka_ref.cli import main as package_main

    sys.exit(package_main())
