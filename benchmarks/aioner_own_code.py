"""AIONER's own tagging throughput, on the model that `annotate_documents.py --aioner-h5` times in biozoo.

Runs in AIONER's reference environment (Python 3.8, TensorFlow 2.3; see tests/fixtures/aioner/make.py,
whose harness this reuses: AIONER's unchanged sources from the AIONER git mirror, the stanza stub that
runs stanza's own SpacyTokenizer, no torch):

    /work/aioner_ref/venv/bin/python benchmarks/aioner_own_code.py --documents 500 --out /tmp/aioner_bench \
        [--decoder softmax|crf] [--threads N] [--tiny]

1. Once (cached in --out, rebuilt when the shape changes): an AIONER model built by AIONER's own
   `HUGFACE_NER` (`build_encoder` + `build_softmax_decoder`) with Bioformer-8L's shape (BERT, hidden 512,
   8 layers, 8 heads, intermediate 2048, max_position 512, gelu, cased) and the fixture's cased vocabulary,
   seeded random weights (make.py's `step_build`, kernels scaled to the width so activations stay in
   range; the output layer calibrated so that words get entity labels), saved with `model.save_weights` to
   OUT/AIONER/Bioformer-softmax-AIONER.h5, its base dir in OUT/bioformer-cased-v1.0. `--decoder crf`:
   PubMedBERT's shape (hidden 768, 12 layers, 12 heads, 3072, uncased) with a CRF decoder,
   OUT/AIONER/PubmedBERT-CRF-AIONER.h5 + OUT/BiomedNLP-PubMedBERT-base-uncased-abstract. `--tiny`: hidden
   32, 2 layers (smoke tests only).
2. Timed: `AIONER_Run.NER_PubTator(infile, outfile, nn_model, para_set)` (entity type ALL) on a file of
   the first N documents of BC5CDR_Test.PubTator, after a warm-up on 8 documents (TensorFlow's graph
   building is not counted); model building and loading are not timed. Prints seconds, documents/s and
   the entities written (OUT/own_output.PubTator), then the command that times biozoo on the same model.
"""

import argparse
import collections
import contextlib
import importlib.util
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "aioner")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import shared_data  # noqa: E402


def _load_make():
    spec = importlib.util.spec_from_file_location("aioner_fixture_make", os.path.join(FIXTURE, "make.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make = _load_make()

SHAPES = {"softmax": dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, intermediate_size=2048),
          "crf": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)}
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
REF_HIDDEN = make.BERT_CONFIG["hidden_size"]  # the width make.py's weight scales are made for
FIXTURE_MODELS = make.PM_DIR  # the fixture's base dirs (vocab.txt, tokenizer files)


def bert_config(args):
    """make.py's BERT config with the benchmark's sizes and the fixture vocabulary's size."""
    spec = make.MODELS[args.decoder]
    with open(os.path.join(FIXTURE_MODELS, spec["base"], "vocab.txt"), encoding="utf-8") as f:
        vocab_size = len(f.read().splitlines())
    return dict(make.BERT_CONFIG, vocab_size=vocab_size, **(TINY if args.tiny else SHAPES[args.decoder]))


def copy_aioner_sources(args):
    """AIONER's unchanged files (make.AIONER_FILES) from the git mirror into OUT/work/aioner; the commit."""
    dst = os.path.join(args.work, "aioner")
    if os.path.exists(dst):
        shutil.rmtree(dst)
    for rel in make.AIONER_FILES:
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        data = subprocess.check_output(["git", "--git-dir", args.aioner_git, "show", f"{args.aioner_commit}:{rel}"])
        with open(os.path.join(dst, rel), "wb") as f:
            f.write(data)
    rev = subprocess.check_output(["git", "--git-dir", args.aioner_git, "rev-parse", args.aioner_commit])
    return rev.decode().strip()


def write_base_dir(args, config):
    """OUT/<base>: the fixture's vocab.txt and tokenizer files, config.json with the benchmark's sizes."""
    spec = make.MODELS[args.decoder]
    src, dst = os.path.join(FIXTURE_MODELS, spec["base"]), os.path.join(args.out, spec["base"])
    os.makedirs(dst, exist_ok=True)
    for fname in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copyfile(os.path.join(src, fname), os.path.join(dst, fname))
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)


