"""Training drivers and what they share.

* `finetune` — `biozoo finetune` / `biozoo evaluate`: `Hyperparameters`, `run_finetune`,
  `run_seeds`, `run_evaluate`; the task adapters are in `biozoo.tasks.adapters`.
* `run` — the run scaffold: strategy and batch split, seeding, dtype policy, the timed loop,
  the atomic write of OUTPUT and the clean-up (`TrainingRun`).
* `recipes` — published fine-tuning recipes (the BioM-Transformers table, `--recipe biom`).
* `tf_loop` — the resumable TensorFlow training loop and the distributed train step.
* `pretrain` — `biozoo pretrain`: MLM (+ NSP / SOP) and ELECTRA (`run_pretrain`), on every backend.
* `distill` — `biozoo distill`: DistilBERT, TinyBERT and CompactBioBERT distillation, on every backend.
* `tf_strategy` — choosing the tf.distribute strategy.
* `distribution` — the same choice on JAX and PyTorch (keras.distribution).
* `loop` — the resumable training loop on JAX and PyTorch, and the per-step loss log both loops use.

The command lines are in `biozoo._commands`; scoring is in `biozoo.metrics`.
"""

import dataclasses

# What `--strategy` accepts (`tf_strategy.resolve_strategy` builds them); here so that the command
# line is built without importing TensorFlow.
STRATEGIES = ("auto", "tpu", "mirrored", "multiworker", "cpu")


@dataclasses.dataclass
class ResolvedStrategy:
    """The strategy (tf.distribute) or distribution (keras.distribution) to build and train
    under, its name (as written to metrics.json) and the number of replicas the global batch is
    split over."""

    strategy: object
    name: str
    replicas: int
    detail: str = ""

    def describe(self):
        return f"strategy {self.name}, {self.replicas} replica(s){': ' + self.detail if self.detail else ''}"
