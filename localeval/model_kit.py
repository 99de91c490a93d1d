"""The models one run shares: a lazily loaded judge and embedders, and prompts in the sample's language.

The judge and the embedders are loaded on first use, so `localeval score -m mrr` never pays for them, and
once per run, however many metrics use them. Each prompt file is read and parsed once per run. Without
--embedder, the embedder follows the sample's language (embed.choose): a run of English samples never
loads the multilingual model, nor a run of Chinese ones MiniLM.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .data.records import Sample
from .judge.config import JudgeOptions, RunConfig

MODEL_KINDS = ("judge", "embedder")


class ModelKit:
    """The run's models over its resolved configuration; `cache` (a JudgeCache) replaces the file the
    configuration names, e.g. a Ray actor's local copy that forwards its new entries."""

    def __init__(self, config: RunConfig | None = None, cache: Any = None) -> None:
        self.config = config if config is not None else RunConfig.resolve()
        self.cache = cache
        self._judge: Any = None
        self._embedders: dict[str, Any] = {}
        self._prompts: dict[tuple[str, str], Any] = {}
        self._classifier: Any = None

    @classmethod
    def of(cls, options: JudgeOptions | None = None, cache: Any = None) -> ModelKit:
        """A kit for judge options, resolved now (scripts and tests; a run resolves them at its entry)."""
        return cls(RunConfig.resolve(options), cache)

    @property
    def options(self) -> JudgeOptions:
        return self.config.options

    @property
    def judge(self) -> Any:
        if self._judge is None:
            from .judge.backends import open_judge

            if self.options.classifier:
                from .judge.cache import JudgeCache
                from .judge.classified import ClassifiedJudge

                cache = self.cache if self.cache is not None else JudgeCache(self.config.cache_path)
                self._judge = ClassifiedJudge(self._classifier_folder(), cache, lambda c: open_judge(self.config, c),
                                              self.options.n_threads)
            else:
                self._judge = open_judge(self.config, self.cache)
        return self._judge

    @property
    def embedder(self) -> Any:
        """The embedder for text of no particular language (a corpus index): the named one, else the default."""
        return self.embedder_for(None)

    def load(self, kind: str) -> Any:
        """Load the model of a kind metrics declare ("judge", "embedder") now, rather than on first use."""
        if kind not in MODEL_KINDS:
            raise ValueError(f"unknown model kind {kind!r}; known: {', '.join(MODEL_KINDS)}")
        return self.judge if kind == "judge" else self.embedder

    def embedder_for(self, lang: str | None) -> Any:
        """The embedder that scores a sample in `lang`; its `name` goes into the sample's details."""
        from .embed import choose, load_embedder

        name = choose(self.config.embedder, lang)
        if name not in self._embedders:
            self._embedders[name] = load_embedder(name)
        return self._embedders[name]

    def embedder_choice(self, lang: str | None) -> str:
        """The embedder embedder_for(lang) loads, as a registry name or an absolute folder (a record of it
        must find the same model from another working folder)."""
        from . import models
        from .embed import choose

        name = choose(self.config.embedder, lang)
        return str(Path(name).expanduser().absolute()) if models.names_a_path(name) else name

    def embedder_settings(self) -> Any:
        """What the summary records: the named embedder, or the default per language."""
        from .embed import choose

        return self.config.embedder or {"zh": choose(None, "zh"), "other": choose(None)}

    def check(self, embedder: bool = False, judge: bool = True, lang: str | None = None) -> None:
        """Check, without loading anything, what this run's model work will need: with `judge`, what its
        backend needs (the judge file, or the server options' form), the cache path (a damaged cache moved
        aside, when asked) and the user's prompt files; when an embedder is named (or `embedder`), the embedder
        folder (the default for `lang` when none is named). A bad option then fails before any model loads."""
        from . import models
        from .judge.backends import check_backend
        from .judge.cache import check_cache_path, set_aside_if_damaged

        if judge and self.options.classifier:
            self._classifier_folder()
        if judge:
            check_backend(self.config)
            check_cache_path(self.config.cache_path)
            if self.options.move_damaged_cache:
                set_aside_if_damaged(self.config.cache_path)
            if self.options.prompts_dir is not None:
                check_prompts_dir(Path(self.options.prompts_dir))
        if embedder or self.config.embedder is not None:
            models.resolve(self.embedder_choice(lang), "embedder")

    def _classifier_folder(self) -> Any:
        """--classifier's folder, checked once per run (every file's sha256: worth doing once, not twice)."""
        if self._classifier is None:
            from .classifier.folder import check_classifier

            self._classifier = check_classifier(str(self.options.classifier))
        return self._classifier

    def vocabulary(self) -> set[str] | None:
        """The local judge's tokens, read from its GGUF header (no model load); None for a server judge."""
        if self.options.judge_url is not None:
            return None
        from . import models
        from .judge.gguf import vocabulary

        return vocabulary(models.resolve(self.config.judge, "judge"))

    def lang(self, sample: Sample) -> str:
        from .judge.prompts import detect_lang

        return detect_lang(f"{sample.question}\n{sample.answer or ''}", self.options.lang)

    def prompt(self, name: str, lang: str, **variables: Any) -> Any:
        """The prompt file `name` in `lang`, rendered with `variables`."""
        return self._template(name, lang).render(**variables)

    def prompt_version(self, name: str, lang: str) -> str:
        """name@version of a prompt file, for provenance fields."""
        return f"{name}@{self._template(name, lang).version}"

    def _template(self, name: str, lang: str) -> Any:
        if (name, lang) not in self._prompts:
            from .judge.prompts import load_prompt

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
    from .judge.prompts import LANGS, PromptError, load_prompt

    if not folder.is_dir():
        raise PromptError(f"--prompts {folder}: {'is a file' if folder.exists() else 'no such folder'}; "
                          "give a folder holding en/NAME.md and zh/NAME.md files")
    for lang in LANGS:
        for path in sorted((folder / lang).glob("*.md")):
            load_prompt(path.stem, lang, folder).check()
