#!/usr/bin/env bash
# Wheels for a GPU machine that has JAX, torch and transformers but no TensorFlow and no network
# (this project's lent GPU machines: Python 3.12, x86-64): Keras, KerasHub and what biozoo needs
# that the image lacks, plus biozoo itself, into .whl/ (ignored through .git/info/exclude).
#
#   tools/device_wheels.sh                     # here, with the network of the package registries
#   # there, first thing in the command:
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
#       && python3 -m compileall -q -j 0 /tmp/site && export PYTHONPATH=/tmp/site KERAS_BACKEND=jax
# (byte-compiled on every core at once; `benchmarks/gpu_run.sh` does all of this)
#
# What the image already has (numpy, scipy, scikit-learn, tokenizers, sentencepiece, h5py,
# lxml, rich, tqdm, ...) is left out: its own builds must win. Compiled extensions are stripped
# of debugging symbols. Prints the folder's size (the working tree that travels, wheels
# included, is limited to 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
rm -rf .whl && mkdir .whl
TARGET=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)
# Keras and KerasHub alone (KerasHub declares tensorflow-text, which pulls TensorFlow), and the
# dependencies of theirs the image lacks
"$PYTHON" -m pip download -q --no-deps "${TARGET[@]}" -d .whl \
    "keras==3.15.1" "keras-hub==0.32.0" namex optree kagglehub kagglesdk
# spaCy (sentence splitting) and gdown, with their dependencies, as resolved for the device's Python
"$PYTHON" -m pip download -q "${TARGET[@]}" -d .whl "spacy>=3.8,<3.9" "gdown>=5.2,<6"
# pure-Python projects (some published as source only), with their dependencies, and biozoo
"$PYTHON" -m pip wheel -q -w .whl "seqeval==1.2.2" "bioc==2.1"
"$PYTHON" -m pip wheel -q --no-deps -w .whl .
# already in the image (KINDS.md's list): keep the image's
PRESENT="absl_py attrs certifi charset_normalizer click filelock fsspec h5py huggingface_hub idna jinja2 lxml
markdown_it_py markupsafe matplotlib mdurl ml_dtypes numpy packaging pillow protobuf pygments pyyaml regex requests
rich safetensors scikit_learn scipy sentencepiece setuptools six tokenizers tqdm typer typing_extensions urllib3
wrapt shellingham joblib threadpoolctl hf_xet anyio h11 httpcore httpx narwhals
cloudpickle sortedcontainers"
for name in $PRESENT; do
    rm -f .whl/"$name"-*.whl .whl/"${name//_/-}"-*.whl
    # wheel file names use underscores; some projects capitalise
    find .whl -maxdepth 1 -iname "${name}-*.whl" -delete
done
# compiled extensions without their debugging symbols (spaCy's 35 MiB become 7): what travels is small
for wheel in .whl/*-cp312-*.whl; do
    unpacked=$(mktemp -d)
    (cd "$unpacked" && unzip -q "$OLDPWD/$wheel" && find . -name '*.so' -exec strip --strip-unneeded {} + \
        && rm -f "$OLDPWD/$wheel" && zip -q -r -9 "$OLDPWD/$wheel" .)
    rm -rf "$unpacked"
done
"$PYTHON" - <<'EOF'
import pathlib
wheels = sorted(pathlib.Path(".whl").glob("*.whl"))
names = [w.name.split("-")[0].lower() for w in wheels]
duplicates = {n for n in names if names.count(n) > 1}
if duplicates:
    raise SystemExit(f".whl: several versions of {', '.join(sorted(duplicates))}: keep one of each")
native = [w.name for w in wheels if "-cp3" in w.name and "cp312" not in w.name and "abi3" not in w.name]
if any(n.startswith("tensorflow") for n in names):
    raise SystemExit(".whl: TensorFlow came in: the device runs without it")
if native:
    raise SystemExit(f".whl: built for another Python than the device's 3.12: {', '.join(native)}")
size = sum(w.stat().st_size for w in wheels)
print(f".whl: {len(wheels)} wheels, {size / 2**20:.1f} MiB")
EOF
