"""Task models: NER (including AIONER), relation / document classification, QA, and pretraining heads."""

import biozoo.models  # noqa: F401  (registers the backbones and tokenizers with Keras)
from biozoo.tasks.aioner import AionerTagger
from biozoo.tasks.finetuned import load_task
from biozoo.tasks.pretraining import MaskedLM, ReplacedTokenDetector
from biozoo.tasks.question_answerer import QuestionAnswerer, QuestionAnswererPreprocessor
from biozoo.tasks.sequence_classifier import SequenceClassifier, SequenceClassifierPreprocessor
from biozoo.tasks.token_classifier import TokenClassifier, TokenClassifierPreprocessor

__all__ = [
    "TokenClassifier", "TokenClassifierPreprocessor",
    "SequenceClassifier", "SequenceClassifierPreprocessor",
    "QuestionAnswerer", "QuestionAnswererPreprocessor",
    "MaskedLM", "ReplacedTokenDetector",
    "AionerTagger",
    "load_task",
]
