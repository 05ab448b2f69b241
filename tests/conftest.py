"""Hypothesis profiles: ``default`` for development, ``ci`` (the built-in CI profile, chosen when
the ``CI`` environment variable is set), ``thorough`` by hand (``HYPOTHESIS_PROFILE=thorough``)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", max_examples=60, deadline=None)
settings.register_profile(
    "ci", parent=settings.get_profile("ci"), deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
_DEFAULT = "ci" if os.environ.get("CI") else "default"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", _DEFAULT))