def install_harness(args):
    """Points make.py's harness at OUT (base dirs and .h5 files) and replaces its from_pt shim.

    make.py's shim loads a saved TF checkpoint of the base config; here the base weights are not needed
    at all (step_build assigns every weight, tagging runs load_weights), so `TFAutoModel.from_pretrained`
    builds `TFBertModel(config)` the way transformers' from_pretrained does (config, then a call on the
    dummy inputs) and skips the hundreds of MB a saved base checkpoint would take.
    """
    make.PM_DIR = args.out
    import_aioner = make.import_aioner

    def import_aioner_no_checkpoint(a):
        AIONER_Run, model_ner = import_aioner(a)
        from transformers import BertConfig, TFBertModel

        class TFAutoModelFromConfig:
            @staticmethod
            def from_pretrained(path, from_pt=False, **kwargs):
                model = TFBertModel(BertConfig.from_pretrained(path))
                model(model.dummy_inputs)
                return model

        model_ner.TFAutoModel = TFAutoModelFromConfig
        return AIONER_Run, model_ner

    make.import_aioner = import_aioner_no_checkpoint


def step_build(args):
    """make.py's step_build (its own process, as in make.py, so the Keras names are AIONER's) on OUT."""
    install_harness(args)
    scale = math.sqrt(REF_HIDDEN / bert_config(args)["hidden_size"])
    encoder_init = make._encoder_init

    def scaled_encoder_init(name, shape, rng):  # make.py's draws; kernels scaled to the model's width
        value = encoder_init(name, shape, rng)
        return value * scale if name.endswith("kernel:0") else value

    make._encoder_init = scaled_encoder_init
    calibration_inputs = make._calibration_inputs

    def limited_calibration_inputs(a, AIONER_Run, nn_model, decoder_type):  # bounds the build time
        x, rows, cols = calibration_inputs(a, AIONER_Run, nn_model, decoder_type)
        n = min(len(x[0]), args.calibration_sentences)
        keep = [i for i, r in enumerate(rows) if r < n]
        return [part[:n] for part in x], [rows[i] for i in keep], [cols[i] for i in keep]

    make._calibration_inputs = limited_calibration_inputs
    make.step_build(args, args.decoder)


def build_if_needed(args):
    spec = make.MODELS[args.decoder]
    h5 = os.path.join(args.out, "AIONER", spec["h5"])
    config = bert_config(args)
    marker = os.path.join(args.out, "AIONER", spec["h5"] + ".build.json")
    wanted = {"config": config, "seed": spec["seed"], "commit": args.commit, "data_dir": args.data_dir,
              "calibration_sentences": args.calibration_sentences}
    if os.path.exists(h5) and os.path.exists(marker):
        with open(marker) as f:
            if json.load(f) == wanted:
                print(f"cached model: {h5}")
                return h5
    write_base_dir(args, config)
    print(f"building the AIONER model (hidden {config['hidden_size']}, {config['num_hidden_layers']} layers) ...",
          flush=True)
    start = time.perf_counter()
    cmd = [sys.executable, os.path.abspath(__file__), "--out", args.out, "--decoder", args.decoder, "--data-dir",
           args.data_dir, "--threads", str(args.threads), "--calibration-sentences", str(args.calibration_sentences),
           "--step", "build"] + (["--tiny"] if args.tiny else [])
    log = os.path.join(args.work, "build.log")
    with open(log, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
    if rc:
        sys.exit(f"the build failed (exit {rc}); see {log}")
    with open(marker, "w") as f:
        json.dump(wanted, f, indent=1, sort_keys=True)
    print(f"built {h5} in {time.perf_counter() - start:.0f} s (log: {log})")
    return h5


def set_threads(args):
    if args.threads:
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)


