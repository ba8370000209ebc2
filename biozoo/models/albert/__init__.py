"""ALBERT family: BioM-ALBERT-xxlarge, -PMC and the SQuAD2 fine-tune."""

from biozoo.models.albert import convert_hf, convert_tf1
from biozoo.models.albert.backbone import AlbertBackbone
from biozoo.models.albert.tokenizer import AlbertTokenizer
from biozoo.models.family import Family, has_tensor

FAMILY = Family(
    name="albert",
    model_types=("albert",),
    backbone_cls=AlbertBackbone,
    config_from_hf=convert_hf.config_from_hf,
    hf_table=convert_hf.HF_TABLE,
    use_pooler=has_tensor("pooled_dense/kernel"),
    heads_config=convert_hf.heads_config,
    config_to_hf=convert_hf.config_to_hf,
    tokenizer_cls=AlbertTokenizer,
    extra={"tf1": convert_tf1.TF1_TABLE},
)

__all__ = ["AlbertBackbone", "AlbertTokenizer", "FAMILY"]
