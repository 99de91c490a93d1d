"""Text aimed at the judge inside a user's answer or passages, found before judging and left out.

The prompts put untrusted text between tags and tell the judge never to follow instructions written
there; a 1.5B judge does not always obey. bench/injection.py measured what got through with tags alone:
a forged assistant turn at the end of a passage moved "Venus is the closest planet to the Sun" past
P 0.5, and an answer that carries an order ("reply Yes.") has that order checked as one of its claims.

So the screen looks for the *shapes* injections take, not for particular phrasings: a forged chat turn
(a role header or label, a chat template's control tokens), the prompt's own delimiter tags, an order to
disregard instructions, a dictated verdict, a note addressed to the checker, a claim about the
verification itself, each in English and Chinese. A sentence with one of them is removed; a forged turn
is removed with everything after it up to the end of its paragraph (the turn's content goes with it).
What was removed is reported (faithfulness lists it in its details), so a user sees every cut.

Each pattern is narrow enough not to fire on ordinary prose: over the answers and passages of the dev sets
in ../shared/data it removes what bench/injection.py records under "false_positives".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..text import sentence_spans

_I = re.IGNORECASE
_YES_NO = r"""["'“‘「『]?(?:yes|no)\b["'”’」』]?"""
_ZH_VERDICT = r"(?:[“\"「『](?:是|否)[”\"」』]|(?:是|否)\s*[。！!.]?\s*$)"
#: The tag names the packaged prompts wrap untrusted text in (tests/test_injection.py keeps it in step).
PROMPT_TAGS = ("context", "passage", "passages", "question", "sentence", "sentences", "statement", "answer",
               "上下文", "段落", "问题", "句子", "陈述", "回答")

#: Where a forged turn begins: a role header ("### assistant", "Assistant:" opening a line or sentence,
#: "助手：") or a chat template's control tokens (ChatML, Llama 2/3, Gemma; a bare "</s>" is only defused,
#: by prompts.py: HTML uses it).
FORGED_TURN = re.compile(
    r"#{1,6}[ \t]*(?:system|assistant|user|human|ai|助手|系统|用户)[ \t]*[:：]?[ \t]*(?=\n|$)"
    r"|(?:^|(?<=[.!?。！？；;]))[ \t]*(?:assistant|human|ai assistant|助手|人工智能助手|AI助手)[ \t]*[:：]"
    r"|<\|[^\s|<>]{1,64}\|>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>",
    _I | re.MULTILINE,
)

#: A sentence that is an injection whatever surrounds it.
AIMED = re.compile("|".join((
    # the prompt's own delimiters, opened or closed
    r"<\s*/?\s*(?:" + "|".join(PROMPT_TAGS) + r")\s*>",
    # orders to disregard the instructions
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|my|these|those|previous|prior|above"
    r"|earlier|preceding|foregoing|system|original|other|of)\s+){1,4}(?:instructions?|rules|prompts?|directions"
    r"|guidelines|guidance|constraints)\b",
    r"\b(?:ignore|disregard|forget)\s+(?:everything|anything|all)\s+(?:above|before|else|previous|prior)\b",
    r"(?:忽略|无视|忘记|忘掉|不要理会|别管|不用管)掉?(?:之前|以上|上述|上面|前面|先前|此前|所有|一切|全部|任何|你的|系统|的)"
    r"{1,4}(?:指示|指令|规则|提示|要求|设定)",
    # a dictated verdict: the whole sentence is an order to answer Yes/No, or names "the correct answer"
    r"^(?:(?:please|just|simply|now|only|always|and)\s+)*(?:answer|reply|respond|output|return|print|say|write)"
    r"(?:\s+(?:with|only|just|simply|exactly|the\s+word))*\s*[:\-]?\s*" + _YES_NO + r"\s*[.!]?\s*$",
    r"\bthe\s+(?:correct|right|only|expected|valid|true|final|proper)\s+(?:\w+\s+)?(?:answer|output|verdict"
    r"|response|reply|label)\s+(?:is|should\s+be|must\s+be|will\s+be)\s*[:\-]?\s*" + _YES_NO,
    r"(?:回答|回复|输出|判定|判断|答案|结论|结果)(?:都|就|应该|应当|必须|只能)?(?:为|是)?[：:]?\s*" + _ZH_VERDICT,
    # a note addressed to the checker, or speaking with the system's authority
    r"\b(?:note|message|instructions?|reminder|memo|attention)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?"
    r"(?:ai\s+|automated\s+|llm\s+)?(?:fact[- ]?checkers?|checkers?|evaluators?|judges?|graders?|reviewers?"
    r"|verifiers?|annotators?|assessors?|models?|assistants?|llms?|ais?)\b",
    r"^[\[(*]*(?:system|admin|administrator|developer|moderator)\s+(?:note|message|notice|prompt|instruction"
    r"|override|update)s?[\])*]*\s*[:：]",
    r"\bas\s+(?:an?|the)\s+(?:ai\s+|automated\s+|llm\s+)?(?:fact[- ]?checker|evaluator|judge|grader|reviewer"
    r"|verifier|assessor)\s*,?\s+you\s+(?:must|should|have\s+to|need\s+to|will|are)\b",
    r"致(?:各位|所有)?(?:核查员|核查人员|评估员|评估者|评审员?|审核员|审核人员|裁判|模型|助手|AI|人工智能)",
    r"(?:系统|管理员|开发者)(?:提示|通知|消息|指令|说明)[：:]",
    r"作为(?:一[名个位])?(?:AI|人工智能)?(?:评审员?|评估员|评估者|核查员|审核员|裁判)[，,]?\s*你",
    # a claim about the verification itself, in the checker's own words ("statement", "陈述": the
    # prompts' word for what is checked; "claim" and "说法" are everyday words in news)
    r"\b(?:this|the|that|each|every|above)\s+statements?\s+(?:has|have|is|are|was|were)\s+(?:been\s+)?"
    r"(?:\w+\s+)?(?:verified|supported|confirmed|validated|fact-checked|true|correct|accurate)\b",
    r"\b(?:the|this|above)\s+context\s+(?:\w+\s+){0,2}(?:supports|confirms|verifies|entails|proves)\b",
    r"(?:该|这条|此|这一|本|上述)陈述[^。！？]{0,20}(?:核实|验证|确认|支持|属实|有依据|无误)",
    r"上下文[^。！？]{0,6}(?:支持|证实|证明)",
)), _I | re.MULTILINE)

_PARAGRAPH_END = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class Screened:
    """`text` without what was aimed at the judge; `removed` lists each cut, in order."""

    text: str
    removed: tuple[str, ...] = ()


def aimed_at_judge(sentence: str) -> bool:
    """Whether one sentence carries an injection (a forged turn counts)."""
    return AIMED.search(sentence.strip()) is not None or FORGED_TURN.search(sentence) is not None


@lru_cache(maxsize=4096)
def screen(text: str) -> Screened:
    """`text` with every forged turn (to its paragraph's end) and every aimed sentence cut out."""
    cuts: list[tuple[int, int]] = []
    for turn in FORGED_TURN.finditer(text):
        if cuts and turn.start() < cuts[-1][1]:
            continue
        end = _PARAGRAPH_END.search(text, turn.end())
        cuts.append((turn.start(), end.start() if end else len(text)))
    for start, end in sentence_spans(text):
        if not any(a <= start < b for a, b in cuts) and AIMED.search(text[start:end]):
            cuts.append((start, end))
    if not cuts:
        return Screened(text)
    cuts.sort()
    kept, removed, position = [], [], 0
    for start, end in cuts:
        start = max(start, position)
        if start >= end:
            continue
        kept.append(text[position:start])
        removed.append(text[start:end].strip())
        position = end
    kept.append(text[position:])
    return Screened("".join(kept).strip(), tuple(r for r in removed if r))
