#!/usr/bin/env bash
# One run on a GPU machine, within a time budget (default 540 s, so the whole
# call stays under 10 minutes): build (or use a carried build/), devices, GPU
# tests, the benchmark suite measured one problem at a time, torch.matmul on
# the problems measured, ncu on one recommended kernel, and a summary last.
#   scripts/gpu_validate.sh OUT_DIR [all|tests|tests2|bench]
#     all    GPU tests once, then the benchmark with the time left
#     tests2 the GPU tests twice in a row, each with an empty tiletune cache
#            (the repeat-compile check of issue 11; about 6 minutes)
#   GPU_VALIDATE_BUDGET_S (540), GEMM_PROBLEM_LIMIT_S (90: one suite problem)
# Every step has its own time limit and writes its log under OUT_DIR as it runs;
# OUT_DIR/steps.log has one line per step (exit code, 124 = stopped at its
# limit, seconds), so a run cut short still says how far it got.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_validate.sh OUT_DIR [all|tests|tests2|bench]}
phase=${2:-all}
mkdir -p "$out" "$out/gemm"
bin=build/tiletune
suite=profiles/suites/gpu-benchmark.json
export PYTHONUNBUFFERED=1
deadline=$((SECONDS + ${GPU_VALIDATE_BUDGET_S:-540}))
problem_limit=${GEMM_PROBLEM_LIMIT_S:-90}

say() { echo "[$(printf '%4d' "$SECONDS") s] $*" | tee -a "$out/steps.log" >&2; }

# step NAME LIMIT_S LOG CMD...: CMD under `timeout`, at most LIMIT_S and never past
# the deadline, stdout and stderr into LOG as they come. Returns CMD's exit code.
step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local left=$((deadline - SECONDS))
  ((left < limit)) && limit=$left
  if ((limit < 5)); then
    say "$name: skipped, the budget is spent"
    return 124
  fi
  local t0=$SECONDS rc=0
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1 || rc=$?
  say "$name: exit $rc$( ((rc == 124 || rc == 137)) && echo " (stopped at its ${limit} s limit)") in $((SECONDS - t0)) s, log $log"
  return $rc
}

if [ ! -x "$bin" ]; then
  step build 300 "$out/build.log" bash -c \
    'cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build --parallel' ||
    { tail -20 "$out/build.log"; exit 1; }
fi
step devices 30 "$out/devices.txt" "$bin" devices && cat "$out/devices.txt"
step nvidia-smi 20 "$out/nvidia-smi.csv" nvidia-smi \
  --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv

# The test binaries find the (possibly relocated) tiletune through TILETUNE_BIN; a fresh
# TILETUNE_TEST_SCRATCH is an empty tiletune cache.
gpu_tests() {
  step "gpu tests ($1)" 240 "$out/gpu_tests$1.log" \
    env TILETUNE_BIN="$PWD/$bin" TILETUNE_TEST_SCRATCH="$(mktemp -d)" build/tests/gpu_tests
  local rc=$?
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests ran" "$out/gpu_tests$1.log" >&2
  return $rc
}
case "$phase" in
  all | tests) gpu_tests "" ;;
  tests2) gpu_tests "-1"; gpu_tests "-2" ;;
esac

if [ "$phase" = all ] || [ "$phase" = bench ]; then
  # One problem at a time, each with its own limit: a slow problem costs only itself,
  # and every finished one is on disk if the run is cut short.
  n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['problems']))" "$suite")
  reserve=150  # torch, ncu and the summary after the loop
  for ((i = 0; i < n; i++)); do
    if ((deadline - SECONDS - reserve < 20)); then
      say "gemm: stopping before problem $((i + 1))/$n, the budget is spent"
      break
    fi
    mapfile -t args < <(python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))['problems'][int(sys.argv[2])]
print(p['name'])
for k in ('m', 'n', 'k', 'dtype', 'layout', 'batch'):
    if k in p: print('--' + k); print(p[k])" "$suite" "$i")
    name=${args[0]}
    limit=$problem_limit
    ((deadline - SECONDS - reserve < limit)) && limit=$((deadline - SECONDS - reserve))
    step "gemm $((i + 1))/$n $name" "$limit" "$out/gemm/$(printf %02d "$i").txt" \
      "$bin" gemm "${args[@]:1}" --time-cap-ms 300 --target-spread 0.02 --out "$out/gemm/$(printf %02d "$i").json"
  done
  # The finished problems as one suite result and one suite (for torch), in suite order.
  python3 - "$suite" "$out" <<'PY'
import json, os, sys
suite, out = json.load(open(sys.argv[1])), sys.argv[2]
merged, done = None, []
for i, p in enumerate(suite["problems"]):
    f = os.path.join(out, "gemm", f"{i:02d}.json")
    if not os.path.exists(f):
        continue
    r = json.load(open(f))
    if merged is None:
        merged = {k: v for k, v in r.items() if k in ("schema", "tool", "device", "mode", "compile")}
        merged["schema"], merged["results"] = "tiletune.gemm-suite/1", []
        merged["suite"] = {"name": suite.get("name", ""), "file": sys.argv[1]}
    body = {k: v for k, v in r.items() if k not in ("schema", "tool", "device")}
    body["name"] = p["name"]
    merged["results"].append(body)
    done.append(p)
if merged:
    json.dump(merged, open(os.path.join(out, "gemm-benchmark.json"), "w"), indent=2)
json.dump({"schema": "tiletune.suite/1", "name": "measured", "problems": done},
          open(os.path.join(out, "suite-measured.json"), "w"), indent=2)
print(f"{len(done)} of {len(suite['problems'])} problems measured", file=sys.stderr)
PY
  if [ -s "$out/gemm-benchmark.json" ]; then
    step torch 90 "$out/torch.txt" python3 scripts/torch_matmul.py "$out/suite-measured.json" "$out/torch.json"
    # ncu on the first problem's recommended kernel: its duration and DRAM bytes.
    read -r rec m n k dt lay < <(python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['results'][0]; p = r['problem']
print(r['recommendation']['id'], p['m'], p['n'], p['k'], p['dtype'], p['layout'])" "$out/gemm-benchmark.json" 2>/dev/null)
    if command -v ncu >/dev/null && [ -n "${rec:-}" ]; then
      step ncu 90 "$out/ncu-run.log" ncu --clock-control none --target-processes all -k regex:tiletune_gemm \
        --launch-skip 3 --launch-count 1 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        --csv --log-file "$out/ncu.csv" "$bin" gemm --m "$m" --n "$n" --k "$k" --dtype "$dt" --layout "$lay" \
        --only "$rec" --json --quiet
    fi
    torch_json=$out/torch.json
    [ -s "$torch_json" ] || { torch_json=$out/torch-none.json; echo '{"results": []}' >"$torch_json"; }
    step summary 30 "$out/summary.txt" python3 scripts/summarize_gpu_run.py "$out/gemm-benchmark.json" "$torch_json" "$out"
    cat "$out/summary.txt"
  fi
fi
say "done: $out/steps.log"
