"""`QuestionAnswerer.answer` reads answers inside a word as transformers' question-answering
pipeline does (without word alignment): each context piece spans its own characters, also in an
ALBERT word with a character outside the vocabulary or a ligature, in a WordPiece word with a soft
hyphen or zero-width no-break spaces, and a "[SEP]" written in a context is the [SEP] token.

The references come from transformers 4.x's pipeline on the tiny fixture models
(tests/fixtures/qa_pipeline/make_subword.py writes subword.json); one window per context, where
the pipeline's best span is the SQuAD rule's. Every piece of such a word used to span the whole
word (answers could not be narrower than it), and a written [SEP] became "[", "sep", "]".
"""

import json
import re
from pathlib import Path

import pytest

import biozoo

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "qa_pipeline"
EXPECTED = json.loads((FIXTURE / "subword.json").read_text(encoding="utf-8"))

pytestmark = pytest.mark.backends


@pytest.fixture(scope="module", params=sorted(EXPECTED["families"]))
def family(request, tmp_path_factory):
    name = request.param
    with pytest.MonkeyPatch.context() as patch:  # module scope: the per-test cache is not set up yet
        patch.setenv("BIOZOO_CACHE", str(tmp_path_factory.mktemp("biozoo-cache")))
        qa = biozoo.QuestionAnswerer.from_preset(str(FIXTURE / name))
    return name, qa, EXPECTED["families"][name]


def expected_answers(expected):  # per max_answer_len: [((context, question), answer)]
    pairs = [(c, q) for c in expected["contexts"] for q in EXPECTED["questions"]]
    return [list(zip(pairs, expected["answers"][str(n)])) for n in EXPECTED["max_answer_lens"]]


def test_the_contexts_hold_what_the_old_spans_got_wrong(family):
    """The fixture's point: an <unk> and a ligature in ALBERT words, [SEP] written in a context, and
    answers narrower than the whitespace word they lie in."""
    name, qa, expected = family
    tok = qa.preprocessor.tokenizer
    tokens = dict(zip(expected["contexts"], tok.token_spans(expected["contexts"])))
    assert any(tok.sep_token_id in [i for i, _, _ in t] for t in tokens.values()), name
    if name == "albert":
        assert tok.unk_token_id in [i for i, _, _ in tokens["Alzheimer\u2665s disease"]]
        ligature = [(a, b) for _, a, b in tokens["(\ufb01brosis), and"] if (a, b) == (1, 2)]
        assert len(ligature) == 2  # "f" and "i" both span the ligature
    narrower = 0
    for answers in expected_answers(expected):
        for (context, _), answer in answers:
            word = next(m for m in re.finditer(r"\S+", context) if m.start() <= answer["start"] < m.end())
            narrower += word.start() < answer["start"] or answer["end"] < word.end()
    assert narrower >= 20, name


def test_answers_inside_words_equal_the_pipeline(family):
    name, qa, expected = family
    for length, answers in zip(EXPECTED["max_answer_lens"], expected_answers(expected)):
        contexts = [c for (c, _), _ in answers]
        questions = [q for (_, q), _ in answers]
        # n_best above the window's tokens: every start and end competes, as in the pipeline
        results = qa.answer(questions, contexts, n_best=64, max_answer_length=length)
        got = [(r["nbest"][0]["text"], r["nbest"][0]["start"], r["nbest"][0]["end"]) for r in results]
        theirs = [(a["answer"], a["start"], a["end"]) for _, a in answers]
        differing = [(c, q, ours, ref) for ((c, q), _), ours, ref in zip(answers, got, theirs) if ours != ref]
        assert not differing, f"{name} max_answer_len={length}: (context, question, biozoo, pipeline) {differing}"
