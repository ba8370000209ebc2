"""AIONER converted from its Keras .h5 gives exactly the entities AIONER's own code gives.

The fixtures (tests/fixtures/aioner, rebuilt by its make.py) are small random-weight models made
with AIONER's own model code (model_ner.py, TensorFlow 2.3.4, transformers 4.18.0) and saved as
the released files are (`save_weights` .h5, laid out as pretrained_models.zip); the expected
entities are what AIONER_Run.py's tagging functions (ML_Tag, NN_restore_index_fn) wrote for the
shared documents, with stanza's spaCy tokenizer (spaCy 3.2.4) splitting sentences.
"""

import json
import os
import shutil
import types
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from biozoo import registry
from biozoo.errors import CheckpointError
from biozoo.testing import populate_hf_cache

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "aioner"
MODELS = {
    "softmax": ("AIONER/Bioformer-softmax-AIONER.h5", "bioformer-cased-v1.0", False),
    "crf": ("AIONER/PubmedBERT-CRF-AIONER.h5", "BiomedNLP-PubMedBERT-base-uncased-abstract", True),
}
LABELS = (FIXTURES / "AIO_label.vocab").read_text().split()


@pytest.fixture(scope="module")
def taggers(tmp_path_factory):
    from biozoo.convert.aioner import convert_aioner
    from biozoo.tasks.aioner import AionerTagger

    out = {}
    for decoder, (model_file, base_dir, lowercase) in MODELS.items():
        target = tmp_path_factory.mktemp("aioner") / decoder
        root = FIXTURES / "pretrained_models"
        convert_aioner(root / model_file, root / base_dir, target, LABELS, decoder, lowercase, progress=False)
        out[decoder] = AionerTagger.from_preset(target)
    return out


def pubtator_texts(path):
    ids, texts = [], []
    for block in path.read_text(encoding="utf-8").strip().split("\n\n"):
        lines = block.split("\n")
        pmid, title = lines[0].split("|t|", 1)
        ids.append(pmid)
        texts.append(title + " " + lines[1].split("|a|", 1)[1])
    return ids, texts


def expected(decoder, name, entity_type):
    return json.loads((FIXTURES / "expected" / f"{decoder}__{name}__{entity_type}.json").read_text())


CASES = [("softmax", "example", "ALL"), ("softmax", "example", "Gene"), ("softmax", "NCBIdisease_Test", "ALL"),
         ("softmax", "NCBIdisease_Test", "Disease"), ("crf", "example", "ALL"), ("crf", "example", "Disease"),
         ("crf", "example", "Gene"), ("crf", "NCBIdisease_Test", "ALL"), ("crf", "NCBIdisease_Test", "Disease")]


@pytest.mark.parametrize("decoder,name,entity_type", CASES)
def test_entities_equal_aioners_own_tagging(taggers, shared_data, decoder, name, entity_type):
    ids, texts = pubtator_texts(shared_data / "documents" / f"{name}.PubTator")
    want = expected(decoder, name, entity_type)
    got = taggers[decoder].tag(texts, entity_type)
    assert sum(len(v) for v in want.values()) > 20 * len(want) ** 0.5  # the fixture tags plenty
    for pmid, text, found in zip(ids, texts, got):
        assert [[s, e, kind] for s, e, kind, _ in found] == [[int(s), int(e), k] for s, e, k in want.get(pmid, [])], pmid
        for s, e, _, _ in found:
            assert 0 <= s < e <= len(text)


@pytest.mark.parametrize("decoder", ["softmax", "crf"])
def test_annotate_keeps_only_the_types_asked_for(taggers, example_pubtator, decoder):
    """`--entity-types Gene` gave Disease, Species... too: AIONER's own one-type run writes what
    the model tags in that pass (`tag`, equal to its fixture), `annotate` keeps that pass's type."""
    from biozoo.documents import read_documents

    documents = list(read_documents([example_pubtator]))  # the packaged copy: runs without ../shared
    ids, texts = [d.id for d in documents], [d.text for d in documents]
    want = expected(decoder, "example", "Gene")
    assert {k for found in want.values() for _, _, k in found} - {"Gene"}, "the fixture's pass tags other types too"
    got = taggers[decoder].annotate(texts, entity_types=["Gene"])
    for pmid, result in zip(ids, got):
        assert [[e["start"], e["end"], e["type"]] for e in result["entities"]] == sorted(
            [int(s), int(e), k] for s, e, k in want.get(pmid, []) if k == "Gene"), pmid


