"""Hypothesis profiles: ``default`` for development, ``ci`` (the built-in CI profile, chosen when
the ``CI`` environment variable is set), ``thorough`` by hand (``HYPOTHESIS_PROFILE=thorough``)."""

import os

import pytest
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


@pytest.fixture(scope="module")
def dask_scheduler():
    """Address of a real Dask ``LocalCluster`` on loopback (2 worker processes) for the tests of one
    module that compare a Dask run with a local one (``distributed`` is a test dependency: no skip).
    Module scope: its processes are gone before other modules check for leftover workers."""
    import distributed

    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        yield cluster.scheduler_address


@pytest.fixture
def step_loop(monkeypatch):
    """The oracle runs take the numpy step loop, whose every write goes through the updater's
    methods (a test that instruments them, e.g. ``TikiTaka.transfer``, needs it): the compiled
    loop, with the same bits (``tests/test_oracle_kernels.py``), calls none of them."""
    from simulate.problems import OracleTraining

    monkeypatch.setattr(OracleTraining, "_compiled_terms", lambda self: None)
