"""The docstring examples that run offline print what they show, with the names of their own
module, `biozoo` and the public names of `biozoo.data`, `biozoo.documents`, `biozoo.linking` and
`biozoo.tokenizers` imported, as a reader would import them."""

import doctest
import io
import sys
import types

import pytest

import biozoo.data
import biozoo.documents
import biozoo.linking
import biozoo.tokenizers
from biozoo import task_kinds
from biozoo.annotate import runner
from biozoo.data import embedded, files, ner, qa, relation
from biozoo.documents import io as documents_io
from biozoo.documents import model
from biozoo.linking import abbreviations, concepts, index, linker, pipeline
from biozoo.tasks import question_answerer, sequence_classifier, token_classifier
from biozoo.tasks.adapters import base as adapters
from biozoo.tokenizers import base as tokenizer_base
from biozoo.tokenizers import wordpiece

RUNNABLE = [
    task_kinds.TaskKind,
    documents_io.DocumentStream,
    model, model.Annotation, model.Passage, model.Document, model.Relation, model.Collection,
    concepts.Concept, concepts.Dictionary,
    abbreviations.Abbreviation,
    index.StringMatcher, index.CharNgramIndex,
    linker.Linker, linker.Link, linker.describe_links,
    pipeline.DocumentLinker,
    runner.AnnotationRun,
    files, embedded.packaged_names_hint, ner.Sentence, qa.QAExample, relation.RelationExample,
    adapters.TaskAdapter,
    tokenizer_base.Tokenizer, wordpiece.WordPieceTokenizer,
    token_classifier.TokenClassifierPreprocessor, sequence_classifier.SequenceClassifierPreprocessor,
    sequence_classifier.longest_first,
    question_answerer.QuestionAnswererPreprocessor,
]


def names_for(owner):
    module = owner if isinstance(owner, types.ModuleType) else sys.modules[owner.__module__]
    names = {"biozoo": biozoo, **vars(module)}
    for package in (biozoo.data, biozoo.documents, biozoo.linking, biozoo.tokenizers):
        names.update({name: getattr(package, name) for name in package.__all__})
    return names


def run_examples(owner):
    """(examples run, failures, the runner's report) of `owner`'s own docstring."""
    tests = doctest.DocTestFinder(recurse=False).find(owner, globs=names_for(owner))
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    for test in tests:
        runner.run(test, out=report.write)
    return runner.tries, runner.failures, report.getvalue()


@pytest.mark.parametrize("owner", RUNNABLE, ids=lambda owner: f"{owner.__module__}.{owner.__qualname__}"
                         if hasattr(owner, "__qualname__") else owner.__name__)
def test_docstring_example_runs(owner):
    tries, failures, report = run_examples(owner)
    assert tries > 0, "no example found"
    assert failures == 0, report


def test_a_wrong_example_fails():
    """The check can fail: an example whose shown output differs is reported."""

    class Wrong:
        """
        >>> 1 + 1
        3
        """

    tries, failures, report = run_examples(Wrong)
    assert (tries, failures) == (1, 1) and "Expected:\n    3" in report
