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


def test_finetune_defaults_are_the_documented_recipe():
    """The values themselves, as the README's defaults table states them (batch 8, 5e-5, 3 epochs,
    10 % warmup, weight decay 0.01, clipping at 1.0, AdamW, seed 42; the length the task kind's),
    and as `--help` shows them: a default changed in the one place both read fails here."""
    from biozoo._commands.tasks import finetune_hyperparameters

    hp = finetune_hyperparameters(parse("finetune", "ner", "--preset", "p", "--data", "d", "--output", "o"))
    got = (hp.epochs, hp.batch_size, hp.learning_rate, hp.max_seq_length, hp.seed, hp.warmup_ratio,
           hp.weight_decay, hp.clip_norm, hp.optimizer)
    assert got == (3.0, 8, 5e-5, None, 42, 0.1, 0.01, 1.0, "adamw")
    shown = " ".join(build_parser()._subparsers._group_actions[0].choices["finetune"].format_help().split())
    for text in ("default 3 (or the --recipe's)", "default 8, as the HF Trainer", "default 5e-05, or the --recipe's"):
        assert text in shown, text
