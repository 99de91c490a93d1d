"""`localeval metrics`: every registered metric (built-in and plugins), its columns' needs, and the groups."""

from __future__ import annotations

import click


@click.command(name="metrics")
def list_metrics() -> None:
    """List metric names, what each needs, its options, and the groups."""
    from ..metrics.registry import groups, specs

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
