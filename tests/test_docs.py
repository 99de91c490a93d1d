"""The documentation site and the README that points into it.

The site must build with `mkdocs build --strict` (a broken link, a missing anchor or a page left out of the
navigation fails), its generated references must name every metric and every flag the code has, and,
opened from disk in a real browser, it must make no request off the disk: its readers may have no network.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import click
import pytest

from localeval.cli import cli
from localeval.metrics import build_metrics
from localeval.metrics.registry import groups, specs
from localeval.reference import cli_markdown, metrics_markdown

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README = REPO / "README.md"
#: Where a page may fetch from: itself and its own folder tree on disk, or data it carries.
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `make docs` builds it, into a temporary folder."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs is not installed: run `.venv/bin/pip install -e '.[docs]'` (`make install` does)")
    out = tmp_path_factory.mktemp("site")
    # The hook is imported from docs/: leave no bytecode there. Material 9.7+ prints an end-of-life banner.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(DOCS / "mkdocs.yml"),
                           "--site-dir", str(out)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


def _commands(ctx: click.Context):
    yield ctx
    if isinstance(ctx.command, click.Group):
        for name, command in ctx.command.commands.items():
            yield from _commands(click.Context(command, info_name=name, parent=ctx))


# ---- the generated references ----------------------------------------------------------------------------

def test_metric_reference_names_every_metric_group_column_and_option() -> None:
    page = metrics_markdown()
    for spec in specs():
        for form in spec.forms:
            assert f"`{form}`" in page, f"the metric reference lacks {form}"
        for option in spec.options:
            assert re.search(rf"`{re.escape(option.flag)}[ `]", page), f"the metric reference lacks {option.flag} of {spec.name}"
        if spec.cutoff == "none":
            (metric,) = build_metrics([spec.name])
            for column in metric.columns:
                assert f"`{column}`" in page, f"the metric reference lacks the column {column} of {spec.name}"
    for group, members in groups().items():
        assert f"- `{group}`: {', '.join(f'`{m}`' for m in members)}\n" in page, f"the group {group} is not listed as it is"


def test_cli_reference_names_every_command_and_option() -> None:
    page = cli_markdown()
    for ctx in _commands(click.Context(cli, info_name="localeval")):
        assert f"## `{ctx.command_path}`" in page, f"the CLI reference lacks `{ctx.command_path}`"
        section = page.split(f"## `{ctx.command_path}`\n", 1)[1].split("\n## ", 1)[0]
        for param in ctx.command.params:
            for flag in [*param.opts, *param.secondary_opts]:
                if flag.startswith("--"):
                    assert re.search(rf"{re.escape(flag)}\b", section), f"the CLI reference lacks {flag} of `{ctx.command_path}`"


def test_generated_pages_are_not_committed() -> None:
    assert not list((DOCS / "pages" / "reference").glob("*.md")), "reference pages are written by docs/hooks.py"


# ---- the built site --------------------------------------------------------------------------------------

def test_site_has_every_page_and_offline_search(site: Path) -> None:
    pages = sorted(p.relative_to(DOCS / "pages").with_suffix(".html") for p in (DOCS / "pages").rglob("*.md"))
    for page in [*pages, Path("reference/metrics.html"), Path("reference/cli.html")]:
        assert (site / page).is_file(), f"{page} was not built"
    assert (site / "search" / "search_index.js").is_file()  # Material's offline plugin: search without a server
    metrics = (site / "reference" / "metrics.html").read_text(encoding="utf-8")
    assert all(f"<code>{form}</code>" in metrics for spec in specs() for form in spec.forms)
    assert "<code>localeval calibrate</code>" in (site / "reference" / "cli.html").read_text(encoding="utf-8")


class _Sources(HTMLParser):
    """Every URL an HTML page loads by itself (scripts, styles, images, frames, preloads), not links."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("script", "img", "iframe", "source", "audio", "video", "embed") and values.get("src"):
            self.urls.append(values["src"])
        if tag == "link" and values.get("href") and (values.get("rel") or "") != "canonical":
            if any(rel in (values.get("rel") or "").split() for rel in ("stylesheet", "preload", "preconnect", "icon",
                                                                      "modulepreload", "prefetch", "manifest")):
                self.urls.append(values["href"])


def test_no_page_loads_anything_from_elsewhere(site: Path) -> None:
    """What the browser test below checks on a few pages, checked statically on every page."""
    for page in site.rglob("*.html"):
        if page.name == "404.html":  # for a web server (root-relative URLs); never opened from disk
            continue
        parser = _Sources()
        parser.feed(page.read_text(encoding="utf-8"))
        remote = [url for url in parser.urls if urlsplit(url).scheme not in ("", "data") or url.startswith("//")]
        assert remote == [], f"{page.relative_to(site)} loads {remote}"
        for url in parser.urls:
            if not url.startswith("data:"):
                assert (page.parent / unquote(urlsplit(url).path)).exists(), f"{page.relative_to(site)} loads missing {url}"


@pytest.mark.browser
def test_site_opened_from_disk_makes_no_request_and_search_works(site: Path) -> None:
    from .browser import chromium

    requests: list[str] = []
    errors: list[str] = []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("request", lambda request: requests.append(request.url))
        page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
        page.on("console", lambda message: errors.append(f"console: {message.text}") if message.type == "error" else None)
        page.set_default_timeout(60_000)
        for name in ("index.html", "metrics/judge.html", "reference/cli.html"):
            page.goto((site / name).as_uri(), wait_until="load")
            assert page.locator("h1").first.inner_text()
        page.goto((site / "index.html").as_uri(), wait_until="load")
        search = page.locator("input.md-search__input")
        search.click()  # on file:// Material starts its search worker when the search box opens
        search.press_sequentially("faithfulness")  # typed: Material reads key events, not a filled value
        results = page.locator(".md-search-result__item")
        results.first.wait_for(state="visible")
        assert results.count() > 0
        results.first.locator("a").first.click()  # a result opens its page from disk
        page.wait_for_load_state("load")
        assert page.url.startswith(site.as_uri()) and "faithfulness" in page.locator("article").inner_text()
        page.close()
    outside = [url for url in requests if not url.startswith(LOCAL_SCHEMES)]
    assert outside == [], f"the site asked for {outside}"
    assert all(url.startswith(site.as_uri()) for url in requests if url.startswith("file:")), requests
    assert errors == []


# ---- the README ------------------------------------------------------------------------------------------

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _site_page(target: Path) -> Path | None:
    """The built page of a docs/pages Markdown file, if `target` is one."""
    try:
        return target.relative_to(DOCS / "pages").with_suffix(".html")
    except ValueError:
        return None


def test_readme_is_short_and_every_link_resolves(site: Path) -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300, "the README is the front door: details belong in docs/pages"
    links = _LINK.findall(text)
    assert any(link.startswith("docs/pages/") for link in links)
    for link in links:
        if urlsplit(link).scheme:
            continue
        path, _, anchor = link.partition("#")
        target = (REPO / unquote(path)).resolve()
        assert target.exists(), f"README links to {link}, which does not exist"
        built = _site_page(target)
        if anchor and built is not None:
            assert f'id="{anchor}"' in (site / built).read_text(encoding="utf-8"), f"README links to a missing heading: {link}"
