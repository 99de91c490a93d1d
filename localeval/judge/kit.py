"""The models one run shares: a lazily loaded judge and embedders, and prompts in the sample's language.

The judge and the embedders are loaded on first use, so `localeval score -m mrr` never pays for them, and
once per run, however many metrics use them. Each prompt file is read and parsed once per run. Without
--embedder, the embedder follows the sample's language (embed.choose): a run of English samples never
loads the multilingual model, nor a run of Chinese ones MiniLM.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.records import Sample
from .options import JudgeOptions


@dataclass
class JudgeKit:
    options: JudgeOptions = field(default_factory=JudgeOptions)
    cache: Any = None  # a JudgeCache to use instead of the file options.cache names (see open_judge)
    _judge: Any = None
    _embedders: dict[str, Any] = field(default_factory=dict)
    _prompts: dict[tuple[str, str], Any] = field(default_factory=dict)

    @property
    def judge(self) -> Any:
        if self._judge is None:
            from .options import open_judge

            self._judge = open_judge(self.options, self.cache)
        return self._judge

    @property
    def embedder(self) -> Any:
        """The embedder for text of no particular language (a corpus index): the named one, else the default."""
        return self.embedder_for(None)

    def embedder_for(self, lang: str | None) -> Any:
        """The embedder that scores a sample in `lang`; its `name` goes into the sample's details."""
        from ..embed import choose, load_embedder
        from ..settings import Settings

        name = choose(Settings.resolve(embedder=self.options.embedder).embedder, lang)
        if name not in self._embedders:
            self._embedders[name] = load_embedder(name)
        return self._embedders[name]

    def embedder_settings(self) -> Any:
        """What the summary records: the named embedder, or the default per language."""
        from ..embed import choose
        from ..settings import Settings

        named = Settings.resolve(embedder=self.options.embedder).embedder
        return named or {"zh": choose(None, "zh"), "other": choose(None)}

    def check(self, embedder: bool = False, judge: bool = True) -> None:
        """Check, without loading anything, what this run's model work will need: with `judge`, the judge
        file (present, GGUF, the registry's size; with --judge-url, the URL's form), the cache path and the
        user's prompt files; when an embedder is named (or `embedder`), the embedder folder. A bad option
        then fails before any model loads."""
        from .. import models
        from ..settings import Settings
        from .cache import check_cache_path

        settings = Settings.resolve(cache=self.options.cache, judge=self.options.judge,
                                    embedder=self.options.embedder)
        if judge:
            if self.options.judge_url is None:
                models.resolve(settings.judge, "judge")
            else:  # the judge runs on the server: no model file here, the URL's form checked now
                from .server import check_url

                check_url(self.options.judge_url)
            check_cache_path(settings.cache_path)
            if self.options.prompts_dir is not None:
                check_prompts_dir(Path(self.options.prompts_dir))
        if embedder or settings.embedder is not None:
            models.resolve(settings.embedder, "embedder")

    def vocabulary(self) -> set[str] | None:
        """The local judge's tokens, read from its GGUF header (no model load); None for a server judge."""
        if self.options.judge_url is not None:
            return None
        from .. import models
        from ..settings import Settings
        from .gguf import vocabulary

        return vocabulary(models.resolve(Settings.resolve(judge=self.options.judge).judge, "judge"))

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


def check_prompts_dir(folder: Path) -> None:
    """--prompts: a folder whose en/*.md and zh/*.md files all parse and compile (PromptError otherwise)."""
    from .prompts import LANGS, PromptError, load_prompt

    if not folder.is_dir():
        raise PromptError(f"--prompts {folder}: {'is a file' if folder.exists() else 'no such folder'}; "
                          "give a folder holding en/NAME.md and zh/NAME.md files")
    for lang in LANGS:
        for path in sorted((folder / lang).glob("*.md")):
            load_prompt(path.stem, lang, folder).check()