@pytest.mark.parametrize("decoder", ["softmax", "crf"])
def test_edge_cases_equal_aioners_own_tagging(taggers, decoder):
    """Non-breaking, thin and zero-width spaces, tabs, characters outside the vocabulary, a
    sentence of more than 256 words, more than 256 pieces, pre_token splits, a title alone: AIONER
    cuts, drops and keeps what it does (each document tagged alone, as the fixture was made)."""
    ids, texts = pubtator_texts(FIXTURES / "edge_cases.PubTator")
    want = expected(decoder, "edge_cases", "ALL")
    for pmid, text in zip(ids, texts):
        (found,) = taggers[decoder].tag([text], "ALL")
        assert [[s, e, k] for s, e, k, _ in found] == [[int(s), int(e), k] for s, e, k in want[pmid]["entities"]], pmid


def test_bioc_passages_equal_aioners_own_tagging(taggers, shared_data):
    """NER_BioC: each passage (except references) tagged alone, offsets document-level."""
    from biozoo.annotate import AionerAnnotator
    from biozoo.documents import read_documents

    documents = list(read_documents([shared_data / "documents" / "example_pmc.BioC.xml"]))
    want = expected("softmax", "example_pmc_bioc", "ALL")
    found = AionerAnnotator(taggers["softmax"], "aioner").annotate(documents)
    assert sorted(want) == sorted(d.id for d in documents)
    for document, entities in zip(documents, found):
        assert sorted([s, e, k] for s, e, k, *_ in entities) == sorted([int(s), int(e), k] for s, e, k in want[document.id])


@pytest.mark.parametrize("decoder", ["softmax", "crf"])
def test_compiled_prediction_runs_few_shapes_and_tags_as_aioner(taggers, shared_data, decoder, monkeypatch):
    """Where prediction compiles per shape (JAX; XLA), batches are whole and their widths length
    buckets: a handful of compilations, not one per batch, and the same entities."""
    import biozoo.tasks.aioner as aioner
    from biozoo.data.pipeline import BOUNDARIES
    from biozoo.tasks.inference import compiled_predict, predicting_with

    monkeypatch.setattr(aioner, "compiles_predictions", lambda: True)
    tagger, shapes = taggers[decoder], []
    predict = compiled_predict(tagger)

    def recording(x):
        shapes.append(x["token_ids"].shape)
        return predict(x)

    ids, texts = pubtator_texts(shared_data / "documents" / "NCBIdisease_Test.PubTator")
    with predicting_with(tagger, recording):
        got = tagger.tag(texts, "ALL", batch_size=16)
    want = expected(decoder, "NCBIdisease_Test", "ALL")
    for pmid, found in zip(ids, got):
        assert [[s, e, k] for s, e, k, _ in found] == [[int(s), int(e), k] for s, e, k in want.get(pmid, [])], pmid
    assert len(shapes) > 20 and {rows for rows, _ in shapes} == {16}
    assert {width for _, width in shapes} <= {b for b in BOUNDARIES if b <= aioner.MAX_LENGTH}  # 8 at most


def test_softmax_scores_are_probabilities(taggers):
    (found,) = taggers["softmax"].tag(["Mutations in BRCA1 and TP53 cause breast cancer in mice treated with cisplatin."])
    assert found and all(0 < score <= 1 for *_, score in found)
    (crf,) = taggers["crf"].tag(["Mutations in BRCA1 and TP53 cause breast cancer in mice treated with cisplatin."])
    assert all(score is None for *_, score in crf)


