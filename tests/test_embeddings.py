"""The real local MiniLM: loads offline from models/, similar texts score higher, runs are repeatable."""

from __future__ import annotations

import numpy as np
import pytest

from localeval.embeddings import Embedder, has_cjk


def test_similar_sentences_are_closer_than_unrelated(embedder: Embedder) -> None:
    vectors = embedder.encode(["When was the Eiffel Tower built?", "In which year was the Eiffel Tower constructed?",
                               "How do I bake sourdough bread?"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > 0.8 > 0.2 > similarity[0, 2]


def test_encoding_is_deterministic(embedder: Embedder) -> None:
    texts = ["Mitochondria produce ATP.", "Canberra is the capital of Australia."]
    assert np.array_equal(embedder.encode(texts), embedder.encode(texts))


def test_english_only_model_warns_once_on_chinese(embedder: Embedder) -> None:
    embedder._warned_cjk = False
    with pytest.warns(UserWarning, match="trained on en only and is scoring Chinese text"):
        embedder.encode(["长城是明朝修建的"])
    assert has_cjk("GPT-4模型") and not has_cjk("café")
