import keras

from biozoo.models.albert.backbone import AlbertBackbone
from biozoo.tokenizers.sentencepiece import SentencePieceTokenizer


@keras.saving.register_keras_serializable(package="biozoo")
class AlbertTokenizer(SentencePieceTokenizer):
    """The SentencePiece tokenizer of an ALBERT checkpoint (ids equal HF's AlbertTokenizer)."""

    backbone_cls = AlbertBackbone
