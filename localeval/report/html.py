"""One self-contained HTML file: the page template with its style, plotly.js, the page's script and the
run data inlined, so the report opens from a USB stick or an audit archive with no network at all.

The page's Content-Security-Policy forbids every fetch (default-src 'none'), so even a future change
that tried to load something would fail visibly in the browser instead of leaking a request. Data goes
in a `<script type="application/json">` block with `<`, `>` and `&` escaped, so no text in a sample can
close the block or open a tag.
"""

from __future__ import annotations

import json
import re
from html import escape
from importlib.resources import files
from typing import Any

from ..errors import LocalevalError

#: The page's scripts, in the order they are concatenated into one scope.
SCRIPTS = ("common.js", "charts.js", "drilldown.js", "samples.js", "app.js")
_PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")


def asset(name: str) -> str:
    return (files(__package__) / "assets" / name).read_text(encoding="utf-8")


def plotly_js() -> tuple[str, str]:
    """plotly.js (minified) from the installed plotly package, and its version."""
    try:
        from plotly import __version__ as plotly_version
        from plotly.offline import get_plotlyjs, get_plotlyjs_version
    except ImportError as exc:
        raise LocalevalError(f"the report needs the plotly package ({exc}); install it with `pip install plotly`") from None
    return get_plotlyjs(), f"plotly.js {get_plotlyjs_version()} (plotly {plotly_version})"


def render(payload: dict[str, Any], title: str) -> str:
    """The finished page; every placeholder of the template is filled once (inserted text is not rescanned)."""
    plotly, plotly_version = plotly_js()
    payload = {**payload, "plotly": plotly_version}
    parts = {
        "TITLE": escape(title),
        "STYLE": asset("report.css"),
        "PLOTLY": _script(plotly, "plotly.js"),
        "SCRIPT": _script("(function () {\n'use strict';\n" + "\n".join(asset(n) for n in SCRIPTS) + "\n})();", "page"),
        "DATA": data_block(payload),
    }
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], asset("report.html"))


def data_block(payload: dict[str, Any]) -> str:
    """JSON safe inside a script element: NaN refused (as everywhere in localeval), markup characters escaped."""
    text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _script(code: str, name: str) -> str:
    if re.search(r"</script", code, re.IGNORECASE):
        raise LocalevalError(f"{name} contains '</script' and cannot be inlined")  # a packaging bug, not user input
    return code
