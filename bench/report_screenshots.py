"""Screenshots of a report for the docs: the page down to the first charts, one sample's drill-down, and
the Verdict thresholds section.

    .venv/bin/python bench/report_screenshots.py out/demo --sample q3

builds the report of RUN_DIR into a temporary folder, opens it in headless chromium (tests/browser.py)
and writes report-demo.png, report-drilldown.png and report-verdicts.png into docs/pages/img (--docs). No
model runs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import harness

from localeval.report import build_report
from tests.browser import chromium, open_report


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--sample", default="q3", help="the sample whose drill-down is shown")
    parser.add_argument("--docs", type=Path, default=harness.REPO / "docs" / "pages" / "img",
                        help="the folder the screenshots go to")
    args = parser.parse_args()
    args.docs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, chromium() as browser:
        out = Path(tmp) / "report.html"
        build_report([args.run_dir], out, title="localeval report: the bundled demo")
        visit = open_report(browser, out, width=1280, height=1020)
        if visit.errors:
            raise SystemExit(f"the page reported errors: {visit.errors}")
        charts = visit.page.locator("#distributions .grid .card").nth(0).bounding_box()  # down to the first charts
        visit.page.screenshot(path=str(args.docs / "report-demo.png"), full_page=True,
                              clip={"x": 0, "y": 0, "width": 1280, "height": charts["y"] + charts["height"] + 16})
        visit.page.locator("section#verdicts").screenshot(path=str(args.docs / "report-verdicts.png"))
        visit.page.click(f"#samples tr.sample-row[data-id='{args.sample}']")
        drill = visit.page.locator("#samples tr.drill")
        drill.wait_for()
        row = visit.page.locator(f"#samples tr.sample-row[data-id='{args.sample}']")
        row.scroll_into_view_if_needed()
        box_row, box_drill = row.bounding_box(), drill.bounding_box()
        visit.page.screenshot(path=str(args.docs / "report-drilldown.png"), full_page=True, clip={
            "x": 0, "y": box_row["y"] - 80 + visit.page.evaluate("window.scrollY"), "width": 1280,
            "height": box_drill["y"] + box_drill["height"] - box_row["y"] + 90})
    for name in ("report-demo.png", "report-drilldown.png", "report-verdicts.png"):
        print(f"{args.docs / name}: {(args.docs / name).stat().st_size / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
