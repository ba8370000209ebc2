"""transformers' `pipeline("question-answering")` (4.x, the last release with it) re-created:
its tokens and character offsets (those of the fast tokenizers of 4.x), its span scores and its
answer selection, so that `QuestionAnswerer.pipeline_answers` answers exactly as it does."""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import sentencepiece

from biozoo.tokenizers import hf_unicode as U
from biozoo.tokenizers.sentencepiece import UNICODE_WHITESPACE, SentencePieceTokenizer
from biozoo.tokenizers.words import python_class, special_tokens_pattern


def _is_sentencepiece(tokenizer):
    return isinstance(tokenizer, SentencePieceTokenizer)


def pipeline_tokens(tokenizer, contexts):
    """Per context: (ids, character spans, word index per token) as transformers 4.x's fast
    tokenizer gives them (`offset_mapping`, `word_ids`), which the pipeline's answers read.

    Special tokens written in the text are tokens (and words) of their own, as in HF; the
    text between them is tokenized word by word (`_WordPieceOffsets`, `_SentencePieceOffsets`).
    """
    special = re.compile(special_tokens_pattern(tokenizer.kept_whole()))
    reader = (_SentencePieceOffsets if _is_sentencepiece(tokenizer) else _WordPieceOffsets)(tokenizer)
    segments = []  # per context: [(start, end, special)]
    for context in contexts:
        parts, at = [], 0
        for match in special.finditer(context):
            parts += [(at, match.start(), False), (match.start(), match.end(), True)]
            at = match.end()
        segments.append([p for p in parts + [(at, len(context), False)] if p[1] > p[0]])
    words = [[reader.words(context[a:b]) if not sp else None for a, b, sp in parts]
             for context, parts in zip(contexts, segments)]
    pieces = iter(tokenizer.ids([w for ctx in words for ws in ctx if ws for w, _, _ in ws]))
    out = []
    for context, parts, context_words in zip(contexts, segments, words):
        tokens = []  # (id, start, end, starts a word)
        for (a, b, sp), ws in zip(parts, context_words):
            if sp:
                tokens.append((tokenizer.token_to_id(context[a:b]), a, b, True))
            else:
                tokens += [(i, s + a, e + a, new) for i, s, e, new in
                           reader.tokens(context[a:b], ws, [next(pieces) for _ in ws])]
        word_of = list(np.cumsum([new for _, _, _, new in tokens]) - 1)
        out.append(([t[0] for t in tokens], [(t[1], t[2]) for t in tokens], [int(w) for w in word_of]))
    return out


def _char_class(parts):
    return re.compile(python_class(parts))


def _lower(text):
    """Per code point, as HF's Lowercase normalizer (Σ -> σ, never the final ς)."""
    return "".join(c.lower() for c in text)


def _aligned(word, normalize):
    """`normalize(word)` character by character, with the index in `word` of each output
    character (HF's normalizers align each output character to the one it came from)."""
    chars, owner = [], []
    for i, c in enumerate(word):
        out = normalize(c)
        chars.append(out)
        owner += [i] * len(out)
    return "".join(chars), owner


class _WordPieceOffsets:
    """BertPreTokenizer words tokenized one by one; a piece spans the characters it came from
    (BertNormalizer: control characters removed, accents stripped after NFD, lower-cased), an
    [UNK] its whole word; a word the normalizer empties (a lone soft hyphen) has no tokens."""

    def __init__(self, tokenizer):
        self.tokenizer, self.vocab = tokenizer, tokenizer.get_vocabulary()
        self.control, self.marks = _char_class(U.CONTROL), _char_class(U.NONSPACING_MARKS)

    def normalize(self, c):
        c = "" if self.control.fullmatch(c) else c
        if self.tokenizer.strip_accents:
            c = self.marks.sub("", unicodedata.normalize("NFD", c))
        return _lower(c) if self.tokenizer.lowercase else c

    def words(self, text):
        # NUL: removed by the tokenizer too, and no word boundary
        return self.tokenizer.split_words(text)

    def tokens(self, text, words, pieces):
        """[(id, start, end, starts a word)] of `text`."""
        out = []
        for (word, start, _), ids in zip(words, pieces):
            if not ids:
                continue
            normalized, owner = _aligned(text[start:start + len(word)], self.normalize)
            texts = [self.vocab[i][2:] if k and self.vocab[i].startswith("##") else self.vocab[i]
                     for k, i in enumerate(ids)]
            if self.tokenizer.unk_token_id in ids or "".join(texts) != normalized:
                spans = [(owner[0], owner[-1] + 1) if owner else (0, len(word))] * len(ids)
            else:
                spans, at = [], 0
                for piece in texts:
                    spans.append((owner[at], owner[at + len(piece) - 1] + 1))
                    at += len(piece)
            out += [(i, start + a, start + b, k == 0) for k, (i, (a, b)) in enumerate(zip(ids, spans))]
        return out


