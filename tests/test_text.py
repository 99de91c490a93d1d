"""The one sentence splitter: where a full stop ends a word rather than a sentence; and statements read whole."""

from __future__ import annotations

import pytest

from localeval.metrics.steps import sentence_statements
from localeval.text import split_sentences


@pytest.mark.parametrize("text, sentences", [
    # a list marker is not a statement of its own
    ("1. **Contrastive learning**: it uses pairs. 2. Adversarial training aligns spaces.",
     ["1. **Contrastive learning**: it uses pairs.", "2. Adversarial training aligns spaces."]),
    ("**2. Adversarial training** aligns spaces.", ["**2. Adversarial training** aligns spaces."]),
    # initials and dotted acronyms before a word, titles, e.g., numbered references
    ("It was produced by David A. Stewart of Eurythmics. He met Nicks.",
     ["It was produced by David A. Stewart of Eurythmics.", "He met Nicks."]),
    ("He served in the U.S. Army and told Mr. Bienstock.", ["He served in the U.S. Army and told Mr. Bienstock."]),
    ("See Fig. 3 for e.g. the curve. No. 5 won.", ["See Fig. 3 for e.g. the curve.", "No. 5 won."]),
    ("The Rams moved to St. Louis in 1995.", ["The Rams moved to St. Louis in 1995."]),
    ("It is caused by E. coli in water.", ["It is caused by E. coli in water."]),
    # a word that opens sentences only does so capitalised
    ("The firm is based in the U.S. and Canada. It grew.", ["The firm is based in the U.S. and Canada.", "It grew."]),
    # a run of Chinese marks, and a closing quote after one, end one sentence together
    ("他等等……然后走了。", ["他等等……", "然后走了。"]),
    ("真的吗？！不会吧。", ["真的吗？！", "不会吧。"]),
    ("他说：“你好。”然后离开了。", ["他说：“你好。”", "然后离开了。"]),
    ("他说：“她说‘好。’”然后走了。", ["他说：“她说‘好。’”", "然后走了。"]),
    # still sentence ends: a capitalised word with a hyphen, an acronym, a title or an initial before a word
    # that opens sentences or before Chinese, a time or a letter answer after a colon, "No." with no number,
    # a line break after a marker, Chinese
    ("It is BRAVE-D. The next one.", ["It is BRAVE-D.", "The next one."]),
    ("He moved to the U.S. He became a citizen.", ["He moved to the U.S.", "He became a citizen."]),
    ("It is on Main St. The house is red.", ["It is on Main St.", "The house is red."]),
    ("I like Plan B. 然后我走了。", ["I like Plan B.", "然后我走了。"]),
    ("The meeting starts at 10:30. Everyone came.", ["The meeting starts at 10:30.", "Everyone came."]),
    ("Answer: B. The reason is clear.", ["Answer: B.", "The reason is clear."]),
    ("The answer is No. Then he left.", ["The answer is No.", "Then he left."]),
    ("1.\nFirst item.", ["1.", "First item."]),
    ("他去了北京。Mr. 王在等他。", ["他去了北京。", "Mr. 王在等他。"]),
])
def test_a_full_stop_that_ends_a_word_does_not_end_the_sentence(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_a_semicolon_inside_brackets_ends_a_passage_sentence_but_not_a_statement() -> None:
    text = "Studies (Hermann and Blunsom, 2014; Guo et al., 2018) use it; others do not."
    assert split_sentences(text) == ["Studies (Hermann and Blunsom, 2014;", "Guo et al., 2018) use it;",
                                     "others do not."]
    assert sentence_statements(text) == ["Studies (Hermann and Blunsom, 2014; Guo et al., 2018) use it;",
                                         "others do not."]
    assert sentence_statements("研究（张三，2014；李四，2018）表明如此。") == ["研究（张三，2014；李四，2018）表明如此。"]
    # not across a line break: each list item is a statement of its own
    assert sentence_statements("- It is fast (mostly;\n- It is cheap.") == ["- It is fast (mostly;", "- It is cheap."]


def test_numbered_answers_give_one_statement_per_item() -> None:
    answer = "The approaches are: 1. Contrastive learning on translation pairs. 2. Alignment of monolingual spaces."
    assert sentence_statements(answer) == ["The approaches are: 1. Contrastive learning on translation pairs.",
                                           "2. Alignment of monolingual spaces."]


def test_a_long_run_of_initials_is_one_sentence_read_once() -> None:
    # each skipped break reads only the end of the text before it: reading all of it was quadratic
    assert split_sentences("J. " * 30_000) == [("J. " * 30_000).strip()]
