"""Local sentence-transformers embeddings, loaded from a folder on disk and never from a hub.

The model is loaded once per run and shared by every metric that needs it. Vectors are L2-normalised, so
a cosine similarity is a dot product. Loading sets the Hugging Face offline switches first: a folder that
lacks a file must fail here, loudly, rather than trigger a download on a machine that may have network.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from .errors import ModelError
from .text import has_cjk

class Embedder:
    """Encodes texts to unit vectors with a sentence-transformers model folder."""

    def __init__(self, path: Path, name: str | None = None, languages: Sequence[str] = (), device: str = "cpu",
                 batch_size: int = 32) -> None:
        for switch in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
            os.environ.setdefault(switch, "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # a per-load bar on stderr would interleave with ours

        self.path = path
        self.name = name or path.name
        self.languages = tuple(languages)
        self.batch_size = batch_size
        try:
            self._model = SentenceTransformer(str(path), device=device, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ModelError(f"embedder {path} could not be loaded: {str(exc).splitlines()[0]}") from None
        self._warned_cjk = False

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 array of unit vectors."""
        self._warn_if_unsupported(texts)
        if not texts:
            return np.zeros((0, self._model.get_sentence_embedding_dimension() or 0), dtype=np.float32)
        vectors = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def _warn_if_unsupported(self, texts: Sequence[str]) -> None:
        """An English-only model gives near-random similarities on Chinese: say so once per run."""
        if self._warned_cjk or not self.languages or "zh" in self.languages or "multilingual" in self.languages:
            return
        if any(has_cjk(t) for t in texts):
            self._warned_cjk = True
            warnings.warn(
                f"embedder '{self.name}' is trained on {', '.join(self.languages)} only and is scoring Chinese text: "
                "its similarities are unreliable there; pass --embedder with a multilingual model folder",
                stacklevel=3,
            )


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of every row of `a` with every row of `b`, for unit vectors."""
    return a @ b.T


def load_embedder(name_or_path: str | None = None) -> Embedder:
    """The registry's default embedder, a registered name, or a user's own model folder."""
    from . import models

    path = models.resolve(name_or_path, "embedder")
    spec = None
    if name_or_path is None or not Path(name_or_path).exists():
        spec = models.default("embedder") if name_or_path is None else models.find(name_or_path, "embedder")
    return Embedder(path, name=spec.name if spec else None, languages=spec.languages if spec else ())
