"""`localeval train`: fine-tune one cross-encoder per judgement from the registry's MiniLM weights with
sentence-transformers' own cross-encoder trainer, hold part of the pairs out, and write the folder.

The base is the embedder all-minilm-l6-v2 (English): its encoder weights start the cross-encoder and a new
one-logit head is learned, so nothing is downloaded. With --layers under the base's six, that classifier
is the teacher: a student made of that many of its layers, evenly spread (every other one at 3), learns
the teacher's logits on the same pairs (sentence-transformers' MSE distillation) and is what the folder
keeps, its encoder doing half the work at 3. The first layers alone, trained from the labels, learnt
nothing; a student kept its teacher's faithfulness verdicts but not its relevance ones
(docs/pages/benchmarks/accuracy.md). So the default, --layers auto, tries a 3-layer student for each
judgement and keeps it only where it holds its teacher's judgement on the held-out pairs, else the
teacher: a classifier is trained once and scores many times. The run is seeded (the split, the head's
start, the batch order), so the same pairs and options give the same folder contents on the same machine.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import __version__
from ..atomic import one_run_at_a_time
from ..errors import InputError, OptionError, OutputError
from ..files import check_output_dir
from ..progress import Progress
from ..models import sha256_of
from .folder import FORMAT, FORMAT_VERSION, MANIFEST, load_cross_encoder
from .judgements import JUDGEMENTS
from .pairs import Pair, data_sha256, distinct_pairs
from .reading import fitted

BASE = "all-minilm-l6-v2"
#: The parameters the cross-encoder adds to the base (see _optimizer), and how much faster they learn.
HEAD_PREFIXES = ("classifier.", "bert.pooler.")
HEAD_LR_FACTOR = 10
#: The base's encoder layers: a classifier of fewer is distilled from one of all of them.
BASE_LAYERS = 6
#: The student's epochs (at most --epochs), its learning rate as a share of the teacher's, and its head's
#: factor: the head comes trained from the teacher, so it needs no faster start than the layers.
DISTIL_EPOCHS = 3
DISTIL_LR_SHARE = 0.5
DISTIL_HEAD_LR_FACTOR = 2
#: A student whose held-out AUROC falls more than this under its teacher's is named when training ends.
STUDENT_MARGIN = 0.05
#: --layers auto: the student tried, and the held-out correlation with its teacher's probabilities it must
#: reach (besides its AUROC within STUDENT_MARGIN) to be kept. The AUROC of a few dozen held-out pairs moves
#: by 0.07 with the draw; the correlation says whether the student copies its teacher, pair by pair (0.99
#: for the faithfulness student of the bench, 0.54-0.67 for the relevance ones tried).
AUTO = "auto"
AUTO_LAYERS = 3
AGREEMENT_FLOOR = 0.9
#: A judgement needs at least this many pairs of each label to train and to be measured on held-out pairs.
MIN_PER_LABEL = 4
#: The one-sided 95% quantile of the standard normal: a held-out AUROC under chance plus this many of its
#: standard errors cannot be told from a classifier that learned nothing.
CHANCE_Z = 1.645


@dataclass(frozen=True)
class TrainOptions:
    judgements: tuple[str, ...] | None = None  # None: every judgement the pairs label
    epochs: int = 5
    batch_size: int = 16
    learning_rate: float = 1e-4  # the encoder's; the new head's is HEAD_LR_FACTOR times this
    held_out: float = 0.1
    max_length: int = 128
    seed: int = 0
    layers: int | str = AUTO  # of the classifier kept; fewer are learnt from a classifier of BASE_LAYERS
    threads: int | None = None

    def recorded(self) -> dict[str, Any]:
        """The options a manifest records: all but the threads, which do not change what is learned."""
        return {k: v for k, v in asdict(self).items() if k != "threads"}


def train(pairs: Sequence[Pair], out_dir: Path, options: TrainOptions, progress: bool = False) -> dict[str, Any]:
    """Train, then write out_dir in one step (a folder built beside it and renamed in), so an interrupted
    training never leaves a half-written classifier where a run would read it; out_dir is held for the whole
    training, so a second one into it stops at once instead of replacing the first's result. Returns the
    manifest."""
    out_dir = out_dir.resolve()  # `-o .` has no name to build the staging folder beside it with
    check_output_dir(out_dir, (MANIFEST,))
    if out_dir.is_dir() and any(out_dir.iterdir()) and not _is_classifier(out_dir):
        raise OutputError(f"{out_dir} holds files and is not a classifier folder (no {MANIFEST} of format "
                          f"{FORMAT!r}): give a new folder, or a classifier folder to replace")
    check_output_dir(out_dir.parent)  # the finished folder is built beside it, then renamed in
    with one_run_at_a_time(out_dir):
        try:
            return _trained(pairs, out_dir, options, progress)
        except OSError as exc:  # a full disk or a folder taken away mid-training; nothing is left half-written
            raise OutputError(f"cannot write the classifier into {out_dir}: {exc.strerror or exc}; free the "
                              "space or fix the folder, then train again") from None


def _is_classifier(folder: Path) -> bool:
    """Whether `folder` is one `train` wrote, so replacing it loses nothing else: a manifest.json of another
    kind (a web app's, an extension's) means a folder that is not ours to delete."""
    try:
        manifest = json.loads((folder / MANIFEST).read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == FORMAT


def _trained(pairs: Sequence[Pair], out_dir: Path, options: TrainOptions, progress: bool) -> dict[str, Any]:
    from .. import models

    _check_english(pairs)
    by_judgement = _split_by_judgement(distinct_pairs(pairs), options.judgements)
    base = models.find(BASE, "embedder")
    base_path = models.resolve(BASE, "embedder")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    umask = os.umask(0)
    os.umask(umask)
    try:
        trained: dict[str, Any] = {}
        for name, judged in by_judgement.items():
            trained[name] = _train_one(name, judged, base_path, staging / name, options, progress)
        files = {str(p.relative_to(staging)): sha256_of(p) for p in sorted(staging.rglob("*")) if p.is_file()}
        manifest = {
            "format": FORMAT, "version": FORMAT_VERSION, "lang": "en",
            "base": {"name": base.name, "sha256": base.sha256}, "judgements": trained,
            "data_sha256": data_sha256(pairs), "sources": sorted({p.source for p in pairs}),
            "options": options.recorded(), "localeval": __version__,
            "files": files,
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        for path in [staging, *staging.rglob("*")]:  # mkdtemp and the model writer make them private
            path.chmod((0o777 if path.is_dir() else 0o666) & ~umask)
        _replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def chance_bar(n: int) -> float:
    """The held-out AUROC that n pairs must beat to show the classifier learned something: chance (0.5) plus
    CHANCE_Z standard errors of the AUROC of a classifier that learned nothing (Hanley and McNeil's
    sqrt((n1 + n2 + 1) / (12 n1 n2)), taken with the two labels halved, as the held-out split keeps them)."""
    half = max(n, 2) / 2
    return 0.5 + CHANCE_Z * ((n + 1) / (12 * half * half)) ** 0.5


def near_chance(manifest: dict[str, Any]) -> list[str]:
    """A line for each judgement whose held-out pairs cannot tell it from chance. A classifier scores
    whether or not it learned, and on a few hundred or a thousand pairs the recipe lands there on some seeds
    (docs/pages/benchmarks/accuracy.md, "Trained classifier judges"), so the user hears it before scoring."""
    lines = []
    for name, trained in manifest["judgements"].items():
        held = trained["held_out"]
        area, bar = held["auroc"], chance_bar(held["n"])
        if area is None or area < bar:
            shown = ("could not be measured on them" if area is None
                     else f"is {area:.3f}, not above chance (under {bar:.2f} at this size)")
            lines.append(f"{name}: on {held['n']} held-out pairs the AUROC {shown}; check the classifier "
                         "against your own labels (localeval calibrate) before relying on it, or train again "
                         "with another --seed or more pairs")
    return lines


def behind_teacher(manifest: dict[str, Any]) -> list[str]:
    """A line for each judgement whose fewer-layer classifier lost its teacher's judgement on the held-out
    pairs: it may, on a few hundred pairs of long passages (docs/pages/benchmarks/accuracy.md), and a user
    who asked for the speed should hear what it cost before scoring with it."""
    lines = []
    for name, trained in manifest["judgements"].items():
        teacher = trained.get("teacher")
        mine, theirs = trained["held_out"]["auroc"], teacher["held_out"]["auroc"] if teacher else None
        if _within_margin(mine, theirs) is False:
            agreement = "none" if teacher["agreement"] is None else teacher["agreement"]
            lines.append(f"{name}: the {trained['layers']}-layer classifier's held-out AUROC is {mine:.3f}, its "
                         f"{teacher['layers']}-layer teacher's {theirs:.3f} (correlation {agreement}); "
                         f"train this judgement with --layers {teacher['layers']} unless the speed is worth it")
    return lines


def keeps_teacher(student: dict[str, Any], teacher: dict[str, Any], agreement: float | None) -> bool:
    """Whether a student's held-out figures show it kept its teacher's judgement: its AUROC within
    STUDENT_MARGIN of the teacher's and its probabilities correlated with the teacher's at AGREEMENT_FLOOR."""
    return (_within_margin(student["auroc"], teacher["auroc"]) is True
            and agreement is not None and agreement >= AGREEMENT_FLOOR)


def _within_margin(mine: float | None, theirs: float | None) -> bool | None:
    """Whether a student's held-out AUROC is within STUDENT_MARGIN of its teacher's; None where either is
    unknown. The one rule behind both auto's choice and the warning of a student kept by --layers N."""
    if mine is None or theirs is None:
        return None
    return mine >= theirs - STUDENT_MARGIN


