"""How far a judge is from humans: agreement statistics and the decision threshold that best matches them.

A judge gives a score s in [0, 1] (a probability or a 0/1 verdict); its verdict at threshold t is
"positive" when s ≥ t. Against human labels y ∈ {0, 1}:

- confusion matrix: TP = #(y=1, s≥t), FN = #(y=1, s<t), FP = #(y=0, s≥t), TN = #(y=0, s<t);
- accuracy = (TP + TN) / n;
- balanced accuracy = mean over the classes present in the labels of that class's recall,
  (TP/(TP+FN) + TN/(TN+FP)) / 2 when both are present (sklearn's `balanced_accuracy_score`, which also
  falls back to the one recall present);
- Cohen's kappa = (p_o − p_e) / (1 − p_e), p_o = accuracy, p_e = (P·L₁ + N·L₀) / n² with P, N the judge's
  positive/negative counts and L₁, L₀ the humans' (Cohen 1960; sklearn's `cohen_kappa_score`);
  undefined (None) when p_e = 1, i.e. both raters put every sample in the same single class.

- AUROC = P(a positive outscores a negative), ties counting ½ (the Mann-Whitney U statistic over n₁·n₀):
  how well the scores rank, whatever the threshold; undefined (None) without both classes.

Threshold selection maximises balanced accuracy rather than accuracy, so that a judge saying "yes" to
everything on a mostly-"yes" label set does not look calibrated.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class Confusion:
    """Counts of judge verdict × human label."""

    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn


@dataclass(frozen=True)
class Agreement:
    """Judge-vs-human agreement at one threshold; the positive rates show which way the judge leans."""

    threshold: float
    n: int
    accuracy: float
    balanced_accuracy: float
    kappa: float | None
    confusion: Confusion
    judge_positive_rate: float
    label_positive_rate: float

    def as_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["confusion"] = {"tp": self.confusion.tp, "fp": self.confusion.fp, "fn": self.confusion.fn,
                            "tn": self.confusion.tn}
        return out


@dataclass(frozen=True)
class ThresholdChoice:
    """The chosen threshold and what it changes relative to the default 0.5, both measured on the labels."""

    threshold: float
    at_default: Agreement
    at_chosen: Agreement

    def as_dict(self) -> dict[str, object]:
        return {
            "threshold": self.threshold,
            "at_0.5": self.at_default.as_dict(),
            "at_chosen": self.at_chosen.as_dict(),
            "balanced_accuracy_gain": self.at_chosen.balanced_accuracy - self.at_default.balanced_accuracy,
            "note": "chosen on the same labels it is measured on, so the gain is optimistic",
        }


def confusion_matrix(labels: ArrayLike, scores: ArrayLike, threshold: float = DEFAULT_THRESHOLD) -> Confusion:
    """Counts with the verdict s ≥ threshold (a score exactly at the threshold is positive)."""
    y, s = _checked(labels, scores)
    predicted = s >= threshold
    positive = y == 1
    return Confusion(
        tp=int(np.sum(predicted & positive)),
        fp=int(np.sum(predicted & ~positive)),
        fn=int(np.sum(~predicted & positive)),
        tn=int(np.sum(~predicted & ~positive)),
    )


def agreement(labels: ArrayLike, scores: ArrayLike, threshold: float = DEFAULT_THRESHOLD) -> Agreement:
    """Accuracy, balanced accuracy, Cohen's kappa and the confusion matrix at one threshold."""
    c = confusion_matrix(labels, scores, threshold)
    n = c.n
    accuracy = (c.tp + c.tn) / n
    recalls = [hits / total for hits, total in ((c.tp, c.tp + c.fn), (c.tn, c.tn + c.fp)) if total]
    balanced = sum(recalls) / len(recalls)
    judge_pos, label_pos = c.tp + c.fp, c.tp + c.fn
    expected = (judge_pos * label_pos + (n - judge_pos) * (n - label_pos)) / n**2
    kappa = None if expected >= 1.0 else (accuracy - expected) / (1.0 - expected)
    return Agreement(
        threshold=float(threshold), n=n, accuracy=accuracy, balanced_accuracy=balanced, kappa=kappa,
        confusion=c, judge_positive_rate=judge_pos / n, label_positive_rate=label_pos / n,
    )


def auroc(labels: ArrayLike, scores: ArrayLike) -> float | None:
    """Area under the ROC curve by ranks (average ranks for ties), so that bench figures and calibrate's
    agree to the digit; None when the labels hold one class only."""
    y, s = _checked(labels, scores)
    n_pos, n_neg = int(y.sum()), int((1 - y).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(s.size, dtype=float)
    ranks[order] = np.arange(1, s.size + 1)
    for value in np.unique(s):  # ties share their average rank
        tied = s == value
        ranks[tied] = ranks[tied].mean()
    u = ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def candidate_thresholds(scores: ArrayLike) -> NDArray[np.float64]:
    """0.5 and every midpoint between consecutive distinct scores: between two midpoints the verdicts do
    not change, so these cover every non-degenerate split (all-positive/all-negative carry no information
    and are offered only when 0.5 itself produces them)."""
    distinct = np.unique(np.asarray(scores, dtype=float))
    midpoints = (distinct[:-1] + distinct[1:]) / 2.0
    return np.unique(np.concatenate([[DEFAULT_THRESHOLD], midpoints]))


def choose_threshold(labels: ArrayLike, scores: ArrayLike) -> ThresholdChoice:
    """Threshold with the highest balanced accuracy on the labels; ties go to the one closest to 0.5, then
    to the lower one, so the choice is deterministic and moves away from 0.5 only for a real gain."""
    y, s = _checked(labels, scores)
    thresholds = candidate_thresholds(s)
    balanced = _balanced_accuracy_at(y, s, thresholds)
    best = balanced.max()
    tied = thresholds[np.isclose(balanced, best, rtol=0.0, atol=1e-12)]
    distance = np.abs(tied - DEFAULT_THRESHOLD)
    chosen = float(tied[np.isclose(distance, distance.min(), rtol=0.0, atol=1e-12)].min())
    return ThresholdChoice(threshold=chosen, at_default=agreement(y, s, DEFAULT_THRESHOLD),
                           at_chosen=agreement(y, s, chosen))


def _balanced_accuracy_at(y: NDArray, s: NDArray, thresholds: NDArray) -> NDArray[np.float64]:
    """Balanced accuracy at many thresholds at once: sorted scores + searchsorted count s ≥ t per class."""
    pos_scores, neg_scores = np.sort(s[y == 1]), np.sort(s[y == 0])
    recalls = []
    if pos_scores.size:
        recalls.append((pos_scores.size - np.searchsorted(pos_scores, thresholds, side="left")) / pos_scores.size)
    if neg_scores.size:
        recalls.append(np.searchsorted(neg_scores, thresholds, side="left") / neg_scores.size)
    return np.mean(recalls, axis=0)


def _checked(labels: ArrayLike, scores: ArrayLike) -> tuple[NDArray, NDArray]:
    y = np.asarray(labels, dtype=float)
    s = np.asarray(scores, dtype=float)
    if y.ndim != 1 or y.shape != s.shape:
        raise ValueError(f"labels and scores must be 1-D and pair up, got shapes {y.shape} and {s.shape}")
    if y.size == 0:
        raise ValueError("no labelled samples to compare with")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("labels must be 0 or 1")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores contain NaN or infinite values")
    return y, s
