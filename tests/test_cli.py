"""The `biozoo` command line: list, info, convert, --help everywhere, `python -m biozoo`."""

import json
import os
import subprocess
import sys

import pytest

import biozoo
from biozoo import testing as H
from biozoo.cli import build_parser, main


def run(capsys, *argv):
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_list_table_and_json(capsys):
    status, out, _ = run(capsys, "list")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["NAME", "FAMILY", "PARAMS"]
    assert {line.split()[0] for line in lines[1:]} == set(biozoo.list_presets())
    status, out, _ = run(capsys, "list", "biom_albert*", "--json")
    entries = json.loads(out)
    assert [e["name"] for e in entries] == ["biom_albert_xxlarge", "biom_albert_xxlarge_pmc", "biom_albert_xxlarge_squad2"]
    assert all(e["family"] == "albert" for e in entries)


def test_info_shows_config_sources_licence_results(capsys):
    status, out, _ = run(capsys, "info", "bioformer_16l")
    assert status == 0
    assert "num_attention_heads = 6" in out and "max_position_embeddings = 1024" in out
    assert "hf://bioformers/bioformer-16L@" in out
    assert "Apache-2.0" in out and "reported results" in out
    status, out, _ = run(capsys, "info", "bioformer_16l", "--json")
    assert json.loads(out)["config"]["hidden_size"] == 384


def test_info_unknown_name(capsys):
    status, _, err = run(capsys, "info", "biofromer_8l")
    assert status == 2 and "bioformer_8l" in err


def test_convert_hf_directory(tmp_path, capsys):
    import keras_hub

    model = H.make_model("electra", "ElectraForPreTraining")
    source = H.save_hf_directory(model, tmp_path / "hf", "bin")
    status, out, _ = run(capsys, "convert", "--from", "hf", str(source), "--output", str(tmp_path / "preset"))
    assert status == 0 and json.loads(out)["output"] == str(tmp_path / "preset")
    backbone = keras_hub.models.Backbone.from_preset(str(tmp_path / "preset"))
    inputs = H.random_inputs()
    sequence, _ = H.hf_outputs(model, inputs)
    assert H.max_diff(backbone(inputs)["sequence_output"], sequence, inputs["padding_mask"]) <= 1e-4


def subcommands(parser):
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices


@pytest.mark.parametrize("command", sorted(subcommands(build_parser())))
def test_every_command_has_help(command, capsys):
    parsers = subcommands(build_parser())
    names = [name for name, parser in parsers.items() if parser is parsers[command]]  # the command and its aliases
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert any("usage: biozoo " + name + " " in out for name in names), out[:300]


