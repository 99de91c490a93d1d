"""Local sentence-transformers embeddings, loaded from a folder on disk and never from a hub.

Loading sets the Hugging Face offline switches first: a folder that lacks a file must fail here, loudly,
rather than trigger a download on a machine that may have network.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import ModelError
from .base import LanguageWarning


class SentenceTransformersEmbedder:
    """Encodes texts to unit vectors with a sentence-transformers model folder (all-MiniLM-L6-v2)."""

    engine = "sentence-transformers"

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
        self._language_warning = LanguageWarning(self.name, self.languages)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 array of unit vectors."""
        self._language_warning.check(texts)
        if not texts:
            return np.zeros((0, self._model.get_sentence_embedding_dimension() or 0), dtype=np.float32)
        vectors = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def cut(self, texts: Sequence[str]) -> list[bool]:
        limit = self._model.max_seq_length  # all-MiniLM-L6-v2 reads 256 word pieces and drops the rest
        if not texts or not limit:
            return [False] * len(texts)
        ids = self._model.tokenizer(list(texts), add_special_tokens=True, truncation=False)["input_ids"]
        return [len(tokens) > limit for tokens in ids]
