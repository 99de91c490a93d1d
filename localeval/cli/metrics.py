"""`localeval metrics`: every registered metric (built-in and plugins), its columns' needs, and the groups."""

from __future__ import annotations

from pathlib import Path

import click

from .errors import user_errors


@click.command(name="metrics")
@click.option("--criteria", "criteria", multiple=True, type=click.Path(path_type=Path), metavar="FILE|FOLDER",
              help="Also list the criteria of these files or folders (checked as `score` checks them).")
@user_errors
def list_metrics(criteria: tuple[Path, ...]) -> None:
    """List metric names, what each needs, its options, and the groups."""
    from ..metrics.criteria import load_criteria
    from ..metrics.registry import groups, specs

    load_criteria(criteria)

    click.echo("metrics (K is any positive cutoff):")
    for spec in specs():
        forms = ", ".join(spec.forms)
        needs = ", ".join(spec.requires) or "-"
        source = f"  [plugin {spec.plugin}]" if spec.plugin else ""
        click.echo(f"  {forms:28s} needs {needs:34s} {spec.summary}{source}")
        for option in spec.options:
            click.echo(f"  {'':28s} option {option.flag} (default {option.default})")
    click.echo("groups:")
    for group, names in groups().items():
        click.echo(f"  {group}: {', '.join(names)}")
