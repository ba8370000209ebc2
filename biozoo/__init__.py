"""biozoo: biomedical language models for Keras 3, loaded by name.

    >>> import biozoo
    >>> biozoo.list_presets("bioformer_*", kind="backbone")
    ['bioformer_16l', 'bioformer_8l']
    >>> backbone = biozoo.from_preset("bioformer_8l")
    >>> tokenizer = biozoo.Tokenizer.from_preset("bioformer_8l")

`import biozoo` is light: the public names below are imported when first used (as transformers
hands out its names), so the command line's `--help`, `list` and `info` import neither Keras nor
TensorFlow. biozoo's Keras classes are registered as soon as KerasHub is imported, so presets it
writes also load with `keras_hub.models.Backbone.from_preset(directory)`.
"""

import os

from biozoo import _environment
from biozoo._lazy import lazy_names

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
_environment.quiet_tensorflow_logs()
_environment.load_triton_before_tensorflow()

__version__ = "0.1.0"

# public name -> the module that defines it
_PUBLIC = {
    "from_preset": "biozoo.api",
    "Tokenizer": "biozoo.api",
    "list_presets": "biozoo.registry",
    "TokenClassifier": "biozoo.tasks",
    "SequenceClassifier": "biozoo.tasks",
    "QuestionAnswerer": "biozoo.tasks",
    "MaskedLM": "biozoo.tasks",
    "ReplacedTokenDetector": "biozoo.tasks",
    "AionerTagger": "biozoo.tasks",
}

__all__ = ["__version__", *_PUBLIC]

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)

_environment.register_classes_with_keras_hub("biozoo.models")
