"""biozoo: biomedical language models for Keras 3 / TensorFlow, loaded by name.

    >>> import biozoo
    >>> biozoo.list_presets("bioformer_*", kind="backbone")
    ['bioformer_16l', 'bioformer_8l']
    >>> backbone = biozoo.from_preset("bioformer_8l")
    >>> tokenizer = biozoo.Tokenizer.from_preset("bioformer_8l")

Importing biozoo registers its Keras classes, so presets it writes also load with
`keras_hub.models.Backbone.from_preset(directory)`.
"""

import os

from biozoo import _environment

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
_environment.quiet_tensorflow_logs()
_environment.load_triton_before_tensorflow()

__version__ = "0.1.0"

from biozoo import models  # noqa: E402  (registers the backbones and tokenizers)
from biozoo.api import Tokenizer, from_preset  # noqa: E402
from biozoo.registry import list_presets  # noqa: E402
from biozoo.tasks import (  # noqa: E402
    AionerTagger,
    MaskedLM,
    QuestionAnswerer,
    ReplacedTokenDetector,
    SequenceClassifier,
    TokenClassifier,
)

__all__ = [
    "from_preset", "list_presets", "Tokenizer", "__version__",
    "TokenClassifier", "SequenceClassifier", "QuestionAnswerer", "MaskedLM", "ReplacedTokenDetector",
    "AionerTagger",
]
