"""The hyperparameters of the training drivers (`biozoo finetune`, `biozoo pretrain`, `biozoo
distill`) with their defaults, in a module that imports neither Keras nor TensorFlow: the
command line takes its option defaults from these dataclasses, so a default is written once.
The drivers are `biozoo.train.finetune`, `biozoo.train.pretrain` and `biozoo.train.distill`.
"""

from __future__ import annotations

import dataclasses

from biozoo.choices import DEFAULT_CLIP_NORM, FINETUNE_WARMUP_RATIO, FINETUNE_WEIGHT_DECAY


@dataclasses.dataclass
class Hyperparameters:
    """How `run_finetune` trains: the options of `biozoo finetune`, with its defaults.

    Example:
        >>> from biozoo.train.finetune import check_hyperparameters, run_finetune
        >>> hp = Hyperparameters(epochs=1, batch_size=16, learning_rate=3e-5)
        >>> check_hyperparameters(hp)
        >>> metrics = run_finetune("ner", "bioformer_8l", "data/ner/NCBI-disease", "out/ncbi", hp)
    """

    epochs: float = 3.0
    batch_size: int = 8  # the global batch, split over the replicas (the HF Trainer's default)
    learning_rate: float = 5e-5  # for the global batch
    max_seq_length: int | None = None  # None: the task kind's `sequence_length`, capped at the model's positions
    seed: int = 42
    warmup_ratio: float = FINETUNE_WARMUP_RATIO
    weight_decay: float = FINETUNE_WEIGHT_DECAY
    jit_compile: str = "auto"  # "auto": XLA on GPU/TPU, not on CPU
    optimizer: str = "adamw"  # or "lamb"
    layer_decay: float | None = None  # layer-wise learning-rate decay (ELECTRA: 0.8 base, 0.9 large)
    clip_norm: float | None = DEFAULT_CLIP_NORM  # 0 or None: off
    precision: str = "auto"  # float32 | bfloat16 | float16 | auto (bf16 on TPU, fp16 on GPU)
    static_shapes: str = "auto"  # pad to max length, drop the remainder ("auto": `training_padding`)
    steps_per_execution: int = 1
    micro_batches: int | str = "auto"  # per replica batch, by length; "auto": 4 on CPUs without XLA or static shapes
    checkpoint_every: int | None = None  # steps; resume from OUTPUT.checkpoints
    deterministic: bool = False


@dataclasses.dataclass
class PretrainHyperparameters:
    """How `biozoo.train.pretrain.run_pretrain` trains (the options of `biozoo pretrain`)."""

    max_seq_length: int = 128
    batch_size: int = 32  # the global batch, split over the replicas
    steps: int = 10000
    learning_rate: float = 1e-4
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    clip_norm: float | None = DEFAULT_CLIP_NORM  # 0 or None: off
    masking: str = "wwm"  # whole words, or "token": single pieces
    sentence_task: str | None = None  # mlm: None, "nsp" or "sop"
    generator_fraction: float = 0.25  # electra: generator size as a fraction of the discriminator's
    rtd_weight: float = 50.0  # electra: weight of the discriminator loss
    mask_rate: float = 0.15
    dupe_factor: int = 1  # pack each corpus this many times
    short_seq_prob: float = 0.1
    seed: int = 42
    checkpoint_every: int | None = None  # steps; a rerun resumes from the last checkpoint
    log_every: int | None = None  # steps per loss-curve point (default: steps // 100)
    jit_compile: str = "auto"  # "auto": XLA on GPU/TPU, not on CPU


@dataclasses.dataclass
class DistillHyperparameters:
    """How `biozoo.train.distill.run_distill` trains (the options of `biozoo distill`); None: the method's default."""

    layer_map: str | list | None = None  # teacher layer g(l) per student layer ("2,4,6")
    max_seq_length: int = 128
    batch_size: int = 32  # the global batch, split over the replicas
    steps: int = 10000
    learning_rate: float = 5e-4
    warmup_ratio: float | None = None
    weight_decay: float | None = None
    clip_norm: float | None = DEFAULT_CLIP_NORM  # 0 or None: off
    temperature: float | None = None
    loss_weights: dict | None = None
    layer_weights: list | None = None
    masking: str | None = None  # "wwm": whole words, or "token": single pieces
    seed: int = 42
    checkpoint_every: int | None = None  # steps; a rerun resumes from the last checkpoint
    log_every: int | None = None  # steps per loss-curve point (default: steps // 20)
