"""The models one run shares: a lazily loaded judge and embedder, and prompts in the sample's language.

The judge and the embedder are loaded on first use, so `localeval score -m mrr` never pays for them, and
once per run, however many metrics use them. Each prompt file is read and parsed once per run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..data.records import Sample
from .options import JudgeOptions


@dataclass
class JudgeKit:
    options: JudgeOptions = field(default_factory=JudgeOptions)
    cache: Any = None  # a JudgeCache to use instead of the file options.cache names (see open_judge)
    _judge: Any = None
    _embedder: Any = None
    _prompts: dict[tuple[str, str], Any] = field(default_factory=dict)

    @property
    def judge(self) -> Any:
        if self._judge is None:
            from .options import open_judge

            self._judge = open_judge(self.options, self.cache)
        return self._judge

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from ..embeddings import load_embedder
            from ..settings import Settings

            self._embedder = load_embedder(Settings.resolve(embedder=self.options.embedder).embedder)
        return self._embedder

    def lang(self, sample: Sample) -> str:
        from .prompts import detect_lang

        return detect_lang(f"{sample.question}\n{sample.answer or ''}", self.options.lang)

    def prompt(self, name: str, lang: str, **variables: Any) -> Any:
        """The prompt file `name` in `lang`, rendered with `variables`."""
        return self._template(name, lang).render(**variables)

    def prompt_version(self, name: str, lang: str) -> str:
        """name@version of a prompt file, for provenance fields."""
        return f"{name}@{self._template(name, lang).version}"

    def _template(self, name: str, lang: str) -> Any:
        if (name, lang) not in self._prompts:
            from .prompts import load_prompt

            self._prompts[name, lang] = load_prompt(name, lang, self.options.prompts_dir)
        return self._prompts[name, lang]

    def model_info(self) -> dict[str, Any]:
        """Which judge produced the numbers (only when it was loaded)."""
        return {} if self._judge is None else self._judge.describe()

    def close(self) -> None:
        if self._judge is not None:
            self._judge.close()
            self._judge = None
