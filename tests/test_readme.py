"""The README's CLI reference and metric tables cannot drift from the code."""

from __future__ import annotations

from pathlib import Path

import click

from localeval.cli import cli
from localeval.metrics.registry import groups, name_forms

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _commands(group: click.Group, prefix: str = "localeval"):
    for name, command in group.commands.items():
        path = f"{prefix} {name}"
        yield path, command
        if isinstance(command, click.Group):
            yield from _commands(command, path)


def test_every_command_and_option_is_documented() -> None:
    for path, command in _commands(cli):
        assert path in README, f"README lacks the command `{path}`"
        for param in command.params:
            for flag in [*param.opts, *param.secondary_opts]:
                if flag.startswith("--") and flag != "--help":
                    assert flag in README, f"README lacks option {flag} of `{path}`"


def test_every_metric_name_and_group_is_documented() -> None:
    for form in name_forms():
        assert f"`{form}`" in README, f"README lacks the metric {form}"
    for group in groups():
        assert f"`{group}`" in README
