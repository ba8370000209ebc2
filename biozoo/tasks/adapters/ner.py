"""Named-entity recognition: token<TAB>tag files, a `TokenClassifier`, conlleval entity F1."""

from __future__ import annotations

from biozoo.data import IGNORE_LABEL
from biozoo.data.ner import infer_entity_type, read_ner, tag_kind
from biozoo.data.pipeline import model_input_batches
from biozoo.metrics.ner import entity_scores
from biozoo.tasks.adapters.base import TaskAdapter, load_splits, train_labels


class NerAdapter(TaskAdapter):
    """NER on token<TAB>tag files (typed IOB2, BLURB bare tags, BioBERT whitespace files); the
    tags are the train split's."""

    kind = "ner"

    def __init__(self, entity_type=None):
        self.entity_type = entity_type

    def options(self):
        return {"entity_type": self.entity_type}

    def load(self, data_dir, only=None):
        return load_splits(data_dir, lambda path: read_ner(path, entity_type=self.entity_type), only)

    def load_for(self, task, data_dir, only=None):
        """As `load`; without an `entity_type`, bare B/I tags in a folder that names no type are read
        as the model's type when it tags exactly one."""
        model_types = {name[2:] for name in getattr(task, "label_names", ()) if tag_kind(name) == "typed"}
        if self.entity_type is not None or len(model_types) != 1:
            return self.load(data_dir, only)
        (model_type,) = model_types

        def read(path):
            try:
                infer_entity_type(path)
            except ValueError:  # the folder names no type
                return read_ner(path, entity_type=model_type)
            return read_ner(path)

        return load_splits(data_dir, read, only)

    def build_task(self, preset, splits, hp):
        tags = train_labels(splits, lambda s: [(tag, s.line + i) for i, tag in enumerate(s.tags)])
        label_names = ["O"] + sorted(tags - {"O"}, key=lambda t: (t[2:], t[:1]))
        task = self.task_cls.from_preset(preset, label_names=label_names)
        task.preprocessor.sequence_length = hp.max_seq_length
        return task

    def batches(self, task, sentences, hp, training=False):
        index = {label: i for i, label in enumerate(task.label_names)}
        windows = task.preprocessor.windows([s.words for s in sentences],
                                            [[index[t] for t in s.tags] for s in sentences])
        return model_input_batches(
            windows.token_ids, task.preprocessor.tokenizer.pad_token_id,
            extra={"labels": windows.labels}, extra_padding={"labels": IGNORE_LABEL}, y_key="labels",
            batch_size=hp.batch_size, max_length=hp.max_seq_length, shuffle=training, seed=hp.seed,
        )

    def evaluate(self, task, sentences):
        gold_types = {t.split("-", 1)[-1] for s in sentences for t in s.tags if t != "O"}
        model_types = {name.split("-", 1)[-1] for name in task.label_names if name != "O"}
        if gold_types and not gold_types & model_types:
            raise ValueError(f"the model tags {sorted(model_types)} and the data's entities are {sorted(gold_types)}: "
                             "no type in common, every entity would count as wrong (bare B/I tags take the type "
                             "their folder names, else the model's when it tags one type)")
        tags, _ = task.predict_tags([s.words for s in sentences])
        scores = entity_scores([s.tags for s in sentences], tags)
        scores["sentences"] = len(sentences)
        return scores
