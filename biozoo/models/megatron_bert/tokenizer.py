import keras

from biozoo.models.megatron_bert.backbone import MegatronBertBackbone
from biozoo.tokenizers.wordpiece import WordPieceTokenizer


@keras.saving.register_keras_serializable(package="biozoo")
class MegatronBertTokenizer(WordPieceTokenizer):
    """The WordPiece tokenizer of a Megatron-BERT checkpoint (ids equal HF's BertTokenizer)."""

    backbone_cls = MegatronBertBackbone
