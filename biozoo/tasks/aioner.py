"""AIONER, PubTator3's all-in-one NER (Luo et al., Bioinformatics 2023; github ncbi/AIONER, MIT),
run exactly as its `AIONER_Run.py` runs it.

One model tags Gene, Chemical, Disease, Species, Variant and CellLine. What it expects is part
of the model, so it is reproduced here step by step:

- the text (stripped) gets spaces around `= / ( ) < > + - _`, runs of spaces collapse, and
  spaCy's English tokenizer with its rule-based sentencizer (stanza's "spacy" tokenizer)
  splits sentences and words;
- each sentence becomes `<TYPE> words </TYPE>` for the requested type (`ALL`: every type); a
  sentence of more than 256 words is cut after every 256th word;
- words go through the BERT tokenizer (14 marker tokens added at the end of the vocabulary),
  256 pieces at most; each word takes the label of its first piece: softmax argmax, or the
  Viterbi path of the CRF over all 256 positions (the CRF sees no mask);
- labels are AIO labels (`O`, `O-Type`, `B-Type`, `I-Type`); AIONER's own rules turn them into
  entities (an `I-` after `O` starts one, the first and last word of each cut are its markers)
  and find each word back in the lower-cased text, in order.

Offsets index the text given. Deliberate differences: where lower-casing changes a
character's length (e.g. "İ"), AIONER's offsets shift; here they do not. Text and words are
lower-cased character by character, so a Greek capital sigma is found back where `str.lower`'s
final-sigma rule made AIONER miss it; a word still not found skips its sentence's entities with an
`AionerRestoreWarning` (AIONER prints "resotr index error" and writes wrong offsets).

Example:
    >>> tagger = AionerTagger.from_preset("aioner_bioformer")
    >>> tagger.annotate(["BRCA1 mutations cause breast cancer."])
    >>> tagger.annotate(texts, entity_types=["Gene"])
"""

from __future__ import annotations

import dataclasses
import functools
import io
import re
import warnings

import keras
import keras_hub
import numpy as np

from biozoo import presets
from biozoo.convert.aioner import MARKER_TOKENS
from biozoo.data.pipeline import padded_length
from biozoo.preset_files import read_heads
from biozoo.tasks.inference import batch_progress, check_precision, compiled_predict, compiles_predictions
from biozoo.tokenizers.base import Tokenizer, text_list

ENTITY_TYPES = ("Gene", "Chemical", "Disease", "Species", "Variant", "CellLine")
MAX_LENGTH = 256  # model_ner.py's maxlen: pieces per input, and words per cut of a sentence
DECODERS = ("softmax", "crf")


def pre_token(text):
    """AIONER's pre-tokenization: spaces around = / ( ) < > + - _, runs of spaces collapsed."""
    text = re.sub(r"([=/()<>+\-_])", r" \1 ", text)
    return re.sub("[ ]+", " ", text)


@functools.lru_cache(maxsize=1)
def _spacy_sentencizer():
    """What stanza's `processors={'tokenize': 'spacy'}` builds: spaCy's blank English pipeline
    with its rule-based sentencizer."""
    from spacy.lang.en import English

    nlp = English()
    nlp.add_pipe("sentencizer")
    return nlp


def conll_input(text, entity_type="ALL", max_words=MAX_LENGTH):
    """The word-per-line text AIONER feeds its tagger (`ssplit_token`): one block per sentence
    (cut every `max_words` words), framed by the type's marker words."""
    out = io.StringIO()
    count = 0
    for sentence in _spacy_sentencizer()(pre_token(text.strip())).sents:
        out.write(f"<{entity_type}>\tO\n")
        for token in sentence:
            count += 1
            out.write(token.text + "\tO\n")
            if count >= max_words:
                out.write("\n")
                count = 0
        out.write(f"</{entity_type}>\tO\n\n")
        count = 0
    return out.getvalue()


def conll_blocks(conll):
    """The blocks of `conll_input`, each a list of its words (`ml_intext_fn`)."""
    return [[line.split("\t")[0] for line in block.split("\n")] for block in conll.strip().split("\n\n")]


def first_piece_positions(word_ids):
    """Position of each word's first piece, for the words AIONER labels (`generate_label_list`):
    words in order from the first; a word without pieces (or cut off) ends the list."""
    positions, expected = [], 0
    for position, word in enumerate(word_ids):
        if word is not None and word == expected and (position == 0 or word_ids[position - 1] != word):
            positions.append(position)
            expected += 1
    return positions


