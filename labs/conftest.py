"""Shared settings of the labs' graders: hypothesis runs enough examples to find a wrong
rule, without deadlines (a student's first solution may be slow, and that is fine)."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "labs", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("labs")
