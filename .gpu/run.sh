#!/usr/bin/env bash
# The GPU rows in one device call, offline, under 8 minutes with the installs (issues 56, 67). Every
# model is a real architecture with random weights built from its config (benchmarks/architectures.py),
# so nothing is downloaded or carried but a few small wheels. Steps, most wanted first, each with its
# own time limit inside the whole run's budget, each one's output appended to the log as it comes and
# its results files packed as soon as it ends:
#   1. benchmarks/gpu_check.py: MaxP over MiniLM-L6, BERT-base and ELECTRA-base, PARADE-Attn, LLMMaxP over
#      a small Llama: bf16 and fp32 speed and peak memory, and the fidelity of bf16 to fp32
#   2. benchmarks/training.py, fp32 then bf16: the GPU training rows (T1 against the peers, T3, T5)
#   3. benchmarks/run.py: the inference speed rows 1, 8, 12 and 13
#   4. tests/engine/test_cuda.py
#
#     bash .gpu/wheels.sh             # once, on a machine with pip: the missing packages as wheels in .whl/
#     bash .gpu/run.sh                # on the GPU machine, from anywhere; carry .whl
#     bash .gpu/run.sh --fake-device  # the same steps on the CPU, tiny (cpu-as-cuda): the test of this script
#
# Options: --fake-device; --results DIR (default benchmarks/results). With $OUT set (the device call's
# folder), the log and the packed results go there: $OUT/gpu-run.log and $OUT/gpu-results.tgz, two files.
# PYTHON (default python3) names the interpreter; LONGDOC_GPU_BUDGET_S the whole run's budget (450 s);
# LONGDOC_GPU_LIMIT_SCALE multiplies the budget and every step's limit (default 1; 4 with --fake-device: a
# shared CPU runs the tiny models slower than the GPU runs the real ones, and the limits guard the GPU call).
set -u
cd "$(dirname "$0")/.."
started=$SECONDS
budget=${LONGDOC_GPU_BUDGET_S:-450}
python=${PYTHON:-python3}
device=cuda quick=() steps=() results=benchmarks/results scale=1
while [ $# -gt 0 ]; do
  case $1 in
    --fake-device) device=cpu-as-cuda quick=(--quick) steps=(--steps 2) scale=4 ;;
    --results) results=$2; shift ;;
    *) echo ".gpu/run.sh: unknown option $1 (use --fake-device, --results DIR)" >&2; exit 2 ;;
  esac
  shift
done
scale=${LONGDOC_GPU_LIMIT_SCALE:-$scale}
budget=$((budget * scale))
out=${OUT:-$results}
mkdir -p "$results" "$out"
log=$out/gpu-run.log
: > "$log"
say() { echo "$*" | tee -a "$log"; }

if compgen -G ".whl/*.whl" > /dev/null; then
  site=$(mktemp -d /tmp/longdoc-site.XXXX)
  say "=== $(date -u +%H:%M:%S) installing $(ls .whl/*.whl | wc -l) wheels from .whl/ into $site"
  timeout 90 "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
    .whl/*.whl 2>&1 | tee -a "$log"
  export PYTHONPATH="$site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
missing=$("$python" - <<'PY'
import importlib.util
need = ("torch", "transformers", "sentence_transformers", "pyterrier", "ir_measures", "scipy", "pytest")
print(" ".join(n for n in need if importlib.util.find_spec(n) is None))
PY
)
if [ -n "$missing" ]; then
  say ".gpu/run.sh: missing Python packages: $missing (bash .gpu/wheels.sh writes them to .whl/; carry .whl)"
  exit 2
fi
"$python" - <<'PY' 2>&1 | tee -a "$log"
import importlib.metadata as m


def version(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:  # datasets, say: the CrossEncoderTrainer's rows are then skipped
        return "missing"


print("versions:", ", ".join(f"{n} {version(n)}" for n in ("torch", "transformers", "sentence-transformers",
                                                          "pyterrier", "datasets")))
PY
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$log"

status=0
marker=$(mktemp)
step() {  # step SECONDS COMMAND...: runs it within its limit and what is left of the budget; packs the results
  local left=$((budget - (SECONDS - started))) own=$(($1 * scale))
  local limit=$(( own < left ? own : left ))
  if [ "$limit" -lt 20 ]; then
    say "=== skipped (${left} s left of the ${budget} s budget): ${*:2}"; status=1; return 0
  fi
  say "=== $(date -u +%H:%M:%S) (limit ${limit} s) ${*:2}"
  timeout -k 5 "$limit" "${@:2}" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then say "=== exit status $rc$([ "$rc" -eq 124 ] && echo ' (time limit)')"; status=1; fi
  find "$results" -maxdepth 1 -type f -newer "$marker" ! -name gpu-run.log ! -name gpu-results.tgz -print0 \
    | tar czf "$out/gpu-results.tgz" --null -T - 2>/dev/null
  return 0
}
step 130 "$python" benchmarks/gpu_check.py --device "$device" "${quick[@]}" --results "$results"
step 100 "$python" benchmarks/training.py --device "$device" "${quick[@]}" "${steps[@]}" --random-weights --rows T1,T3,T5 \
  --queries-per-step 64 --threads 0 --results "$results"
step 70 "$python" benchmarks/training.py --device "$device" "${quick[@]}" "${steps[@]}" --random-weights --rows T1,T3 \
  --queries-per-step 64 --threads 0 --dtype bf16 --results "$results"
step 90 "$python" benchmarks/run.py --device "$device" "${quick[@]}" --random-weights --rows 1,9,8,12 \
  --batch-size 256 --threads 0 --results "$results"
step 60 env LONGDOC_TESTS_ON_CUDA=1 "$python" -m pytest -q -p no:cacheprovider tests/engine/test_cuda.py
say "=== done in $((SECONDS - started)) s of the ${budget} s budget; exit status $status"
rm -f "$marker"
exit $status
