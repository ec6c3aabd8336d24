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
