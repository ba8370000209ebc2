"""The `biozoo` command line (also `python -m biozoo`).

Each command is a module of biozoo._commands, argparse glue for the code it drives
(biozoo.train, biozoo.metrics, ...): a module in COMMAND_MODULES defines
`register(subparsers)`, which adds its parser and sets `func` to a handler taking the
parsed arguments and returning an exit status. Heavy imports happen inside handlers, so
`biozoo --help` and `biozoo list` stay fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from biozoo.errors import BiozooError, file_system_error_line

COMMAND_MODULES = (
    "biozoo._commands.registry",  # list, info, check-cache
    "biozoo._commands.convert",   # convert, verify
    "biozoo._commands.export",    # export
    "biozoo._commands.tasks",     # finetune, evaluate
    "biozoo._commands.annotate",  # annotate
    "biozoo._commands.score",     # score
    "biozoo._commands.train",     # pretrain, distill
    "biozoo._commands.benchmark", # benchmark, data download
    "biozoo._commands.demo",      # demo
)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="biozoo",
        description="Biomedical language models for Keras 3 (TensorFlow, JAX or PyTorch): list, convert, "
        "fine-tune, evaluate, score, annotate and export.",
    )
    from biozoo import __version__

    parser.add_argument("--version", action="version", version=f"biozoo {__version__}")
    parser.add_argument("--backend", choices=BACKENDS,
                        help="the Keras backend to run on (default: $KERAS_BACKEND, else tensorflow); "
                        "e.g. `biozoo --backend jax finetune ...`")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def _format_warning(message, category, filename, lineno, line=None, _default=warnings.formatwarning):
    """biozoo's own warnings (data quirks, damaged cache entries) as one line, without Python's
    source location; others as Python prints them."""
    if filename.startswith(_PACKAGE_DIR) or category.__module__ == "biozoo.errors":
        return f"biozoo: warning: {' '.join(str(message).split())}\n"
    return _default(message, category, filename, lineno, line)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
BACKENDS = ("tensorflow", "jax", "torch")
TENSORFLOW_MODULES = ("tensorflow", "tensorflow_text", "tf_keras")  # a command that imports one needs TensorFlow


def main(argv=None):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.backend:
        running = sys.modules["keras"].backend.backend() if "keras" in sys.modules else None
        if running not in (None, args.backend):
            parser.error(f"--backend {args.backend}: Keras already runs on {running} in this process "
                         f"(set KERAS_BACKEND={args.backend} before it starts)")
        os.environ["KERAS_BACKEND"] = args.backend
    keep_jax_programs()
    previous, warnings.formatwarning = warnings.formatwarning, _format_warning
    try:
        return _run(args)
    finally:
        warnings.formatwarning = previous


def keep_jax_programs():
    """JAX keeps what it compiles (train steps, each batch shape's prediction) in
    `$BIOZOO_CACHE/jax-compilation`, so that a rerun, the next seed or the next `annotate`
    skips compiling them again. A user's own JAX_COMPILATION_CACHE_DIR wins; read when JAX is
    imported, so set before (and only for a JAX run: other commands import nothing for it)."""
    if os.environ.get("KERAS_BACKEND") == "jax" and "jax" not in sys.modules:
        from biozoo.presets.cache import cache_root

        os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(cache_root(), "jax-compilation"))


def _run(args):
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as error:  # every expected failure is one clear line
        if os.environ.get("BIOZOO_DEBUG"):
            raise
        line = file_system_error_line(error)  # gs:// and other TensorFlow file systems
        if line is None and isinstance(error, ModuleNotFoundError) and error.name in TENSORFLOW_MODULES:
            line = (f"this command needs TensorFlow, which cannot be imported here (no module {error.name!r}; "
                    f"KERAS_BACKEND={os.environ.get('KERAS_BACKEND', 'tensorflow')}): install tensorflow 2.20 and "
                    "tensorflow-text 2.20.1 (`pip install biozoo` does), or see the README's \"JAX, PyTorch and "
                    "TensorFlow\" for what runs without it")
        if line is None and isinstance(error, (BiozooError, OSError, KeyError, ValueError)):
            line = str(error) if not isinstance(error, KeyError) or not error.args else str(error.args[0])
        if line is None:
            raise
        print(f"biozoo {args.command}: error: {' '.join(line.split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
