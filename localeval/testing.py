"""A quality gate for teams that gate in pytest: `assert_scores(run_dir, min={...})` fails the test with the
same table `localeval check` prints.

    from localeval.testing import assert_scores

    def test_rag_quality():
        assert_scores("localeval-results", min={"faithfulness": 0.85, "ndcg@10": 0.5}, on="ci-low")
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from .gate import DEFAULT_BOOTSTRAP, GateResult, check_run, parse_thresholds


def assert_scores(run_dir: str | Path, min: Mapping[str, float] | None = None,  # noqa: A002 - mirrors --min
                  max: Mapping[str, float] | None = None, on: str = "mean",  # noqa: A002 - mirrors --max
                  n_boot: int = DEFAULT_BOOTSTRAP, confidence: float = 0.95, seed: int = 0,
                  max_skipped: float | None = None) -> GateResult:
    """Raise AssertionError (with the check table) unless every threshold holds; return the result otherwise.

    A threshold on a column the run does not have, or a run folder that is missing, raises the library's
    OptionError / InputError instead: a typo in the gate must not read as a quality failure. `max_skipped`
    is `localeval check --max-skipped`: the share of samples a column may have skipped.
    """
    from .cli.tables import check_table

    result = check_run(Path(run_dir), parse_thresholds(min or {}, max or {}), on, n_boot, confidence, seed, max_skipped)
    if not result.passed:
        raise AssertionError(f"quality gate failed:\n{check_table(result)}")
    return result
