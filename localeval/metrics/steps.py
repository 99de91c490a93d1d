"""The judge steps several metrics are built from: an answer split into statements, the support of
statements by passages, and the selection of the evidence a statement is checked against.

Shared steps go through the judge's persistent cache, so when two metrics ask the same question the
model answers once.
"""

from __future__ import annotations

import copy
import math
import re
from collections import Counter
from functools import lru_cache, reduce
from typing import Sequence

from ..data.records import Context, Sample
from ..judge.facade import Ask
from ..judge.injection import Screened, screen
from ..model_kit import ModelKit
from ..text import (CJK_LETTERS, LIST_MARKER, content_words, count_cjk_letters, join_sentences, sentence_spans,
                    split_sentences)
from .base import Skipped
from .judged import Flow

#: Words per atomic fact, for the cap on the statements list (see statements_of).
WORDS_PER_FACT = 5
#: How a statement's verdict is asked: Yes/No, or Yes/No/Unknown (P(supported) read over all three).
VERDICTS = {"two-way": "verify_statement", "three-way": "verify_statement_3way"}
#: Context sentences a statement is checked against under evidence="selected" (as sentence-level NLI
#: checkers such as SummaC and AlignScore select a few sentences instead of reading the whole source).
EVIDENCE_SENTENCES = 3
_WORD = re.compile(f"[{CJK_LETTERS}]{{2}}|[^\\W_{CJK_LETTERS}]+")
_CHECKABLE = re.compile(r"[^\W_]")


#: A statement sharing less than this share of its content words with the passages is "unmentioned": the
#: passages do not speak of what it says at all.
MENTIONED_SHARE = 0.2
#: A statement whose content words the passages name no more than this share of is "thinly named", and held
#: (hold_unanchored): the passages name too little of it to state it, whatever a lenient judge gives it.
HELD_SHARE = 0.5


def nothing_left(screened: Screened, otherwise: str) -> Skipped:
    """The skip of an answer with nothing left to judge, which says so when the injection screen emptied it:
    asked about the remains, the judge would give an emptied answer a number."""
    return Skipped("the answer has only text aimed at the judge" if screened.removed else otherwise)


def emptied_answer(sample: Sample) -> Skipped | None:
    """nothing_left's skip for a metric that hands the whole answer to its prompt (which screens it again as
    it renders) when nothing of it is left, else None."""
    screened = screen(sample.answer or "")
    return None if screened.text.strip() else nothing_left(screened, "the answer is empty")


def naming_something(statements: Sequence[str]) -> list[str]:
    """The statements with a content word, or all of them when none has one: a sentence with none beside
    others ("Yes" left by a forged turn) names nothing a reference or a chunk could state, and RAGChecker's
    extractor finds no claim in it; alone, it is what the answer says."""
    return [statement for statement in statements if content_words(statement)] or list(statements)


def unmentioned(statement: str, words: set[str]) -> bool:
    """Whether under MENTIONED_SHARE of the statement's content words are among `words` (the passages'): the
    passages do not speak of it at all, so when no passage sentence names what it adds it is checked against
    them whole rather than called unsupported (Faithfulness._support). One with no content word is too."""
    own = content_words(statement)
    return len(own & words) < MENTIONED_SHARE * len(own) if own else True


def thinly_named(statement: str, words: set[str]) -> bool:
    """Whether no more than HELD_SHARE of the statement's content words are among `words` (the passages'). A
    statement with no content word ("That is all there is to it.") names nothing the passages could state,
    so it is thinly named too: beside other statements it cannot raise the mean (alone, "Yes." keeps its P)."""
    own = content_words(statement)
    return len(own & words) <= HELD_SHARE * len(own) if own else True


def passage_words(passages: Sequence[Context]) -> set[str]:
    """The content words of all the passages: what `unmentioned` and `thinly_named` read a statement against."""
    return content_words(" ".join(p.text for p in passages))


