"""The test battery every biozoo family passes, driven by one table of tiny cases.

Modelled on KerasHub's `TestCase.run_backbone_test` / `run_preset_test`. `CASES` holds, per
family (and per variant that flips an architectural switch), a tiny transformers config,
every published HF class biozoo converts (with the heads its preset keeps), the HF classes
whose heads the tasks reproduce, the file formats and the export expectations. Adding a
family or a published HF class means adding to `CASES` only: the tests read their
parameters from `cases(...)`.

The configs are small but exercise every architectural switch (embedding projection, shared
ALBERT groups, MobileBERT bottlenecks and stacked FFNs, pre-LN Megatron), and use
initializer_range 0.2 so that an approximate GELU or a wrong epsilon shows in the outputs.
Everything is compared with transformers (imported lazily: importing biozoo never imports
torch; running the battery needs `pip install 'biozoo[test]'`).

Example:
    >>> import pytest
    >>> from biozoo import testing
    >>> @pytest.mark.parametrize("name", testing.cases("electra"))
    ... def test_backbone(name, tmp_path):
    ...     testing.run_backbone_test(name, tmp_path)
    >>> testing.cases("electra", kind="task")[:2]
    [('electra', 'rtd', 'ElectraForPreTraining'), ('electra', 'mlm', 'ElectraForMaskedLM')]
"""

from biozoo.testing.battery import (
    annotate_by_sentence,
    run_backbone_test,
    run_converted_heads_test,
    run_ids_export_test,
    run_parity_test,
    run_task_test,
    to_numpy,
)
from biozoo.testing.cases import (
    CASES,
    CONVERTED_HEADS,
    FORMATS,
    IDS_EXPORTS,
    MIXED_POLICIES,
    MIXED_TOLERANCE,
    SPECIAL,
    TASKS,
    TOLERANCE,
    VOCAB_SIZE,
    Case,
    cases,
    family_of,
    get_case,
)
from biozoo.testing.checkpoints import (
    HEAD_TENSORS,
    case_inputs,
    hf_outputs,
    make_config,
    make_model,
    max_diff,
    populate_hf_cache,
    random_inputs,
    save_case,
    save_hf_directory,
    tiny_sentencepiece,
    torch_inputs,
    wordpiece_vocab,
)
from biozoo.testing.corpora import bioasq_dev, chemprot_subset, read_sentences, task_data, train_spiece, write_hoc
from biozoo.testing.mirrors import offline_registry_mirror, registry_entry_describes
from biozoo.testing.processes import (
    TENSORFLOW_DISTRIBUTIONS,
    kill_after_first_checkpoint,
    run_exported_without_keras,
    site_without,
    without_keras_site,
    without_tensorflow,
)

__all__ = [
    "annotate_by_sentence", "run_backbone_test", "run_converted_heads_test", "run_ids_export_test",
    "run_parity_test", "run_task_test", "to_numpy", "CASES", "CONVERTED_HEADS", "FORMATS", "IDS_EXPORTS",
    "MIXED_POLICIES", "MIXED_TOLERANCE", "SPECIAL", "TASKS", "TOLERANCE", "VOCAB_SIZE", "Case", "cases", "family_of",
    "get_case", "HEAD_TENSORS", "case_inputs", "hf_outputs", "make_config", "make_model", "max_diff",
    "populate_hf_cache", "random_inputs", "save_case", "save_hf_directory", "tiny_sentencepiece", "torch_inputs",
    "wordpiece_vocab", "bioasq_dev", "chemprot_subset", "read_sentences", "task_data", "train_spiece", "write_hoc",
    "offline_registry_mirror", "registry_entry_describes", "TENSORFLOW_DISTRIBUTIONS",
    "kill_after_first_checkpoint", "run_exported_without_keras", "site_without", "without_keras_site", "without_tensorflow",
]
