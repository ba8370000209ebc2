"""ELECTRA family: BioM-ELECTRA base/large discriminators and generators, BioM-BERT-Large, SQuAD2."""

from biozoo.models.electra import convert_hf, convert_tf1
from biozoo.models.electra.backbone import ElectraBackbone
from biozoo.models.electra.tokenizer import ElectraTokenizer
from biozoo.models.family import Family, never

FAMILY = Family(
    name="electra",
    model_types=("electra",),
    backbone_cls=ElectraBackbone,
    config_from_hf=convert_hf.config_from_hf,
    hf_table=convert_hf.HF_TABLE,
    use_pooler=never,
    heads_config=convert_hf.heads_config,
    config_to_hf=convert_hf.config_to_hf,
    tokenizer_cls=ElectraTokenizer,
    extra={"tf1": convert_tf1.DISCRIMINATOR_TABLE, "tf1_generator": convert_tf1.GENERATOR_TABLE},
)

__all__ = ["ElectraBackbone", "ElectraTokenizer", "FAMILY"]
