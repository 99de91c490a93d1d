"""A trained classifier judge on disk: one cross-encoder folder per judgement and a manifest.

manifest.json records what a user (and `summary.json`) needs to trust the numbers: the base model and its
sha256, the judgements trained, a hash of the training pairs, the held-out figures, the language, and the
sha256 of every file. The folder's identity (the judge cache's model key) is the manifest's own sha256, so
any change to any file is a new judge; a file that no longer matches its recorded sha256 is refused with
one line before anything is scored, never loaded as if it were the trained judge.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..errors import LocalevalError
from ..judge.prompts import LANGS
from ..models import sha256_of
from .judgements import BY_PROMPT, JUDGEMENTS, Judgement
from .reading import shown

MANIFEST = "manifest.json"
FORMAT = "localeval-classifier"
#: 3: a faithfulness classifier reads its statements marked (reading.py), so one of an earlier version, trained
#: on other texts, would be scored on text it never learned from (version 2 was a reading since withdrawn).
FORMAT_VERSION = 3
#: Pairs scored per forward pass; judge/classified.py windows a long text to fit the model, so memory stays
#: bounded by this.
BATCH = 32


class ClassifierError(LocalevalError):
    """A classifier folder that is missing, damaged or foreign, or input it was not trained for."""


@dataclass(frozen=True)
class ClassifierFolder:
    """A checked classifier folder: its manifest read, every file's sha256 confirmed."""

    path: Path
    manifest: dict[str, Any]
    sha256: str

    @property
    def lang(self) -> str:
        return str(self.manifest["lang"])

    @property
    def judgements(self) -> tuple[Judgement, ...]:
        return tuple(JUDGEMENTS[name] for name in self.manifest["judgements"])

    def answers(self, prompt: str) -> Judgement | None:
        """The judgement trained here that gives the verdicts of `prompt`, if any."""
        judgement = BY_PROMPT.get(prompt)
        return judgement if judgement is not None and judgement.name in self.manifest["judgements"] else None

    def describe(self) -> dict[str, Any]:
        """What summary.json records of it (a folder of before --layers has no layers, teacher or student)."""
        trained = self.manifest["judgements"]
        return {"path": str(self.path), "sha256": self.sha256, "lang": self.lang, "base": self.manifest["base"],
                "judgements": {j.name: {"prompt": j.prompt, **{key: value for key, value in trained[j.name].items()
                                                               if key in ("layers", "held_out", "teacher", "student")}}
                               for j in self.judgements}}


def check_classifier(path: Path | str) -> ClassifierFolder:
    """The folder, checked: ClassifierError naming what is wrong (missing, not a classifier, a newer format,
    a file missing or changed) and what to do."""
    folder = Path(path)
    manifest_path = folder / MANIFEST
    if not folder.is_dir():
        raise ClassifierError(f"--classifier {folder}: {'is a file' if folder.exists() else 'no such folder'}; "
                              "give the folder `localeval train` wrote")
    try:
        raw = manifest_path.read_bytes()
    except FileNotFoundError:
        raise ClassifierError(f"--classifier {folder}: no {MANIFEST}; this is not a folder `localeval train` "
                              "wrote (or its training did not finish)") from None
    except OSError as exc:
        raise ClassifierError(f"--classifier {folder}: cannot read {MANIFEST}: {exc.strerror}") from None
    try:
        manifest = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ClassifierError(f"--classifier {manifest_path}: not valid JSON; the folder is damaged: train it "
                              "again") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ClassifierError(f"--classifier {manifest_path}: not a localeval classifier manifest (format "
                              f"{manifest.get('format') if isinstance(manifest, dict) else None!r})")
    if manifest.get("version") != FORMAT_VERSION:
        raise ClassifierError(f"--classifier {manifest_path}: manifest version {manifest.get('version')!r}; "
                              f"this localeval reads version {FORMAT_VERSION}: train it again with this version")
    judgements, files = manifest.get("judgements"), manifest.get("files")
    if not isinstance(judgements, dict) or not judgements or not isinstance(files, dict) or not files:
        raise ClassifierError(f"--classifier {manifest_path}: the manifest lists no judgements or no files; "
                              "train it again")
    unknown = sorted(set(judgements) - set(JUDGEMENTS))
    if unknown:
        raise ClassifierError(f"--classifier {manifest_path}: unknown judgement {unknown[0]!r}; known: "
                              f"{', '.join(JUDGEMENTS)}")
    _check_fields(manifest, manifest_path)
    for name in judgements:  # a file added where a model loads from could change what loads
        added = sorted(str(f.relative_to(folder)) for f in (folder / name).rglob("*")
                       if f.is_file() and str(f.relative_to(folder)) not in files)
        if added:
            raise ClassifierError(f"--classifier {folder}: {added[0]} is not in {MANIFEST}; the folder was changed: "
                                  "remove the file, or copy the folder again")
    for name, digest in sorted(files.items()):
        file = folder / name
        if not file.is_file():
            raise ClassifierError(f"--classifier {folder}: {name} is missing; the folder is incomplete: copy "
                                  "it whole or train it again")
        try:
            found = sha256_of(file)
        except OSError as exc:
            raise ClassifierError(f"--classifier {folder}: cannot read {name}: {exc.strerror}") from None
        if found != digest:
            raise ClassifierError(f"--classifier {folder}: {name} does not match the sha256 in {MANIFEST}; "
                                  "the folder was changed or damaged: copy it again or train it again")
    return ClassifierFolder(folder, manifest, hashlib.sha256(raw).hexdigest())