def test_python_dash_m_is_the_same_cli():
    result = subprocess.run([sys.executable, "-m", "biozoo", "list", "bioformer_*", "--kind", "backbone"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()[1:]] == ["bioformer_16l", "bioformer_8l"]


@pytest.mark.parametrize("flag, lowercase", [("--cased", False), ("--lowercase", True)])
def test_convert_hf_takes_the_casing_flag_where_the_folder_says_nothing(flag, lowercase, tmp_path, capsys):
    """An old HF folder (config.json, weights, vocab.txt; no tokenizer_config.json): transformers'
    BertTokenizer(vocab.txt, do_lower_case=...) with the flag's casing gives biozoo's ids."""
    from transformers import BertTokenizer

    _, source = H.save_case("bert", "BertModel", tmp_path)
    for name in ("tokenizer_config.json", "tokenizer.json", "special_tokens_map.json"):
        (source / name).unlink(missing_ok=True)
    assert main(["convert", "--from", "hf", str(source), "--output", str(tmp_path / "out"), flag]) == 0
    ours = biozoo.Tokenizer.from_preset(str(tmp_path / "out"))
    theirs = BertTokenizer(str(source / "vocab.txt"), do_lower_case=lowercase)
    texts = ["BRCA1 Protein binds the Gene", "brca1 protein"]
    assert ours.ids(texts) == [theirs(t, add_special_tokens=False)["input_ids"] for t in texts]
    assert ours.lowercase is lowercase


@pytest.mark.parametrize("flags", [["--family", "albert"], ["--vocab", "v.txt"], ["--num-heads", "4"],
                                   ["--part", "generator"]])
def test_convert_hf_refuses_the_options_it_does_not_take(flags, tmp_path, capsys):
    _, source = H.save_case("bert", "BertModel", tmp_path)
    assert main(["convert", "--from", "hf", str(source), "--output", str(tmp_path / "out"), *flags]) == 2
    assert flags[0] in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_export_hf_and_garden_from_the_cli(tmp_path, capsys):
    import transformers

    from biozoo import testing as H

    model = H.make_model("bert", "BertModel", layer_norm_eps=1e-12)
    source = H.save_hf_directory(model, tmp_path / "hf")
    assert run(capsys, "export", "hf", "--preset", str(source), "--output", str(tmp_path / "hf_out"))[0] == 0
    reloaded = transformers.AutoModel.from_pretrained(str(tmp_path / "hf_out"))
    inputs = H.random_inputs()
    assert H.max_diff(H.hf_outputs(reloaded, inputs)[0], H.hf_outputs(model, inputs)[0], inputs["padding_mask"]) <= 1e-4
    pytest.importorskip("official.nlp.modeling")
    assert run(capsys, "export", "garden", "--preset", str(source), "--output", str(tmp_path / "garden"))[0] == 0
    assert (tmp_path / "garden" / "garden_encoder.json").exists()


def test_export_garden_refusal_is_one_line(tmp_path, capsys):
    from biozoo import testing as H

    source = H.save_hf_directory(H.make_model("megatron_bert", "MegatronBertModel"), tmp_path / "hf")
    assert main(["export", "garden", "--preset", str(source), "--output", str(tmp_path / "garden")]) == 2
    assert "megatron_bert" in capsys.readouterr().err
    assert not (tmp_path / "garden").exists()


@pytest.mark.parametrize("argv", [
    ["finetune", "ner", "--preset", "p", "--data", "d", "--output", "o"],
    ["pretrain", "mlm", "--corpus", "c.txt", "--preset", "p", "--output", "o"],
    ["distill", "--teacher", "t", "--student-config", "s.json", "--method", "compact", "--corpus", "c.txt",
     "--output", "o"],
])
def test_training_commands_take_strategy_and_tpu(argv):
    from biozoo.cli import build_parser

    args = build_parser().parse_args(argv + ["--strategy", "mirrored", "--tpu", "local"])
    assert (args.strategy, args.tpu) == ("mirrored", "local")


def test_backend_option_chooses_the_keras_backend():
    code = ("import os, sys\nfrom biozoo.cli import main\nassert main(['--backend', 'jax', 'list', 'bioformer_8l']) == 0\n"
            "import keras\nprint(os.environ['KERAS_BACKEND'], keras.backend.backend())")
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines()[-1] == "jax jax"


JAX_COMPILES = """
import os, sys, time
from biozoo.cli import main
start = time.perf_counter()
assert main(['--backend', 'jax', 'annotate', 'example-pubtator', '--model', sys.argv[1], '--output', sys.argv[2]]) == 0
import jax
print(os.environ['JAX_COMPILATION_CACHE_DIR'], jax.config.jax_compilation_cache_dir, round(time.perf_counter() - start, 2))
"""


@pytest.mark.slow
def test_jax_keeps_compiled_programs_in_the_biozoo_cache(tmp_path):
    """Under JAX the command line points JAX's persistent compilation cache into
    $BIOZOO_CACHE/jax-compilation: the first annotate fills it, a second one reads it (and
    writes nothing new); a user's own JAX_COMPILATION_CACHE_DIR wins."""
    env = {**{k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "JAX_COMPILATION_CACHE_DIR")},
           "BIOZOO_CACHE": str(tmp_path / "cache"), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}

    def annotate(output, **extra):
        result = subprocess.run([sys.executable, "-c", JAX_COMPILES, str(tagger), str(tmp_path / output)],
                                capture_output=True, text=True, env={**env, **extra}, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout.split()[-3:]

    labels = ["O", "B-Disease", "I-Disease"]
    tagger = H.save_hf_directory(H.make_model("bert", "BertForTokenClassification", num_labels=3,
                                              id2label=dict(enumerate(labels)), architectures=["BertForTokenClassification"]),
                                 tmp_path / "tagger")
    kept = tmp_path / "cache" / "jax-compilation"
    assert annotate("first.jsonl")[:2] == [str(kept)] * 2
    programs = sorted(p.name for p in kept.iterdir())
    assert programs  # the model's compiled predictions, one per batch shape
    annotate("second.jsonl")
    assert sorted(p.name for p in kept.iterdir() if not p.name.endswith("-atime")) == \
        sorted(p for p in programs if not p.endswith("-atime"))  # read back, none compiled anew
    assert (tmp_path / "first.jsonl").read_text() == (tmp_path / "second.jsonl").read_text()
    own = tmp_path / "own"
    result = subprocess.run([sys.executable, "-c", "import os\nfrom biozoo.cli import main\nassert main(['--backend', 'jax', 'list']) == 0\n"
                             "print(os.environ['JAX_COMPILATION_CACHE_DIR'])"], capture_output=True, text=True,
                            env={**env, "JAX_COMPILATION_CACHE_DIR": str(own)}, timeout=300)
    assert result.returncode == 0 and result.stdout.split()[-1] == str(own)  # the user's own setting wins


def test_backend_option_refuses_another_backend_once_keras_runs(capsys):
    import keras

    other = "jax" if keras.backend.backend() != "jax" else "torch"
    with pytest.raises(SystemExit) as exit_:
        main(["--backend", other, "list"])
    assert exit_.value.code == 2
    assert f"Keras already runs on {keras.backend.backend()}" in capsys.readouterr().err


def test_a_packaged_corpus_is_read_by_name_where_documents_are_asked_for(tmp_path, capsys):
    """`example-pubtator` (4 abstracts) as `score ner`'s gold and predictions; `evaluate --documents`
    takes the name too (its parser, here: evaluating needs a model)."""
    from biozoo.data import embedded_corpus

    status, out, _ = run(capsys, "score", "ner", "--gold", "example-pubtator", "--pred", "example-pubtator")
    assert status == 0 and json.loads(out)["documents"]["gold"] == 4
    args = build_parser().parse_args(["evaluate", "ner", "--model", "m", "--documents", "example-pubtator"])
    assert args.documents == [os.fspath(embedded_corpus("example-pubtator"))]
    assert os.path.isfile(args.documents[0])
    # the packaged NER corpus is sentences, not documents: its name is not read as one
    status, _, err = run(capsys, "score", "ner", "--gold", "ncbi-disease", "--pred", "example-pubtator")
    assert status == 2 and "input not found: ncbi-disease" in err