def _check_english(pairs: Sequence[Pair]) -> None:
    """Chinese pairs are refused, not learned: the base reads English only, and a classifier trained on text
    it cannot read would still write a folder that scores."""
    from ..judge.prompts import detect_lang

    for pair in pairs:
        if detect_lang(f"{pair.first} {pair.second}") != "en":
            raise InputError(pair.source, None, None, f"Chinese training pairs ({pair.second[:40]!r}): the "
                             f"classifier's base ({BASE}) reads English only; train on English pairs, and score "
                             "Chinese samples without --classifier")


def _split_by_judgement(pairs: Sequence[Pair], wanted: tuple[str, ...] | None) -> dict[str, list[Pair]]:
    for name in wanted or ():
        if name not in JUDGEMENTS:
            raise OptionError(f"--judgements: unknown judgement {name!r}; known: {', '.join(JUDGEMENTS)}")
    names = wanted or tuple(n for n in JUDGEMENTS if any(p.judgement == n for p in pairs))
    if not names:
        raise OptionError("no training pairs: give --data (a generate folder or labelled rows) or --distill")
    out = {}
    for name in names:
        judged = [p for p in pairs if p.judgement == name]
        positives = sum(p.label >= 0.5 for p in judged)
        if min(positives, len(judged) - positives) < MIN_PER_LABEL:
            raise OptionError(f"{name}: {positives} positive and {len(judged) - positives} negative pairs; "
                              f"training needs at least {MIN_PER_LABEL} of each (generate more, or leave "
                              f"{name} out with --judgements)")
        out[name] = judged
    return out


