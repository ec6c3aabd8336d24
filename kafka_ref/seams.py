"""Seams: where a student's code takes the place of a concept's reference code.

Each concept the labs teach is one named, pure function in the module named after the
concept: `partition_for_key` in client/partitioner.py (which partition a keyed record goes
to), `range_assign` in client/assignors/range.py (who in a group reads which partition),
`should_retain` in log/cleaner.py (does compaction keep this record), and so on. Such a
function is declared a *seam* with the `@seam` decorator. One setting chooses who
implements every seam:

    KAFKA_REF_SOLUTION=labs/02-producer/solution.py
    KAFKA_REF_SOLUTION=labs/02-producer/solution.py:labs/07-transactions/solution.py

names Python files (a lab's `solution.py`, or any file a student writes), separated by
`os.pathsep` (`:`; `;` on Windows) when there are several. Each seam whose name a file
defines runs that file's function instead of the reference, everywhere in the process: our
producer, the broker, the simulator, the conformance suite's targets; the first file that
defines it wins. A broker or a client started as a child process inherits the variable, so a
whole cluster runs the student's code. Seams no file defines keep the reference (a function
a file imports, from kafka-ref or elsewhere, does not count as defined), except the seams
`kafka-ref lab check` is grading (below).

A *student edition* (`kafka-ref lab export`) has no reference for the seams of the labs it
hands out: their bodies are gone, and `kafka_ref/edition.json` names, for each, the lab's
`solution.py`. There a stripped seam runs the lab's solution without any setting (a file of
KAFKA_REF_SOLUTION that defines it still comes first: that is how `lab check --solution`
grades another file).

Without the variable, and for a seam the edition keeps, a seam *is* the reference function
(the decorator returns it unchanged), so the hot paths pay nothing for being teachable.
Otherwise the call goes through a small dispatcher that loads the files on first use: a
file may import any kafka-ref module, including the one whose seam it replaces, without an
import cycle.

The dispatcher does not expose the reference (no attribute leads to it), and once it has
chosen a student's function it forgets the reference altogether: a solution cannot reach
the code it replaces through the seam, and `kafka-ref lab check` refuses a file that imports
it or the module holding it before grading (kafka_ref/tools/lab_guard.py).

**The seams being graded never hold their reference.** `kafka-ref lab check` names the
lab's seams in KAFKA_REF_GRADED_SEAMS. Those are built without a reference at all: a seam
the solution does not define raises NotImplementedError instead of running kafka-ref's
code (leaving a function out must not earn its marks), and no frame, closure or registry of
the process holds the reference for a solution to find.

    kafka-ref lab check 02                    # grade labs/02-producer/solution.py
    kafka-ref lab check 02 --reference        # the same tests on the reference: all pass

Rules: LAB-1, LAB-5, LAB-9 (spec/labs.md).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import pathlib
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

ENV = "KAFKA_REF_SOLUTION"
GRADED = "KAFKA_REF_GRADED_SEAMS"
ROOT = pathlib.Path(__file__).resolve().parents[1]
EDITION = ROOT / "kafka_ref" / "edition.json"
F = TypeVar("F", bound=Callable[..., Any])

# Every seam this process has resolved to its implementation (seam key -> who): the labs'
# batch grader checks it is empty before it forks one child per solution.
RESOLVED: dict[str, str] = {}
_resolving = threading.RLock()


class SolutionLoadError(Exception):
    """The file named by KAFKA_REF_SOLUTION cannot be loaded."""


def solution_files() -> list[str]:
    """The files KAFKA_REF_SOLUTION names, in order (absolute paths)."""
    value = os.environ.get(ENV, "")
    return [os.path.abspath(path) for path in value.split(os.pathsep) if path]


def graded_seams() -> set[str]:
    """The seam keys `kafka-ref lab check` is grading (comma-separated in GRADED)."""
    return {key for key in os.environ.get(GRADED, "").split(",") if key}


@functools.cache
def edition_stripped() -> dict[str, str]:
    """In a student edition: seam key -> the solution file of its lab (absolute)."""
    if not EDITION.is_file():
        return {}
    stripped = json.loads(EDITION.read_text())["stripped"]
    return {key: str(ROOT / lab["solution"]) for key, lab in stripped.items()}


@functools.cache
def solution_module(path: str) -> ModuleType:
    """A solution file, loaded once per process, as a module of its own name (registered,
    so that a dataclass or a pickle in it works as in any module)."""
    name = "kafka_ref_solution_" + hashlib.sha1(path.encode()).hexdigest()[:10]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not os.path.isfile(path):
        raise SolutionLoadError(f"{ENV}={path}: no such Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def defined_in(path: str, name: str) -> Callable[..., Any] | None:
    """The function `name` that the file at `path` defines itself, if it does. One it
    imported (say, kafka-ref's murmur2, to build its partition_for_key on) is not a
    replacement."""
    module = solution_module(path)
    candidate = getattr(module, name, None)
    if candidate is None or getattr(candidate, "__module__", None) != module.__name__:
        return None
    return candidate


def unloadable(name: str, error: BaseException) -> Callable[..., Any]:
    """What a seam runs when its solution file failed to load: the same error, every time."""

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise SolutionLoadError(f"{name}: the solution did not load: {error!r}") from error

    return fail


def not_defined(name: str, files: list[str]) -> Callable[..., Any]:
    """What a graded seam runs when no solution file defines it: never the reference."""

    def fail(*args: Any, **kwargs: Any) -> Any:
        where = ", ".join(files) or "the solution"
        raise NotImplementedError(f"{name} is not defined in {where}: write it")

    return fail


def seam_key(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def seam(reference: F) -> F:
    """Declare `reference` a seam a lab's solution may replace (see the module docstring)."""
    key = seam_key(reference)
    stripped = edition_stripped().get(key)
    if not os.environ.get(ENV) and stripped is None:
        return reference
    name = reference.__name__
    graded = key in graded_seams()
    # The reference lives in this dict only until the seam is resolved: resolving pops it,
    # and puts it back only when no solution defines the seam. A graded seam never has it.
    state: dict[str, Any] = {} if graded else {"reference": reference}

    def resolve() -> Callable[..., Any]:
        with _resolving:
            if "chosen" in state:
                return state["chosen"]
            if state.get("loading"):
                raise SolutionLoadError(f"the solution calls {name} while it is being loaded")
            state["loading"] = True
            files = solution_files() + ([stripped] if stripped and not graded else [])
            try:
                for path in files:
                    found = defined_in(path, name)
                    if found is not None:
                        state.pop("reference", None)
                        state["chosen"], state["path"], RESOLVED[key] = found, path, path
                        return found
            except BaseException as error:
                # A file that does not load never falls back to the reference.
                state.pop("reference", None)
                state["chosen"] = unloadable(name, error)
                raise
            if graded:
                state["chosen"], RESOLVED[key] = not_defined(name, files), "not defined"
            else:
                state["chosen"], RESOLVED[key] = state.pop("reference"), "reference"
            return state["chosen"]

    def dispatch(*args: Any, **kwargs: Any) -> Any:
        chosen = state.get("chosen") or resolve()
        try:
            return chosen(*args, **kwargs)
        except NotImplementedError as error:
            if error.args or "path" not in state:
                raise
            # a skeleton's bare `raise NotImplementedError`: say which function of which file
            message = f"{name} in {state['path']} is not written yet"
            raise NotImplementedError(message) from None

    functools.update_wrapper(dispatch, reference)
    del dispatch.__wrapped__  # type: ignore[attr-defined]  # no way back to the reference
    return dispatch  # type: ignore[return-value]
