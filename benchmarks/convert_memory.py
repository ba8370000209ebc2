"""Peak memory of checkpoint conversion, as peak RSS / checkpoint bytes (target <= 1.5).

Builds a random ELECTRA-large-shaped discriminator (24 layers, hidden 1024, about 335M
parameters), writes it as model.safetensors, as pytorch_model.bin and as a TF1 checkpoint
(google-research names, no optimizer slots, so the file holds only the weights), then converts
each with biozoo in a fresh process and reports the process's peak RSS. Each process first
imports TensorFlow and Keras; that baseline is printed too, and the ratio is given both for the
whole process and for what conversion adds on top of the imports. For comparison, the same
measure for `transformers.AutoModel.from_pretrained` in the same run, followed by a sum over
every parameter: transformers 5 loads lazily, so without reading each tensor its peak would
leave out most of reading the checkpoint.

    python benchmarks/convert_memory.py [--layers 24] [--hidden 1024] [--workdir DIR]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, resource, sys, os
def status_kb(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key + ":"))
def rss_kb():
    return status_kb("VmRSS")
mode, source, target = sys.argv[1:4]
if mode == "transformers":
    import torch, transformers
    base = rss_kb()
    model = transformers.AutoModel.from_pretrained(source)
    # transformers 5 loads a checkpoint lazily (memory-mapped safetensors are read at first use): sum every parameter,
    # so that the peak counts reading the whole checkpoint, as a conversion does (in its own dtype: no copy of a tensor)
    with torch.no_grad():
        sum(float(p.sum()) for p in model.parameters())
else:
    import tensorflow, keras, biozoo
    from biozoo.convert.hf import convert_hf_directory
    from biozoo.convert.tf1 import convert_tf1
    base = rss_kb()
    if mode == "tf1":
        convert_tf1(source, target, vocab=os.path.join(os.path.dirname(source), "vocab.txt"), progress=False)
    else:
        convert_hf_directory(source, target, progress=False)
peak = status_kb("VmHWM")  # this process's peak RSS (ru_maxrss would carry the parent's over exec)
print(json.dumps({"base_kb": base, "peak_kb": peak}))
"""


def make_checkpoints(workdir, layers, hidden):
    import torch
    import transformers
    from safetensors.torch import save_file

    from biozoo.testing import tf1_checkpoints as T

    config = transformers.ElectraConfig(vocab_size=28895, embedding_size=hidden, hidden_size=hidden,
                                        num_hidden_layers=layers, num_attention_heads=hidden // 64,
                                        intermediate_size=4 * hidden, max_position_embeddings=512)
    torch.manual_seed(0)
    model = transformers.ElectraForPreTraining(config).eval()
    vocab = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += [f"tok{i}" for i in range(config.vocab_size - len(vocab))]
    paths = {}
    for fmt in ("safetensors", "bin"):
        directory = os.path.join(workdir, fmt)
        os.makedirs(directory, exist_ok=True)
        config.save_pretrained(directory)
        with open(os.path.join(directory, "vocab.txt"), "w") as f:
            f.write("\n".join(vocab) + "\n")
        state = {k: v.contiguous() for k, v in model.state_dict().items()}
        if fmt == "safetensors":
            save_file(state, os.path.join(directory, "model.safetensors"), metadata={"format": "pt"})
            weights = os.path.join(directory, "model.safetensors")
        else:
            torch.save(state, os.path.join(directory, "pytorch_model.bin"))
            weights = os.path.join(directory, "pytorch_model.bin")
        paths[fmt] = (directory, os.path.getsize(weights))
    tf1_dir = os.path.join(workdir, "tf1")
    os.makedirs(tf1_dir, exist_ok=True)
    with open(os.path.join(tf1_dir, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    variables = T.electra_tf1_variables({k: v.detach().numpy() for k, v in model.state_dict().items()}, {})
    variables.pop("generator_predictions/temperature", None)
    prefix = T.write_tf1_checkpoint(variables, os.path.join(tf1_dir, "model.ckpt"), adam_slots=False)
    size = sum(os.path.getsize(os.path.join(tf1_dir, f)) for f in os.listdir(tf1_dir) if f.startswith("model.ckpt") and not f.endswith(".meta"))
    paths["tf1"] = (prefix, size)
    params = sum(p.numel() for p in model.electra.parameters())
    del model
    return paths, params


def measure(mode, source, target):
    result = subprocess.run([sys.executable, "-c", CHILD, mode, source, target], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="biozoo-convert-memory-")
    try:
        paths, params = make_checkpoints(workdir, args.layers, args.hidden)
        print(f"ELECTRA-shaped discriminator: {params / 1e6:.1f}M parameters (backbone)")
        print(f"{'source':<26}{'ckpt MB':>9}{'base MB':>9}{'peak MB':>9}{'peak/ckpt':>11}{'added/ckpt':>12}")
        rows = [("biozoo", fmt) for fmt in ("safetensors", "bin", "tf1")]
        rows += [("transformers", fmt) for fmt in ("safetensors", "bin")]
        label = {"transformers": "transformers+read"}  # from_pretrained, then every parameter summed (read)
        results = {}
        for tool, fmt in rows:
            source, size = paths[fmt]
            target = os.path.join(workdir, f"preset-{fmt}")
            m = measure("transformers" if tool == "transformers" else fmt, source, target)
            shutil.rmtree(target, ignore_errors=True)
            peak, base = m["peak_kb"] * 1024, m["base_kb"] * 1024
            results[(tool, fmt)] = peak / size
            print(f"{label.get(tool, tool) + ' ' + fmt:<26}{size / 2**20:>9.0f}{base / 2**20:>9.0f}{peak / 2**20:>9.0f}"
                  f"{peak / size:>11.2f}{(peak - base) / size:>12.2f}")
        for fmt in ("safetensors", "bin"):
            ratio = results[("biozoo", fmt)] / results[("transformers", fmt)]
            print(f"ratio biozoo/transformers (from_pretrained + every parameter read) peak RSS ({fmt}): {ratio:.2f}")
        worst = max(v for (tool, _), v in results.items() if tool == "biozoo")
        print(f"worst biozoo peak/ckpt: {worst:.2f} (target <= 1.5): {'OK' if worst <= 1.5 else 'OVER'}")
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
