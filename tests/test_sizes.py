"""Size inference for the paper's nonlinear plateaus (numerics.experiments.study.plateaus)."""

from __future__ import annotations

import numpy as np
import pytest
from tolerances import ROUNDOFF, rtol

from numerics.experiments.execution import Execution
from numerics.experiments.criteria import SIZE_REGION_DELTA
from numerics.experiments.study.plateaus import chi_square, infer_sizes, write_size_inference


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("sizes")
    result = infer_sizes((4, 8), (16, 32), n_contexts=64, n_seeds=2,
                         execution=Execution(progress=False, cache_dir=out / "cache"))
    return (result, write_size_inference(result, out)), out


def test_chi_square_is_the_sum_of_squared_standardised_residuals():
    paper = np.array([1.0, 2.0, 3.0])
    bound = np.array([[1.5, 2.0, np.nan]])
    se = np.array([[0.5, 1.0, 1.0]])
    assert chi_square(paper, bound, se)[0] == pytest.approx(1.0, rel=rtol(ROUNDOFF))


def test_every_cell_and_row_has_its_bound_and_rows_with_k_above_P_are_skipped(small):
    (result, _), _ = small
    assert result.mixture.shape == (2, 2, 14)
    k = np.array([r["k"] for r in result.rows])
    for j, P in enumerate(result.P_values):
        assert np.all(np.isfinite(result.mixture[:, j, k <= P]))
        assert np.all(np.isnan(result.mixture[:, j, k > P]))


def test_chi_square_map_best_size_and_region_follow_from_the_bounds(small):
    (result, markdown), out = small
    paper = np.array([r["value"] for r in result.rows])
    recomputed = np.nansum((paper - result.mixture) ** 2 / result.mixture_se**2, axis=-1)
    np.testing.assert_allclose(result.chi2_mixture, recomputed, rtol=rtol(ROUNDOFF))
    i, j = np.unravel_index(np.argmin(recomputed), recomputed.shape)
    assert result.best_mixture == (result.d_values[i], result.P_values[j])
    limit = recomputed.min() + SIZE_REGION_DELTA * max(1.0, recomputed.min() / (len(paper) - 2))
    assert set(result.region_mixture) == {(result.d_values[a], result.P_values[b])
                                          for a, b in zip(*np.nonzero(recomputed <= limit))}
    assert f"d = {result.best_mixture[0]}, P = {result.best_mixture[1]}" in markdown
    assert (out / "figures" / "sizes_chi2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "sizes.json").is_file() and (out / "sizes.md").is_file()


def test_rerunning_reads_every_bound_from_the_cache(small, monkeypatch):
    (result, _), out = small
    import numerics.experiments.cache as cache

    def must_not_compute(*args):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(cache, "_save", must_not_compute)  # a value is saved only when it was computed
    again = infer_sizes((4, 8), (16, 32), n_contexts=64, n_seeds=2,
                        execution=Execution(progress=False, cache_dir=out / "cache"))
    np.testing.assert_array_equal(again.chi2_mixture, result.chi2_mixture)
