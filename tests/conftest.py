"""Shared test setup: hypothesis profiles, the `spec` marker and `--mutant`.

Profiles (choose with HYPOTHESIS_PROFILE): `dev` is quick, `ci` is what CI runs (the default
where the CI variable is set, as CI services set it), `deep` is for a long hunt for
counterexamples.

Long campaigns (fault campaigns, thousand-transaction interop runs) have a short form that CI
runs and a full form: `campaign(short, full)` gives the size, the full one when the
environment sets KAFKA_REF_LONG=1 (`make test-long`). Both forms run the same checks.

`--mutant NAME` applies one of kafka_ref/conformance/mutants.py's bugs in this process and
runs only the tests citing the rules it declares: how a mutant of a rule no client can
observe is caught (CONF-3).
"""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def campaign(short: int, full: int) -> int:
    """The size of a long campaign: `full` when KAFKA_REF_LONG=1, else the short form CI runs."""
    return full if os.environ.get("KAFKA_REF_LONG") == "1" else short


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--mutant", default=None, help="apply this mutant (mutants.py) in process")


def pytest_configure(config: pytest.Config) -> None:
    name = config.getoption("--mutant")
    if name:
        from kafka_ref.conformance.mutants import apply

        apply(name)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    name = config.getoption("--mutant")
    if not name:
        return
    from kafka_ref.conformance.mutants import MUTANTS

    rules = set(MUTANTS[name].rules)
    keep = [i for i in items if rules & {r for m in i.iter_markers("spec") for r in m.args}]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep
