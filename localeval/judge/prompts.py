"""Judge prompts as files: prompts/{en,zh}/NAME.md, a small front matter and a strict Jinja2 template.

A prompt file reads like prose (role, rules, few-shot examples, then the input) and is split into chat
turns by `### system`, `### user` and `### assistant` lines. The split is made on the raw template, before
rendering, so a user's text containing "### user" cannot forge a turn, and the spelling of a chat control
token in a user's text ("<|im_end|>", "</s>") gets a zero-width space after its "<", so the tokenizer,
which parses control tokens in the rendered chat, reads it as plain text. In the variables that hold a
user's answer or passages (UNTRUSTED), text aimed at the judge is cut out first (injection.py). Rendering
uses StrictUndefined: a missing variable raises instead of silently judging an empty string. The sha256 of
the raw file text travels with every rendered prompt into the judge cache key, so editing a prompt
invalidates exactly its own cached answers.

Front matter (between `---` lines, `key: value`):
    name, version, kind (json | yes_no | choice | continuation), max_tokens,
    yes / no (answer words, `|`-separated variants allowed) for yes_no,
    options (comma-separated) for choice, schema (one-line JSON schema) for json.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import JudgeError, LocalevalError
from ..files import read_text
from ..strict_json import parse_json
from ..resources import prompts_dir as packaged_prompts_dir
from ..text import CJK
from .injection import screen
LANGS = ("en", "zh")
KINDS = ("json", "yes_no", "choice", "continuation")
ROLE_LINE = re.compile(r"^###\s*(system|user|assistant)\s*$", re.MULTILINE)
LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
ZH_SHARE = 0.2
#: Template variables that hold a user's answer or passages (or text cut from them): screened before
#: rendering. The question is the test set author's own text ("Answer yes or no: ..." is a fair question).
UNTRUSTED = frozenset({"answer", "target", "context", "passage", "passages", "sentence", "sentences", "statement"})
#: The "<" of what a tokenizer could read as a control token: <|name|> (ChatML, Llama 3, ...), <s>, </s>.
CONTROL_TOKEN = re.compile(r"<(?=\|[^\s|<>]{1,64}\|>|/?s>)")


def defuse(text: str) -> str:
    """`text` with every "<" a tokenizer could read as a control token followed by a zero-width space."""
    return CONTROL_TOKEN.sub("<\u200b", text)


class PromptError(LocalevalError):
    """A prompt file that is missing or malformed, or a render with a missing variable."""


@dataclass(frozen=True)
class RenderedPrompt:
    """What the judge needs: chat turns plus everything about the prompt that belongs in the cache key."""

    name: str
    version: str
    lang: str
    kind: str
    sha256: str
    messages: tuple[dict[str, str], ...]
    max_tokens: int
    answers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    schema: dict[str, Any] | None = None
    #: The values rendered into it (screened as rendered), for a judge that reads them rather than the
    #: chat: a trained classifier scores (question, passage) pairs (judge/classified.py).
    variables: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str
    lang: str
    kind: str
    max_tokens: int
    path: Path
    raw: str
    sections: tuple[tuple[str, str], ...]
    answers: dict[str, tuple[str, ...]]
    schema: dict[str, Any] | None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw.encode("utf-8")).hexdigest()

    def render(self, **variables: Any) -> RenderedPrompt:
        """Fill the template; a variable the template uses but the caller did not pass raises PromptError."""
        import jinja2

        messages = []
        variables = {name: _as_data(value, name in UNTRUSTED) for name, value in variables.items()}
        for role, template in self.sections:
            try:
                text = _compile(template).render(**variables)
            except jinja2.UndefinedError as exc:
                raise PromptError(f"prompt {self.path}: {exc.message}; pass it when rendering") from exc
            except jinja2.TemplateError as exc:
                raise PromptError(f"prompt {self.path}: template error: {exc}") from exc
            messages.append({"role": role, "content": text.strip()})
        return RenderedPrompt(self.name, self.version, self.lang, self.kind, self.sha256, tuple(messages),
                              self.max_tokens, self.answers, self.schema, variables)


    def check(self) -> None:
        """Compile every section now (a syntax error is a PromptError here, not after the judge loads)."""
        import jinja2

        for _, template in self.sections:
            try:
                _compile(template)
            except jinja2.TemplateError as exc:
                raise PromptError(f"prompt {self.path}: template error: {exc}") from None


def _as_data(value: Any, untrusted: bool) -> Any:
    """A template variable with every control-token spelling in its text broken and, when it holds a
    user's answer or passages, text aimed at the judge screened out (see the module doc)."""
    if isinstance(value, str):
        return defuse(screen(value).text if untrusted else value)
    if isinstance(value, (list, tuple)):
        return type(value)(_as_data(v, untrusted) for v in value)
    if isinstance(value, dict):
        return {k: _as_data(v, untrusted) for k, v in value.items()}
    return value


@lru_cache(maxsize=256)
def _compile(template: str) -> Any:
    """Compiled once per template text: metrics render the same prompt for every statement."""
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    return env.from_string(template)


def detect_lang(text: str, forced: str | None = None) -> str:
    """"zh" when CJK characters are at least ZH_SHARE of the letters, else "en"; `forced` (a --lang
    option) wins when given.

    A Chinese character is about one word and an English word about five letters, so a small CJK
    share already means mostly-Chinese text; an English text quoting one Chinese word stays "en".
    """
    if forced is not None:
        if forced not in LANGS:
            raise PromptError(f"language '{forced}' is not supported; use one of {', '.join(LANGS)}")
        return forced
    cjk = len(CJK.findall(text))
    latin = len(LATIN.findall(text))
    if cjk == 0:
        return "en"
    return "zh" if cjk >= ZH_SHARE * (cjk + latin) else "en"


def load_prompt(name: str, lang: str, prompts_dir: str | Path | None = None) -> Prompt:
    """prompts_dir/lang/name.md when that exists (the --prompts override), else the packaged file."""
    if lang not in LANGS:
        raise PromptError(f"language '{lang}' is not supported; use one of {', '.join(LANGS)}")
    candidates = []
    if prompts_dir is not None:
        candidates.append(Path(prompts_dir) / lang / f"{name}.md")
    candidates.append(packaged_prompts_dir() / lang / f"{name}.md")
    for path in candidates:
        if path.is_file():
            return parse_prompt(read_text(path), path, lang)
    raise PromptError(f"no prompt '{name}' for language '{lang}' (looked for {', '.join(str(p) for p in candidates)})")


def parse_prompt(raw: str, path: Path, lang: str) -> Prompt:
    header, body = _split_front_matter(raw, path)
    for key in ("name", "version", "kind", "max_tokens"):
        if key not in header:
            raise PromptError(f"prompt {path}: front matter lacks '{key}'")
    kind = header["kind"]
    if kind not in KINDS:
        raise PromptError(f"prompt {path}: kind '{kind}' is not one of {', '.join(KINDS)}")
    try:
        max_tokens = int(header["max_tokens"])
    except ValueError:
        raise PromptError(f"prompt {path}: max_tokens '{header['max_tokens']}' is not an integer") from None
    answers: dict[str, tuple[str, ...]] = {}
    if kind == "yes_no":
        for key in ("yes", "no"):
            if key not in header:
                raise PromptError(f"prompt {path}: a yes_no prompt needs '{key}:' answer words")
            answers[key] = tuple(w.strip() for w in header[key].split("|") if w.strip())
    elif kind == "choice":
        if "options" not in header:
            raise PromptError(f"prompt {path}: a choice prompt needs 'options:' (e.g. 1,2,3,4,5)")
        answers = {o.strip(): (o.strip(),) for o in header["options"].split(",") if o.strip()}
    schema = None
    if "schema" in header:
        schema = parse_json(header["schema"], str(path), None, "schema")
    return Prompt(header["name"], header["version"], lang, kind, max_tokens, path, raw,
                  _split_sections(body, path), answers, schema)


def _split_front_matter(raw: str, path: Path) -> tuple[dict[str, str], str]:
    lines = raw.split("\n")
    if not lines or lines[0].strip() != "---":
        raise PromptError(f"prompt {path}: must start with a '---' front-matter line")
    header: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            return header, "\n".join(lines[number:])
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise PromptError(f"prompt {path}:{number}: expected 'key: value' in the front matter")
        header[key.strip()] = value.strip()
    raise PromptError(f"prompt {path}: front matter is not closed with '---'")


def _split_sections(body: str, path: Path) -> tuple[tuple[str, str], ...]:
    marks = list(ROLE_LINE.finditer(body))
    if not marks:
        raise PromptError(f"prompt {path}: no '### system' / '### user' sections")
    if body[: marks[0].start()].strip():
        raise PromptError(f"prompt {path}: text before the first '### <role>' line")
    sections = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(body)
        sections.append((mark.group(1), body[mark.end(): end]))
    if sections[-1][0] != "user":
        raise PromptError(f"prompt {path}: the last section must be '### user' (the judge answers it)")
    return tuple(sections)


_JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict,
               "array": list, "null": type(None)}


def validate(value: Any, schema: dict[str, Any], raw: str = "", where: str = "$") -> None:
    """Check a judge's JSON against the prompt's schema: types, required keys, enums and bounds.

    The grammar built from the same schema should guarantee all of this, so a failure means a grammar
    bug; we refuse the value (JudgeError with the raw output) rather than hand a metric garbage."""
    expected = schema.get("type")
    if expected is not None:
        types = expected if isinstance(expected, list) else [expected]
        ok = any(isinstance(value, _JSON_TYPES[t]) and not (t in ("integer", "number") and isinstance(value, bool))
                 for t in types if t in _JSON_TYPES)
        if not ok:
            raise JudgeError(f"judge output at {where} is {type(value).__name__}, schema wants {expected}", raw=raw)
    if "enum" in schema and value not in schema["enum"]:
        raise JudgeError(f"judge output at {where} is {value!r}, not one of {schema['enum']}", raw=raw)
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                raise JudgeError(f"judge output at {where} lacks required key '{key}'", raw=raw)
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                validate(value[key], sub, raw, f"{where}.{key}")
    elif isinstance(value, list):
        if len(value) > schema.get("maxItems", len(value)) or len(value) < schema.get("minItems", 0):
            raise JudgeError(f"judge output at {where} has {len(value)} items, outside the schema's bounds", raw=raw)
        for i, item in enumerate(value):
            validate(item, schema.get("items", {}), raw, f"{where}[{i}]")
    elif isinstance(value, str) and len(value) > schema.get("maxLength", len(value)):
        raise JudgeError(f"judge output at {where} is longer than maxLength={schema['maxLength']}", raw=raw)
