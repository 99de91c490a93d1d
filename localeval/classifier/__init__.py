"""Trained classifier judges, ARES's method: a small cross-encoder fine-tuned for the user's domain on
synthetic pairs (`localeval generate`), the GGUF judge's own probabilities (distillation) and human labels,
then used in place of the GGUF judge for the verdicts it was trained for.

pairs.py reads training pairs, training.py fine-tunes and writes the classifier folder, folder.py reads
and checks one, and judge/classified.py answers the judge's questions with it.
"""

from .folder import ClassifierError, ClassifierFolder, check_classifier
from .judgements import JUDGEMENTS, Judgement

__all__ = ["JUDGEMENTS", "ClassifierError", "ClassifierFolder", "Judgement", "check_classifier"]
