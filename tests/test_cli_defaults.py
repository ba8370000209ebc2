"""A command run without options does what its driver does by default: the defaults the parser
gives (and `--help` shows) are the driver's, field by field, so a default changed in one place
cannot leave the command line on the old value. (`biozoo pretrain` and `biozoo distill`: the
same check is in tests/train/test_pretrain.py and tests/train/test_distill.py.)"""

import dataclasses
import inspect

import pytest

from biozoo.cli import build_parser


def parse(*argv):
    return build_parser().parse_args(list(argv))


def differences(made, expected):
    """The fields in which dataclass instance `made` differs from `expected`."""
    return {f.name: (getattr(made, f.name), getattr(expected, f.name)) for f in dataclasses.fields(expected)
            if getattr(made, f.name) != getattr(expected, f.name)}


def default_of(function, name):
    return inspect.signature(function).parameters[name].default


@pytest.mark.parametrize("kind", ["ner", "re", "qa", "doc"])
def test_finetune_gives_the_hyperparameters_defaults(kind):
    from biozoo._commands.tasks import finetune_hyperparameters
    from biozoo.train.hyperparameters import Hyperparameters

    args = parse("finetune", kind, "--preset", "p", "--data", "d", "--output", "o")
    # max_seq_length None: run_finetune takes the task kind's, capped at the model's positions
    assert differences(finetune_hyperparameters(args), Hyperparameters()) == {}


def test_a_finetune_option_given_wins_over_the_recipe_and_the_recipe_over_the_default():
    from biozoo._commands.tasks import finetune_hyperparameters
    from biozoo.train.hyperparameters import Hyperparameters

    args = parse("finetune", "ner", "--preset", "p", "--data", "d", "--output", "o", "--epochs", "2")
    recipe = {"epochs": 5, "learning_rate": 1e-5, "optimizer": "lamb", "layer_decay": None}
    hp = finetune_hyperparameters(args, recipe)
    assert (hp.epochs, hp.learning_rate, hp.optimizer, hp.layer_decay) == (2, 1e-5, "lamb", None)
    assert hp.batch_size == Hyperparameters.batch_size


def test_annotate_gives_the_annotation_job_defaults():
    from biozoo._commands.annotate import DEFAULT_MODEL, job_from_arguments, model_batch_size
    from biozoo.annotate.job import AnnotationJob

    args = parse("annotate")
    args.batch_size = model_batch_size(AnnotationJob.batch_size)  # `auto`: the device's, checked apart
    assert differences(job_from_arguments(args), AnnotationJob(models=(DEFAULT_MODEL,))) == {}


def test_cascade_calibrate_gives_the_annotators_defaults():
    from biozoo.annotate.annotators import load_annotator
    from biozoo.annotate.calibrate import calibrate

    args = parse("cascade-calibrate", "--small", "s", "--large", "l", "--data", "d")
    assert args.batch_size == default_of(load_annotator, "batch_size")
    assert args.precision == default_of(load_annotator, "precision")
    assert args.escalate_measure == default_of(calibrate, "measure")
    assert args.target == default_of(calibrate, "target")


def test_evaluate_gives_the_drivers_defaults():
    from biozoo.linking.evaluation import evaluate_linking
    from biozoo.train.finetune import run_evaluate

    args = parse("evaluate", "link", "--model", "m")
    assert args.precision == default_of(run_evaluate, "precision")
    assert args.split == default_of(run_evaluate, "split")
    assert args.abbreviations == default_of(evaluate_linking, "abbreviations")


def test_the_check_can_fail():
    from biozoo.train.hyperparameters import Hyperparameters

    assert differences(Hyperparameters(seed=1), Hyperparameters()) == {"seed": (1, 42)}