def entity_word_spans(labels):
    """`[(first word, last word, type)]` of one block's inner words (`NN_BIO_tag_entity`: the
    block's first and last words are markers; `labels` are those of the inner words)."""
    entities, start, kind = [], 0, None
    n = len(labels)
    for i, label in enumerate(labels):
        last = i == n - 1
        following = labels[i + 1] if not last else None
        ends = last or following.startswith("B-") or following.startswith("O")
        if label.startswith("B-"):
            start, kind = i, label[2:]
            if ends:
                entities.append((start, i, kind))
        elif label.startswith("I-"):
            if i == 0 or labels[i - 1].startswith("O"):
                start, kind = i, label[2:]
            if ends:
                entities.append((start, i, kind))
    return entities


class AionerRestoreWarning(UserWarning):
    """A word AIONER split off could not be found back in the text: that block's entities are not
    reported (AIONER prints "resotr index error" and writes offsets of its failed search)."""


def _length_preserving_lower(text):
    """`text` lower-cased character by character, without context (Greek capital sigma is always
    σ, never the final ς that `str.lower` picks by context), a character whose lower case is longer
    (İ) kept: as long as `text`, and a word lowers the same alone as inside its text."""
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def restore_offsets(text, blocks, document="the text", errors=None):
    """`[(start, end, type, *extra)]` in `text` from `[(inner words text, [(first word, last word,
    type, *extra)])]` per block, in AIONER's order and without repeats of (start, end, type), the
    first kept (`NN_restore_index_fn`): each block's words are found one after the other in the
    lower-cased text. A word not found: an `AionerRestoreWarning` naming `document` and the word,
    appended to `errors` (a list) too, and that block's entities are skipped."""
    lowered = _length_preserving_lower(text)
    position, found, seen = 0, [], set()
    for words_text, entities in blocks:
        spans = []
        for word in _length_preserving_lower(words_text).split():
            at = lowered.find(word, position)
            if at < 0:
                message = (f"AIONER: word {word!r} of {document} not found in it after offset {position}; the "
                           f"{len(entities)} entities of its sentence ({words_text[:60]!r}...) are not reported")
                warnings.warn(message, AionerRestoreWarning, stacklevel=2)
                if errors is not None:
                    errors.append({"document": document, "word": word, "offset": position,
                                   "entities_skipped": len(entities)})
                spans = None
                break
            spans.append((at, at + len(word)))
            position = at + len(word)
        if spans is None:
            continue
        for first, last, kind, *extra in entities:
            if last >= len(spans):
                # a whitespace "word" (a non-breaking space...) vanished from the words, as in AIONER,
                # whose own code then fails with an IndexError: reported, not guessed
                warnings.warn(f"AIONER: an entity on words {first}-{last} of a sentence of {len(spans)} words "
                              f"({words_text[:60]!r}...) is past its last word and is not reported", stacklevel=2)
                continue
            entity = (spans[first][0], spans[last][1], kind)
            if entity not in seen:
                seen.add(entity)
                found.append((*entity, *extra))
    return found


def crf_decode(emissions, crf):
    """Label ids [batch, seq] of `emissions` [batch, seq, labels], every row padded to the same seq
    (AIONER's CRF: boundary energies at the first and last position, then Viterbi)."""
    scores = np.array(emissions, np.float32)
    scores[:, 0] += crf["start"]
    scores[:, -1] += crf["end"]
    best, back = scores[:, 0], []
    for t in range(1, scores.shape[1]):
        total = best[:, :, None] + crf["transitions"][None]
        back.append(total.argmax(1))
        best = scores[:, t] + total.max(1)
    path = [best.argmax(-1)]
    for pointers in reversed(back):
        path.insert(0, np.take_along_axis(pointers, path[0][:, None], 1)[:, 0])
    return np.stack(path, 1)


