"""`localeval generate` (a test set from a corpus) and `localeval retrieve` (its baseline retriever)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .errors import user_errors
from .options import OutPath, judge_options, judge_settings


@click.command()
@click.argument("corpus", type=click.Path(path_type=Path))
@click.option("-o", "--out", "out_dir", required=True, type=OutPath(file_okay=False, path_type=Path),
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
    from ..testset.generation import GenerateOptions
    from ..testset.generation import generate as run_generation

    settings = judge_settings(**judge)
    options = GenerateOptions(n=count, seed=settings.seed, top_k=top_k, chunk_size=chunk_size, overlap=overlap,
                              index=index_kind, contradictions=contradictions, judge=settings)
    report = run_generation(corpus, out_dir, options, progress=not quiet)
    if not quiet:
        errors = f", {report['judge_errors']} the judge could not answer for" if report["judge_errors"] else ""
        click.echo(f"{report['documents']} documents, {report['chunks']} chunks; {report['sampled']} sampled, "
                   f"{report['declined']} declined by the judge{errors}, {report['filtered_by_retrieval']} dropped by "
                   f"the retrieval filter (top {top_k}), {report['kept']} kept; results in {out_dir}/")
    if report["chunks_indexed_in_part"]:  # said even with -q: retrieval sees only the start of those chunks
        click.echo(f"warning: {report['chunks_indexed_in_part']} of {report['chunks']} chunks are longer than the "
                   f"embedder reads, so only their start is indexed; give a smaller --chunk-size", err=True)


@click.command()
@click.argument("testset", type=click.Path(path_type=Path))
@click.option("--index", "index_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The index folder `localeval generate` wrote (OUT/index).")
@click.option("-o", "--out", "out_path", required=True, type=OutPath(dir_okay=False, path_type=Path),
              help="The test set with `contexts` filled in.")
@click.option("-k", "--top-k", type=click.IntRange(min=1), default=5, show_default=True, help="Contexts per question.")
@click.option("--embedder", help="Default: the embedder the index was built with (generation.json names it); "
                                 "LOCALEVAL_EMBEDDER for an index that does not record one.")
@user_errors
def retrieve(testset: Path, index_dir: Path, out_path: Path, top_k: int, embedder: str | None) -> None:
    """Baseline retriever: fill each question's `contexts` from the faiss index, to score a baseline end to end."""
    from ..testset.retrieve import retrieve as run_retrieval

    n = run_retrieval(testset, index_dir, out_path, top_k, embedder)
    click.echo(f"{n} questions, top {top_k} contexts each; written to {out_path}", err=True)
