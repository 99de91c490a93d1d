"""Prediction-powered inference for a mean: a few human labels correct a judge's scores on many samples.

Reproduces the mean estimator of PPI++ (Angelopoulos, Duchi, Zrnic 2023, "PPI++: Efficient
Prediction-Powered Inference", arXiv:2311.01453), as used by ARES (Saad-Falcon et al. 2024) and
implemented in `ppi_py.ppi_mean_ci`.

Notation: n labelled samples with human labels Y_i and judge scores f_i; N unlabelled samples with judge
scores f~_j, all drawn from the same population. For any λ,

    θ̂(λ) = λ · mean(f~) + mean(Y − λ f)

is unbiased for E[Y] (the λ-weighted judge mean is "rectified" by the labelled residuals), with the
plug-in variance (population variances, ddof=0, as ppi_py)

    σ̂²(λ) = Var(Y − λ f) / n + λ² Var(f~) / N
          = v_Y/n − 2λ c/n + λ² (v_f/n + v_f~/N),     c = Cov(Y, f), v_f on the labelled judge scores.

The CLT interval is θ̂(λ) ± z σ̂(λ), z = Φ⁻¹(1 − α/2). λ = 0 is the classical labels-only interval
mean(Y) ± z sd(Y)/√n; λ = 1 is the original PPI.

Power tuning ("min_variance", the default) takes the λ in [0, 1] that minimises σ̂²(λ) exactly:

    λ* = clip(c / (v_f + (n/N) v_f~), 0, 1).

Since λ = 0 is a candidate, σ̂(λ*) ≤ sd(Y)/√n: the interval is never wider than the classical one on the
same labels, in every sample, not just asymptotically. `lam_mode="ppi_py"` instead uses the paper's
formula as ppi_py implements it, λ = clip(c / ((1 + n/N) · Var₁(f ∪ f~)), 0, 1) with Var₁ the ddof=1
variance of the pooled judge scores; the two agree asymptotically, only the first carries the
finite-sample guarantee.

Every function works on the last axis, so 1,000 simulated trials are one call on (1000, n) arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

LambdaMode = Literal["min_variance", "ppi_py"]
FloatOrArray = float | NDArray[np.float64]


@dataclass(frozen=True)
class MeanCI:
    """A point estimate with its two-sided CLT interval; arrays when the inputs had leading trial axes."""

    estimate: FloatOrArray
    low: FloatOrArray
    high: FloatOrArray
    std_error: FloatOrArray

    @property
    def width(self) -> FloatOrArray:
        return self.high - self.low

    def as_dict(self) -> dict[str, float]:
        return {"estimate": float(self.estimate), "low": float(self.low), "high": float(self.high),
                "std_error": float(self.std_error)}


@dataclass(frozen=True)
class PPIResult:
    """The prediction-powered interval beside what one would report without it, for the same data."""

    ppi: MeanCI
    classical: MeanCI
    lam: FloatOrArray
    naive_mean: FloatOrArray
    n_labeled: int
    n_unlabeled: int
    confidence: float

    def as_dict(self) -> dict[str, object]:
        return {
            "estimate": float(self.ppi.estimate),
            "ci": [float(self.ppi.low), float(self.ppi.high)],
            "std_error": float(self.ppi.std_error),
            "lambda": float(self.lam),
            "classical_estimate": float(self.classical.estimate),
            "classical_ci": [float(self.classical.low), float(self.classical.high)],
            "naive_judge_mean": float(self.naive_mean),
            "n_labeled": self.n_labeled,
            "n_unlabeled": self.n_unlabeled,
            "confidence": self.confidence,
        }


def z_quantile(confidence: float) -> float:
    """Φ⁻¹(1 − α/2) for a two-sided interval at `confidence` = 1 − α."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def classical_mean_ci(y: ArrayLike, confidence: float = 0.95) -> MeanCI:
    """Labels only: mean(Y) ± z · sd₀(Y)/√n (ddof=0, like ppi_py's `classical_mean_ci`)."""
    labels = _as_float(y, "y")
    n = labels.shape[-1]
    if n < 2:
        raise ValueError(f"need at least 2 labelled samples for an interval, got {n}")
    mean = labels.mean(axis=-1)
    se = labels.std(axis=-1) / np.sqrt(n)
    z = z_quantile(confidence)
    return MeanCI(_out(mean), _out(mean - z * se), _out(mean + z * se), _out(se))