def test_scheme_pieces():
    """AIONER's decoding rules on hand-made cases (NN_BIO_tag_entity, generate_label_list)."""
    from biozoo.tasks.aioner import crf_decode, entity_word_spans, first_piece_positions, pre_token

    assert pre_token("IL-2/CD25 (n=3)") == "IL - 2 / CD25 ( n = 3 ) "
    # an I- after O starts an entity; I- after B- of another type continues the B-'s type
    assert entity_word_spans(["O", "I-Gene", "I-Gene", "B-Chemical", "I-Disease", "O-Gene", "B-Gene"]) == [
        (1, 2, "Gene"), (3, 4, "Chemical"), (6, 6, "Gene")]
    assert entity_word_spans(["I-Disease"]) == [(0, 0, "Disease")]
    # a word without pieces ends the labelled words (AIONER's alignment stops there)
    assert first_piece_positions([None, 0, 0, 1, 3, 4, None]) == [1, 3]
    potentials = np.array([[[0, 1], [2, 0], [0, 0]]], np.float32)
    transitions = np.array([[0, -5], [-5, 0]], np.float32)
    no_boundary = {"start": np.zeros(2, np.float32), "end": np.zeros(2, np.float32)}
    # one switch costs more than it gains; on ties the first label
    assert crf_decode(potentials, {**no_boundary, "transitions": transitions}).tolist() == [[0, 0, 0]]
    assert crf_decode(potentials, {**no_boundary, "transitions": np.zeros((2, 2), np.float32)}).tolist() == [[1, 0, 0]]


def test_registry_name_downloads_the_archive_and_converts_once(tmp_path, monkeypatch):
    from biozoo import presets
    from biozoo.tasks.aioner import AionerTagger

    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with zipfile.ZipFile(mirror / "pretrained_models.zip", "w") as archive:
        for path in sorted((FIXTURES / "pretrained_models").rglob("*")):
            if path.is_file():
                archive.write(path, "pretrained_models/" + str(path.relative_to(FIXTURES / "pretrained_models")))
    entry = registry.get_entry("aioner_bioformer")
    populate_hf_cache(cache, entry["sources"]["hf"]["repo"], entry["sources"]["hf"]["revision"], mirror)
    assert entry["task"]["kind"] == "aioner"
    assert presets.resolve("aioner_bioformer").task_kind == "aioner"  # recorded by the conversion
    tagger = AionerTagger.from_preset("aioner_bioformer")
    assert tagger.label_names == entry["task"]["label_names"] == LABELS
    assert tagger.decoder == "softmax" and tagger.tokenizer.lowercase is False
    first = presets.resolve_preset("aioner_bioformer")
    shutil.rmtree(cache)  # the converted preset is cached: no second download or conversion
    assert presets.resolve_preset("aioner_bioformer") == first
    text = "BRCA1 mutations cause breast cancer in mice."
    assert sorted(e["text"] for e in tagger.annotate([text])[0]["entities"]) == sorted(
        text[s:e] for s, e, _, _ in tagger.tag([text])[0])


def test_archive_members_outside_the_folder_are_refused(tmp_path):
    from biozoo.convert.archives import extract_archive

    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("pretrained_models/ok.txt", "x")
        archive.writestr("../escape.txt", "x")
    with pytest.raises(CheckpointError, match="escape.txt"):
        extract_archive(bad, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "out" / "pretrained_models").exists()
    link = tmp_path / "link.zip"
    with zipfile.ZipFile(link, "w") as archive:
        info = zipfile.ZipInfo("pretrained_models/link")
        info.external_attr = (0o120777 << 16)
        archive.writestr(info, "/etc/passwd")
    with pytest.raises(CheckpointError, match="symbolic link"):
        extract_archive(link, tmp_path / "out2")


def test_a_wrong_label_vocabulary_is_refused(tmp_path):
    from biozoo.convert.aioner import convert_aioner

    model_file, base_dir, lowercase = MODELS["softmax"]
    root = FIXTURES / "pretrained_models"
    with pytest.raises(CheckpointError, match="19 labels, the label vocabulary 18"):
        convert_aioner(root / model_file, root / base_dir, tmp_path / "out", LABELS[:-1], "softmax", lowercase,
                       progress=False)
    assert not os.path.exists(tmp_path / "out")


def test_all_with_other_types_and_unknown_types_are_refused(taggers):
    with pytest.raises(ValueError, match="ALL already covers"):
        taggers["softmax"].annotate(["Aspirin."], entity_types=["ALL", "Gene"])
    with pytest.raises(ValueError, match="unknown AIONER entity type .Protein.; choose ALL or one of"):
        taggers["softmax"].annotate(["Aspirin."], entity_types=["Protein"])