#: English words that, opening a sentence, point back to something before it.
BACK_REFERENCES = frozenset("it its this that these those he she they him her his them their such then so".split())
#: Chinese demonstratives and a pronoun that do the same wherever they stand (这 this, 那 that, 此 this, 它
#: it), and openings that do (其 its, 该 the said, 他 he, 她 she, 上述 and 以上 the above).
BACK_REFERENCES_ZH = ("这", "那", "此", "它")
#: A word holding one of them that points nowhere: 彼此 (each other).
_NOT_BACK_ZH = "彼此"
BACK_OPENINGS_ZH = ("其", "该", "他", "她", "上述", "以上")
_OPENING_WORD = re.compile(r"[^\W\d_]+")
#: An opening that hands the sentence on to what follows it: a sentence adverb set off by a comma ("Indeed,
#: that is when ...", "Yes, it ...") or a conjunction ("And that is ..."). A subject before an aside
#: ("Smith, then aged 20, joined.") is not one.
_LEAD_WORD = re.compile(r"(?:(?:indeed|yes|no|however|moreover|furthermore|also|still|instead|similarly|likewise|"
                        r"thus|therefore|hence|besides|consequently|meanwhile|again|now|well|in fact|of course|"
                        r"after all|in short|notably|clearly|certainly|surely)\s*,|(?:and|but|or|yet|also|nor)\b)\s*",
                        re.IGNORECASE)
#: A list item's marker ("- ", "* ", "• ", "2. ", "b) ", "**iv.** "): what follows it opens the sentence.
_LIST_MARKER = re.compile(rf"\s*(?:[-*•]|{LIST_MARKER})\s+")
_QUESTION = re.compile(r"[?？][^\w?？]*$")


def leans_back(sentence: str) -> bool:
    """Whether a sentence cannot be read without what comes before it: it opens with a word pointing back
    ("That is when the wall fell.", "It was completed in 1889."), or has one right after an opening word set
    off by a comma or a conjunction ("Indeed, that is when ...", "And it ..."), it opens in lower case or
    with a dash or an ellipsis (the splitter cut a sentence in two), or, in Chinese, it holds a demonstrative
    (那个朝代, 这么久, 如此, 它是) or opens with one of BACK_OPENINGS_ZH (其, 该, 他, 她, 上述, 以上). Checked
    alone, beside the question, such a sentence reads as whatever the passages say of its subject, true
    whatever the sentence before it claimed ("The Berlin Wall fell in 1975. That is when the Berlin Wall
    fell.")."""
    marker = _LIST_MARKER.match(sentence)
    text = sentence[marker.end() if marker else 0:].lstrip(" \t\n\"'“‘(（「『«*_[")
    if text[:1] in ("—", "–", "…") or text.startswith("..") or text.startswith(BACK_OPENINGS_ZH):
        return True
    pointing = text.replace(_NOT_BACK_ZH, "")
    if any(mark in pointing for mark in BACK_REFERENCES_ZH):
        return True
    word = _OPENING_WORD.match(text)
    if not word:
        return False
    if word.group().islower() or word.group().lower() in BACK_REFERENCES:
        return True
    lead = _LEAD_WORD.match(text)
    following = _OPENING_WORD.match(text, lead.end()) if lead else None
    return bool(following) and following.group().lower() in BACK_REFERENCES


def asks(sentence: str) -> bool:
    """Whether a sentence is a question: it states nothing the passages could support, yet a lenient judge,
    asked whether "Who wrote Nineteen Eighty-Four?" is supported by a passage that answers it, says yes."""
    return _QUESTION.search(sentence) is not None


def hold_unanchored(statements: Sequence[str], probs: Sequence[float],
                    words: set[str]) -> tuple[list[float], list[int]]:
    """Each unanchored statement's P held to at most the lowest P of the answer's other statements, and
    which were held. Unanchored: the passages name no more than half of it (thinly_named), it leans on the
    sentence before it (leans_back), or it is a question (asks). Text written to sway the judge ("the
    sentences above were checked against the sources", "It is famous and well known around the world.",
    "That is when the Berlin Wall fell.") is one of these, and a lenient judge gives it a P above a false
    claim's, raising the answer's mean; held so, an added statement of these kinds cannot raise it, whatever
    the others are (the cap reads every other statement, the unanchored ones too, so a false claim that is
    itself unanchored, "It was completed in 1920.", still caps what is added beside it). Nothing is dropped:
    a statement alone, or one below the others, keeps its own P, and the lowest P never changes. `words` are
    the passages' (passage_words)."""
    loose = [thinly_named(s, words) or (i > 0 and leans_back(s)) or asks(s)
             for i, s in enumerate(statements)]
    out, held = list(probs), []
    for i in (i for i, is_loose in enumerate(loose) if is_loose):
        others = [p for j, p in enumerate(probs) if j != i]
        if others and probs[i] > min(others):
            out[i] = min(others)
            held.append(i)
    return out, held


