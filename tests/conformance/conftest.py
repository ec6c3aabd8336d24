"""The conformance suite's pytest plugin lives in kafka_ref.conformance.plugin (reusable).

Importing its hooks and fixtures here makes them active for this directory: `--target`,
`--capabilities`, `--conformance-report`, `--spec-filter`, and the `target` and `wire`
fixtures. See docs/conformance.md.
"""

from kafka_ref.conformance.plugin import (  # noqa: F401  (pytest finds them by name)
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_terminal_summary,
    target,
    wire,
)