def test_h5_links_and_outside_data_are_refused(tmp_path):
    import h5py

    from biozoo.convert.aioner import read_keras_h5

    outside = tmp_path / "outside.h5"
    with h5py.File(outside, "w") as f:
        f["secret"] = np.arange(4, dtype=np.float32)
    crafted = tmp_path / "crafted.h5"
    with h5py.File(crafted, "w") as f:
        f.attrs["layer_names"] = [b"dense2"]
        group = f.create_group("dense2")
        group.attrs["weight_names"] = [b"dense2/kernel:0"]
        group.create_group("dense2")["kernel:0"] = h5py.ExternalLink(str(outside), "secret")
    with pytest.raises(CheckpointError, match="is a link; refused"):
        read_keras_h5(crafted)


def test_aioner_model_takes_a_precision(taggers):
    """AIONER's functional model (backbone + its dense head) is rebuilt with every kernel in
    bfloat16, and quantized to int8; both stay near float32 (bounds as in the tasks' tests)."""
    import numpy as np

    from biozoo.tasks.inference import bfloat16_copy, predict_function
    from biozoo.testing import MIXED_TOLERANCE

    tagger = taggers["softmax"]
    row = [tagger.tokenizer.cls_token_id] + tagger.tokenizer.ids(["BRCA1 mutations cause breast cancer ."])[0] + \
        [tagger.tokenizer.sep_token_id]
    x = {"token_ids": np.array([row], np.int32), "segment_ids": np.zeros((1, len(row)), np.int32),
         "padding_mask": np.ones((1, len(row)), np.int32)}
    reference = np.asarray(tagger.model(x, training=False))
    scale = max(1.0, float(np.abs(reference).max()))
    copy = bfloat16_copy(tagger.model)
    assert {w.dtype for w in copy.weights if w.path.endswith("kernel")} == {"bfloat16"}
    bf16 = np.abs(np.asarray(predict_function(tagger.model, "bfloat16")(x), np.float32) - reference).max() / scale
    int8 = np.abs(np.asarray(predict_function(tagger.model, "int8")(x), np.float32) - reference).max() / scale
    # int8 measured 2.5e-2 (of max(1, |logits|), TF CPU); 0.1 is a margin (~4x), not a derived bound
    assert bf16 <= MIXED_TOLERANCE["mixed_bfloat16"] and 0 < int8 <= 0.1, (bf16, int8)


@pytest.fixture(scope="module")
def softmax_preset(tmp_path_factory):
    """The softmax fixture converted into a task preset (which records its kind, aioner)."""
    from biozoo.convert.aioner import convert_aioner

    model_file, base_dir, lowercase = MODELS["softmax"]
    target = tmp_path_factory.mktemp("aioner-preset") / "softmax"
    root = FIXTURES / "pretrained_models"
    convert_aioner(root / model_file, root / base_dir, target, LABELS, "softmax", lowercase, progress=False)
    return target


def test_evaluate_scores_an_aioner_preset_like_any_task_preset(softmax_preset, ncbi_disease, tmp_path, capsys):
    """`biozoo evaluate aioner --data`: AIONER reads each gold sentence (its words joined by spaces), asked
    for the gold's types only; the words inside its entities become tags, scored as conlleval counts."""
    from seqeval.metrics import f1_score
    from seqeval.metrics.sequence_labeling import get_entities

    from biozoo.cli import main
    from biozoo.data import read_ner
    from biozoo.tasks.aioner import AionerTagger

    data = tmp_path / "NCBI-disease"
    data.mkdir()
    blocks = (ncbi_disease / "test.tsv").read_text(encoding="utf-8").split("\n\n")[:40]
    (data / "test.tsv").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    assert main(["evaluate", "aioner", "--model", str(softmax_preset), "--data", str(data)]) == 0
    metrics = json.loads(capsys.readouterr().out.splitlines()[-1])
    sentences = read_ner(data / "test.tsv")
    texts = [" ".join(s.words) for s in sentences]
    found = AionerTagger.from_preset(softmax_preset).annotate(texts, entity_types=["Disease"])
    predicted = []
    for sentence, text, result in zip(sentences, texts, found):
        starts = np.cumsum([0] + [len(w) + 1 for w in sentence.words[:-1]])
        tags = ["O"] * len(sentence.words)
        for entity in result["entities"]:
            covered = [i for i, s in enumerate(starts) if s < entity["end"] and s + len(sentence.words[i]) > entity["start"]]
            for k, i in enumerate(covered):
                tags[i] = ("B-" if k == 0 else "I-") + entity["type"]
        predicted.append(tags)
    gold = [s.tags for s in sentences]
    assert metrics["task"] == "aioner" and metrics["entity_types"] == ["Disease"]
    assert metrics["counts"]["gold"] == sum(len(get_entities(g)) for g in gold) > 0
    assert metrics["counts"]["pred"] == sum(len(get_entities(p)) for p in predicted) > 0
    assert abs(metrics["f1"] - 100 * f1_score(gold, predicted)) < 1e-9
    assert main(["evaluate", "ner", "--model", str(softmax_preset), "--data", str(data)]) == 2
    assert "is an aioner model (an AIONER tagger)" in capsys.readouterr().err


