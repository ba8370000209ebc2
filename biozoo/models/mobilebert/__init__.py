"""MobileBERT family: BioMobileBERT."""

from biozoo.models.family import Family
from biozoo.models.mobilebert import convert_hf
from biozoo.models.mobilebert.backbone import MobileBertBackbone
from biozoo.models.mobilebert.tokenizer import MobileBertTokenizer

FAMILY = Family(
    name="mobilebert",
    model_types=("mobilebert",),
    backbone_cls=MobileBertBackbone,
    config_from_hf=convert_hf.config_from_hf,
    hf_table=convert_hf.HF_TABLE,
    use_pooler=convert_hf.use_pooler,
    heads_config=convert_hf.heads_config,
    config_to_hf=convert_hf.config_to_hf,
    tokenizer_cls=MobileBertTokenizer,
)

__all__ = ["MobileBertBackbone", "MobileBertTokenizer", "FAMILY"]
