import keras

from biozoo.models.distilbert.backbone import DistilBertBackbone
from biozoo.tokenizers.wordpiece import WordPieceTokenizer


@keras.saving.register_keras_serializable(package="biozoo")
class DistilBertTokenizer(WordPieceTokenizer):
    """The WordPiece tokenizer of a DistilBERT checkpoint (ids equal HF's)."""

    backbone_cls = DistilBertBackbone
