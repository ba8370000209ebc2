"""Task adapters: how `biozoo finetune` reads, builds, batches and scores each task kind.

`ADAPTERS[kind](**options)` is the adapter of task kind `kind` ("ner", "re", "doc", "qa");
`TaskAdapter` says what an adapter does.
"""

from biozoo.train.adapters.base import TaskAdapter, load_splits
from biozoo.train.adapters.document import DocumentAdapter
from biozoo.train.adapters.ner import NerAdapter
from biozoo.train.adapters.qa import QuestionAnsweringAdapter
from biozoo.train.adapters.relation import RelationAdapter

ADAPTERS = {"ner": NerAdapter, "re": RelationAdapter, "doc": DocumentAdapter, "qa": QuestionAnsweringAdapter}

__all__ = ["ADAPTERS", "TaskAdapter", "NerAdapter", "RelationAdapter", "DocumentAdapter", "QuestionAnsweringAdapter",
           "load_splits"]
