"""Shared settings of the labs' graders: the same verdict on every run.

hypothesis runs enough examples to find a wrong rule, without deadlines (a student's first
solution may be slow, and that is fine). Grading must not depend on chance or on who was
graded before: `derandomize` draws the same examples on every run (seeded from the test
itself), and `database=None` keeps no failing examples between runs, so one student's
counter-examples are never replayed when grading the next.
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "labs",
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("labs")