def run_ner(AIONER_Run, nn_model, para_set, docs, infile, outfile):
    """AIONER_Run.NER_PubTator on `docs`; (seconds, its printed output)."""
    with open(infile, "w", encoding="utf-8") as f:
        f.write("\n\n".join(docs) + "\n")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        start = time.perf_counter()
        AIONER_Run.NER_PubTator(infile, outfile, nn_model, para_set)
        seconds = time.perf_counter() - start
    return seconds, printed.getvalue()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--documents", type=int, default=500)
    p.add_argument("--out", default="/tmp/aioner_bench", help="model cache and outputs")
    p.add_argument("--decoder", choices=["softmax", "crf"], default="softmax",
                   help="softmax: Bioformer-8L-shaped, cased; crf: PubMedBERT-shaped, uncased")
    p.add_argument("--tiny", action="store_true", help="hidden 32, 2 layers (smoke tests)")
    p.add_argument("--threads", type=int, default=0, help="TensorFlow intra-op threads (0: its default)")
    p.add_argument("--data-dir", default=None, help="default: shared data's documents/ (BC5CDR_Test.PubTator; "
                   "example / NCBIdisease_Test.PubTator calibrate the build, as in make.py)")
    p.add_argument("--aioner-git", default="/work/.mirror/ncbi+AIONER/repo")
    p.add_argument("--aioner-commit", default="HEAD")
    p.add_argument("--calibration-sentences", type=int, default=128,
                   help="sentences (of make.py's calibration documents) the build calibrates the output layer on")
    p.add_argument("--step", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args.out = os.path.abspath(args.out)
    args.work = os.path.join(args.out, "work")
    args.data_dir = os.path.abspath(args.data_dir or str(shared_data() / "documents"))
    set_threads(args)
    if args.step == "build":
        step_build(args)
        return
    os.makedirs(args.work, exist_ok=True)
    args.commit = copy_aioner_sources(args)
    h5 = build_if_needed(args)

    spec = make.MODELS[args.decoder]
    install_harness(args)
    with contextlib.redirect_stdout(io.StringIO()):  # AIONER prints Keras summaries
        AIONER_Run, _ = make.import_aioner(args)
        nn_model = make.build_nn_model(args, args.decoder, AIONER_Run)
        nn_model.load_model(h5)  # = model.load_weights(h5), as AIONER_Run.NER_main_path does
    para_set = {"encoder_type": spec["encoder_type"], "decoder_type": args.decoder, "entity_type": "ALL",
                "vocabfile": os.path.join(make.HERE, "AIO_label.vocab")}

    with open(os.path.join(args.data_dir, "BC5CDR_Test.PubTator"), encoding="utf-8") as f:
        docs = f.read().strip().split("\n\n")[:args.documents]  # NER_PubTator's own split
    chars = sum(len(d.split("\n")[0].split("|t|", 1)[1]) + 1 + len(d.split("\n")[1].split("|a|", 1)[1]) for d in docs)
    import tensorflow as tf
    print(f"BC5CDR test: {len(docs)} documents, {chars} characters; AIONER {args.commit[:10]}, TensorFlow "
          f"{tf.__version__}, intra-op threads {tf.config.threading.get_intra_op_parallelism_threads() or 'default'}")
    own_output = os.path.join(args.out, "own_output.PubTator")
    with tempfile.TemporaryDirectory(prefix="aioner-bench-") as scratch:
        warm_seconds, _ = run_ner(AIONER_Run, nn_model, para_set, docs[:8], os.path.join(scratch, "warm.PubTator"),
                                  os.path.join(scratch, "warm_out.PubTator"))
        seconds, printed = run_ner(AIONER_Run, nn_model, para_set, docs, os.path.join(scratch, "in.PubTator"),
                                   own_output)
    entities = make._parse_pubtator_out(own_output)
    by_type = collections.Counter(e[2] for ents in entities.values() for e in ents)
    restore_errors = printed.count("resotr index error:")
    n = len(docs)
    print(f"warm-up on {len(docs[:8])} documents: {warm_seconds:.1f} s (not counted)")
    print(f"AIONER's own code (NER_PubTator, {args.decoder}): {seconds:.1f} s, {n / seconds:.2f} documents/s, "
          f"{sum(by_type.values())} entities ({', '.join(f'{k} {v}' for k, v in sorted(by_type.items()))}); "
          f"restore-index errors printed: {restore_errors}")
    print(f"output: {own_output}")
    print("time biozoo on the same model:")
    print(f"    .venv/bin/python benchmarks/annotate_documents.py --documents {n} "
          f"--aioner-h5 {h5} --aioner-base {os.path.join(args.out, spec['base'])}")


if __name__ == "__main__":
    main()