def _check_fields(manifest: dict[str, Any], path: Path) -> None:
    """The fields a run reads (the language, the base, each judgement's held-out figures), so a hand-edited
    manifest is one line here rather than an error in the middle of a run."""
    problem = None
    if manifest.get("lang") not in LANGS:
        problem = f"lang {manifest.get('lang')!r} (expected one of {', '.join(LANGS)})"
    elif not isinstance(manifest.get("base"), dict):
        problem = "no base model record"
    else:
        for name, trained in manifest["judgements"].items():
            if not isinstance(trained, dict) or not isinstance(trained.get("held_out"), dict):
                problem = f"judgement {name!r} has no held-out figures"
                break
    if problem:
        raise ClassifierError(f"--classifier {path}: {problem}; the manifest was changed: train the classifier "
                              "again")


class Classifier:
    """The loaded cross-encoders of a checked folder, one per judgement, each loaded on first use.

    On a CPU with AMX the forward pass runs in bfloat16, faster, for probabilities a hundredth apart at most
    (docs/pages/benchmarks/accuracy.md). Elsewhere float32, which was faster even on a CPU with AVX512-BF16
    and no AMX. The precision is part of each cached answer's key and of summary.json, so a run never mixes
    the two."""

    def __init__(self, folder: ClassifierFolder, threads: int | None = None) -> None:
        self.folder = folder
        self.threads = threads
        self.precision = "bf16" if _native_bf16() else "fp32"
        self._models: dict[str, Any] = {}

    def model(self, judgement: Judgement) -> Any:
        if judgement.name not in self._models:
            self._models[judgement.name] = load_cross_encoder(self.folder.path / judgement.name, self.threads)
        return self._models[judgement.name]

    def max_tokens(self, judgement: Judgement) -> int:
        return int(self.model(judgement).max_seq_length)

    def count_tokens(self, judgement: Judgement, text: str) -> int:
        return len(self.model(judgement).tokenizer.tokenize(text))

    def pair_tokens(self, judgement: Judgement, first: str, second: str) -> int:
        """The tokens of the two texts as the cross-encoder reads them (reading.py's marks included)."""
        return sum(self.count_tokens(judgement, text) for text in shown(judgement, first, second) if text)

    def probabilities(self, judgement: Judgement, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(yes) per pair, read as the classifier was trained to read it (reading.py). Pairs are scored in
        order of length, so a batch pads little, then put back."""
        import torch

        model = self.model(judgement)
        pairs = [shown(judgement, *pair) for pair in pairs]
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16"):
            scores = model.predict([pairs[i] for i in order], batch_size=BATCH, show_progress_bar=False,
                                   activation_fn=torch.nn.Sigmoid(), convert_to_numpy=True)
        out = [0.0] * len(pairs)
        for i, score in zip(order, scores):
            out[i] = float(score)
        if not all(math.isfinite(p) for p in out):  # never cached, never read as a 0 or a 1
            raise ClassifierError(f"the classifier {self.folder.path / judgement.name} gave a score that is not "
                                  "a number: its training diverged; train it again with a lower --learning-rate")
        return out


def _native_bf16() -> bool:
    """Whether the forward pass runs on a CPU with AMX, whose tiles compute bfloat16 (a GPU keeps float32)."""
    import torch

    if torch.cuda.is_available():
        return False
    try:
        # oneDNN's own probe says yes on any AVX-512 CPU, where bfloat16 is emulated and slower than float32;
        # on the one Xeon with AVX512-BF16 and no AMX measured it was slower too, with the weights cast once or
        # under autocast alike (docs/pages/benchmarks/accuracy.md), so only AMX's tiles count, and only where
        # the kernel grants them (some VMs advertise AMX they cannot run).
        return bool(torch.cpu._is_amx_tile_supported() and torch.cpu._init_amx()
                    and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch without oneDNN, or without these probes
        return False


def load_cross_encoder(path: Path, threads: int | None = None) -> Any:
    """A cross-encoder from a local folder, on the CPU unless a GPU is there; nothing is read from a hub,
    and the libraries' own progress bars and notes stay off stderr (ours is the only progress line)."""
    import logging
    import os

    for switch in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(switch, "1")
    import torch
    from huggingface_hub.utils import disable_progress_bars
    from sentence_transformers import CrossEncoder
    from transformers.utils import logging as transformers_logging

    disable_progress_bars()
    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()  # a base model's "newly initialised head" is the point
    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    if threads:
        torch.set_num_threads(threads)
    try:
        return CrossEncoder(str(path), num_labels=1, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ClassifierError(f"cross-encoder {path} could not be loaded: {str(exc).splitlines()[0]}") from None