class _SentencePieceOffsets:
    """ALBERT's words (Metaspace: a new word at each "▁") and ids, with 4.x AlbertTokenizerFast's offsets:
    the "▁" of a word spans the last whitespace character before it (the first of "\\r\\n"),
    or, with none, the word's first character; other pieces span the characters they came from
    (ALBERT's normalizers, then SentencePiece's, whose offsets it reports), less characters the
    normalizers remove at their ends; trailing whitespace is a "▁" token of its own."""

    def __init__(self, tokenizer):
        self.tokenizer, self.vocab = tokenizer, tokenizer.get_vocabulary()
        self.marks = _char_class(U.COMBINING_MARKS)
        self.processor = sentencepiece.SentencePieceProcessor(model_proto=tokenizer.proto)
        self.space = tokenizer.token_to_id("\u2581")
        self.classes = {}
        # Unicode whitespace that SentencePiece's normalizer keeps (\v, \f, NEL): biozoo's
        # tokenizer splits words there as transformers 5 does; 4.x's Metaspace does not

        spaces = "".join(c for c in UNICODE_WHITESPACE if self.char_class(c) == "space")
        kept = "".join(c for c in UNICODE_WHITESPACE if self.char_class(c) != "space")
        self.split = re.compile(f"[^{re.escape(spaces)}]+")
        self.unsplit = re.compile(f"[{re.escape(kept)}]") if kept else None

    def normalize(self, c):
        if not self.tokenizer.keep_accents:
            c = self.marks.sub("", unicodedata.normalize("NFKD", c))
        return _lower(c) if self.tokenizer.lowercase else c

    def spm_class(self, c):
        """"removed", "space" or "kept" by SentencePiece's normalizer."""
        if c not in self.classes:
            normalized = self.processor.normalize(f"x{c}y")
            self.classes[c] = {"\u2581xy": "removed", "\u2581x\u2581y": "space"}.get(normalized, "kept")
        return self.classes[c]

    def char_class(self, c):
        """"removed", "space" or "kept" by the normalizers (ALBERT's, then SentencePiece's)."""
        classes = {self.spm_class(n) for n in self.normalize(c)}
        return "kept" if "kept" in classes else "space" if "space" in classes else "removed"

    def normalize_word(self, word):
        """ALBERT's normalization of `word` (``/'' -> ", then per character) and the index in
        `word` each output character comes from."""
        chars, owner = [], []
        for part in re.finditer(r"``|''|.", word, re.DOTALL):
            if len(part.group()) == 2:  # aligned to its second character, as in HF
                chars.append('"')
                owner.append(part.end() - 1)
            else:
                normalized = self.normalize(part.group())
                chars.append(normalized)
                owner += [part.start()] * len(normalized)
        return "".join(chars), owner

    def words(self, text):
        return [(m.group(), m.start(), m.end()) for m in self.split.finditer(text)]

    def last_space(self, text, start, end):
        """The position that a "▁" made of the whitespace in text[start:end] aligns to: its
        last whitespace character (the "\\r" of a final "\\r\\n"), or None."""
        for i in range(end - 1, start - 1, -1):
            if self.char_class(text[i]) == "space":
                return i - 1 if text[i] == "\n" and i > start and text[i - 1] == "\r" else i
        return None

    def tokens(self, text, words, pieces):
        """[(id, start, end, starts a word)] of `text`."""
        out, previous = [], 0  # previous: the end of the last kept character so far
        for (word, start, end), ids in zip(words, pieces):
            normalized, owner = self.normalize_word(word)
            encoded = self.processor.encode(normalized, out_type="proto").pieces if normalized else []
            if self.unsplit and self.unsplit.search(word):  # one word for 4.x: its ids, not biozoo's
                ids = [p.id for p in encoded]
            if [p.id for p in encoded] == ids:
                char_at = np.cumsum([0] + [len(c.encode("utf-8")) for c in normalized])  # byte -> char
                spans = []
                for p in encoded:
                    a, b = np.searchsorted(char_at, [p.begin, p.end])
                    spans.append((start + owner[a], start + owner[b - 1] + 1) if b > a else None)
            else:  # normalization differs from the tokenizer's: every piece spans the whole word
                spans = [(start, end)] * len(ids)
            kept = [start + owner[j] for j, c in enumerate(normalized) if self.spm_class(c) == "kept"]
            first = kept[0] if kept else start
            for k, (i, span) in enumerate(zip(ids, spans)):
                a, b = span or (first, first)
                while b - a > 1 and self.char_class(text[a]) == "removed":
                    a += 1
                while b - a > 1 and self.char_class(text[b - 1]) == "removed":
                    b -= 1
                if k == 0:  # the word's "▁"
                    space = self.last_space(text, previous, first)
                    a = first if space is None else space
                    b = a + 1 if span is None else max(b, a + 1)
                out.append((i, a, b, k == 0 or self.vocab[i].startswith("\u2581")))
            previous = kept[-1] + 1 if kept else previous
        space = self.last_space(text, previous, len(text))
        if space is not None:  # trailing whitespace
            out.append((self.space, space, space + 1, True))
        return out


