"""Headless Debian chromium driven by playwright, for the report tests and bench/report_bench.py.

Playwright talks to the browser we give it (`executable_path`); `playwright install` is never run (it
downloads browsers from the internet). Every request the page makes is recorded, and console errors and
uncaught exceptions are collected, so a test can assert the file stays self-contained and clean.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

#: Flags that work in a container as root with no GPU and no network; playwright adds a fresh profile dir.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
INSTALL_HINT = "run `make browser` (as root: apt-get install -y chromium fonts-noto-cjk) or set LOCALEVAL_CHROMIUM"


def chromium_path() -> str | None:
    return os.environ.get("LOCALEVAL_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Visit:
    """One page load: what the page requested, what went wrong, and when it said it was ready."""

    page: Any
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)  # alert()/confirm() a sample's text must never cause
    ready_ms: float | None = None

    def outside_requests(self, own_url: str) -> list[str]:
        """Requests for anything but the file itself, data: and about: URLs (blob: is made by the page)."""
        return [url for url in self.requests
                if url != own_url and not url.startswith(("data:", "about:", "blob:"))]


@contextmanager
def chromium(timeout_ms: int = 120_000) -> Iterator[Any]:
    """A headless chromium for the duration of the block."""
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        raise RuntimeError(f"chromium is not installed; {INSTALL_HINT}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS, timeout=timeout_ms)
        try:
            yield browser
        finally:
            browser.close()


def open_report(browser: Any, path: Path, width: int = 1400, height: int = 900, timeout_ms: int = 120_000) -> Visit:
    """Load the report from file:// and wait for the page's ready marker (set once every chart is drawn)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    visit = Visit(page)
    page.on("request", lambda request: visit.requests.append(request.url))
    page.on("console", lambda message: visit.errors.append(f"console {message.type}: {message.text}")
            if message.type in ("error", "warning") else None)
    page.on("pageerror", lambda error: visit.errors.append(f"page error: {error}"))
    page.on("dialog", lambda dialog: (visit.dialogs.append(dialog.message), dialog.dismiss()))
    page.set_default_timeout(timeout_ms)
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.wait_for_function("document.documentElement.getAttribute('data-ready') !== null")
    visit.ready_ms = page.evaluate("window.localevalReadyMs")
    return visit
