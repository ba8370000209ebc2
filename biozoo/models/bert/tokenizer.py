import keras

from biozoo.models.bert.backbone import BertBackbone
from biozoo.tokenizers.wordpiece import WordPieceTokenizer


@keras.saving.register_keras_serializable(package="biozoo")
class BertTokenizer(WordPieceTokenizer):
    """The WordPiece tokenizer of a BERT-family checkpoint (ids equal HF's BertTokenizer)."""

    backbone_cls = BertBackbone
