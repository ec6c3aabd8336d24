"""Docs that cannot drift: the concept pages embed spec rules and source code at build time.

A concept page explains an idea in prose, then shows the rules that pin it and the code
that implements it. Copying either into the page would go stale the day someone edits
the spec or the code, so the page names them instead and the site build fetches them:

    {{ rules LOG-3 LOG-5..LOG-7 }}              the rules, as boxes linking to the spec
    {{ code kafka_ref/log/log.py Log.read }}     a class, method or function, from the source

This module is an MkDocs hook (`hooks:` in mkdocs.yml). A rule id that the spec does not
define, or a name the file does not define, stops the build with an error: the strict
build in tests/test_docs_build.py then fails, so a renamed function or a renumbered rule is
noticed at once, not by a reader.
"""

from __future__ import annotations

import ast
import pathlib
import posixpath
import re
import textwrap

from mkdocs.exceptions import PluginError

ROOT = pathlib.Path(__file__).resolve().parents[2]
EMBED = re.compile(r"^\{\{ (rules|code) ([^}]+?) \}\}$", re.MULTILINE)
RULE = re.compile(r"^### ([A-Z]+)-(\d+) (.+)$")


def spec_rules() -> dict[str, tuple[str, str, str]]:
    """Every rule of spec/*.md: id -> (title, body, spec file name)."""
    rules: dict[str, tuple[str, str, str]] = {}
    for path in sorted((ROOT / "spec").glob("*.md")):
        current, title, body = None, "", []
        for line in [*path.read_text().splitlines(), "## end"]:
            heading = RULE.match(line)
            if current and (heading or line.startswith("## ")):
                rules[current] = (title, "\n".join(body).strip(), path.name)
                current = None
            if heading:
                current, title, body = f"{heading[1]}-{heading[2]}", heading[3], []
            elif current:
                body.append(line)
    return rules


def expand_ids(words: list[str]) -> list[str]:
    """`LOG-3 LOG-5..LOG-7` -> LOG-3, LOG-5, LOG-6, LOG-7."""
    ids = []
    for word in words:
        first, _, last = word.partition("..")
        if not last:
            ids.append(first)
            continue
        prefix, start = first.rsplit("-", 1)
        last_prefix, end = last.rsplit("-", 1)
        if prefix != last_prefix or int(end) < int(start):
            raise PluginError(f"bad rule range {word!r}")
        ids += [f"{prefix}-{n}" for n in range(int(start), int(end) + 1)]
    return ids


def render_rules(words: list[str], page_dir: str, rules) -> str:
    boxes = []
    for rule_id in expand_ids(words):
        if rule_id not in rules:
            raise PluginError(f"{{{{ rules }}}}: no rule {rule_id} in spec/")
        title, body, spec_file = rules[rule_id]
        link = posixpath.relpath(f"spec/{spec_file}", page_dir or ".")
        text = textwrap.indent(f"{body}\n\n[{rule_id} in the spec]({link})", "    ")
        boxes.append(f'!!! note "{rule_id} {title}"\n\n{text}\n')
    return "\n".join(boxes)


def source_of(relative: str, qualname: str, root: pathlib.Path = ROOT) -> str:
    """The source of a class, method or function of `relative` (a path under `root`)."""
    path = root / relative
    if not path.is_file():
        raise PluginError(f"{{{{ code }}}}: no file {relative}")
    source = path.read_text()
    nodes: list[ast.AST] = list(ast.parse(source).body)
    found = None
    for part in qualname.split("."):
        found = next(
            (n for n in nodes if getattr(n, "name", None) == part and hasattr(n, "body")), None
        )
        if found is None:
            raise PluginError(f"{{{{ code }}}}: {relative} defines no {qualname}")
        nodes = list(found.body)
    first = min([found.lineno, *(d.lineno for d in getattr(found, "decorator_list", []))])
    lines = source.splitlines()[first - 1 : found.end_lineno]
    return textwrap.dedent("\n".join(lines))


def render_code(words: list[str]) -> str:
    if len(words) != 2:
        raise PluginError("{{ code FILE NAME }} takes a file and a name")
    relative, qualname = words
    body = source_of(relative, qualname)
    return f"`{qualname}` in `{relative}`:\n\n```python\n{body}\n```\n"


# The labs' handouts are read in the repository (labs/NN-name/README.md) and on the site
# (docs/handouts is a link to labs/): their links into the repository become site links.
HANDOUT_LINKS = (
    ("](../../docs/", "](../../"),
    ("](../../kafka_ref/seams.py)", "](../../labs.md#how-a-students-code-gets-in-seams)"),
)


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    rules = spec_rules()
    page_dir = posixpath.dirname(page.file.src_uri)
    if page.file.src_uri.startswith("handouts/"):
        for repository_link, site_link in HANDOUT_LINKS:
            markdown = markdown.replace(repository_link, site_link)

    def replace(match: re.Match) -> str:
        kind, words = match[1], match[2].split()
        if kind == "rules":
            return render_rules(words, page_dir, rules)
        return render_code(words)

    return EMBED.sub(replace, markdown)
