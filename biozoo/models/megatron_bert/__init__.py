"""Megatron-BERT family: BioMegatron 345m cased and uncased."""

from biozoo.models.family import Family, has_tensor
from biozoo.models.megatron_bert import convert_hf
from biozoo.models.megatron_bert.backbone import MegatronBertBackbone
from biozoo.models.megatron_bert.tokenizer import MegatronBertTokenizer

FAMILY = Family(
    name="megatron_bert",
    model_types=("megatron-bert", "megatron_bert"),
    backbone_cls=MegatronBertBackbone,
    config_from_hf=convert_hf.config_from_hf,
    hf_table=convert_hf.HF_TABLE,
    use_pooler=has_tensor("pooled_dense/kernel"),
    heads_config=convert_hf.heads_config,
    config_to_hf=convert_hf.config_to_hf,
    tokenizer_cls=MegatronBertTokenizer,
)

__all__ = ["MegatronBertBackbone", "MegatronBertTokenizer", "FAMILY"]
