"""The API reference pages of the docs site, one per package, generated from the packages.

mkdocstrings renders a module from its docstrings and source (`::: kafka_ref.log.segment`);
this module decides which modules go on which page: every module of every package in
`PACKAGES`, in name order, after the package's own docstring. A test checks that the pages
on disk equal `render()` and that every package of kafka_ref has a page, so a new module
appears in the reference without anyone remembering to add it. Regenerate with

    python -m kafka_ref.tools.api_reference docs/api
"""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent  # the kafka_ref package

# package -> page title, in the order of the site's navigation
PACKAGES = {
    "record": "Record batches and codecs",
    "log": "The log and its segments",
    "protocol": "The wire protocol",
    "server": "The broker",
    "security": "Security: listeners, TLS, SASL",
    "quota": "Client quotas",
    "metrics": "Metrics for Prometheus",
    "cluster": "Cluster metadata and the controller",
    "metadata": "KRaft's metadata log and image",
    "replication": "Replication",
    "raft": "KRaft's quorum: Raft",
    "sim": "The cluster simulator",
    "group": "Consumer groups",
    "share": "Share groups",
    "txn": "Transactions and producer ids",
    "client": "The clients",
    "spark": "The Spark data sources",
    "conformance": "The conformance suite",
    "apache": "Apache Kafka as the reference",
    "tools": "The command-line tools",
}


def modules(package: str) -> list[str]:
    """Dotted names of the package's modules, subpackages included, in name order."""
    base = ROOT / package
    names = []
    for path in sorted(base.rglob("*.py")):
        relative = path.relative_to(ROOT.parent).with_suffix("")
        if path.name == "__init__.py":
            relative = relative.parent
            if relative == base.relative_to(ROOT.parent):
                continue  # the package itself heads the page
        names.append(".".join(relative.parts))
    return names


def render(package: str) -> str:
    lines = [
        f"# {PACKAGES[package]}: `kafka_ref.{package}`",
        "",
        f"::: kafka_ref.{package}",
        "    options:",
        "      members: false",
        "      show_root_heading: false",
    ]
    for name in modules(package):
        lines += ["", f"::: {name}"]
    return "\n".join(lines) + "\n"


def packages_present() -> list[str]:
    return [p for p in PACKAGES if (ROOT / p / "__init__.py").exists()]


def write_pages(directory: pathlib.Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for package in packages_present():
        (directory / f"{package}.md").write_text(render(package))


if __name__ == "__main__":
    write_pages(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "docs/api"))
