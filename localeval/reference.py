"""The documentation's metric and CLI reference pages, written from the code when the site is built.

A hand-kept reference drifts: a new metric, group or flag lands and the page never hears of it. These
pages are therefore generated from the metric registry and the click command tree at every build (the docs
hook `docs/hooks.py` calls the two functions below), and tests/test_docs.py checks that every registered
name and every flag is on them. Plugins installed where the site is built appear too, marked as such.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Iterator

#: How `requires` entries read to a user: `context_ids` is not a field of the input format.
FIELDS = {"context_ids": "`contexts` with ids"}

_CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
PARAGRAPH = "\n\n"


def metrics_markdown() -> str:
    """The metric reference page. Everything on it is read from the registry and from a metric built with
    the default options, so a metric cannot exist without its entry, nor an entry outlive its metric."""
    from .metrics import build_metrics
    from .metrics.registry import groups, lower_is_better, specs

    lower = set(lower_is_better())
    out = ["# Metric reference", "",
           "Generated from the metric registry when this site was built, so it lists exactly the metrics of that "
           "version of localeval (and of any metric plugin installed beside it). `localeval metrics` prints the "
           "same list on your machine. What the metrics mean and which to use: the "
           "[metrics guide](../metrics/index.md).", "",
           "Names are canonical: the same string is used in `--metrics`, in the result files and here. `K` is "
           "any positive integer cutoff (`ndcg@10`); a metric with a cutoff writes one column named as written.",
           "", "## Groups", "", "`--metrics` takes a group name wherever it takes a metric name.", ""]
    out += [f"- `{group}`: {', '.join(f'`{name}`' for name in names)}" for group, names in groups().items()]
    out += [""]
    for spec in specs():
        # An instance with the default options knows what a run needs (faithfulness reads the field its
        # --faithfulness-against names); building one loads no model.
        k = spec.default_k or 10
        names = {"none": [spec.name], "optional": [spec.name, f"{spec.name}@{k}"], "required": [f"{spec.name}@{k}"]}
        built = build_metrics(names[spec.cutoff])
        metric = built[0]
        columns = list(dict.fromkeys(c.replace(f"@{k}", "@K") for m in built for c in m.columns))
        out += [f"## {', '.join(f'`{form}`' for form in spec.forms)}", "", _paragraphs(inspect.getdoc(spec.cls) or spec.summary), ""]
        facts = [f"Needs: {', '.join(FIELDS.get(f, f'`{f}`') for f in metric.requires) or 'nothing'}.",
                 f"Columns: {', '.join(f'`{c}`' for c in columns)}."]
        member = f"`{spec.member}`"
        in_groups = [f"`{g}`" for g in (*spec.groups, "all")]
        facts.append(f"Groups: {', '.join(in_groups)}" + (f" (as {member})." if spec.cutoff == "required" else "."))
        if spec.cls.models:
            facts.append(f"Runs the local models: {', '.join(f'the {kind}' for kind in spec.cls.models)}.")
        if lower & set(metric.columns):
            facts.append("Lower is better: `compare` and the report count a drop as a gain.")
        if spec.cls.scale == "relative":
            facts.append("Its values rank samples; they are not a share of anything (the report does not colour them).")
        if spec.aliases:
            facts.append(f"Other tools' names, answered with \"did you mean\": {', '.join(f'`{a}`' for a in spec.aliases)}.")
        if spec.plugin:
            facts.append(f"From the plugin package `{spec.plugin}`.")
        out += [f"- {fact}" for fact in facts]
        if spec.options:
            out += ["- Options:"]
            out += [f"    - {_metric_option(option)}" for option in spec.options]
        out += [""]
    return "\n".join(out)


def cli_markdown() -> str:
    """The CLI reference page, in the words `--help` uses (click's own usage lines and help records), so
    that the page and the terminal never disagree."""
    import click

    from .cli import cli

    out = ["# CLI reference", "",
           "Generated from the `localeval` command tree when this site was built. `localeval COMMAND --help` "
           "prints the same on your machine; every command also takes `-h` / `--help`.", "",
           "Exit codes: 0 success; 1 a `check` threshold failed; 2 a problem with the input, the options, the "
           "models or the output folder (one line on stderr, never a traceback; `localeval --debug ...` shows "
           "the full traceback).", ""]
    root = click.Context(cli, info_name="localeval")
    for ctx in _contexts(root):
        command = ctx.command
        out += [f"## `{ctx.command_path}`", "", "```text", command.get_usage(ctx), "```", ""]
        help_text = inspect.cleandoc(command.help or "").split("\f")[0]
        out += [_paragraphs(help_text.replace("\b\n", "")), ""]
        if isinstance(command, click.Group):
            out += ["Commands:", ""]
            out += [f"- [`{ctx.command_path} {name}`](#{_anchor(f'{ctx.command_path} {name}')}): "
                    f"{_paragraphs(inspect.cleandoc(sub.help or '')).partition(PARAGRAPH)[0]}"
                    for name, sub in command.commands.items() if not sub.hidden]
            out += [""]
        arguments = [p for p in command.params if isinstance(p, click.Argument)]
        if arguments:
            out += ["Arguments: " + ", ".join(f"`{p.make_metavar(ctx)}`" + ("" if p.required else " (optional)")
                                              for p in arguments) + ".", ""]
        help_option = command.get_help_option(ctx)
        options = [record for p in command.get_params(ctx) if isinstance(p, click.Option) and p is not help_option
                   for record in [p.get_help_record(ctx)] if record is not None]
        if options:
            out += ["Options:", ""]
            out += [f"- `{flags}`" + (f": {_prose(text)}" if text else "") for flags, text in options]
            out += [""]
    return "\n".join(out)


def _contexts(ctx: Any) -> Iterator[Any]:
    """The command tree depth first, in the order commands were added (the order `--help` lists them)."""
    import click

    yield ctx
    if isinstance(ctx.command, click.Group):
        for name, command in ctx.command.commands.items():
            if not command.hidden:
                yield from _contexts(click.Context(command, info_name=name, parent=ctx))


def _anchor(path: str) -> str:
    """The id MkDocs' toc extension gives a heading `path` in backticks."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", path).strip().lower())


def _metric_option(option: Any) -> str:
    python = f"`MetricOptions({option.name}=...)`"
    if isinstance(option.default, bool):
        flags = f"`{option.flag}` / `--no-{option.flag[2:]}`"
        default = option.flag if option.default else f"--no-{option.flag[2:]}"
    else:
        flags, default = f"`{option.flag}{' ' + option.metavar if option.metavar else ''}`", option.default
    values = ""
    if option.choices:
        values = " " + " \\| ".join(f"`{c}`" for c in option.choices)
    elif option.minimum is not None or option.maximum is not None:
        values = f" (from {option.minimum} to {option.maximum})"
    return f"{flags}{values}, default `{default}` ({python}): {_prose(option.help)}"


def _paragraphs(text: str) -> str:
    """Docstrings are wrapped at source width; Markdown wants a paragraph per line group, kept as written."""
    return PARAGRAPH.join(_prose(" ".join(p.split())) for p in re.split(r"\n\s*\n", text.strip()) if p.strip())


def _prose(text: str) -> str:
    """Help and docstring text as Markdown: code spans stay as written, and characters Markdown would read
    as markup elsewhere (`<metric column>` as an HTML tag, `*` and `_` as emphasis) are escaped."""
    pieces, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        pieces += [_escape(text[last:span.start()]), span.group(0)]
        last = span.end()
    return "".join(pieces + [_escape(text[last:])])


def _escape(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\*_\[\]`])", r"\\\1", text)


__all__ = ["cli_markdown", "metrics_markdown"]
