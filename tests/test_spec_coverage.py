"""Every numbered rule in spec/ is checked by a focused test, and every cited rule exists.

Rules are Markdown headings such as `### LOG-3 ...`; tests cite them with
`@pytest.mark.spec(<rule id in quotes>)` on the test, on its class, in the module's
`pytestmark`, or on a stateful machine's `TestCase`. A test that cites many rules says
little about any one of them, so a rule counts as covered only when at least one test
that cites it cites no more than two rules.
"""

import ast
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


MAX_RULES_OF_A_FOCUSED_TEST = 2


def _marked_rules(node: ast.expr) -> set[str]:
    """The rule ids of a `pytest.mark.spec(...)` expression (or of one applied to a class)."""
    rules = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("mark.spec"):
            rules |= {a.value for a in call.args if isinstance(a, ast.Constant)}
    return rules


def _tests_of(body: list[ast.stmt], inherited: set[str], prefix: str):
    for node in body:
        if isinstance(node, ast.ClassDef):
            marks = set().union(*(_marked_rules(d) for d in node.decorator_list))
            yield from _tests_of(node.body, inherited | marks, f"{prefix}{node.name}.")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name.startswith("test"):
                marks = set().union(*(_marked_rules(d) for d in node.decorator_list))
                yield f"{prefix}{node.name}", inherited | marks
        elif isinstance(node, ast.Assign) and _marked_rules(node.value):
            # `TestMachine = pytest.mark.spec(...)(Machine.TestCase)`: a stateful test
            name = ast.unparse(node.targets[0])
            if name != "pytestmark":
                yield f"{prefix}{name}", inherited | _marked_rules(node.value)


def citations_per_test() -> dict[str, set[str]]:
    """Every test (path::name) and the rules it cites."""
    tests = {}
    for base in ("tests", "labs"):
        for path in sorted((ROOT / base).rglob("test_*.py")):
            tree = ast.parse(path.read_text())
            module = set()
            for node in tree.body:
                if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "pytestmark":
                    module = _marked_rules(node.value)
            for name, rules in _tests_of(tree.body, module, ""):
                if rules:
                    tests[f"{path.relative_to(ROOT)}::{name}"] = rules
    return tests


def focused_rules() -> set[str]:
    """Rules cited by at least one test that cites at most two rules."""
    return {
        rule
        for rules in citations_per_test().values()
        if len(rules) <= MAX_RULES_OF_A_FOCUSED_TEST
        for rule in rules
    }


def test_spec_defines_rules():
    assert defined_rules(), "spec/ defines no rules"


def test_every_rule_has_a_test():
    missing = sorted(set(defined_rules()) - set(cited_rules()))
    assert not missing, f"spec rules no test cites: {missing}"


def test_every_rule_has_a_focused_test():
    """A rule only ever cited among many is not really checked: a focused test pins it."""
    weak = sorted(set(defined_rules()) - focused_rules())
    assert not weak, f"rules no test of at most {MAX_RULES_OF_A_FOCUSED_TEST} rules cites: {weak}"


def test_the_citation_reader_sees_every_cited_rule():
    """The per-test reader and the plain text search agree on which rules are cited, so no
    way of marking a test escapes the focused-test check."""
    seen = set().union(*citations_per_test().values())
    assert seen == set(cited_rules())


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
    """The catalogue the conformance suite reports against: each rule names its
    source (Kafka's code or docs, a KIP) and is flagged observable over the wire (portable)
    or not (kafka-ref only)."""
    bodies = rule_bodies()
    flag = re.compile(r"Observable:\s+(yes|no)")
    no_flag = sorted(r for r, body in bodies.items() if not flag.search(body))
    no_source = sorted(r for r, body in bodies.items() if "Source" not in body)
    assert not no_flag, f"rules without 'Observable: yes|no': {no_flag}"
    assert not no_source, f"rules without a 'Source:': {no_source}"
