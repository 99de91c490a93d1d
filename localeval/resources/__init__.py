"""Files that ship with localeval: the prompt files, the model registry and the bundled example.

The repository's top-level `prompts/` and `models/registry.json` are the single source of truth. A built
wheel carries copies of them inside this package (pyproject's package-dir mapping puts them at
localeval/resources/prompts/ and localeval/resources/registry/), read with importlib.resources. A source
checkout (an editable install, or the repository on sys.path) has no copies here and reads the
top-level folders themselves, so an edited prompt is picked up without a rebuild.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
CHECKOUT_MODELS = CHECKOUT / "models"
_PACKAGED = Path(str(files(__name__)))


def prompts_dir() -> Path:
    """The folder holding en/NAME.md and zh/NAME.md."""
    return _first(_PACKAGED / "prompts", CHECKOUT / "prompts")


def registry_file() -> Path:
    return _first(_PACKAGED / "registry" / "registry.json", CHECKOUT_MODELS / "registry.json")


def example_file(name: str = "rag_demo.jsonl") -> Path:
    """A bundled example test set (the one `make demo` scores)."""
    return _PACKAGED / "examples" / name


def _first(packaged: Path, checkout: Path) -> Path:
    return packaged if packaged.exists() else checkout
