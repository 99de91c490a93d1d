"""Limits on input values, in one place, each with the reason it exists.

An input is refused when localeval could not carry it faithfully from the input file to the result
files: a value Python can read but not write back, a nesting that would crash the (recursive) JSON
decoder, an id no real system produces. Each limit is far above what real test sets use, so it only ever
stops a broken or hostile file, and it stops it with one line naming the file, line and field.
"""

from __future__ import annotations

#: Longest id (of a sample, context, document, query or label row), in characters. Real ids are keys,
#: hashes, paths or URLs of at most a few hundred characters; a longer one is almost always a whole text
#: pasted into the id column, and it would be repeated in every message and every output row.
MAX_ID_LENGTH = 1000

#: Deepest nesting of JSON arrays and objects in one value. A record needs three levels (record ->
#: contexts -> context); Python's JSON decoder and encoder recurse once per level and die with a
#: RecursionError near 1000 levels, so anything beyond a generous 100 is refused before decoding.
MAX_JSON_DEPTH = 100

#: Most digits in a JSON integer. Python refuses to turn an integer of more than 4300 digits into text
#: (a guard against CVE-2020-10735), so such a value could be read but never written back; no id, grade
#: or count needs more than 100 digits (an id that long should be a string anyway).
MAX_INT_DIGITS = 100

#: Largest relevance grade (of `reference_doc_ids` or a qrels line), in magnitude. Judgement scales run
#: 0-3 (TREC), 0-4 (web search) or at most 0-100; a grade in the millions is a score or a count pasted
#: into the grade column, and grades near the float limit make DCG's sums overflow into NaN.
MAX_GRADE = 1_000_000

#: Largest metric value, in magnitude: score skips a larger one, and a scored run holding one is refused when
#: read back (compare, report, calibrate, check).
#: localeval's own metrics lie in [0, 1] and a plugin's score is rarely beyond thousands; a value near the
#: float limit (1e308) turns means, variances and bootstrap sums into infinity and then NaN.
MAX_SCORE = 1e12