@pytest.mark.slow
def test_an_aioner_preset_exports_as_onnx_and_litert(softmax_preset, tmp_path, capsys):
    """`biozoo export onnx|litert --model AIONER`: the network AIONER scores with (before its decoder), with
    its certificate; formats that need a transformers class or in-graph text splitting are refused, saying so."""
    from biozoo.cli import main

    for fmt in ("onnx", "litert"):
        assert main(["export", fmt, "--model", str(softmax_preset), "--output", str(tmp_path / fmt)]) == 0
        certificate = json.loads(capsys.readouterr().out)["certificate"]
        assert certificate["task"] == "aioner"
        assert certificate["fixed_inputs"]["max_abs_diff"]["logits"] <= 1e-4
    assert main(["export", "hf", "--model", str(softmax_preset), "--output", str(tmp_path / "hf")]) == 2
    assert "which no transformers class holds" in capsys.readouterr().err
    assert main(["export", "hub", "--model", str(softmax_preset), "--output", str(tmp_path / "hub")]) == 2
    assert "no raw-strings serving signature" in capsys.readouterr().err
    assert not (tmp_path / "hf").exists() and not (tmp_path / "hub").exists()


def _readme_code(readme):
    """The python block of an export's README, as its reader would paste it."""
    return readme.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.slow
def test_a_crf_export_decoded_as_its_readme_says_gives_aioners_entities(tmp_path, example_pubtator, ncbi_disease,
                                                                        monkeypatch):
    """The ONNX export of AIONER's CRF model writes `emissions`, crf.npz and a README whose code (transformers'
    tokenizer, onnxruntime, its numpy Viterbi over inputs padded to 256) gives AIONER's own entities; the
    certificate's dev F1 decodes the export with the same code and the parameters written."""
    from biozoo.convert.aioner import convert_aioner
    from biozoo.documents import read_documents
    from biozoo.export.ids_models import export_ids_model
    from biozoo.tasks.aioner import (
        AionerTagger,
        conll_blocks,
        conll_input,
        entity_word_spans,
        first_piece_positions,
        restore_offsets,
    )

    model_file, base_dir, lowercase = MODELS["crf"]
    root = FIXTURES / "pretrained_models"
    preset = tmp_path / "crf"
    convert_aioner(root / model_file, root / base_dir, preset, LABELS, "crf", lowercase, progress=False)
    data = tmp_path / "NCBI-disease"
    data.mkdir()
    blocks = (ncbi_disease / "test.tsv").read_text(encoding="utf-8").split("\n\n")[:40]
    (data / "dev.tsv").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    out = tmp_path / "onnx"
    certificate = export_ids_model("onnx", out, model=str(preset), data=str(data))
    info = json.loads((out / "export.json").read_text())
    assert info["outputs"] == ["emissions"] and info["decoder"] == "crf" and info["pad_to_length"] == 256
    assert info["max_sequence_length"] == 256  # AIONER's, recorded by the conversion (the positions are 512)
    assert json.loads((out / "tokenizer" / "tokenizer_config.json").read_text())["model_max_length"] == 256
    dev = certificate["dev"]
    assert dev["export"]["counts"] == dev["float32"]["counts"], dev
    written, tagger = np.load(out / "crf.npz"), AionerTagger.from_preset(str(preset))
    assert sorted(written) == ["end", "start", "transitions"]
    assert all(np.array_equal(written[k], tagger.crf[k]) for k in written)
    assert dev["float32"]["counts"]["pred"] > 0

    documents = list(read_documents([example_pubtator]))
    ids, texts = pubtator_texts(FIXTURES / "edge_cases.PubTator")  # a sentence of 256 pieces and more...
    documents += [types.SimpleNamespace(id=i, text=t) for i, t in zip(ids, texts)]
    want = {**expected("crf", "example", "ALL"),
            **{i: found["entities"] for i, found in expected("crf", "edge_cases", "ALL").items()}}
    words = [conll_blocks(conll_input(d.text)) for d in documents]
    code = _readme_code((out / "README.md").read_text(encoding="utf-8"))
    monkeypatch.chdir(out)
    namespace = {"sentences": [block for blocks in words for block in blocks]}
    exec(code, namespace)
    label_ids, batch = namespace["label_ids"], namespace["batch"]
    assert label_ids.shape == (len(namespace["sentences"]), 256)
    row, total = 0, 0
    for document, blocks in zip(documents, words):
        restored = []
        for block in blocks:
            positions = first_piece_positions(batch.word_ids(row))
            names = [LABELS[label_ids[row][p]] for p in positions]
            restored.append((" ".join(block[1:len(positions) - 1]), entity_word_spans(names[1:-1])))
            row += 1
        found = [[s, e, k] for s, e, k in restore_offsets(document.text, restored)]
        assert found == [[int(s), int(e), k] for s, e, k in want.get(document.id, [])], document.id
        total += len(found)
    assert total > 20


