import keras

from biozoo.models.electra.backbone import ElectraBackbone
from biozoo.tokenizers.wordpiece import WordPieceTokenizer


@keras.saving.register_keras_serializable(package="biozoo")
class ElectraTokenizer(WordPieceTokenizer):
    """The WordPiece tokenizer of an ELECTRA checkpoint (ids equal HF's ElectraTokenizer)."""

    backbone_cls = ElectraBackbone