def _train_one(name: str, pairs: list[Pair], base: Path, target: Path, options: TrainOptions,
               progress: bool) -> dict[str, Any]:
    """Fine-tune one cross-encoder, and distil it into fewer layers when asked (or try to, at auto); the
    held-out figures of the one kept (and of its teacher, or of the student auto dropped), and how long it all
    took."""
    import transformers
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss, MSELoss

    auto = options.layers == AUTO
    if not auto and not (isinstance(options.layers, int) and 1 <= options.layers <= BASE_LAYERS):
        raise OptionError(f"--layers {options.layers}: the base has {BASE_LAYERS} layers; give 1 to {BASE_LAYERS}, "
                          f"or {AUTO}")
    layers = AUTO_LAYERS if auto else int(options.layers)
    started = time.perf_counter()
    train_pairs, held = _held_out(pairs, options.held_out, options.seed)
    transformers.set_seed(options.seed)
    model = load_cross_encoder(base, options.threads)
    model.max_seq_length = options.max_length
    judgement = JUDGEMENTS[name]
    read = [fitted(judgement, p.first, p.second, model.tokenizer, options.max_length) for p in train_pairs]
    held_read = [fitted(judgement, p.first, p.second, model.tokenizer, options.max_length) for p in held]
    held_labels = np.asarray([p.label >= 0.5 for p in held], dtype=float)
    distilling = layers < BASE_LAYERS
    student_epochs = min(options.epochs, DISTIL_EPOCHS)
    batches = -(-len(train_pairs) // options.batch_size)
    meter = (Progress(batches * (options.epochs + (student_epochs if distilling else 0)), label=f"training {name}",
                      unit="steps") if progress else None)
    _fit(model, read, [p.label for p in train_pairs], BinaryCrossEntropyLoss(model), options.epochs,
         _optimizer(model, options.learning_rate, HEAD_LR_FACTOR), options, meter)
    probs = _probabilities(name, model, held_read, options)
    figures = _figures(probs, held_labels)
    # the other classifier trained: the teacher of a student kept, or the student auto dropped
    other: dict[str, Any] = {}
    if distilling:
        teacher, teacher_probs, teacher_figures = model, probs, figures
        targets = _logits(teacher, read)
        model = _student_of(teacher, layers)
        transformers.set_seed(options.seed)
        _fit(model, read, targets, MSELoss(model), student_epochs,
             _optimizer(model, options.learning_rate * DISTIL_LR_SHARE, DISTIL_HEAD_LR_FACTOR), options, meter)
        probs = _probabilities(name, model, held_read, options)
        figures = _figures(probs, held_labels)
        # how closely the student kept its teacher's judgement, on pairs neither learnt from
        agreement = _correlation(probs, teacher_probs)
        if auto and not keeps_teacher(figures, teacher_figures, agreement):
            other = {"student": {"layers": layers, "held_out": figures, "agreement": agreement}}
            model, figures, layers = teacher, teacher_figures, BASE_LAYERS
        else:
            other = {"teacher": {"layers": BASE_LAYERS, "held_out": teacher_figures, "agreement": agreement}}
    if meter:
        meter.close()
    model.save(str(target), safe_serialization=True)
    for leftover in ("README.md",):  # the model card names the hub; this folder is local
        (target / leftover).unlink(missing_ok=True)
    return {"prompt": JUDGEMENTS[name].prompt, "layers": layers,
            "pairs": {"train": len(train_pairs), "held_out": len(held)},
            "held_out": figures, **other,
            "seconds": round(time.perf_counter() - started, 1)}


def _fit(model: Any, read: list[tuple[str, str]], labels: Sequence[float], loss: Any, epochs: int, optimizer: Any,
         options: TrainOptions, meter: Progress | None) -> None:
    """One run of sentence-transformers' cross-encoder trainer over the pairs (`labels`: 0/1 targets of a
    BCE loss, or a teacher's logits for MSE)."""
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from transformers import PrinterCallback

    data = Dataset.from_dict({"first": [first for first, _ in read], "second": [second for _, second in read],
                              "label": [float(label) for label in labels]})
    with tempfile.TemporaryDirectory() as scratch:
        args = CrossEncoderTrainingArguments(
            output_dir=scratch, num_train_epochs=epochs, per_device_train_batch_size=options.batch_size,
            learning_rate=optimizer.param_groups[0]["lr"], warmup_steps=0.1, seed=options.seed,
            data_seed=options.seed, save_strategy="no", logging_strategy="no", report_to="none", disable_tqdm=True,
            use_cpu=True, dataloader_num_workers=0, log_level="error")
        trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=data, loss=loss,
                                      callbacks=[_meter(meter)] if meter else None, optimizers=(optimizer, None))
        trainer.remove_callback(PrinterCallback)  # it prints the final loss dict to stdout
        trainer.train()


