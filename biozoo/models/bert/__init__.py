"""BERT family: BioBERT, PubMedBERT, Bioformer, DistilBioBERT/CompactBioBERT/TinyBioBERT, BioTinyBERT."""

from biozoo.models.bert import convert_hf, convert_tf1
from biozoo.models.bert.backbone import BertBackbone
from biozoo.models.bert.tokenizer import BertTokenizer
from biozoo.models.family import Family, has_tensor

FAMILY = Family(
    name="bert",
    model_types=("bert",),
    backbone_cls=BertBackbone,
    config_from_hf=convert_hf.config_from_hf,
    hf_table=convert_hf.HF_TABLE,
    use_pooler=has_tensor("pooled_dense/kernel"),
    heads_config=convert_hf.heads_config,
    config_to_hf=convert_hf.config_to_hf,
    tokenizer_cls=BertTokenizer,
    extra={"tf1": convert_tf1.TF1_TABLE},
)

__all__ = ["BertBackbone", "BertTokenizer", "FAMILY"]
