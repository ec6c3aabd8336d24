"""Seams: where a student's code takes the place of a concept's reference code.

Each concept the labs teach is one named, pure function in the module named after the
concept: `partition_for_key` in client/partitioner.py (which partition a keyed record goes
to), `range_assign` in client/assignors/range.py (who in a group reads which partition),
`should_retain` in log/cleaner.py (does compaction keep this record), and so on. Such a
function is declared a *seam* with the `@seam` decorator. One setting chooses who
implements every seam:

    KAFKA_REF_SOLUTION=labs/02-producer/solution.py

names a Python file (a lab's `solution.py`, or any file a student writes). Each seam whose
name that file defines runs the file's function instead of the reference, everywhere in
the process: our producer, the broker, the simulator, the conformance suite's targets. A
broker or a client started as a child process inherits the variable, so a whole cluster
runs the student's code. Seams the file does not define keep the reference (a function it
imports, from kafka-ref or elsewhere, does not count as defined).

Without the variable a seam *is* the reference function (the decorator returns it
unchanged), so the hot paths pay nothing for being teachable. With it, the call goes
through a small dispatcher that loads the file on first use: the file may import any
kafka-ref module, including the one whose seam it replaces, without an import cycle.

    kafka-ref lab check 02                    # grade labs/02-producer/solution.py
    kafka-ref lab check 02 --reference        # the same tests on the reference: all pass

Rules: LAB-1 (spec/labs.md).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

ENV = "KAFKA_REF_SOLUTION"
F = TypeVar("F", bound=Callable[..., Any])


class SolutionLoadError(Exception):
    """The file named by KAFKA_REF_SOLUTION cannot be loaded."""


@functools.cache
def solution_module(path: str) -> ModuleType:
    """The solution file, loaded once per process."""
    spec = importlib.util.spec_from_file_location("kafka_ref_solution", path)
    if spec is None or spec.loader is None or not os.path.isfile(path):
        raise SolutionLoadError(f"{ENV}={path}: no such Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def implementation(reference: F) -> F:
    """Who implements `reference`'s seam now: the solution's function of the same name if
    KAFKA_REF_SOLUTION names a file that defines one, else the reference itself."""
    path = os.environ.get(ENV)
    if not path:
        return reference
    solution = solution_module(os.path.abspath(path))
    candidate = getattr(solution, reference.__name__, None)
    # Only a function the file defines counts: one it imported from kafka-ref (say, the
    # reference murmur2, to build its partition_for_key on) is not a replacement.
    if candidate is None or getattr(candidate, "__module__", None) != solution.__name__:
        return reference
    return candidate


def seam(reference: F) -> F:
    """Declare `reference` a seam a lab's solution may replace (see the module docstring)."""
    if not os.environ.get(ENV):
        return reference

    @functools.wraps(reference)
    def dispatch(*args: Any, **kwargs: Any) -> Any:
        return implementation(reference)(*args, **kwargs)

    dispatch.reference = reference  # type: ignore[attr-defined]
    return dispatch  # type: ignore[return-value]
