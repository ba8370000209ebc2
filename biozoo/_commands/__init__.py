"""The CLI's command groups, one module each (argparse glue only)."""
import argparse
import os

from biozoo.data.embedded import resolve_data_path

PRECISION_HELP = ("inference precision: float32 (default), bfloat16 (Keras' bfloat16 policy) or int8 (LiteRT "
                  "dynamic-range quantization, run by the LiteRT interpreter)")


def run_command(module, argv):
    """Run one command of `module` (a module of this package) with the command line `argv`, as the
    CLI would; its exit status."""
    parser = argparse.ArgumentParser(prog="biozoo")
    module.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


def data_argument(value):
    """A `--data` value: a path, or the name of a corpus packaged with biozoo (`ncbi-disease`)."""
    return os.fspath(resolve_data_path(value))


def documents_argument(value):
    """A document file or folder, or the name of a document file packaged with biozoo
    (`example-pubtator`); a packaged NER corpus is no documents, so its name stays a path."""
    resolved = resolve_data_path(value)
    return os.fspath(resolved) if os.path.isfile(resolved) else value


DATA_HELP = "a data folder, or ncbi-disease (the NCBI-disease corpus packaged with biozoo)"
