"""Every numbered rule in spec/ is cited by a test, and every cited rule exists.

Rules are Markdown headings such as `### LOG-3 ...`; tests cite them with
`@pytest.mark.spec(<rule id in quotes>)`.
"""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
RULE = re.compile(r"^#{2,4}\s+([A-Z][A-Z0-9]*-\d+)\b", re.M)
CITE = re.compile(r"""spec\(([^)]*)\)""")
ID = re.compile(r"[\"']([A-Z][A-Z0-9]*-\d+)[\"']")


def defined_rules() -> dict[str, pathlib.Path]:
    rules = {}
    for path in sorted((ROOT / "spec").rglob("*.md")):
        for rule in RULE.findall(path.read_text()):
            assert rule not in rules, f"{rule} defined twice: {rules.get(rule)} and {path}"
            rules[rule] = path
    return rules


def cited_rules() -> dict[str, set[str]]:
    cited: dict[str, set[str]] = {}
    for base in ("tests", "labs"):
        for path in (ROOT / base).rglob("*.py"):
            for group in CITE.findall(path.read_text()):
                for rule in ID.findall(group):
                    cited.setdefault(rule, set()).add(str(path.relative_to(ROOT)))
    return cited


def test_spec_defines_rules():
    assert defined_rules(), "spec/ defines no rules"


def test_every_rule_has_a_test():
    missing = sorted(set(defined_rules()) - set(cited_rules()))
    assert not missing, f"spec rules no test cites: {missing}"


def test_every_cited_rule_exists():
    unknown = {r: f for r, f in cited_rules().items() if r not in defined_rules()}
    assert not unknown, f"tests cite rules spec/ does not define: {unknown}"


def rule_bodies() -> dict[str, str]:
    """Each rule's text: from its heading to the next heading."""
    bodies = {}
    for path in sorted((ROOT / "spec").rglob("*.md")):
        text = path.read_text()
        heads = list(re.finditer(r"^#{2,4}\s+.*$", text, re.M))
        ends = [h.start() for h in heads[1:]] + [len(text)]
        for head, end in zip(heads, ends[: len(heads)], strict=True):
            match = RULE.match(head.group(0))
            if match:
                bodies[match.group(1)] = text[head.end() : end]
    return bodies


def test_every_rule_says_where_it_comes_from_and_whether_it_is_observable():
    """The catalogue the conformance suite reports against (issue 7): each rule names its
    source (Kafka's code or docs, a KIP) and is flagged observable over the wire (portable)
    or not (kafka-ref only)."""
    bodies = rule_bodies()
    flag = re.compile(r"Observable:\s+(yes|no)")
    no_flag = sorted(r for r, body in bodies.items() if not flag.search(body))
    no_source = sorted(r for r, body in bodies.items() if "Source" not in body)
    assert not no_flag, f"rules without 'Observable: yes|no': {no_flag}"
    assert not no_source, f"rules without a 'Source:': {no_source}"
