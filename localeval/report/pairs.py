"""The report's comparison of several runs: stats/compare.py's paired differences, and per pair and column
the samples where one system wins and the other loses, largest differences first.

Only the `top` largest wins each way are listed (with the counts of all wins, losses and ties), so the
table stays small however large the runs; those samples are embedded in the page for their drill-down.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np

from ..data.labels import Labels
from ..errors import InputError
from ..results.runs import ScoredRun
from ..stats.compare import align, compare_runs

#: Samples listed per pair, column and direction.
TOP = 100


def comparison_payload(runs: Sequence[ScoredRun], n_boot: int, confidence: float, seed: int,
                       labels: Mapping[str, Labels], lower_is_better: Sequence[str], top: int = TOP) -> dict[str, Any]:
    """compare_runs' result plus the win/loss lists; runs of different test sets give {"error": why}."""
    try:
        ids = align(runs)
    except InputError as exc:
        return {"error": f"no paired comparison: {exc}"}
    result = compare_runs(runs, None, n_boot, confidence, seed, labels, lower_is_better).as_dict()
    result["winloss"] = [win_loss(runs[i], runs[j], ids, col["column"], col["lower_is_better"], top)
                         for i, j in combinations(range(len(runs)), 2) for col in result["columns"]]
    return result


def win_loss(a: ScoredRun, b: ScoredRun, ids: list[str], column: str, lower_better: bool, top: int) -> dict[str, Any]:
    """Samples scored in both runs where a is better (largest margin first), where b is, and the counts."""
    va, vb = a.values(column, ids), b.values(column, ids)
    both = np.flatnonzero(~np.isnan(va) & ~np.isnan(vb))
    gain = (va[both] - vb[both]) * (-1.0 if lower_better else 1.0)  # > 0: a is better on that sample
    order = np.argsort(-gain, kind="stable")
    a_wins = [int(both[k]) for k in order[:top] if gain[k] > 0]
    b_wins = [int(both[k]) for k in order[::-1][:top] if gain[k] < 0]

    def rows(positions: list[int]) -> list[dict[str, Any]]:
        return [{"id": ids[p], "a": float(va[p]), "b": float(vb[p])} for p in positions]

    return {"a": a.name, "b": b.name, "column": column, "n": int(both.size), "a_better": int((gain > 0).sum()),
            "b_better": int((gain < 0).sum()), "ties": int((gain == 0).sum()), "top": top, "a_wins": rows(a_wins),
            "b_wins": rows(b_wins)}


def listed_ids(comparison: Mapping[str, Any]) -> list[str]:
    """The sample ids the win/loss tables name, to embed them whatever the cap."""
    seen: dict[str, None] = {}
    for entry in comparison.get("winloss", []):
        for row in entry["a_wins"] + entry["b_wins"]:
            seen.setdefault(row["id"])
    return list(seen)
