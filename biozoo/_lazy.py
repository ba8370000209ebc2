"""Package names imported when first used (as transformers hands out its names), so that the
command line's --help, list and info import neither Keras nor TensorFlow.

Example (in a package's __init__):
    >>> _PUBLIC = {"Linker": "biozoo.linking.linker"}
    >>> __getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
"""

import importlib
import sys


def lazy_names(package, public):
    """`__getattr__` and `__dir__` for `package`, whose names `public` maps to their modules."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name):
        if name not in public:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(public[name]), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
