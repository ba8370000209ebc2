"""Training drivers and what they share.

* `finetune` — `biozoo finetune` / `biozoo evaluate`: `Hyperparameters`, `run_finetune`,
  `run_seeds`, `run_evaluate`; the task adapters are in `biozoo.tasks.adapters`.
* `hyperparameters` — the drivers' hyperparameter dataclasses and their defaults, free of Keras:
  the command line takes its option defaults from them.
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

# What the command line accepts, here so that it is built without importing Keras or TensorFlow.
# `--strategy` (`tf_strategy.resolve_strategy` builds them):
STRATEGIES = ("auto", "tpu", "mirrored", "multiworker", "cpu")
# `biozoo pretrain METHOD`, per method: what a chosen piece becomes, as (P([MASK]), P(a random
# token)), the rest unchanged: BERT's 80/10/10; ELECTRA's pretrain_helpers.mask 85 % [MASK], 15 %
# unchanged, never a random token (the generator makes the replacements).
PRETRAIN_METHODS = {
    "mlm": {"replacement": (0.8, 0.1)},
    "electra": {"replacement": (0.85, 0.0)},
}
# `biozoo distill --method`, per method: the loss terms reported, default loss weights, temperature,
# weight decay, warmup (share of the steps), masking, and the teacher layer of each student layer
# (`layer_map`: the first or the last teacher layer of each of L_student equal blocks), from the
# authors' DistilBioBERT / TinyBioBERT / CompactBioBERT-Distillation.py. Every script warms up over
# warmup_steps of its 100,000 steps and masks with DataCollatorForLanguageModeling (single pieces).
DISTILL_METHODS = {
    "distilbert": {
        "terms": ("mlm", "output", "align"),
        "weights": {"mlm": 2.0, "output": 5.0, "align": 1.0},
        "temperature": 2.0,
        "weight_decay": 0.0,
        "warmup_ratio": 0.05,  # warmup_steps=5000
        "masking": "token",
        "layer_map": "first",  # initializeStudent: bertModel.encoder.layer[2*index]
    },
    "tinybert": {
        "terms": ("embedding", "hidden", "attention", "output"),
        "weights": {"embedding": 1.0, "layer": 1.0, "output": 1.0},
        "temperature": 1.0,
        "weight_decay": 1e-4,
        "warmup_ratio": 0.1,  # warmup_steps=10000
        "masking": "token",
        "layer_map": "last",  # t_attentions[i * layers_per_block + layers_per_block - 1]
    },
    "compact": {
        "terms": ("mlm", "hidden", "attention", "output"),
        "weights": {"mlm": 1.0, "compact": 3.0, "output": 5.0},
        "temperature": 1.0,
        "weight_decay": 1e-4,
        "warmup_ratio": 0.05,  # warmup_steps=5000
        "masking": "token",
        "layer_map": "last",  # initializeStudent and the losses: teacher layer [2*index + 1]
    },
}


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
