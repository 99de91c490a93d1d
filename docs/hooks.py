"""MkDocs hook: the metric and CLI reference pages are written from the code at every build.

They are generated, never committed, so that a new metric, group or flag reaches the docs without anyone
remembering to write it down (localeval/reference.py says how; tests/test_docs.py checks the result).
"""

from __future__ import annotations

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files


def on_files(files: Files, config) -> Files:
    from localeval.reference import cli_markdown, metrics_markdown

    for path, markdown in (("reference/metrics.md", metrics_markdown()), ("reference/cli.md", cli_markdown())):
        if files.get_file_from_path(path) is not None:  # a stale hand-written copy must not win
            raise PluginError(f"docs/pages/{path} is generated at build time; delete the committed file")
        files.append(File.generated(config, path, content=markdown))
    return files
