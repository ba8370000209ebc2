"""Tokenizers that give the same ids as each checkpoint's HuggingFace tokenizer."""

from biozoo.tokenizers.base import Tokenizer
from biozoo.tokenizers.sentencepiece import SentencePieceTokenizer
from biozoo.tokenizers.wordpiece import WordPieceTokenizer

__all__ = ["Tokenizer", "WordPieceTokenizer", "SentencePieceTokenizer"]