#: How many shorter cuts of a sentence that aimed words ran on after are checked too: where the claim ends is
#: not known, so it is checked ending at each of its last RUN_ON_CUTS words (Chinese: characters).
RUN_ON_CUTS = 16
_CUT_POINT = re.compile(f"(?<=[{CJK_LETTERS}])|(?<=\\S)(?=[\\s{CJK_LETTERS}])")
_TRAILING = re.compile(r"[\W_]+$")


def shorter_cuts(statement: str, limit: int = RUN_ON_CUTS) -> list[str]:
    """`statement` cut after each of its last `limit` words (each Chinese character a word), longest first,
    those with a letter or a digit: one of them is the claim that aimed words ran on after, without the
    injection's first words. Each cut ends at a word: punctuation after it goes."""
    cuts = dict.fromkeys(_TRAILING.sub("", statement[:m.start()]) for m in _CUT_POINT.finditer(statement))
    cuts.pop(_TRAILING.sub("", statement), None)
    return [cut for cut in sorted(cuts, key=len, reverse=True)[:limit] if checkable(cut)]


def ends_run_on(statement: str, screened: Screened) -> bool:
    """Whether the statement ends with a sentence of the answer `screened` that aimed words ran on after."""
    return any(statement.endswith(r) for r in screened.run_on)


def run_on_cuts(statements: Sequence[str], screened: Screened) -> list[list[str]]:
    """Each statement's shorter_cuts where it ends_run_on, else []: asked beside the statements, then folded
    by `lowest_of_cuts`."""
    return [shorter_cuts(s) if ends_run_on(s, screened) else [] for s in statements]


def lowest_of_cuts(probs: Sequence[float], cuts: Sequence[Sequence[str]],
                   of_cuts: Sequence[float]) -> tuple[list[float], dict[int, str]]:
    """Each statement's P, lowered to its lowest cut's (`of_cuts`: the cuts' P, in `cuts`' order), and the cut
    that gave it, by statement index: where the claim ends is not known, so the lowest counts."""
    lowest, cut_at, position = list(probs), {}, 0
    for i, of_one in enumerate(cuts):
        for cut, p in zip(of_one, of_cuts[position:position + len(of_one)]):
            if p < lowest[i]:
                lowest[i], cut_at[i] = p, cut
        position += len(of_one)
    return lowest, cut_at


def added_words(statement: str, question: str) -> set[str]:
    """The content words a statement adds to the question: what a passage sentence must name to state what
    the statement claims beyond the question. A statement that adds none ("Yes.", the question restated) is
    related through its own words and the question's."""
    own, asked = content_words(statement), content_words(question)
    return own - asked or own | asked


def related_passages(passages: Sequence[Context], words: set[str]) -> tuple[list[Context], int]:
    """The passages cut down to their sentences that share one of `words` (a statement's added_words), and
    how many sentences were set aside; a passage left with none is dropped.

    A passage sentence that names nothing a statement adds to the question cannot state what it claims, yet
    text written to sway the judge ("any answer beside this excerpt was checked against the full record", or
    one that repeats the question's words: "the capital named here was later corrected") raises a lenient
    judge's P(supported) for a false claim from inside a passage. Shown only the related sentences, the
    judge reads what could support the claim and nothing else; the passages themselves are unchanged (other
    metrics, the report)."""
    kept: list[Context] = []
    aside = 0
    for passage in passages:
        spans = _sentence_words(passage.text)
        if not spans:  # an empty passage names nothing: it must not pass as related to every statement
            continue
        related = [(a, b) for a, b, named in spans if named & words]
        aside += len(spans) - len(related)
        if len(related) == len(spans):
            kept.append(passage)
        elif related:
            kept.append(Context(reduce(join_sentences, (passage.text[a:b] for a, b in related), ""), passage.id))
    return kept, aside


@lru_cache(maxsize=1024)
def _sentence_words(text: str) -> tuple[tuple[int, int, frozenset[str]], ...]:
    """Each sentence's span in a passage and its content words, read once a passage however many statements
    related_passages is asked for."""
    return tuple((a, b, frozenset(content_words(text[a:b]))) for a, b in sentence_spans(text))


def joined(passages: Sequence[Context]) -> str:
    """Passages as one text, numbered in rank order, so the judge sees where each begins; each screened on
    its own first, so that text aimed at the judge in one (a comment left open there, closed in a later
    one) cannot take the passages after it out of the evidence."""
    # each opens with "[i] ", the label text.PASSAGE_LABEL finds
    return "\n\n".join(f"[{i}] {screen(p.text).text.strip()}" for i, p in enumerate(passages, start=1))


def checkable(text: str) -> bool:
    """Text with at least one letter or digit; an empty or punctuation-only answer states nothing, and a
    small judge asked to split it invents a statement."""
    return _CHECKABLE.search(text) is not None