def test_the_readme_crf_decode_finds_the_best_path():
    """The export README's Viterbi against every path of a small CRF (start + emissions + transitions + end)."""
    import itertools

    from biozoo.tasks.aioner import crf_decode

    rng = np.random.default_rng(0)
    emissions = rng.normal(size=(6, 5, 3)).astype(np.float32)
    crf = {k: (3 * rng.normal(size=shape)).astype(np.float32)
           for k, shape in (("transitions", (3, 3)), ("start", (3,)), ("end", (3,)))}

    def score(row, path):
        return (crf["start"][path[0]] + crf["end"][path[-1]] + sum(emissions[row, t, k] for t, k in enumerate(path))
                + sum(crf["transitions"][a, b] for a, b in zip(path, path[1:])))

    best = [max(itertools.product(range(3), repeat=5), key=lambda p: score(row, p)) for row in range(6)]
    assert crf_decode(emissions, crf).tolist() == [list(p) for p in best]


def test_a_crf_h5_converted_as_softmax_is_refused(tmp_path):
    """The decoder is the .h5's: a crf_layer asked to convert as softmax (its CRF silently dropped) is refused,
    naming the file and the layer, and nothing is written."""
    from biozoo.convert.aioner import convert_aioner

    root = FIXTURES / "pretrained_models"
    for (model_file, base_dir, lowercase), asked, layer in ((MODELS["crf"], "softmax", "crf_layer"),
                                                            (MODELS["softmax"], "crf", "softmax")):
        with pytest.raises(CheckpointError, match=f"{Path(model_file).name}.*output layer is {layer}"):
            convert_aioner(root / model_file, root / base_dir, tmp_path / asked, LABELS, asked, lowercase,
                           progress=False)
        assert not (tmp_path / asked).exists()


def test_greek_sigma_is_found_back_and_a_lost_word_warns(taggers):
    """str.lower() picks Greek final sigma by context ("ΑΣ's" -> "ασ's", the word "ΑΣ" -> "ας"): lowered
    character by character, the word is found; a word still not found warns, naming the text and word, is
    counted, and skips its sentence's entities only (the other texts are tagged)."""
    from biozoo.tasks.aioner import AionerRestoreWarning, restore_offsets

    texts = ["BRCA1 mutations.", "The ΑΣ's levels rose in ΟΔΟΣ carriers."]
    tagger = taggers["softmax"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AionerRestoreWarning)
        found = tagger.tag(texts)
    assert tagger.restore_errors == []
    assert [[e[:3] for e in tagger.tag([text])[0]] for text in texts] == [[e[:3] for e in f] for f in found]
    blocks = [("BRCA1 mutations", [(0, 0, "Gene", None)]), ("lost words", [(0, 1, "Disease", None)]),
              ("here", [(0, 0, "Chemical", None)])]
    errors = []
    with pytest.warns(AionerRestoreWarning, match="word 'lost' of text 7 .* 1 entities"):
        spans = restore_offsets("BRCA1 mutations here", blocks, "text 7", errors)
    assert spans == [(0, 5, "Gene", None), (16, 20, "Chemical", None)]
    assert [(e["document"], e["word"]) for e in errors] == [("text 7", "lost")]
