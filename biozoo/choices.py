"""The values of options that modules importing Keras check and the command line offers, in a
module that imports nothing, so that building the parser (`biozoo --help`) imports neither Keras
nor TensorFlow. Each owner uses its table from here (`biozoo.optim.OPTIMIZERS` is `OPTIMIZERS`).

Example:
    >>> "lamb" in OPTIMIZERS
    True
"""

OPTIMIZERS = ("adamw", "lamb")  # biozoo.optim.make_optimizer
PRECISIONS = ("float32", "bfloat16", "int8")  # inference precision of task models (biozoo.tasks.inference)
DEFAULT_PRECISION = "float32"
AGGREGATION_STRATEGIES = ("none", "simple", "first", "average", "max")  # tokens -> entities (biozoo.tasks._aggregation)
DEFAULT_AGGREGATION = "first"
CONFIDENCE_MEASURES = ("probability", "margin")  # a tagged word's confidence (biozoo.tasks.token_classifier)
DEFAULT_CONFIDENCE_MEASURE = "probability"
OVERLAP_RULES = ("keep", "longest", "score")  # overlapping predictions of several models (biozoo.annotate.runner)
DEFAULT_OVERLAP_RULE = "keep"
# `biozoo annotate` (biozoo.annotate.job.AnnotationJob): documents read and annotated together, and the name
# encoder of --link (SapBERT)
ANNOTATE_CHUNK_SIZE = 256
DEFAULT_LINK_ENCODER = "sapbert_pubmedbert_fulltext"
# training dtype -> the Keras policy (biozoo.train.run; "auto" picks one per device)
TRAINING_PRECISION_POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
LINK_LOSSES = ("multi-similarity", "infonce")  # `finetune link` (biozoo.linking.training)
# --xla, --static-shapes: "auto" decides per device (biozoo.tasks.tf_inference.use_xla,
# biozoo.train.finetune.training_padding)
SWITCHES = ("auto", "on", "off")
# the global norm training clips each step's gradient to, as torch's clip_grad_norm_ (finetune,
# pretrain, distill): BERT's, ELECTRA's and ALBERT's optimization.py and the HF Trainer's max_grad_norm
DEFAULT_CLIP_NORM = 1.0
# the fine-tuning recipe's schedule and decay (biozoo.train.finetune.Hyperparameters), and `finetune link`'s
# (biozoo.linking.training.LinkTraining: SapBERT's, no warmup)
FINETUNE_WARMUP_RATIO, FINETUNE_WEIGHT_DECAY = 0.1, 0.01
LINK_WARMUP_RATIO, LINK_WEIGHT_DECAY = 0.0, 0.01
CLIP_NORM_HELP = ("clip the step's gradient to this global norm, as torch's clip_grad_norm_ (default "
                  f"{DEFAULT_CLIP_NORM}, as BERT's and ELECTRA's training and the HF Trainer; 0: off)")