def statements_of(kit: ModelKit, lang: str, question: str, text: str) -> Flow[list[str]]:
    """The judge's decomposition of `text` into standalone statements (schema-constrained, so it parses).

    The schema caps the list by the text's length (about one fact per WORDS_PER_FACT words, or per
    2 * WORDS_PER_FACT Chinese characters): measured on the 1.5B judge, an uncapped list pads a one-sentence
    answer with paraphrases and background facts the answer never stated, which skews the score.
    """
    if not checkable(text):
        return []
    prompt = kit.prompt("statements", lang, question=question, answer=text)
    schema = copy.deepcopy(prompt.schema)
    items = schema["properties"]["statements"]
    items["maxItems"] = min(items.get("maxItems", 8), max_statements(text))
    (answer,) = yield [Ask.json(prompt, schema)]
    return _distinct(answer.value["statements"])


def sentence_statements(text: str) -> list[str]:
    """The answer's own sentences, with no generation: nothing is paraphrased, invented or left out. A
    sentence the splitter cut at a semicolon inside brackets, on one line, is read whole: "(Hermann and
    Blunsom, 2014;" is not a claim of its own. Passages keep that cut: evidence in smaller pieces loses
    nothing, as every piece naming what a statement adds is shown to it (related_passages)."""
    spans: list[list[int]] = []
    for start, end in sentence_spans(text):
        if spans and _inside_brackets(text[spans[-1][0]:spans[-1][1]]) and "\n" not in text[spans[-1][1]:start]:
            spans[-1][1] = end
        else:
            spans.append([start, end])
    return _distinct(text[a:b] for a, b in spans if checkable(text[a:b]))


def _inside_brackets(sentence: str) -> bool:
    """Whether a sentence ends at a semicolon with a bracket still open."""
    opened = sum(sentence.count(mark) for mark in "([（")
    return sentence.endswith((";", "；")) and opened > sum(sentence.count(mark) for mark in ")]）")


def max_statements(text: str) -> int:
    """An upper bound on the atomic facts in `text`."""
    cjk = count_cjk_letters(text)
    words = len(text.split()) + cjk / 2
    return max(1, math.ceil(words / WORDS_PER_FACT))


def support(kit: ModelKit, lang: str, statements: Sequence[str], passages: Sequence[Context], *,
            verdict: str = "two-way", evidence: str = "context",
            question: str | None = None) -> Flow[tuple[list[float], int]]:
    """P(supported) of each statement given the passages, and how many windows the passages took.

    evidence="context": the passages come first in the prompt and the statement last, so every statement
    after the first reuses the passages' KV cache. Passages longer than the judge's window are split at
    sentence ends into windows that fit; a statement's probability is its maximum over windows (it is
    supported if some part of the passages supports it). evidence="selected": each statement is checked
    against the EVIDENCE_SENTENCES passage sentences that share the most (idf-weighted) words with it,
    in passage order. `question` is shown to the judge when statements are the answer's own sentences,
    which may not name what they are about. The number of windows goes into the details: nothing is
    ever silently truncated.
    """
    if evidence == "context":
        return (yield from entailed(kit, lang, VERDICTS[verdict], "context", statements, joined(passages),
                                    verdict=verdict, question=question))
    judge = kit.judge
    name = VERDICTS[verdict]
    longest = longest_in_tokens(kit, statements, name, lang, context="", question=question)
    budget = judge.context_budget(kit.prompt(name, lang, context="", statement=longest, question=question))
    sentences = split_sentences(joined(passages))
    per_statement = [judge.windows(select_evidence(statement, sentences), budget) for statement in statements]
    pairs = [(chunk, i) for i, chunks in enumerate(per_statement) for chunk in chunks]
    best = yield from _best_verdicts(kit, lang, name, "context", statements, pairs, verdict, question=question)
    return best, max(len(chunks) for chunks in per_statement)


def longest_in_tokens(kit: ModelKit, statements: Sequence[str], name: str, lang: str, **slots: object) -> str:
    """The statement that takes most of prompt `name`'s window, counted in the tokens of the judge that
    answers it: a statement short in characters may be long in tokens (Chinese, numbers), and a classifier
    judge counts with its own tokenizer (asking the GGUF judge's would load it for nothing), a faithfulness
    statement with the marks it reads (classifier/reading.py)."""
    empty = kit.judge.context_budget(kit.prompt(name, lang, statement="", **slots))
    count = getattr(empty, "count_statement", None) or kit.judge.count_tokens
    return max(statements, key=count, default="")


