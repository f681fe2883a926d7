#!/usr/bin/env bash
# One run on a GPU machine: build (or use a carried build/), GPU tests,
# devices, the benchmark suite measured by tiletune, torch.matmul on the same
# shapes, ncu on one recommended kernel, and a summary printed last.
#   scripts/gpu_validate.sh OUT_DIR [all|tests|bench]
# Everything lands in OUT_DIR: logs, gemm JSON, torch JSON, ncu report.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_validate.sh OUT_DIR [all|tests|bench]}
phase=${2:-all}
mkdir -p "$out"
bin=build/tiletune
export PYTHONUNBUFFERED=1

if [ ! -x "$bin" ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
    cmake --build build --parallel >>"$out/build.log" 2>&1 || { echo "build failed: $out/build.log"; tail -20 "$out/build.log"; exit 1; }
fi
"$bin" devices | tee "$out/devices.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >"$out/nvidia-smi.csv" 2>&1

if [ "$phase" = all ] || [ "$phase" = tests ]; then
  # The test binaries find the (possibly relocated) tiletune through TILETUNE_BIN.
  TILETUNE_BIN=$PWD/$bin TILETUNE_TEST_SCRATCH=$(mktemp -d) build/tests/gpu_tests 2>&1 | tee "$out/gpu_tests.log" | tail -30
fi

if [ "$phase" = all ] || [ "$phase" = bench ]; then
  "$bin" gemm --suite profiles/suites/gpu-benchmark.json --time-cap-ms 300 --target-spread 0.02 \
    --out "$out/gemm-benchmark.json" 2>&1 | tee "$out/gemm-benchmark.txt"
  python3 scripts/torch_matmul.py profiles/suites/gpu-benchmark.json "$out/torch.json" 2>&1 | tee "$out/torch.txt"
  # ncu on the recommended kernel of 4096^3 bf16 nt: its duration and DRAM bytes.
  rec=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(r['recommendation']['id'])" "$out/gemm-benchmark.json")
  if command -v ncu >/dev/null; then
    ncu --clock-control none --target-processes all -k regex:tiletune_gemm --launch-skip 3 --launch-count 1 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv --log-file "$out/ncu.csv" \
      "$bin" gemm --m 4096 --n 4096 --k 4096 --dtype bf16 --layout nt --only "$rec" --json --quiet >"$out/ncu-run.json"
  fi
  python3 scripts/summarize_gpu_run.py "$out/gemm-benchmark.json" "$out/torch.json" "$out"
fi
