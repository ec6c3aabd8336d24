"""Shared settings of the labs' graders: the same verdict on every run.

hypothesis runs enough examples to find a wrong rule, without deadlines (a student's first
solution may be slow, and that is fine). Grading must not depend on chance or on who was
graded before: `derandomize` draws the same examples on every run (seeded from the test
itself), and `database=None` keeps no failing examples between runs, so one student's
counter-examples are never replayed when grading the next.

No explain phase: after shrinking a failure, hypothesis would run the test again and again
to mark the parts of the counter-example that do not matter (`# or any other generated
value`). `lab check` drops those comments from the reason it reports, and the phase took
most of the grading time of a solution failing many property tests (the skeleton).
"""

from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "labs",
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    phases=[p for p in Phase if p is not Phase.explain],
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("labs")