class AionerTagger:
    """An AIONER model (Bioformer + softmax, or PubMedBERT + CRF) converted from its Keras .h5.

    Example:
        >>> tagger = AionerTagger.from_preset("aioner_bioformer")
        >>> tagger.annotate(["Mutations in BRCA1 cause breast cancer."])[0]["entities"]
    """

    def __init__(self, backbone, tokenizer, label_names, decoder, head, name="aioner", precision="float32",
                 max_length=MAX_LENGTH):
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
        self.backbone, self.tokenizer, self.decoder, self.name = backbone, tokenizer, decoder, name
        self.label_names = list(label_names)
        inputs = backbone.input
        hidden = backbone(inputs)["sequence_output"]
        dense = keras.layers.Dense(128, activation="relu", name="dense2")
        output = keras.layers.Dense(len(self.label_names), name="output")
        logits = output(dense(hidden))
        self.model = keras.Model(inputs, logits)
        dense.set_weights([head["dense2/kernel"], head["dense2/bias"]])
        output.set_weights([head["output/kernel"], head["output/bias"]])
        self.crf = None if decoder != "crf" else {  # transitions [from, to], start and end energies [labels]
            name: np.asarray(head[f"crf/{key}"], np.float32)
            for name, key in (("transitions", "chain_kernel"), ("start", "left_boundary"), ("end", "right_boundary"))}
        vocabulary = tokenizer.get_vocabulary()
        self.marker_ids = {token: vocabulary.index(token) for token in MARKER_TOKENS}
        self.precision = check_precision(precision)
        self.sequence_length = int(max_length)  # the record's max_length: pieces per input, the CRF's width
        self.preprocessor = AionerInputs(tokenizer, self.sequence_length)
        self.restore_errors = []

    def ids_model(self):
        """The Keras model from token ids to the label scores (before the CRF)."""
        return self.model

    def export_decoding(self):
        """What an ids-in export writes beside the network: the decoder, its output's name (a CRF's
        inputs are `emissions`, not labels), the length AIONER runs at, the CRF's parameters (or None)."""
        return {"decoder": self.decoder, "output": "emissions" if self.crf else "logits",
                "sequence_length": self.sequence_length, "crf": self.crf,
                "reference": "biozoo.tasks.aioner.AionerTagger"}

    @classmethod
    def from_preset(cls, handle, precision="float32"):
        """A converted AIONER preset: a registry name (aioner_bioformer, aioner_pubmedbert) or
        its directory; inference at `precision` (float32, bfloat16, int8)."""
        preset_dir = presets.resolve_preset(handle)
        heads, config = read_heads(preset_dir)
        record = config.get("aioner")
        if record is None:
            raise ValueError(f"{handle} is not an AIONER model (its heads.json has no 'aioner' entry).")
        backbone = keras_hub.models.Backbone.from_preset(preset_dir)
        tokenizer = Tokenizer.from_preset(preset_dir)
        head = {key.split("/", 1)[1]: value for key, value in heads.items() if key.startswith("aioner/")}
        return cls(backbone, tokenizer, record["label_names"], record["decoder"], head,
                   name=record.get("name", str(handle)), precision=precision,
                   max_length=record.get("max_length", MAX_LENGTH))

    # ---- the steps ---------------------------------------------------------------------

    def _encode(self, blocks):
        """Per block, `(input_ids, word_ids)` as AIONER's fast tokenizer gives them
        (is_split_into_words, 256 pieces at most with [CLS] and [SEP]); one tokenizer call for
        all blocks."""
        words = sorted({w for block in blocks for w in block if w not in self.marker_ids})
        pieces = dict(zip(words, self.tokenizer.ids(words))) if words else {}
        pieces.update({marker: [i] for marker, i in self.marker_ids.items()})
        encoded = []
        for block in blocks:
            ids, word_ids = [self.tokenizer.cls_token_id], [None]
            for index, word in enumerate(block):
                ids.extend(pieces[word])
                word_ids.extend([index] * len(pieces[word]))
            cut = self.sequence_length - 1
            encoded.append((ids[:cut] + [self.tokenizer.sep_token_id], word_ids[:cut] + [None]))
        return encoded

    def _label_ids(self, encoded, batch_size):
        """Per block, the label id at every position (first pieces are what is read)."""
        out = [None] * len(encoded)
        predict = compiled_predict(self)
        # softmax rows do not see padding: sort by length so batches pad little; the CRF decodes
        # over all 256 positions (its energies at padding count), so it runs at full length.
        # Compiled per shape (JAX, XLA): widths in length buckets, every batch full (padding rows)
        compiled = compiles_predictions()
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        starts = range(0, len(order), batch_size)
        for start in batch_progress(starts, len(starts)):
            rows = order[start:start + batch_size]
            width = self.sequence_length if self.decoder == "crf" else max(len(encoded[i]) for i in rows)
            if compiled:
                width = padded_length(width, self.sequence_length, static=False)
            token_ids = np.zeros((batch_size if compiled else len(rows), width), np.int32)
            mask = np.zeros_like(token_ids)
            for r, i in enumerate(rows):
                token_ids[r, :len(encoded[i])] = encoded[i]
                mask[r, :len(encoded[i])] = 1
            logits = np.array(predict({"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                                       "padding_mask": mask}), np.float32)[:len(rows)]
            if self.decoder == "crf":
                labels, scores = crf_decode(logits, self.crf), None
            else:
                probs = np.exp(logits - logits.max(-1, keepdims=True))
                probs /= probs.sum(-1, keepdims=True)
                labels, scores = probs.argmax(-1), probs.max(-1)
            for r, i in enumerate(rows):
                out[i] = (labels[r], None if scores is None else scores[r])
        return out

    def tag(self, texts, entity_type="ALL", batch_size=64):
        """Per text, `[(start, end, type, score)]` as AIONER finds them (score: the mean
        first-piece probability of the entity's words for the softmax model, else None). A word not
        found back in its text skips its sentence's entities, with an `AionerRestoreWarning`, and is
        listed in `self.restore_errors`."""
        _check_entity_type(entity_type)
        texts = text_list(texts)
        self.restore_errors = []  # this call's words not found back (each also an AionerRestoreWarning)
        blocks_per_text = [conll_blocks(conll_input(text, entity_type)) if text.strip() else [] for text in texts]
        flat = [block for blocks in blocks_per_text for block in blocks]
        encoded = self._encode(flat)
        predicted = self._label_ids([ids for ids, _ in encoded], batch_size)
        results, k = [], 0
        for text, blocks in zip(texts, blocks_per_text):
            restored = []
            for block in blocks:
                (_, word_ids), (labels, probs) = encoded[k], predicted[k]
                k += 1
                positions = first_piece_positions(word_ids)
                tagged = block[:len(positions)]  # words after the last labelled one are dropped, as in AIONER
                names = [self.label_names[labels[p]] for p in positions]
                inner = tagged[1:-1]
                scored = [(first, last, kind, None if probs is None else
                           float(np.mean([probs[p] for p in positions[1 + first:2 + last]])))
                          for first, last, kind in entity_word_spans(names[1:-1])]
                restored.append((" ".join(inner), scored))
            results.append(restore_offsets(text, restored, f"text {len(results)} ({text[:40]!r}...)",
                                           self.restore_errors))
        return results

    def annotate(self, texts, batch_size=64, entity_types=("ALL",)):
        """Raw texts in, `{"text", "entities": [{"start", "end", "type", "text", "score"}]}` out,
        like `TokenClassifier.annotate`: one pass per entity type asked for, each keeping its own
        type (AIONER's own run of one type writes whatever the model tags in it: `tag` gives that)."""
        texts = text_list(texts)
        entity_types = list(dict.fromkeys([entity_types] if isinstance(entity_types, str) else entity_types))
        if "ALL" in entity_types and len(entity_types) > 1:
            raise ValueError(f"entity types {', '.join(entity_types)}: ALL already covers every type; give ALL alone "
                             f"or types among {', '.join(ENTITY_TYPES)}")
        for kind in entity_types:  # before any pass runs
            _check_entity_type(kind)
        per_type = [self.tag(texts, kind, batch_size) for kind in entity_types]
        results = []
        for i, text in enumerate(texts):
            entities = []
            for kind, tagged in zip(entity_types, per_type):
                for start, end, found, score in tagged[i]:
                    if kind != "ALL" and found != kind:
                        continue
                    entities.append({"start": start, "end": end, "type": found, "text": text[start:end],
                                     "score": None if score is None else round(score, 6)})
            entities.sort(key=lambda e: (e["start"], e["end"], e["type"]))
            results.append({"text": text, "entities": entities})
        return results


@dataclasses.dataclass
class AionerInputs:
    """What AIONER's model reads: its tokenizer's ids, `MAX_LENGTH` pieces at most (as a task's
    preprocessor tells its tokenizer and length)."""

    tokenizer: object
    sequence_length: int = MAX_LENGTH


def _check_entity_type(kind):
    if kind != "ALL" and kind not in ENTITY_TYPES:
        raise ValueError(f"unknown AIONER entity type {kind!r}; choose ALL or one of {', '.join(ENTITY_TYPES)}")
