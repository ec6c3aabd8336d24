"""The CLI reference page of the docs site, generated from the `kafka-ref` command itself.

Each subcommand's module docstring is its manual (what it does, examples, the rules it
follows) and its argparse declarations are its options; `render()` puts both on one
Markdown page, docs/cli.md. A test compares the page with `render()`, so the reference
cannot drift from the code: after changing a command, regenerate it with

    python -m kafka_ref.tools.cli_reference > docs/cli.md
"""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect

from kafka_ref.cli import COMMANDS

WIDTH = 96  # fixed, so that the page does not depend on the terminal that generated it


def _options(name: str, module) -> str:
    parser = argparse.ArgumentParser(
        prog=f"kafka-ref {name}",
        formatter_class=functools.partial(argparse.HelpFormatter, width=WIDTH),
    )
    module.add_arguments(parser)
    return parser.format_help().rstrip()


def render() -> str:
    parts = [
        "# CLI reference",
        "",
        "Every subcommand of `kafka-ref` (installed by `make test` or `pip install -e .` as",
        "`.venv/bin/kafka-ref`; `python -m kafka_ref.cli` works too). A wrong flag prints one",
        "line and exits with code 2; an operation that fails exits with code 1. This page is",
        "generated from the code (`python -m kafka_ref.tools.cli_reference > docs/cli.md`).",
        "",
        "On a secured listener (SSL, SASL_PLAINTEXT, SASL_SSL), every tool that takes",
        "`--bootstrap-server` also takes `--command-config FILE` (`produce`: `--producer.config`,",
        "`consume`: `--consumer.config`), a client.properties file with Kafka's names:",
        "`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`, `ssl.truststore.location`,",
        "... ([Security: clients and tools](security.md#clients-and-tools); TOOLS-28).",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    parts += [f"| [`{name}`](#{name}) | {help_text} |" for name, (_, help_text) in COMMANDS.items()]
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        doc = inspect.cleandoc(module.__doc__ or "")
        parts += ["", f"## {name}", "", f"*{help_text}.*", "", doc, "", "```text"]
        parts += [_options(name, module), "```"]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    print(render(), end="")