def power_tuned_lambda(y: ArrayLike, yhat: ArrayLike, yhat_unlabeled: ArrayLike,
                       mode: LambdaMode = "min_variance") -> FloatOrArray:
    """λ in [0, 1] (formulas in the module docstring); 0 when the judge scores do not vary (no information)."""
    labels, judged, unjudged = _checked(y, yhat, yhat_unlabeled)
    n, big_n = labels.shape[-1], unjudged.shape[-1]
    cov = _mean(_centered(labels) * _centered(judged))
    if mode == "min_variance":
        denom = judged.var(axis=-1) + (n / big_n) * unjudged.var(axis=-1)
    elif mode == "ppi_py":
        pooled = np.concatenate([judged, unjudged], axis=-1)
        denom = (1.0 + n / big_n) * pooled.var(axis=-1, ddof=1)
    else:
        raise ValueError(f"unknown lambda mode '{mode}'; use 'min_variance' or 'ppi_py'")
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(denom > 0, cov / np.where(denom > 0, denom, 1.0), 0.0)
    return _out(np.clip(lam, 0.0, 1.0))


def ppi_mean_ci(y: ArrayLike, yhat: ArrayLike, yhat_unlabeled: ArrayLike, confidence: float = 0.95,
                lam: float | None = None, lam_mode: LambdaMode = "min_variance") -> PPIResult:
    """PPI++ estimate of E[Y] with its CLT interval; `lam` fixes λ (1 = plain PPI, 0 = classical)."""
    labels, judged, unjudged = _checked(y, yhat, yhat_unlabeled)
    n, big_n = labels.shape[-1], unjudged.shape[-1]
    if n < 2:
        raise ValueError(f"need at least 2 labelled samples for an interval, got {n}")
    weight = np.asarray(power_tuned_lambda(labels, judged, unjudged, lam_mode) if lam is None else lam, dtype=float)
    residual = labels - weight[..., None] * judged
    estimate = weight * unjudged.mean(axis=-1) + residual.mean(axis=-1)
    se = np.sqrt(residual.var(axis=-1) / n + weight**2 * unjudged.var(axis=-1) / big_n)
    z = z_quantile(confidence)
    ppi = MeanCI(_out(estimate), _out(estimate - z * se), _out(estimate + z * se), _out(se))
    return PPIResult(
        ppi=ppi,
        classical=classical_mean_ci(labels, confidence),
        lam=_out(weight),
        naive_mean=_out(unjudged.mean(axis=-1)),
        n_labeled=n,
        n_unlabeled=big_n,
        confidence=confidence,
    )


def _checked(y: ArrayLike, yhat: ArrayLike, yhat_unlabeled: ArrayLike) -> tuple[NDArray, NDArray, NDArray]:
    labels, judged, unjudged = _as_float(y, "y"), _as_float(yhat, "yhat"), _as_float(yhat_unlabeled, "yhat_unlabeled")
    if labels.shape != judged.shape:
        raise ValueError(f"y and yhat must pair up, got shapes {labels.shape} and {judged.shape}")
    if unjudged.shape[:-1] != labels.shape[:-1] or unjudged.shape[-1] < 1:
        raise ValueError(f"yhat_unlabeled must have the same leading axes and at least 1 sample, got {unjudged.shape}")
    return labels, judged, unjudged


def _as_float(values: ArrayLike, name: str) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=float)
    if array.ndim == 0:
        raise ValueError(f"{name} must be a sequence of numbers, got a scalar")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def _centered(values: NDArray) -> NDArray:
    return values - values.mean(axis=-1, keepdims=True)


def _mean(values: NDArray) -> NDArray:
    return values.mean(axis=-1)


def _out(value: ArrayLike) -> FloatOrArray:
    """Plain floats for single estimates (JSON-friendly), arrays for batches of trials."""
    array = np.asarray(value, dtype=float)
    return float(array) if array.ndim == 0 else array
