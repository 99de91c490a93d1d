"""JSON-schema → GBNF for grammar-constrained generation, with JSON's own string rule.

llama-cpp-python's schema-to-GBNF converter lets a JSON string hold raw control characters (its `char`
rule is [^"\\] | escape). A model that writes a newline inside a string then never produces parseable
JSON, and one that wanders into ``` fences stays inside the string until maxLength. The rule below is
JSON's own: no raw control characters, so a newline can only come as the escape \\n. Backends that
accept a GBNF grammar (llama.cpp in-process, llama-server's `grammar` field) use this text.
"""

from __future__ import annotations

LOOSE_CHAR_RULE = 'char ::= [^"\\\\] |'
JSON_CHAR_RULE = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'
#: Part of every json call's cache key: cached outputs of an older grammar are not reused.
GRAMMAR_VERSION = 2


def strict_json_gbnf(schema_json: str) -> str:
    """The GBNF of llama-cpp-python's converter with JSON's string rule (see JSON_CHAR_RULE)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(schema_json).replace(LOOSE_CHAR_RULE, JSON_CHAR_RULE)