def span_probabilities(start_logits, end_logits, p_mask):
    """The pipeline's softmax over the tokens that may answer ([CLS] and the context), as float32
    arrays [1, n]; the rest gets -10000 before the softmax."""
    masked = np.asarray(p_mask, bool)[None]
    start = np.where(masked, -10000.0, np.asarray(start_logits, np.float32)[None])
    end = np.where(masked, -10000.0, np.asarray(end_logits, np.float32)[None])
    start = np.exp(start - start.max(axis=-1, keepdims=True))
    end = np.exp(end - end.max(axis=-1, keepdims=True))
    return start / start.sum(), end / end.sum()


def decode_spans(start, end, top_k, max_answer_len, allowed):
    """The `top_k` best (start, end, score) of the outer product of the probabilities, with
    start <= end < start + max_answer_len; spans reaching a token outside `allowed` dropped
    after the selection (transformers' `decode_spans`, the same NumPy calls, so that ties
    break alike)."""
    outer = np.matmul(np.expand_dims(start, -1), np.expand_dims(end, 1))
    candidates = np.tril(np.triu(outer), max_answer_len - 1)
    flat = candidates.flatten()
    if top_k == 1:
        order = [np.argmax(flat)]
    elif len(flat) < top_k:
        order = np.argsort(-flat)
    else:
        best = np.argpartition(-flat, top_k)[0:top_k]
        order = best[np.argsort(-flat[best])]
    starts, ends = np.unravel_index(order, candidates.shape)[1:]
    keep = np.isin(starts, allowed) & np.isin(ends, allowed)
    return starts[keep], ends[keep], candidates[0, starts[keep], ends[keep]]


def answer_chars(spans, words, s, e, align_to_words):
    """Characters of the span of tokens s..e of a window: from the start of the first token of
    s's word to the end of the last token of e's word *in this window* (`align_to_words`), else
    the tokens' own offsets; [CLS] ((0, 0)) falls back to offsets, as in the pipeline."""
    offsets = [(0, 0) if a < 0 else (a, b) for a, b in (spans[s], spans[e])]
    if align_to_words and words[s] >= 0 and words[e] >= 0:
        first = words.index(words[s])
        last = len(words) - 1 - words[::-1].index(words[e])
        return spans[first][0], spans[last][1]
    return offsets[0][0], offsets[1][1]