def entailed(kit: ModelKit, lang: str, name: str, slot: str, statements: Sequence[str], text: str, *,
             verdict: str = "two-way", **variables: object) -> Flow[tuple[list[float], int]]:
    """P(yes) of the verdict prompt `name` for each statement with `text` in its `slot`, and how many windows
    the text took. The text comes first in the prompt and the statement last, so every statement after the
    first reuses the text's KV cache; a text longer than the judge's window is split at sentence ends and a
    statement keeps its best window (some part of the text states it). The windows depend only on the text
    and the longest statement, so two metrics that ask about the same statements ask the same questions,
    which the judge answers once."""
    judge = kit.judge
    longest = longest_in_tokens(kit, statements, name, lang, **{slot: ""}, **variables)
    budget = judge.context_budget(kit.prompt(name, lang, **{slot: ""}, statement=longest, **variables))
    chunks = judge.windows(text, budget)
    pairs = [(chunk, i) for chunk in chunks for i in range(len(statements))]
    best = yield from _best_verdicts(kit, lang, name, slot, statements, pairs, verdict, **variables)
    return best, len(chunks)


def _best_verdicts(kit: ModelKit, lang: str, name: str, slot: str, statements: Sequence[str],
                   pairs: Sequence[tuple[str, int]], verdict: str, **variables: object) -> Flow[list[float]]:
    """Each statement's highest P(supported) over the (text, statement index) pairs asked."""
    asks = [_verdict_ask(kit.prompt(name, lang, **{slot: text}, statement=statements[i], **variables), verdict)
            for text, i in pairs]
    answers = yield asks
    best = [0.0] * len(statements)
    for (_, i), answer in zip(pairs, answers):
        best[i] = max(best[i], _supported(answer.value, verdict))
    return best


def best_of_windows(kit: ModelKit, lang: str, name: str, slot: str, texts: Sequence[str],
                    **variables: object) -> Flow[list[float]]:
    """P(yes) of the yes/no prompt `name` for each text put into its `slot`; a text longer than the
    judge's window is split at sentence ends and counts its best window (nothing is truncated)."""
    judge = kit.judge
    budget = judge.context_budget(kit.prompt(name, lang, **{slot: ""}, **variables))
    pieces = [judge.windows(text, budget) for text in texts]
    owners = [i for i, parts in enumerate(pieces) for _ in parts]
    answers = yield [Ask.yes_no(kit.prompt(name, lang, **{slot: part}, **variables)) for parts in pieces for part in parts]
    best = [0.0] * len(texts)
    for i, answer in zip(owners, answers):
        best[i] = max(best[i], answer.value)
    return best


def _verdict_ask(prompt: object, verdict: str) -> Ask:
    return Ask.yes_no(prompt) if verdict == "two-way" else Ask.choice(prompt)  # type: ignore[arg-type]


def _supported(value: object, verdict: str) -> float:
    """P(supported): P(yes) of a two-way verdict; of a three-way one, the first option's share of all three."""
    if verdict == "two-way":
        return float(value)  # type: ignore[arg-type]
    return float(next(iter(value.values())))  # type: ignore[union-attr]


def select_evidence(statement: str, sentences: Sequence[str], k: int = EVIDENCE_SENTENCES) -> str:
    """The k sentences sharing the most idf-weighted words (Chinese: character bigrams) with `statement`,
    in their original order; ties go to the earlier sentence."""
    bags = [set(_WORD.findall(s.lower())) for s in sentences]
    document_frequency = Counter(word for bag in bags for word in bag)
    wanted = set(_WORD.findall(statement.lower()))
    scores = [sum(math.log(1 + len(bags) / document_frequency[w]) for w in wanted & bag) for bag in bags]
    top = sorted(sorted(range(len(sentences)), key=lambda i: -scores[i])[:k])
    # each screened alone: a forged turn is cut to its paragraph's end, which here would take the sentences after it
    return "\n".join(screen(sentences[i]).text.strip() for i in top)


def passages_for(sample: Sample, against: str) -> tuple[Context, ...]:
    """The passages a statement is checked against: the retrieved contexts or the reference documents."""
    return (sample.reference_docs if against == "reference_docs" else sample.contexts) or ()


def _distinct(statements: object) -> list[str]:
    seen: list[str] = []
    for statement in statements:  # type: ignore[attr-defined]
        statement = statement.strip()
        if statement and statement not in seen:
            seen.append(statement)
    return seen
