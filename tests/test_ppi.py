"""The PPI++ mean estimator: reference values from ppi_py, the exact λ re-derivation, and simulated coverage."""

from __future__ import annotations

import numpy as np
import pytest

from localeval.stats.ppi import classical_mean_ci, power_tuned_lambda, ppi_mean_ci, z_quantile

# A small fixed data set; the expected numbers below were computed with ppi_py 0.2.3
# (`ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=0.05, lam=...)`, `ppi_mean_pointestimate`, `classical_mean_ci`)
# in a throwaway environment outside this repository.
Y = np.array([1, 0, 1, 1, 0, 1, 1, 0, 1, 1], dtype=float)
F = np.array([0.9, 0.2, 0.8, 0.6, 0.4, 0.7, 0.95, 0.1, 0.3, 0.85])
FU = np.array([0.75, 0.15, 0.9, 0.6, 0.55, 0.05, 0.8, 0.35, 0.95, 0.7, 0.2, 0.65])


@pytest.mark.parametrize(("lam", "low", "high"), [
    (None, 0.4512252680490958, 0.9156291472253675),  # ppi_py's own power tuning
    (1.0, 0.4285767321622489, 0.9197566011710847),   # plain PPI
    (0.5, 0.4512740999670504, 0.9228925666996164),
])
def test_matches_ppi_py_reference_values(lam: float | None, low: float, high: float) -> None:
    result = ppi_mean_ci(Y, F, FU, 0.95, lam=lam, lam_mode="ppi_py")
    assert result.ppi.low == pytest.approx(low, abs=1e-12)
    assert result.ppi.high == pytest.approx(high, abs=1e-12)


def test_point_estimate_and_classical_match_ppi_py() -> None:
    result = ppi_mean_ci(Y, F, FU, 0.95, lam_mode="ppi_py")
    assert result.ppi.estimate == pytest.approx(0.6834272076372316, abs=1e-12)
    assert (result.classical.low, result.classical.high) == pytest.approx((0.41597423491067465, 0.9840257650893253), abs=1e-12)


def test_against_installed_ppi_py_on_random_data() -> None:
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(11)
    for n, big_n in [(20, 50), (150, 3000)]:
        y = (rng.random(n) < 0.4).astype(float)
        f, fu = np.clip(0.7 * y + 0.4 * rng.random(n), 0, 1), rng.random(big_n)
        low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05)
        ours = ppi_mean_ci(y, f, fu, 0.95, lam_mode="ppi_py").ppi
        assert (ours.low, ours.high) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)


def test_lambda_is_the_exact_variance_minimiser() -> None:
    """Re-derivation: evaluate σ̂²(λ) = Var(Y − λf)/n + λ² Var(f~)/N on a fine grid and compare argmins."""
    rng = np.random.default_rng(3)
    grid = np.linspace(0, 1, 20_001)
    for quality in (0.9, 0.5, 0.1, -0.5):
        y = (rng.random(60) < 0.5).astype(float)
        f = np.clip(quality * y + (1 - abs(quality)) * rng.random(60) + (quality < 0), 0, 1)
        fu = rng.random(300)
        var = np.var(y - grid[:, None] * f, axis=1) / 60 + grid**2 * np.var(fu) / 300
        lam = power_tuned_lambda(y, f, fu)
        assert lam == pytest.approx(grid[var.argmin()], abs=1e-4)
        assert ppi_mean_ci(y, f, fu).ppi.std_error**2 == pytest.approx(var.min(), rel=1e-6)


def test_lambda_zero_is_classical_and_constant_judge_gives_zero() -> None:
    fixed = ppi_mean_ci(Y, F, FU, lam=0.0)
    assert (fixed.ppi.low, fixed.ppi.high) == pytest.approx((fixed.classical.low, fixed.classical.high), abs=1e-15)
    assert power_tuned_lambda(Y, np.full(10, 0.7), np.full(12, 0.7)) == 0.0


def _simulate(rng: np.random.Generator, trials: int, n: int, big_n: int, p: float, judge: str) -> tuple[np.ndarray, ...]:
    """Labels Y ~ Bernoulli(p); the judge's probability depends on Y (good), on nothing (useless), or is
    biased upwards (overconfident), so the naive judge mean is wrong but PPI must stay valid."""
    y_all = (rng.random((trials, n + big_n)) < p).astype(float)
    noise = rng.random((trials, n + big_n))
    if judge == "good":
        f_all = np.clip(0.85 * y_all + 0.1 + 0.1 * (noise - 0.5), 0, 1)
    elif judge == "useless":
        f_all = noise
    else:  # biased: says "yes" too often
        f_all = np.clip(0.5 * y_all + 0.45 + 0.2 * (noise - 0.5), 0, 1)
    return y_all[:, :n], f_all[:, :n], f_all[:, n:]


@pytest.mark.parametrize("judge", ["good", "useless", "biased"])
def test_coverage_in_1000_simulated_trials(judge: str) -> None:
    rng = np.random.default_rng(20240601)
    p = 0.3
    y, f, fu = _simulate(rng, 1000, 150, 2000, p, judge)
    result = ppi_mean_ci(y, f, fu, 0.95)
    covered = (result.ppi.low <= p) & (p <= result.ppi.high)
    classical_covered = (result.classical.low <= p) & (p <= result.classical.high)
    assert covered.mean() >= 0.93, covered.mean()
    assert classical_covered.mean() >= 0.93
    # never wider than the labels-only interval, trial by trial (λ = 0 is always a candidate)
    assert np.all(result.ppi.width <= result.classical.width + 1e-12)
    if judge == "good":
        assert np.mean(result.ppi.width) < 0.6 * np.mean(result.classical.width)
    if judge == "biased":  # the judge alone is far off; PPI corrects it
        assert np.mean(np.abs(result.naive_mean - p)) > 0.2


def test_ppi_py_lambda_also_covers() -> None:
    rng = np.random.default_rng(7)
    y, f, fu = _simulate(rng, 1000, 150, 2000, 0.6, "good")
    result = ppi_mean_ci(y, f, fu, 0.95, lam_mode="ppi_py")
    assert np.mean((result.ppi.low <= 0.6) & (0.6 <= result.ppi.high)) >= 0.93


def test_bad_arguments_are_clear() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        ppi_mean_ci([1.0], [0.5], [0.3, 0.4])
    with pytest.raises(ValueError, match="pair up"):
        ppi_mean_ci([1.0, 0.0], [0.5], [0.3])
    with pytest.raises(ValueError, match="NaN"):
        ppi_mean_ci([1.0, 0.0], [0.5, np.nan], [0.3])
    with pytest.raises(ValueError, match="confidence"):
        classical_mean_ci([1.0, 0.0], confidence=95)
    with pytest.raises(ValueError, match="lambda mode"):
        power_tuned_lambda([1.0, 0.0], [0.5, 0.2], [0.3], mode="magic")  # type: ignore[arg-type]


def test_z_quantile() -> None:
    assert z_quantile(0.95) == pytest.approx(1.959963984540054, abs=1e-12)  # scipy.stats.norm.ppf(0.975)
