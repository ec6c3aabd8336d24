"""A config's default is declared once: in its `ConfigDef` (SRC-6, spec/source.md).

Kafka declares each key once, with its default (`ConfigDef`); everything else reads the
definition. Here the topic configs live in `kafka_ref/config.py` (`TOPIC_CONFIGS`, which
`LogConfig`'s fields read) and the broker's in `kafka_ref/server/broker_configs.py`
(`BROKER_CONFIGS`). A parameter, field or constant named after a key whose default repeats
the key's default as a literal is a second declaration: the two drift apart the day one
changes. The scan reads the source with `ast`.
"""

from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys

import pytest

from kafka_ref.config import TOPIC_CONFIGS
from kafka_ref.server.broker_configs import BROKER_CONFIGS

ROOT = pathlib.Path(__file__).resolve().parent.parent


def literal(node: ast.expr) -> tuple[bool, object]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def named_defaults(tree: ast.AST):
    """(name, default expression, line) of every parameter default, annotated or plain
    assignment to a single name, in `tree`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(
                zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
            )
            pairs += [
                (a, d)
                for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                if d is not None
            ]
            for arg, default in pairs:
                yield arg.arg, default, node.lineno
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            yield node.target.id, node.value, node.lineno
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            yield node.targets[0].id, node.value, node.lineno


# Our clients (kafka_ref/client/) have configs of their own that share names with the
# broker's (a producer's `compression.type`, a connection's `node.id`), with other meanings.
CLIENT_SIDE = "client"


def table_declarations(root: pathlib.Path) -> set[str]:
    """The keys whose `ConfigDef(name, type, default, ...)` writes the default as a literal."""
    keys = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "ConfigDef"
                and len(node.args) >= 3
                and isinstance(node.args[0], ast.Constant)
                and literal(node.args[2])[0]
            ):
                keys.add(node.args[0].value)
    return keys


def second_declarations(root: pathlib.Path, defaults: dict[str, object]) -> list[str]:
    """Places under `root` that repeat a key's non-empty default under the key's name,
    when the key's `ConfigDef` or another such place already writes it (an empty default,
    "no users", "no directories", says nothing that could drift)."""
    by_name = {key.replace(".", "_").lower(): key for key in defaults}
    table = table_declarations(root)
    places: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if CLIENT_SIDE in path.relative_to(root).parts[:1]:
            continue
        for name, value, line in named_defaults(ast.parse(path.read_text())):
            key = by_name.get(name.lower())
            ok, constant = literal(value) if key else (False, None)
            if not ok or constant in ("", (), [], None) or constant != defaults[key]:
                continue
            if type(constant) is type(defaults[key]):
                where = f"{path.relative_to(root.parent)}:{line} {key}={constant!r}"
                places.setdefault(key, []).append(where)
    # The table's literal is the declaration; without one, the first place found is.
    return sorted(w for key, found in places.items() for w in found[0 if key in table else 1 :])


def declared_defaults() -> dict[str, object]:
    table = {key: d.parse(d.default) for key, d in TOPIC_CONFIGS.items()}
    table |= {key: d.default for key, d in BROKER_CONFIGS.items()}
    return {k: tuple(v) if isinstance(v, list) else v for k, v in table.items()}


def test_a_second_declaration_is_found(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text(
        'TABLE = [ConfigDef("segment.bytes", "int", 1073741824, "")]\n'
        "def f(*, segment_bytes=1073741824, retention_ms=-2):\n    pass\n"
        "class C:\n    replica_lag_time_max_ms: int = 30000\n"
        "class D:\n    replica_lag_time_max_ms: int = 30000\n"
    )
    found = second_declarations(package, declared_defaults())
    assert found == [
        "pkg/m.py:2 segment.bytes=1073741824",  # the table writes it already
        "pkg/m.py:7 replica.lag.time.max.ms=30000",  # C declares it, D again
    ]


def scan_in_a_fresh_interpreter() -> list[str]:
    """`second_declarations` over kafka_ref/, in a process of its own. CPython 3.11 keeps the
    AST constructor's recursion depth per interpreter, not per thread: an `ast.parse` while
    another thread of this worker (a broker a fixture left running) is inside the AST code can
    fail with "SystemError: AST constructor recursion depth mismatch" (CPython gh-106905)."""
    scan = (
        "import json; from tests.test_config_defaults import *; "
        "print(json.dumps(second_declarations(ROOT / 'kafka_ref', declared_defaults())))"
    )
    done = subprocess.run(
        [sys.executable, "-c", scan], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.spec("SRC-6")
def test_every_config_default_is_declared_once():
    found = scan_in_a_fresh_interpreter()
    assert not found, f"defaults declared again outside their ConfigDef: {found}"
