"""The `kafka-ref` command's subcommands, one module each, and the benchmarks.

Each tool is a thin shell around the library in the style of Kafka's own scripts
(`kafka-topics.sh`, `kafka-console-producer.sh`, `kafka-dump-log.sh`): options by Kafka's
names, one line and a non-zero exit code for a mistake (TOOLS-3). `bench*.py` measure the
storage engine, a broker and a cluster; `api_reference`, `cli_reference` and `docs_embed`
generate pages of the documentation site.
"""
