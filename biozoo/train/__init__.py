"""Training drivers and what they share.

* `finetune` — `biozoo finetune` / `biozoo evaluate`: `Hyperparameters`, `run_finetune`,
  `run_seeds`, `run_evaluate`; one task adapter per task kind in `adapters` (`ADAPTERS`).
* `pretrain` — `biozoo pretrain`: MLM (+ NSP / SOP) and ELECTRA (`run_pretrain`).
* `distill` — `biozoo distill`: DistilBERT, TinyBERT and CompactBioBERT distillation (`run_distill`).
* `run` — the run scaffold of all three: strategy and batch split, seeding, dtype policy,
  the timed loop, the atomic write of OUTPUT and the clean-up (`TrainingRun`).
* `loop` — the resumable training loop and the distributed train step with a loss history.
* `strategy` — choosing the tf.distribute strategy.
* `recipes` — published fine-tuning recipes (the BioM-Transformers table, `--recipe biom`).

The command lines are in `biozoo._commands`; scoring is in `biozoo.metrics`.
"""
