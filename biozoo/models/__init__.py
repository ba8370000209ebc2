"""Model families, one row each. A family folder holds its backbone and its converter tables
(HF, and TF1 / GluonNLP / Megatron where the family was published so)."""

from biozoo.errors import CheckpointError
from biozoo.models._common import get_activation, run_layers  # noqa: F401  (public: the pretraining heads use them)
from biozoo.models.albert import convert_hf as albert_hf
from biozoo.models.albert import convert_tf1 as albert_tf1
from biozoo.models.albert.backbone import AlbertBackbone
from biozoo.models.bert import convert_hf as bert_hf
from biozoo.models.bert import convert_tf1 as bert_tf1
from biozoo.models.bert.backbone import BertBackbone
from biozoo.models.distilbert import convert_hf as distilbert_hf
from biozoo.models.distilbert.backbone import DistilBertBackbone
from biozoo.models.electra import convert_hf as electra_hf
from biozoo.models.electra import convert_tf1 as electra_tf1
from biozoo.models.electra.backbone import ElectraBackbone
from biozoo.models.family import Family, has_tensor, never, tokenizer_class
from biozoo.models.megatron_bert import convert_hf as megatron_bert_hf
from biozoo.models.megatron_bert.backbone import MegatronBertBackbone
from biozoo.models.mobilebert import convert_hf as mobilebert_hf
from biozoo.models.mobilebert.backbone import MobileBertBackbone
from biozoo.tokenizers.sentencepiece import SentencePieceTokenizer
from biozoo.tokenizers.wordpiece import WordPieceTokenizer

BertTokenizer = tokenizer_class("BertTokenizer", WordPieceTokenizer, BertBackbone, "WordPiece")
AlbertTokenizer = tokenizer_class("AlbertTokenizer", SentencePieceTokenizer, AlbertBackbone, "SentencePiece")
ElectraTokenizer = tokenizer_class("ElectraTokenizer", WordPieceTokenizer, ElectraBackbone, "WordPiece")
DistilBertTokenizer = tokenizer_class("DistilBertTokenizer", WordPieceTokenizer, DistilBertBackbone, "WordPiece")
MobileBertTokenizer = tokenizer_class("MobileBertTokenizer", WordPieceTokenizer, MobileBertBackbone, "WordPiece")
MegatronBertTokenizer = tokenizer_class("MegatronBertTokenizer", WordPieceTokenizer, MegatronBertBackbone, "WordPiece")

_NO_POOLER = {"pooler_transform/kernel": "{family} has no pooler", "pooler_transform/bias": "{family} has no pooler"}

FAMILIES = {family.name: family for family in (
    # BioBERT, PubMedBERT, Bioformer, DistilBioBERT / CompactBioBERT / TinyBioBERT, BioTinyBERT
    Family(name="bert", model_types=("bert",), backbone_cls=BertBackbone, convert_hf=bert_hf,
           tokenizer_cls=BertTokenizer, use_pooler=has_tensor("pooled_dense/kernel"),
           source_tables={"tf1": bert_tf1.TF1_TABLE}, electra_discriminator=True,
           tf1_config_files=("bert_config.json", "config.json"), tf1_scope="bert/encoder/layer_",
           garden_encoder="BertEncoderV2",
           garden_absent={k: "this checkpoint has no pooler" for k in _NO_POOLER}),
    # BioM-ALBERT-xxlarge, -PMC and the SQuAD2 fine-tune
    Family(name="albert", model_types=("albert",), backbone_cls=AlbertBackbone, convert_hf=albert_hf,
           tokenizer_cls=AlbertTokenizer, use_pooler=has_tensor("pooled_dense/kernel"),
           source_tables={"tf1": albert_tf1.TF1_TABLE}, head_dropout=0.1, electra_discriminator=True,
           tf1_config_files=("albert_config.json", "config.json"), tf1_scope="bert/encoder/transformer/group_",
           garden_encoder="AlbertEncoder"),
    # BioM-ELECTRA base/large discriminators and generators, BioM-BERT-Large, SQuAD2
    Family(name="electra", model_types=("electra",), backbone_cls=ElectraBackbone, convert_hf=electra_hf,
           tokenizer_cls=ElectraTokenizer, use_pooler=never,
           source_tables={"tf1": electra_tf1.DISCRIMINATOR_TABLE, "tf1_generator": electra_tf1.GENERATOR_TABLE},
           tf1_config_files=("config.json",), tf1_scope="electra/", tf1_config=electra_tf1.infer_config,
           classifier_activation="gelu", dropout_before_classifier_dense=True, mlm_activation="gelu",
           electra_discriminator=True,
           garden_encoder="BertEncoderV2",
           garden_absent={k: v.format(family="ELECTRA") for k, v in _NO_POOLER.items()}),
    # BioDistilBERT cased and uncased
    Family(name="distilbert", model_types=("distilbert",), backbone_cls=DistilBertBackbone,
           convert_hf=distilbert_hf, tokenizer_cls=DistilBertTokenizer, use_pooler=never,
           classifier_activation="relu", classification_dropout=0.2, qa_dropout=0.1, garden_encoder="BertEncoderV2",
           garden_absent={"type_embeddings/embeddings": "DistilBERT has no token types: a zero type embedding adds nothing",
                          **{k: v.format(family="DistilBERT") for k, v in _NO_POOLER.items()}}),
    # BioMobileBERT
    Family(name="mobilebert", model_types=("mobilebert",), backbone_cls=MobileBertBackbone,
           convert_hf=mobilebert_hf, tokenizer_cls=MobileBertTokenizer, use_pooler=mobilebert_hf.use_pooler,
           mlm_extra_output=True),
    # BioMegatron 345m cased and uncased
    Family(name="megatron_bert", model_types=("megatron-bert", "megatron_bert"), backbone_cls=MegatronBertBackbone,
           convert_hf=megatron_bert_hf, tokenizer_cls=MegatronBertTokenizer,
           use_pooler=has_tensor("pooled_dense/kernel")),
)}


def get_family(name):
    if name not in FAMILIES:
        raise CheckpointError(f"Unknown family '{name}'. Known families: {', '.join(sorted(FAMILIES))}.")
    return FAMILIES[name]


def family_for_model_type(model_type, source="config.json"):
    for family in FAMILIES.values():
        if model_type in family.model_types:
            return family
    known = sorted(t for f in FAMILIES.values() for t in f.model_types)
    raise CheckpointError(
        f"{source}: model_type '{model_type}' is not a family biozoo supports ({', '.join(known)})."
    )


def family_for_backbone(backbone):
    """The family of a backbone instance (or class)."""
    cls = backbone if isinstance(backbone, type) else type(backbone)
    for family in FAMILIES.values():
        if issubclass(cls, family.backbone_cls):
            return family
    raise CheckpointError(f"{cls.__name__} is not a biozoo backbone.")
