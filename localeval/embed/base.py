"""What every embedder is, and the one warning they share.

An embedder turns texts into unit vectors (so a cosine similarity is a dot product); `name` says which
model did it, and goes into every result row that used it.
"""

from __future__ import annotations

import warnings
from typing import Protocol, Sequence

import numpy as np

from ..text import has_cjk


class Embedder(Protocol):
    name: str
    #: The registry's languages for the model; empty for a user's own folder (then nothing is assumed).
    languages: tuple[str, ...]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 array of unit vectors."""
        ...

    def cut(self, texts: Sequence[str]) -> list[bool]:
        """For each text, whether the model reads only its start (a window of tokens shorter than it):
        a metric says so in its details rather than score the start as if it were the whole."""
        ...


class LanguageWarning:
    """An English-only model gives near-random similarities on Chinese: say so, once per model and run.
    Registered multilingual models list "zh" among their languages and never warn."""

    def __init__(self, name: str, languages: Sequence[str]) -> None:
        self.name, self.languages = name, tuple(languages)
        self.warned = False

    def check(self, texts: Sequence[str]) -> None:
        if self.warned or not self.languages or "zh" in self.languages or "multilingual" in self.languages:
            return
        if any(has_cjk(t) for t in texts):
            self.warned = True
            warnings.warn(
                f"embedder '{self.name}' is trained on {', '.join(self.languages)} only and is scoring Chinese text: "
                "its similarities are unreliable there; leave --embedder out (Chinese then gets the multilingual "
                "use-multilingual-v3) or pass a multilingual model",
                stacklevel=4,
            )
