import keras

from biozoo.models.mobilebert.backbone import MobileBertBackbone
from biozoo.tokenizers.wordpiece import WordPieceTokenizer


@keras.saving.register_keras_serializable(package="biozoo")
class MobileBertTokenizer(WordPieceTokenizer):
    """The WordPiece tokenizer of a MobileBERT checkpoint (ids equal HF's)."""

    backbone_cls = MobileBertBackbone
