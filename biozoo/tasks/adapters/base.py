"""What a task adapter is: how fine-tuning and evaluation handle one task kind."""

from __future__ import annotations

import warnings

from biozoo.data.ner import find_split
from biozoo.data.remote import local_folder
from biozoo.errors import DataFormatError, DataWarning
from biozoo.task_kinds import task_kind


class TaskAdapter:
    """One task kind for the fine-tuning driver (`biozoo.train.finetune`): it reads the kind's
    data, builds its task model, turns examples into training batches and scores predictions
    with the kind's reference metric (`biozoo.metrics`).

    `options()` are the constructor arguments the adapter ends with (some are settled by the
    training data, e.g. the entity markers added to the vocabulary); they are recorded beside
    the task preset (`biozoo.tasks.finetuned`), so that `biozoo evaluate` rebuilds the same
    adapter.

    Example (the NER adapter on the packaged NCBI-disease corpus):
        >>> from biozoo.task_kinds import task_kind
        >>> adapter = task_kind("ner").load_adapter()()
        >>> dev = adapter.load(embedded_corpus("ncbi-disease"), only="dev")["dev"]
        >>> adapter.kind, adapter.headline_metric, len(dev), dev[0].words[:3]
        ('ner', 'f1', 923, ['BRCA1', 'is', 'secreted'])
    """

    kind = None  # its name in biozoo.task_kinds
    headline_metric = "f1"  # what accuracy certificates compare (a percentage)
    train_counts = {}  # set by `batches(training=True)`: counts metrics.json records ({"train_...": n})
    train_warnings = []  # set with them: what the training log says of them

    @property
    def task_cls(self):
        return task_kind(self.kind).load_task_class()

    def options(self):
        return {}

    def load(self, data_dir, only=None):
        """{split: examples} of `data_dir` (train, dev, test; only `only` when given)."""
        raise NotImplementedError

    def load_for(self, task, data_dir, only=None):
        """`load`'s splits, read for scoring `task` (the default: as `load` reads them)."""
        return self.load(data_dir, only)

    def build_task(self, preset, splits, hp):
        """The task model to fine-tune from `preset` (`hp`: `finetune.Hyperparameters`)."""
        raise NotImplementedError

    def batches(self, task, examples, hp, training=False):
        """A `biozoo.data.pipeline.FeatureBatches` of `examples` (shuffled when training)."""
        raise NotImplementedError

    def tune(self, task, dev):
        """Settle what training leaves open on the dev split (the default: nothing)."""

    def evaluate(self, task, examples):
        """The kind's scores of `task` on `examples` (a JSON-ready dict)."""
        raise NotImplementedError

    def headline_f1(self, scores):
        """The F1 (percent) in `evaluate`'s scores."""
        return scores["f1"]


class Splits(dict):
    """{split: examples}, and in `missing` {split: why} for each optional split not there."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.missing = {}


def load_splits(data_dir, reader, only=None, extensions=(".tsv", ".txt"), train_reader=None):
    """{split: examples} for train / dev / test (dev and test optional unless asked for; an
    absent or empty one is named in the result's `missing`). A train split, or the split asked
    for with `only`, without examples raises DataFormatError naming its file. `train_reader`
    (default `reader`) reads the train split when all splits are read (for training; a split
    asked for with `only` is read to be scored, by `reader`). `data_dir` may be gs:// (read
    through tf.io.gfile)."""
    splits = Splits()
    with local_folder(data_dir) as folder:
        for split in (only,) if only else ("train", "dev", "test"):
            try:
                path = find_split(folder, split, extensions)
            except FileNotFoundError as error:
                if split == "train" or only:
                    raise
                splits.missing[split] = str(error).replace(str(folder), str(data_dir))
                continue
            examples = (train_reader if split == "train" and not only and train_reader else reader)(path)
            shown = str(path).replace(str(folder), str(data_dir).rstrip("/"))
            if not examples:
                if split == "train" or only:
                    raise DataFormatError(f"{shown}: split '{split}' has no examples (the file is empty, or holds "
                                          "only blank or -DOCSTART- lines)")
                splits.missing[split] = f"{shown} holds no examples"
                continue
            for example in examples:  # the examples name the file read, not a copy of it
                if getattr(example, "path", None) == str(path):
                    example.path = shown
            splits[split] = examples
    return splits


def train_labels(splits, labels_of):
    """The labels of the train split, as HF's run_glue and run_ner take them (`labels_of(example)`:
    its (label, line) pairs). A label of another split that train lacks, a class the model would
    never train on, raises DataFormatError naming it, its first file:line and the train labels."""
    known = {label for example in splits["train"] for label, _ in labels_of(example)}
    unknown = {}
    for examples in splits.values():
        for example in examples:
            for label, line in labels_of(example):
                if label not in known:
                    unknown.setdefault(label, f"{example.path}:{line}")
    if unknown:
        named = "; ".join(f"{where}: label {label!r}" for label, where in unknown.items())
        raise DataFormatError(f"{named}: not in the train split {splits['train'][0].path}, whose labels are "
                              f"{', '.join(map(repr, sorted(known)))} (a model cannot learn a class it never "
                              "trains on): correct the label, or add training examples of it")
    return known


def truncation_report(task, examples, cut, markers=()):
    """{"examples", "tokens_cut"}: the `examples` encoding cut to fit the task's sequence length and
    the tokens it cut (`cut`: per example, the ids cut, as `SequenceClassifierPreprocessor.encode`
    fills it); with `markers` (token ids) also "lost_marker", those that lost one of them. A
    DataWarning names the first example of each."""
    truncated = [(example, ids) for example, ids in zip(examples, cut) if len(ids)]
    report = {"examples": len(truncated), "tokens_cut": sum(len(ids) for _, ids in truncated)}
    lost = [example for example, ids in truncated if not set(markers).isdisjoint(ids)]
    if markers:
        report["lost_marker"] = len(lost)
    if truncated:
        length = task.preprocessor.sequence_length
        positions = task.backbone.get_config().get("max_sequence_length")
        lost_text = f"; {len(lost)} lost an entity pair's marker, the first at {_where(lost[0])}" if lost else ""
        warnings.warn(DataWarning(
            f"{_where(truncated[0][0])}: {len(truncated)} of {len(examples)} examples are longer than {length} "
            f"tokens and were cut to fit ({report['tokens_cut']} tokens cut{lost_text}); a larger --max-seq-length "
            f"keeps more (the model takes up to {positions})"), stacklevel=2)
    return report


def _where(example):
    return f"{example.path}:{example.line}"
