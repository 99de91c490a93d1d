"""Test-set generation: corpus reading and chunking, the faiss index with the real MiniLM, the pipeline
with the real tiny judge (deterministic, counts add up), and with the default judge a generated test set
that survives the retrieval filter, feeds `localeval retrieve` and scores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from localeval.cli import cli
import numpy as np

from localeval.testset.corpus import Chunk, Document, chunk_documents, read_corpus
from localeval.errors import InputError, JudgeError
from localeval.text import split_sentences
from localeval.testset.index import ChunkIndex, doc_rank

pytestmark = pytest.mark.filterwarnings("ignore:embedder 'all-minilm-l6-v2' is trained on en only")

DOCS = {
    "eiffel.txt": "The Eiffel Tower is a wrought-iron lattice tower in Paris. It is named after the engineer Gustave "
                  "Eiffel. It was completed in 1889 as the entrance arch to the World's Fair.",
    "mars.md": "Mars is the fourth planet from the Sun. Mars has two small moons, Phobos and Deimos.",
    "wall.txt": "长城是中国古代的军事防御工程。现存的长城遗迹主要为明朝时期修建的明长城。",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "ignored.pdf").write_bytes(b"%PDF")
    return folder


def test_read_corpus_from_folder_and_jsonl(corpus: Path, tmp_path: Path) -> None:
    assert [d.id for d in read_corpus(corpus)] == ["eiffel.txt", "mars.md", "wall.txt"]
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text('{"_id": 1, "title": "T", "text": "Some text."}\n{"id": "b", "text": "More."}\n', encoding="utf-8")
    assert read_corpus(jsonl) == [Document("1", "Some text.", "T"), Document("b", "More.")]
    jsonl.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.jsonl:2: field 'id': duplicate id 'a'"):
        read_corpus(jsonl)
    with pytest.raises(InputError, match="holds no document"):
        read_corpus(_empty(tmp_path))


def _empty(tmp_path: Path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def test_chunks_keep_sentences_whole_and_overlap() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(1, 11))  # 10 sentences of 26-27 characters
    chunks = chunk_documents([Document("d", text)], size=80, overlap=1)
    assert [c.id for c in chunks][:2] == ["d#0", "d#1"] and all(c.doc_id == "d" for c in chunks)
    for chunk in chunks:
        assert chunk.text.endswith("here.") and chunk.text.startswith("Sentence number")
    assert split_sentences(chunks[0].text)[-1] == split_sentences(chunks[1].text)[0]  # one sentence of overlap
    assert len(chunks[0].text) <= 80
    zh = chunk_documents([Document("z", "第一句。第二句。第三句。")], size=50, overlap=0)
    assert [c.text for c in zh] == ["第一句。第二句。第三句。"]
    with pytest.raises(InputError, match="--chunk-size"):
        chunk_documents([Document("d", text)], size=10)
    # text with no full stop (Chinese punctuated with commas only, text from a PDF) is cut, not one chunk
    commas = chunk_documents([Document("c", "中文没有句号，" * 300)], size=100, overlap=1)
    spaces = chunk_documents([Document("w", "word " * 500)], size=100, overlap=0)
    assert len(commas) > 20 and max(len(c.text) for c in commas) <= 100 and commas[0].text.endswith("，")
    assert len(spaces) > 20 and max(len(c.text) for c in spaces) <= 100 and "".join(c.text for c in spaces).count("word") == 500


def test_the_hard_negative_is_the_nearest_other_document_whose_text_is_not_the_sources() -> None:
    from localeval.testset.generation import _nearest_elsewhere

    chunks = [Chunk("a#0", "a", "The tower was built in 1889."), Chunk("a#1", "a", "It is in Paris."),
              Chunk("copy#0", "copy", "The tower was built in 1889."), Chunk("far#0", "far", "Mars has two moons.")]
    vectors = np.array([[1, 0, 0], [0.99, 0.1, 0], [0.98, 0.2, 0], [0.1, 1, 0]], dtype=np.float32)
    index = ChunkIndex.build(chunks, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    query = np.array([[1, 0, 0]], dtype=np.float32)
    # the same document's chunk and a copy of the source under another id rank higher: neither is a negative
    assert _nearest_elsewhere(index, query, chunks[0]).id == "far#0"
    alone = ChunkIndex.build(chunks[:2], vectors[:2])
    assert _nearest_elsewhere(alone, query, chunks[0]) is None  # one document: no hard negative at all


def test_a_chunk_the_judge_cannot_answer_for_is_counted_and_the_run_goes_on(corpus: Path, tmp_path: Path) -> None:
    from fake_backend import FakeBackend, fake_kit
    from localeval.testset.generation import GenerateOptions, _generated

    def writes(call):  # noqa: ANN001, ANN202 - a reply cut off for the Mars chunk, a question for the others
        if "Mars" in call.text:
            return None
        return {"can_ask": True, "question": "What is described?", "answer": "A landmark."}

    kit = fake_kit(FakeBackend(json_rule=writes), tmp_path / "c.sqlite")
    kit.check = lambda **_: None  # the fake judge and embedder have no files to check
    kit.embedder.cut = lambda texts: ["Eiffel" in text for text in texts]  # as if longer than it reads
    report = _generated(corpus, tmp_path / "out", GenerateOptions(top_k=3), kit, progress=False)
    assert (report["sampled"], report["judge_errors"], report["chunks_indexed_in_part"]) == (3, 1, 1)
    assert report["declined"] + report["judge_errors"] + report["filtered_by_retrieval"] + report["kept"] == 3
    silent = fake_kit(FakeBackend(json_rule=lambda call: None), tmp_path / "none.sqlite")  # every reply cut off
    silent.check = lambda **_: None
    with pytest.raises(JudgeError, match=r"the judge could not answer for 3 of 3 chunks and no question was kept "
                                         r"\(first: .*\); give a larger --n-ctx"):
        _generated(corpus, tmp_path / "none", GenerateOptions(top_k=3), silent, progress=False)


@pytest.mark.model("all-minilm-l6-v2")
def test_index_finds_the_source_document_and_round_trips(corpus: Path, tmp_path: Path, embedder) -> None:
    chunks = chunk_documents(read_corpus(corpus))
    index = ChunkIndex.build(chunks, embedder.encode([c.text for c in chunks]))
    hits = index.search(embedder.encode(["How many moons does Mars have?"]), 3)[0]
    assert hits[0][0].doc_id == "mars.md" and doc_rank(hits, "mars.md") == 1
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    index.save(tmp_path / "idx")
    again = ChunkIndex.load(tmp_path / "idx").search(embedder.encode(["How many moons does Mars have?"]), 3)[0]
    assert [(c.id, round(s, 6)) for c, s in again] == [(c.id, round(s, 6)) for c, s in hits]
    with pytest.raises(InputError, match="holds no index"):
        ChunkIndex.load(tmp_path)


def run_generate(corpus: Path, out: Path, cache: Path, *extra: str):
    return CliRunner().invoke(cli, ["generate", str(corpus), "-o", str(out), "--cache", str(cache), "-q", *extra],
                              catch_exceptions=False)


@pytest.mark.model("smollm2-135m-instruct-q4_1", "use-multilingual-v3")
def test_tiny_judge_generation_is_deterministic_and_accounted(corpus: Path, tmp_path: Path) -> None:
    """With --contradictions, twice on one cache: the second run (a resumed one) asks the judge nothing the
    first got an answer to, and writes the same files, so the sampling, the index and the negatives are
    seeded. That the judge itself writes the same JSON again is test_judge.py's (two instances) and
    test_engine.py's (generation lanes and the sequential judge) to show."""
    outs = []
    for name in ("a", "b"):
        result = run_generate(corpus, tmp_path / name, tmp_path / "judge.sqlite", "--judge", "smollm2-135m-instruct-q4_1",
                              "--threads", "1", "--contradictions")
        assert result.exit_code == 0, result.output
        outs.append(tmp_path / name)
    report, again = (json.loads((out / "generation.json").read_text()) for out in outs)
    assert (report["documents"], report["chunks"], report["sampled"]) == (3, 3, 3)
    assert report["declined"] + report["judge_errors"] + report["filtered_by_retrieval"] + report["kept"] == report["sampled"]
    # a failed call is not cached, so only those are asked again (and fail again)
    assert again["judge_usage"]["calls"] <= again["judge_errors"] + again["contradiction_errors"], again
    assert report["judge_sha256"] == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    # one chunk is Chinese: the multilingual embedder indexes them all, as the embedding metrics would read it
    assert report["embedder"] == "use-multilingual-v3" and report["chunks_indexed_in_part"] == 0
    for name in ("testset.jsonl", "negatives.jsonl"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()
    assert (outs[0] / "index" / "chunks.faiss").exists()


@pytest.mark.model("use-multilingual-v3", "all-minilm-l6-v2")
@pytest.mark.default_judge
def test_default_judge_writes_a_test_set_that_retrieves_and_scores(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    # -n 2: seed 0 samples the Chinese chunk and the Eiffel one (all three were kept when each was asked);
    # --contradictions runs in the tiny judge's test
    result = run_generate(corpus, out, tmp_path / "c.sqlite", "--top-k", "2", "-n", "2")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "testset.jsonl").read_text(encoding="utf-8").splitlines()]
    report = json.loads((out / "generation.json").read_text())
    assert report["kept"] == len(rows) == 2, report
    assert {row["lang"] for row in rows} == {"en", "zh"}, rows
    for row in rows:
        assert row["question"] and row["reference"] and row["source_rank"] <= 2
        assert row["reference_doc_ids"] == [row["source_chunk"].split("#")[0]]
        assert row["provenance"]["prompt"] == {"generate_question": "generate_question@1"}
    negatives = [json.loads(line) for line in (out / "negatives.jsonl").read_text(encoding="utf-8").splitlines()]
    kinds = {n["kind"] for n in negatives}
    assert {"positive", "hard_negative", "random_negative"} <= kinds
    for n in negatives:
        source = next(r for r in rows if n["id"].startswith(r["id"] + "-"))
        if n["kind"] in ("hard_negative", "random_negative"):
            assert n["context_relevance"] == 0 and not n["context_id"].startswith(source["reference_doc_ids"][0] + "#")

    retrieved = tmp_path / "retrieved.jsonl"
    retrieve = ["retrieve", str(out / "testset.jsonl"), "--index", str(out / "index"), "-o", str(retrieved), "-k", "2"]
    # the index records its embedder (the multilingual one: a chunk is Chinese); another size is refused
    wrong = CliRunner().invoke(cli, [*retrieve, "--embedder", "all-minilm-l6-v2"], catch_exceptions=False)
    assert wrong.exit_code == 2 and len(wrong.output.strip().splitlines()) == 1, wrong.output
    assert "vectors of 384 numbers" in wrong.output and "(use-multilingual-v3)" in wrong.output, wrong.output
    assert not retrieved.exists()
    done = CliRunner().invoke(cli, retrieve, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    scored = CliRunner().invoke(cli, ["score", str(retrieved), "-m", "hit@2", "-o", str(tmp_path / "s"), "-q"],
                                catch_exceptions=False)
    assert scored.exit_code == 0
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert summary["metrics"]["hit@2"]["mean"] == 1.0  # the filter kept only questions whose source is in the top 2
