"""`localeval train`: a classifier judge from generated pairs, the judge's own verdicts and human labels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .errors import user_errors
from .options import FiniteFloatRange, OutPath


@click.command()
@click.option("-o", "--out", "out_dir", required=True, type=OutPath(file_okay=False, path_type=Path),
              help="Folder for the classifier (one model per judgement and manifest.json); a classifier there is replaced.")
@click.option("--data", "data", multiple=True, type=click.Path(path_type=Path), metavar="DIR|FILE",
              help="Labelled pairs, repeatable: a folder `localeval generate` wrote (add --contradictions there for "
                   "faithfulness negatives), or a JSONL of rows labelled context_relevance / answer_faithfulness / "
                   "answer_relevance 0 or 1 (people's labels).")
@click.option("--distill", multiple=True, type=click.Path(path_type=Path), metavar="RUN_DIR",
              help="A run scored with the GGUF judge on your unlabelled samples: its verdicts become soft labels "
                   "(repeatable).")
@click.option("--judgements", metavar="NAMES",
              help="Comma-separated: context_relevance, answer_faithfulness, answer_relevance. Default: every one "
                   "the pairs label.")
@click.option("--epochs", type=click.IntRange(min=1), default=5, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=16, show_default=True)
@click.option("--learning-rate", type=FiniteFloatRange(min=0, min_open=True), default=1e-4, show_default=True,
              help="The encoder's; the new classification head learns 10 times faster.")
@click.option("--held-out", type=FiniteFloatRange(0.01, 0.5), default=0.1, show_default=True,
              help="Share of each judgement's pairs kept out of training and measured on at the end.")
@click.option("--max-length", type=click.IntRange(min=32, max=512), default=128, show_default=True,
              help="Tokens of a pair the cross-encoder reads; longer passages are windowed when scoring.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True)
@click.option("--layers", type=click.Choice(["auto", *map(str, range(1, 7))]), default="auto", show_default=True,
              help="Encoder layers of the classifier kept. Under the base's 6, a 6-layer classifier is trained "
                   "first and taught to one of this many (at 3, 1.2-1.6 times as fast on the bench; train prints the "
                   "held-out figures of both). auto: a 3-layer one for each judgement, kept where it holds its "
                   "teacher's judgement on the held-out pairs, else the 6; 6 trains fastest.")
@click.option("--threads", type=click.IntRange(min=1), help="CPU threads for training (default: torch's).")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no report.")
@user_errors
def train(out_dir: Path, data: tuple[Path, ...], distill: tuple[Path, ...], judgements: str | None, epochs: int,
          batch_size: int, learning_rate: float, held_out: float, max_length: int, seed: int, layers: str,
          threads: int | None, quiet: bool) -> None:
    """Fine-tune a classifier judge (ARES's method) from all-MiniLM-L6-v2; score with it by
    `localeval score --classifier DIR`. English only."""
    from ..classifier.pairs import read_pairs
    from ..classifier.training import AUTO, TrainOptions, behind_teacher, near_chance
    from ..classifier.training import train as run_training

    if not data and not distill:
        raise click.UsageError("give training pairs: --data DIR|FILE and/or --distill RUN_DIR")
    names = tuple(n.strip() for n in judgements.split(",") if n.strip()) if judgements else None
    options = TrainOptions(judgements=names, epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                           held_out=held_out, max_length=max_length, seed=seed,
                           layers=layers if layers == AUTO else int(layers), threads=threads)
    pairs = read_pairs(data, distill, seed)
    manifest = run_training(pairs, out_dir, options, progress=not quiet)
    if not quiet:
        for name, trained in manifest["judgements"].items():
            figures = trained["held_out"]
            click.echo(f"{name}: {trained['pairs']['train']} pairs trained, {trained['seconds']:.0f} s; held out "
                       f"{figures['n']}: accuracy {figures['accuracy']:.3f}, AUROC {figures['auroc']}"
                       f"{_layers(trained)}")
        click.echo(f"classifier in {out_dir}/; score with --classifier {out_dir}", err=True)
    for line in near_chance(manifest) + behind_teacher(manifest):
        click.echo(f"warning: {line}", err=True)


def _layers(trained: dict[str, Any]) -> str:
    """The end of a judgement's line: the teacher of the student kept, or the student --layers auto dropped."""
    if "teacher" in trained:
        teacher = trained["teacher"]
        return (f"; {trained['layers']} layers learnt from a {teacher['layers']}-layer one (its AUROC "
                f"{teacher['held_out']['auroc']}, correlation {teacher['agreement']})")
    if "student" in trained:
        student = trained["student"]
        return (f"; all {trained['layers']} layers kept: a {student['layers']}-layer copy lost their judgement (its "
                f"AUROC {student['held_out']['auroc']}, correlation {student['agreement']})")
    return ""
