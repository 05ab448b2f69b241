"""The statistics of seed ensembles (simulate.verification.stats): written once, the same bits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from simulate.rng import bootstrap_generator
from simulate.verification import (
    BOOTSTRAP_RESAMPLES,
    CI_LEVEL,
    bootstrap_means,
    one_sided_pass,
    percentile_interval,
    resample_counts,
    standard_error,
)


@pytest.mark.parametrize("seeds", [2, 3, 5, 8, 12, 32, 64])
def test_the_standard_error_is_the_inline_formula_and_scipy_sem(seeds):
    values = np.random.default_rng(seeds).lognormal(0.0, 1.5, seeds)
    se = standard_error(values)
    assert se == float(values.std(ddof=1) / math.sqrt(values.size))  # the bits of the old copies
    assert se == pytest.approx(float(scipy_stats.sem(values)), rel=1e-15)


def test_the_standard_error_of_fewer_than_two_values_is_nan():
    assert math.isnan(standard_error([1.5]))
    assert math.isnan(standard_error([]))


def test_the_one_sided_check_allows_z_standard_errors():
    assert one_sided_pass(1.0, 0.1, 0.7, 3.0)
    assert not one_sided_pass(1.0, 0.1, 0.7, 2.0)
    assert one_sided_pass(0.7, 0.0, 0.7, 0.0)
    assert not one_sided_pass(math.nan, 0.1, 0.7, 4.0)


def test_resample_counts_draw_every_seed_count_in_chunks_of_one_stream():
    chunks = list(resample_counts(bootstrap_generator(3), 5, 250))
    assert [c.shape for c in chunks] == [(100, 5), (100, 5), (50, 5)]
    assert all((c.sum(axis=1) == 5).all() for c in chunks)
    again = np.concatenate(list(resample_counts(bootstrap_generator(3), 5, 250)))
    assert np.array_equal(np.concatenate(chunks), again)


def test_bootstrap_means_are_the_resampled_means_of_the_counts():
    per_seed = np.random.default_rng(1).normal(size=(6, 4))
    means = bootstrap_means(per_seed, bootstrap_generator(0), 130)
    counts = np.concatenate(list(resample_counts(bootstrap_generator(0), 6, 130)))
    assert means.shape == (130, 4)
    assert np.allclose(means, counts @ per_seed / 6, rtol=1e-15, atol=0)


def test_the_percentile_interval_ends_are_values_that_occurred():
    values = np.random.default_rng(2).normal(size=BOOTSTRAP_RESAMPLES)
    lo, hi = percentile_interval(values)
    assert lo in values and hi in values and lo < hi
    tail = (1.0 - CI_LEVEL) / 2
    assert np.mean(values < lo) <= tail and np.mean(values > hi) <= tail
    rows = np.stack([values, 2 * values], axis=1)
    lo2, hi2 = percentile_interval(rows, 0.5, axis=0)
    assert lo2.shape == (2,) and lo2[1] == 2 * lo2[0] and hi2[1] == 2 * hi2[0]
