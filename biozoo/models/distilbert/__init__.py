"""DistilBERT family: BioDistilBERT cased and uncased."""

from biozoo.models.distilbert import convert_hf
from biozoo.models.distilbert.backbone import DistilBertBackbone
from biozoo.models.distilbert.tokenizer import DistilBertTokenizer
from biozoo.models.family import Family, never

FAMILY = Family(
    name="distilbert",
    model_types=("distilbert",),
    backbone_cls=DistilBertBackbone,
    config_from_hf=convert_hf.config_from_hf,
    hf_table=convert_hf.HF_TABLE,
    use_pooler=never,
    heads_config=convert_hf.heads_config,
    config_to_hf=convert_hf.config_to_hf,
    tokenizer_cls=DistilBertTokenizer,
)

__all__ = ["DistilBertBackbone", "DistilBertTokenizer", "FAMILY"]