def _logits(model: Any, read: list[tuple[str, str]]) -> list[float]:
    import torch

    return [float(x) for x in model.predict(read, batch_size=64, show_progress_bar=False,
                                            activation_fn=torch.nn.Identity(), convert_to_numpy=True)]


def _probabilities(name: str, model: Any, read: list[tuple[str, str]], options: TrainOptions) -> np.ndarray:
    import torch

    probs = np.asarray(model.predict(read, batch_size=64, show_progress_bar=False, activation_fn=torch.nn.Sigmoid(),
                                     convert_to_numpy=True), dtype=float)
    if not np.isfinite(probs).all():
        raise OptionError(f"{name}: the training diverged (its scores are not numbers); train again with a lower "
                          f"--learning-rate than {options.learning_rate:g}")
    return probs


def _figures(probs: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    from ..stats.agreement import auroc

    area = auroc(labels, probs)
    return {"n": len(labels), "accuracy": round(float(np.mean((probs >= 0.5) == labels)), 4),
            "auroc": None if area is None else round(area, 4)}


def _correlation(a: np.ndarray, b: np.ndarray) -> float | None:
    """Pearson's r, or None where either side does not vary (no number, never a NaN in the manifest)."""
    if len(a) < 3 or np.std(a) == 0 or np.std(b) == 0:
        return None
    return round(float(np.corrcoef(a, b)[0, 1]), 4)


def _student_of(teacher: Any, layers: int) -> Any:
    """A copy of the trained cross-encoder keeping `layers` of its encoder layers, evenly spread from the
    first (3 of 6: the 1st, 3rd and 5th), with its embeddings and head, as DistilBERT starts its student."""
    import copy

    import torch

    student = copy.deepcopy(teacher)
    encoder = student.model.base_model.encoder
    kept = [round(i * len(encoder.layer) / layers) for i in range(layers)]
    encoder.layer = torch.nn.ModuleList([encoder.layer[i] for i in kept])
    student.model.config.num_hidden_layers = layers
    return student


def _optimizer(model: Any, learning_rate: float, head_factor: float) -> Any:
    """AdamW with BERT's pooler and the one-logit classifier at `head_factor` times the encoder's rate. The
    teacher's head starts random: with one rate for all, a few hundred pairs leave a small model predicting
    the share of positives for epochs before the head finds the encoder's features
    (docs/pages/benchmarks/accuracy.md#trained-classifier-judges), so it learns HEAD_LR_FACTOR times faster."""
    import torch

    head, encoder = [], []
    for name, parameter in model.model.named_parameters():
        (head if name.startswith(HEAD_PREFIXES) else encoder).append(parameter)
    return torch.optim.AdamW([{"params": encoder, "lr": learning_rate},
                              {"params": head, "lr": learning_rate * head_factor}], lr=learning_rate)


def _meter(meter: Progress) -> Any:
    """A trainer callback that advances localeval's progress line once per optimiser step."""
    from transformers import TrainerCallback

    class Meter(TrainerCallback):
        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            meter.advance()

    return Meter()


def _held_out(pairs: list[Pair], share: float, seed: int) -> tuple[list[Pair], list[Pair]]:
    """A seeded split that keeps both labels on each side."""
    rng = np.random.default_rng(seed)
    train, held = [], []
    for positive in (True, False):
        group = [p for p in pairs if (p.label >= 0.5) == positive]
        order = rng.permutation(len(group))
        cut = max(1, round(share * len(group)))
        held += [group[int(i)] for i in order[:cut]]
        train += [group[int(i)] for i in order[cut:]]
    order = rng.permutation(len(train))
    return [train[int(i)] for i in order], held


def _replace(staging: Path, out_dir: Path) -> None:
    """Rename the finished folder into place; a previous classifier there is moved aside, then removed."""
    if out_dir.exists():
        aside = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
        os.replace(out_dir, aside)
        os.replace(staging, out_dir)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(staging, out_dir)
