"""Shared test setup: hypothesis profiles and the `spec` marker.

Profiles (choose with HYPOTHESIS_PROFILE): `dev` is quick, `ci` is what CI runs (the default
where the CI variable is set, as CI services set it), `deep` is for a long hunt for
counterexamples.
"""

import os

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
