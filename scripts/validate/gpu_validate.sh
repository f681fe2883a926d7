#!/usr/bin/env bash
# One run on a GPU machine, within a time budget (default 540 s, so the whole
# call stays under 10 minutes): build (or use a carried build/), devices, a
# smoke step, a correctness sweep, the benchmark suite measured one problem at
# a time, torch.matmul on the problems measured, ncu on one recommended kernel,
# the GPU tests, and a summary last.
#   scripts/validate/gpu_validate.sh OUT_DIR [PHASE...]
#     smoke  one variant per family (and per operand major for wgmma) on small
#            odd shapes, each in seconds, then compute-sanitizer memcheck and
#            synccheck on one variant per family and racecheck on a wgmma
#            variant; a family that fails here is left out of every later
#            step (OUT_DIR/smoke.tsv, OUT_DIR/excluded_families), so a hanging
#            family costs seconds, not the run. Every phase list starts with it.
#     verify every variant of every family checked (--verify-only) on the odd
#            shapes of KERNEL_REVIEW (127x129x264 batch 3, alpha 1.5, beta 0.5)
#     bench  the benchmark suite (GPU_VALIDATE_SUITE, default
#            profiles/suites/gpu-benchmark.json; GPU_VALIDATE_PROBLEMS: its indices, default
#            all), torch.matmul on the same problems, ncu, summary (its rows for
#            the results table of docs/benchmarks.md in OUT_DIR/results_table.md), and
#            issue 39's leave-one-out figures of the offline pick on this run
#            (db calibrate: OUT_DIR/leave-one-out.txt and .json)
#     tests  the repeat-compile check, then the GPU tests once; gputests: the tests alone; tests2: twice,
#            each with an empty tiletune cache
#     profile ncu --set full on one wgmma variant of 4096^3 bf16 nt (PROFILE_VARIANT, default
#            the fastest measured on an H100; PROFILE_SHAPE="M N K" another shape), then the main sections
#            of cuBLASLt's kernel on the same problem (its name, grid, L2 and DRAM beside the variant's)
#     decodencu ncu (speed of light, occupancy, warp states, scheduler, memory) of the decode picks of
#            the 2026-12-04 H200 run (swap-AB with evict-first at 16x4096x4096, 1.10x cuBLASLt, and at
#            64x4096x4096, 0.95x): what holds a 14 us weight read at half of HBM; then the mma decode
#            tiles at 128x4096x4096 with 8 and 12 warps resident per SM (docs/model.md: the model puts
#            the 8-warp tiles 18-25% fast there and cannot say whether loads' issue or barrier waits hold them)
#     tuning scripts/bench/bench_tuning.sh on its first and fourth shapes, halving only
#     probe  the register-only mma.sync (HMMA.16816) throughput probe, scripts/bench/hmma_probe.cu
#            ($build/hmma_probe when carried, else built here with nvcc); and the premise of the
#            mma family's tf32 rounding, that mma.sync ignores a tf32 operand's low 13 bits
#            (scripts/bench/tf32_low_bits_probe.cu); and the CUPTI durations of kernels that do no
#            work (scripts/bench/launch_floor_probe.cu), what the model's launch_overhead_us stands for
#     twins  the 4096^3 and 8192^3 bf16 picks with four stages timed back to back with their
#            three-stage twins (the loads' latency chain of issue 39: three measured 1.14x four's),
#            and their g8m/g8n raster twins, after the search's warm-up and in its two mirrored
#            passes: each variant's sm_clock_mhz says whether the four ran at one clock
#     batch  measured `tiletune batch` (gpt2, tinyllama-1.1b) and real training
#            steps beside tiletune's predictions (scripts/validate/validate_batch.py --suite)
#     model  `gemm --model` on GPU_VALIDATE_MODELS (NAME:TOKENS:PHASE ..., default a Llama-3-8B
#            decode step of 16 tokens and a TinyLlama training step of 8192 tokens)
#     grouped grouped GEMM: uneven masked groups verified, then Mixtral's experts (8, 4096 tokens, top-2,
#            uniform and zipf:1.2) and a DeepSeek-shaped masked decode (256 experts, 64 tokens, top-8)
#            timed against the loop of cuBLASLt GEMMs per group
#     flushread the decode shapes (16 and 128 rows of 4096x4096 bf16, halving search) timed with the L2
#            flushed by writes and by reads (gemm --l2-flush write|read), back to back: whether the
#            memset flush's dirty lines cost the decode kernels and cuBLASLt their DRAM bandwidth, and
#            evict-first its 8-17% (docs/model.md, "The worst left there"); the GPU test
#            gpu.l2_flush_modes_time_the_same_kernel_and_say_which prints one mma tile's three timings
#     efbbytes ncu's DRAM bytes read and written, and the time, of the 16- and 128-row decode tiles with and
#            without evict-first and split in pairs, after each flush: what the write flush's write-backs
#            cost each, the measured basis for the model's evict-first and split terms (issue 39)
#     decoderead the decode suite (halving) with the L2 flushed by reads (--l2-flush read): what the
#            decode picks and their ratios to cuBLASLt are with an L2 of clean lines, as before a decode
#            step (on the H100, 2026-12-05, the write flush's 1.09x and 1.03x read 0.95x and 0.885x)
#     decode the decode tiles (swap-AB, evict-first, split-K in a cluster) and the TMA-store epilogue
#            (decodeverify: the verification alone; decodesan: the sanitizers alone)
#            (200x136x1280 batch 3, beta 0; 5x1000x776 batch 2, beta 0.5: C loaded by TMA): shapes verified,
#            compute-sanitizer on a split-K swap-AB variant, the decode suite timed exhaustively
#     fp8    fp8 (issue 35), first run: every e4m3/e5m2 variant verified on odd shapes with each
#            scaling (tensor, rowwise, block; beta 0.5; a 16-row rowwise decode: swap-AB's scales; mixed
#            e4m3_e5m2 and e5m2_e4m3;
#            grouped with rowwise and block scales; fast accumulation at K 16384 against its own bound),
#            compute-sanitizer on a block-scaled
#            variant, then 4096^3 and 8192^3 e4m3 (tensor) and DeepSeek-V3's 4096x7168x16384 (block)
#            timed against cuBLASLt's fp8 matmul
#     fp8mma the mma family's fp8 (mma.sync m16n8k32, planned for Ada and sm_120), first run on a
#            Hopper with TILETUNE_MMA_FP8_ON_SM90=1 (the same PTX): three or four variants, the four fp8 types,
#            verified on odd shapes (partial tiles, unaligned rows, batch 2, beta 0.5, split-K), and
#            memcheck and racecheck on one; then on K-major copies (_kc: nn, tn, tt, an fp8 training
#            step's backward layouts) the same, and with rowwise scales (_rw: nt, split-K, tn on copies)
#            and memcheck; no figure (Hopper's fp8 is wgmma's)
#     kc     K-major copies (_kc: a transposing pre-pass, then the nt kernel; issues 35 and 38), first
#            run: tf32 nn/tn/tt and e4m3 nn/tn on odd shapes verified (every variant, beta 0.5), memcheck
#            and racecheck on one, then tf32 nn 4096^3 (goal >= 0.80x cuBLASLt) and e4m3 nn 4096^3 timed
#     padded padded copies (_kc for rows off 16 bytes: the pre-pass pads K-major rows and transposes
#            MN-major ones, 16-bit elements too), first run: bf16 nt K 167, f16 nn N 201, tf32 nt K 166,
#            e4m3 nt K 407 verified on every variant (both families: mma's element-wise twins too),
#            memcheck on one of each family, then 4096x768x50257 bf16 (GPT-2's lm_head backward)
#            timed against cuBLASLt (goal: within 1.3x of the K 50264 problem's time)
#     racecheck racecheck on the two kernels it reported on 2026-12-04 (split-K in a cluster with swap-AB,
#            fp8 block scales by TMA), the release build and the one where every consumer thread makes the
#            mbarrier arrivals one thread makes (--kernel-debug racecheck): hazards only in the first are
#            racecheck's limit (it credits a release to the arriving thread's own accesses), not races
#     all    = smoke verify bench tests
#     owed   = what the H100 session of 2026-12-05 left owed (profiles/measured/h100-2026-12-05), in
#            the order of its worth: the mma family's fp8 again (fp8mma: rowwise scales on K-major
#            copies, tn, whose verification's host copy was fixed since), ncu's DRAM bytes of the decode
#            tiles with and without evict-first under each flush (efbbytes), the decode suite under the
#            read flush (decoderead), the tuning times with the suite cold (tuning: cut by the budget),
#            the flush comparison (flushread) and the probes on an H200, then the benchmark suite
#   GPU_VALIDATE_BUDGET_S (540), GEMM_PROBLEM_LIMIT_S (90: one suite problem),
#   GPU_VALIDATE_TARBALL (a .tgz of OUT_DIR written on exit, even when stopped: the device tool
#   brings back a few files of a folder with many, and the next call starts with an empty $OUT;
#   put OUT_DIR outside $OUT and the tarball in it),
#   GPU_VALIDATE_BATCH_ONLY (validate_batch.py --only: models of its suite), GPU_VALIDATE_BATCH_GPU
#   (its --gpu preset), GPU_VALIDATE_BATCH_LIMIT_S (200),
#   GPU_TESTS_FILTER (a --gtest_filter for the tests phases; default all),
#   GPU_VALIDATE_TUNING_SUITE (the suite timed cold in the tuning phase; default the bench suite)
# Every step has its own time limit and writes its log under OUT_DIR as it runs;
# OUT_DIR/steps.log has one line per step (exit code, 124 = stopped at its
# limit, seconds), so a run cut short still says how far it got.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
out=${1:?usage: scripts/validate/gpu_validate.sh OUT_DIR [smoke|verify|bench|tests|tests2|all]...}
shift
phases=" ${*:-all} "
[[ $phases == *" all "* ]] && phases=" smoke verify bench tests "
if [[ $phases == *" owed "* ]]; then
  phases=" smoke fp8mma efbbytes decoderead tuning flushread probe bench "
  # On an H100 the flush comparison and the probes ran on 2026-12-05, the benchmark suite too.
  if nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H100; then
    phases=" smoke fp8mma efbbytes decoderead tuning "
  fi
  : "${GPU_TESTS_FILTER:=-gpu.every_variant_is_correct_on_odd_shapes:gpu.wgmma_variants_are_correct_on_partial_tiles}"
  : "${PROFILE_SHAPE:=4096 768 50264}" "${PROFILE_VARIANT:=wgmma_128x192x64_c2_s4_cl2x1_g8m}"
fi
[[ $phases == *" smoke "* ]] || phases=" smoke$phases"
want() { [[ $phases == *" $1 "* ]]; }
mkdir -p "$out" "$out/gemm"
if [ -n "${GPU_VALIDATE_TARBALL:-}" ]; then
  pack() { tar czf "$GPU_VALIDATE_TARBALL" -C "$(dirname "$out")" "$(basename "$out")" 2>/dev/null; }
  trap pack EXIT
  trap 'exit 143' TERM INT
fi
build=${BUILD_DIR:-build}  # a carried build may be a slim copy: tiletune and tests/gpu_tests
bin=$build/tiletune
suite=${GPU_VALIDATE_SUITE:-profiles/suites/gpu-benchmark.json}
export PYTHONUNBUFFERED=1
deadline=$((SECONDS + ${GPU_VALIDATE_BUDGET_S:-540}))
problem_limit=${GEMM_PROBLEM_LIMIT_S:-90}
# compute-sanitizer on the worker process too (the kernels run there), its findings in the exit code
san=(compute-sanitizer --target-processes all --error-exitcode 9)

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
    "cmake -S . -B '$build' -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build '$build' --parallel" ||
    { tail -20 "$out/build.log"; exit 1; }
fi
step devices 30 "$out/devices.txt" "$bin" devices && cat "$out/devices.txt"
step nvidia-smi 20 "$out/nvidia-smi.csv" nvidia-smi \
  --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv

# --- smoke: one variant per family in seconds; a failing family is left out later ---
# Each line: dtype layout m n k batch variant. The wgmma lines cover both
# consumer counts, K-major and MN-major operands (nt, nn, tn) and tf32; the _sk
# lines stream-K with fewer tiles than SMs (ranges across tiles, deep K with a
# partial k-tile, batch) and after whole waves (4096^3: 512 tiles on 132 SMs).
smoke_cases=(
  "f32 nn 136 200 72 3 simt_64x32x16_t8x4_v4"
  "bf16 nt 136 200 72 3 mma_64x64x32_w2x2_s3"
  "bf16 nt 20 320 5000 1 mma_64x64x64_w2x2_s3_k8"
  "bf16 nt 136 200 72 3 wgmma_128x128x64_c1_s3_cl1x1_g8m"
  "bf16 nt 136 200 72 3 wgmma_128x256x64_c2_s4_cl1x1_g8m"
  "bf16 nn 136 200 72 3 wgmma_128x128x64_c2_s3_cl1x1_g8m"
  "f16 tn 136 200 72 3 wgmma_64x256x64_c1_s3_cl1x1_g8m"
  "tf32 nt 136 200 72 3 wgmma_128x128x32_c1_s3_cl1x1_g8m"
  "bf16 nt 20 320 5000 1 wgmma_128x128x64_c2_s4_cl1x1_g8m_sk"
  "bf16 nn 136 200 1000 3 wgmma_128x128x64_c2_s4_cl1x1_g8m_sk"
  "f16 tn 136 200 1000 3 wgmma_64x256x64_c1_s3_cl1x1_g8m_sk"
  "tf32 nt 20 320 5000 1 wgmma_128x128x32_c1_s3_cl1x1_g8m_sk"
  "bf16 nt 4096 4096 4096 1 wgmma_128x256x64_c2_s4_cl1x1_g8m_sk"
  "bf16 nt 136 200 72 3 wgmma_64x256x64_c1_s5_cl1x1_g8m_tmas"
  "bf16 nt 136 200 72 3 wgmma_64x256x64_c2_s4_cl1x1_g8m_tmas_pp"
)
: >"$out/excluded_families"
printf 'family\tcase\tstatus\tmax_rel_error\treason\n' >"$out/smoke.tsv"
for c in "${smoke_cases[@]}"; do
  read -r dt lay m n k b id <<<"$c"
  fam=${id%%_*}
  [[ $id == *_sk ]] && fam=stream_k  # a failing mechanism is left out, not its whole family
  [[ $id == *_tmas* ]] && fam=tma_store  # recorded; tiletune itself suspends a faulting mechanism
  log="$out/smoke-$id-$dt-$lay.json"
  step "smoke $id $dt $lay ${m}x${n}x${k}" 45 "$log.err" "$bin" gemm --m "$m" --n "$n" --k "$k" --batch "$b" \
    --dtype "$dt" --layout "$lay" --alpha 1.5 --beta 0.5 --only "$id" --verify-only --variant-timeout 8 \
    --no-db --json --quiet --out "$log"
  line=$(python3 -c "
import json, sys
try:
    v = json.load(open(sys.argv[1]))['variants'][0]
    print(v['status'], v.get('max_rel_error'), v.get('reason', '').replace('\t', ' ')[:300], sep='\t')
except Exception as e:
    print('no_result', '-', 'no JSON: ' + str(e)[:200], sep='\t')" "$log")
  printf '%s\t%s\t%s\n' "$fam" "$c" "$line" >>"$out/smoke.tsv"
  # A variant that does not fit (resource_limit: spills, shared memory) says nothing of its
  # mechanism's correctness; anything else but ok leaves the mechanism out.
  [[ $line == ok* || $line == resource_limit* ]] || echo "$fam" >>"$out/excluded_families"
done
sort -u -o "$out/excluded_families" "$out/excluded_families"
cat "$out/smoke.tsv" >&2
excluded=$(tr '\n' ' ' <"$out/excluded_families")
[ -n "$excluded" ] && say "smoke: left out of every later step: $excluded"
# compute-sanitizer on each family's first smoke case: memcheck (out-of-bounds
# and misaligned accesses) and synccheck (barriers); racecheck (shared-memory
# hazards) on a two-consumer wgmma variant. Kernels are built with line info
# (--kernel-debug lineinfo) so a report names the template's line.
if command -v compute-sanitizer >/dev/null && [ -z "${GPU_VALIDATE_NO_SANITIZER:-}" ]; then
  declare -A sanitized=()
  for c in "${smoke_cases[@]}" "bf16 nt 136 200 72 3 wgmma_128x128x64_c2_s3_cl1x1_g8m racecheck" \
    "bf16 nt 20 320 5000 1 wgmma_128x128x64_c2_s4_cl1x1_g8m_sk memcheck racecheck synccheck"; do
    read -r dt lay m n k b id tools <<<"$c"
    fam=${id%%_*}
    [[ " $excluded " == *" $fam "* ]] && continue
    if [ -z "${tools:-}" ]; then
      [ -n "${sanitized[$fam]:-}" ] && continue
      sanitized[$fam]=1
      tools="memcheck synccheck"
    fi
    for tool in $tools; do
      log="$out/sanitizer-$tool-$id.txt"
      step "compute-sanitizer $tool $id" 90 "$log" compute-sanitizer --tool "$tool" --target-processes all \
        --error-exitcode 9 "$bin" gemm --m "$m" --n "$n" --k "$k" --batch "$b" --dtype "$dt" --layout "$lay" \
        --alpha 1.5 --beta 0.5 --only "$id" --verify-only --no-db --quiet --variant-timeout 60 --kernel-debug lineinfo
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Error|error" "$log" | head -5 >&2
    done
  done
fi

# only_args GEMM_ARGS...: prints "--only ID,ID,..." (the ok variants of the
# families not excluded) when the smoke step excluded a family, else nothing.
only_args() {
  [ -z "$excluded" ] && return 0
  "$bin" gemm "$@" --dry-run --json --quiet --no-db 2>/dev/null | python3 -c "
import json, sys
bad = set(sys.argv[1].split())
try:
    cut = sys.argv[2] == '1'  # also those only the model's cut left out ('not ranked: ...')
    ids = [v['id'] for v in json.load(sys.stdin)['variants']
           if (v['status'] == 'ok' or (cut and v.get('reason', '').startswith('not ranked'))) and v['family'] not in bad
           and not ('stream_k' in bad and v['id'].endswith('_sk'))]
except Exception:
    sys.exit()  # the dry run failed: so will the run, which says why
print('--only\n' + ','.join(ids) if ids else '--only\nnone')" "$excluded" "${ONLY_RANK_CUT:-0}"
}

# tally JSON: one line of (family, status) counts of a --verify-only result (a suite's or a
# grouped problem's too), then each variant that is not ok, pruned or resource_limit, with its reason.
tally() {
  python3 - "$1" >&2 <<'PY'
import collections, json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(f"  no JSON: {e}")
variants = j.get("variants") or [v for r in j.get("results", []) for v in r.get("variants", [])]
n = collections.Counter((v["family"], v["status"]) for v in variants)
print("  " + ", ".join(f"{f} {s} {c}" for (f, s), c in sorted(n.items())))
for v in variants:
    if v["status"] not in ("ok", "pruned", "resource_limit"):
        print(f"  {v['id']}: {v['status']}: {v.get('reason', '')[:200]}")
PY
}
# sanitizer_verdict LOG: compute-sanitizer's summary line (and its first report) from LOG.
sanitizer_verdict() {
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$1" | head -2 >&2
  grep -m1 -E "^========= (Invalid|Race|Barrier|Error|Uninitialized|Warning)" "$1" >&2
}

# --- verify: every variant on odd shapes ---
phase_verify() {
  verify_cases=(
    "bf16 nn 127 129 264 3" "bf16 nt 127 129 264 3" "bf16 tn 127 129 264 3" "bf16 tt 127 129 264 3"
    "tf32 nt 127 129 264 3" "f16 nn 136 200 72 3" "bf16 tt 136 200 72 3" "f32 tn 127 129 264 3"
    "bf16 nt 20 320 5000 1" "bf16 nn 136 200 1000 3" "f16 tn 136 200 1000 3" "tf32 nt 20 320 5000 1"
    "bf16 nt 1000 1000 3000 1"
  )
  for c in "${verify_cases[@]}"; do
    read -r dt lay m n k b <<<"$c"
    args=(--m "$m" --n "$n" --k "$k" --batch "$b" --dtype "$dt" --layout "$lay" --alpha 1.5 --beta 0.5)
    mapfile -t only < <(only_args "${args[@]}")
    name="verify-$dt-$lay-${m}x${n}x${k}"
    step "$name" 90 "$out/$name.err" "$bin" gemm "${args[@]}" "${only[@]}" --verify-only --variant-timeout 10 \
      --no-db --json --quiet --out "$out/$name.json"
    tally "$out/$name.json"
  done
}

# --- bench: the suite, one problem at a time, torch.matmul beside it ---
phase_bench() {
  # The card's clocks, power and throttle reasons twice a second while it works.
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 500 >"$out/smi-trace.csv" 2>/dev/null &
  smi_pid=$!
  n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['problems']))" "$suite")
  indices=${GPU_VALIDATE_PROBLEMS:-$(seq 0 $((n - 1)))}
  reserve=${GPU_VALIDATE_RESERVE_S:-150}  # torch, ncu and the summary after the loop (and the tests)
  for i in $indices; do
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
    mapfile -t only < <(only_args "${args[@]:1}")
    limit=$problem_limit
    ((deadline - SECONDS - reserve < limit)) && limit=$((deadline - SECONDS - reserve))
    step "gemm $((i + 1))/$n $name" "$limit" "$out/gemm/$(printf %02d "$i").txt" \
      "$bin" gemm "${args[@]:1}" "${only[@]}" --variant-timeout 10 --time-cap-ms 300 --target-spread 0.02 \
      --no-db --out "$out/gemm/$(printf %02d "$i").json"
  done
  # The mma family alone on the first problem: its own goal (issue 16), beside wgmma.
  if ((deadline - SECONDS - reserve > 30)) && [[ $excluded != *mma* ]]; then
    mapfile -t args < <(python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))['problems'][0]
for k in ('m', 'n', 'k', 'dtype', 'layout'): print('--' + k); print(p[k])" "$suite")
    # On Hopper the model's cut leaves every mma variant out of a search beside wgmma (2026-12-04: "--only none")
    mma_only=$(excluded="$excluded wgmma simt" ONLY_RANK_CUT=1 only_args "${args[@]}" | tail -1)
    step "gemm mma family alone, problem 1" 60 "$out/gemm/mma-only.txt" "$bin" gemm "${args[@]}" --only "$mma_only" \
      --variant-timeout 10 --time-cap-ms 300 --target-spread 0.02 --no-db --out "$out/gemm/mma-only.json"
  fi
  kill "$smi_pid" 2>/dev/null
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
    # The suite result's own fields: which problems ran, and the searches' wall time.
    names = [p["name"] for p in done]
    merged["not_run"] = [p["name"] for p in suite["problems"] if p["name"] not in names]
    merged["complete"] = not merged["not_run"]
    merged["wall_s"] = sum(r.get("search", {}).get("wall_ms", 0) for r in merged["results"]) / 1000
    json.dump(merged, open(os.path.join(out, "gemm-benchmark.json"), "w"), indent=2)
json.dump({"schema": "tiletune.suite/1", "name": "measured", "problems": done},
          open(os.path.join(out, "suite-measured.json"), "w"), indent=2)
print(f"{len(done)} of {len(suite['problems'])} problems measured", file=sys.stderr)
PY
  if [ -s "$out/gemm-benchmark.json" ]; then
    step torch 90 "$out/torch.txt" python3 scripts/validate/torch_matmul.py "$out/suite-measured.json" "$out/torch.json"
    # ncu on the first problem's recommended kernel: its duration and DRAM bytes.
    read -r rec m n k dt lay < <(python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['results'][0]; p = r['problem']
print(r['recommendation']['id'], p['m'], p['n'], p['k'], p['dtype'], p['layout'])" "$out/gemm-benchmark.json" 2>/dev/null)
    if command -v ncu >/dev/null && [ -n "${rec:-}" ] && [ -z "${GPU_VALIDATE_NO_NCU:-}" ]; then
      step ncu 90 "$out/ncu-run.log" ncu --clock-control none --target-processes all -k regex:tiletune_gemm \
        --launch-skip 3 --launch-count 1 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        --csv --log-file "$out/ncu.csv" "$bin" gemm --m "$m" --n "$n" --k "$k" --dtype "$dt" --layout "$lay" \
        --only "$rec" --json --quiet --no-db
    fi
    torch_json=$out/torch.json
    [ -s "$torch_json" ] || { torch_json=$out/torch-none.json; echo '{"results": []}' >"$torch_json"; }
    step summary 30 "$out/summary.txt" python3 scripts/validate/summarize_gpu_run.py "$out/gemm-benchmark.json" "$torch_json" "$out"
    # Issue 39's figures on this run (CPU only, seconds): each problem left out of the model's fit,
    # how far the offline pick's predicted time is from its measured one and how much slower it
    # measured than the best, per problem and as medians (OUT_DIR/leave-one-out.txt and .json).
    preset=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['device'].get('preset') or '')" \
      "$out/gemm-benchmark.json" 2>/dev/null)
    if [ -n "$preset" ]; then
      rm -f "$out/leave-one-out.sqlite3"
      step "db import (leave-one-out)" 30 "$out/leave-one-out-import.txt" \
        "$bin" db import --db "$out/leave-one-out.sqlite3" "$out"/gemm/[0-9][0-9].json
      step "db calibrate (leave-one-out)" 90 "$out/leave-one-out.txt" \
        "$bin" db calibrate --gpu "$preset" --db "$out/leave-one-out.sqlite3" --out "$out/leave-one-out.json"
    fi
  fi
}

# --- tests: the GPU tests; the test binaries find tiletune through TILETUNE_BIN,
# and a fresh TILETUNE_TEST_SCRATCH is an empty tiletune cache. Line-buffered: a
# run stopped at its limit keeps every line written before (2026-12-04 lost 280 s) ---
gpu_tests() {
  step "gpu tests ($1)" 420 "$out/gpu_tests$1.log" \
    env TILETUNE_BIN="$PWD/$bin" TILETUNE_TEST_SCRATCH="$(mktemp -d)" stdbuf -oL -eL "$build/tests/gpu_tests" \
    ${GPU_TESTS_FILTER:+--gtest_filter="$GPU_TESTS_FILTER"}
  local rc=$?
  [ -f "$out/gpu_tests$1.log" ] && grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|^\[  SKIPPED |tests ran" "$out/gpu_tests$1.log" >&2
  return $rc
}
# The repeat-compile check (GPU.md: the driver's compute cache hid ptxas's report):
# the same variants compiled afresh twice in a row must both come out ok.
repeat_compile() {
  local i
  for i in 1 2; do
    step "repeat compile $i" 60 "$out/repeat-compile-$i.json" "$bin" gemm --m 17 --n 33 --k 65 --dtype bf16 \
      --layout nt --verify-only --no-cache --no-db --json --quiet
    [ -s "$out/repeat-compile-$i.json" ] && python3 -c "
import json, sys, collections
j = json.load(open(sys.argv[1]))
print('  ' + str(collections.Counter(v['status'] for v in j['variants'])))" "$out/repeat-compile-$i.json" >&2
  done
}
phase_tests() { repeat_compile; gpu_tests ""; }
phase_gputests() { gpu_tests ""; }  # the GPU tests alone, without the repeat-compile check
phase_tests2() { gpu_tests "-1"; gpu_tests "-2"; }

phase_profile() {
  command -v ncu >/dev/null || { say "profile: no ncu here"; return 0; }
  pv=${PROFILE_VARIANT:-wgmma_128x256x64_c2_s4_cl1x1_g8m}
  read -r pm pn pk <<<"${PROFILE_SHAPE:-4096 4096 4096}"
  step "ncu full $pv" 150 "$out/ncu-full-run.log" ncu --set full --clock-control none --target-processes all \
    -k regex:tiletune_gemm --launch-skip 3 --launch-count 1 -o "$out/ncu-$pv" -f "$bin" gemm --m "$pm" --n "$pn" \
    --k "$pk" --dtype bf16 --layout nt --only "$pv" --no-db --quiet --time-cap-ms 50
  [ -f "$out/ncu-$pv.ncu-rep" ] && ncu --import "$out/ncu-$pv.ncu-rep" --print-summary none >"$out/ncu-$pv.txt" 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Bank Conflicts|Tensor" \
    "$out/ncu-$pv.txt" 2>/dev/null | head -20 >&2
  # cuBLASLt's kernel on the same problem in the same run (tiletune times it as the reference): its
  # name (tile, cluster, stream-K), grid, and where its L2 and DRAM stand beside the variant's. On
  # 2026-12-04 the K 50264 pick was L2-bound at 0.58x cuBLASLt, which must read less from L2.
  step "ncu cuBLASLt beside $pv" 120 "$out/ncu-cublaslt-run.log" ncu --clock-control none --target-processes all \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
    -k regex:'nvjet|xmma|cutlass|sm90_' --launch-skip 2 --launch-count 1 -o "$out/ncu-cublaslt" -f "$bin" gemm \
    --m "$pm" --n "$pn" --k "$pk" --dtype bf16 --layout nt --only "$pv" --no-db --quiet --time-cap-ms 50
  [ -f "$out/ncu-cublaslt.ncu-rep" ] && ncu --import "$out/ncu-cublaslt.ncu-rep" --print-summary none >"$out/ncu-cublaslt.txt" 2>&1
  grep -E "^  [A-Za-z_]|Duration|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Grid Size|Block Size|Cluster|Registers Per|Achieved Occupancy" \
    "$out/ncu-cublaslt.txt" 2>/dev/null | head -20 >&2
}
phase_decodencu() {
  command -v ncu >/dev/null || { say "decodencu: no ncu here"; return 0; }
  # The decode picks of the 2026-12-04 H200 run: 1.10x cuBLASLt at 16 rows, 0.95x at 64 (both ~50% of HBM).
  # Then the mma decode tiles with 8 and 12 warps resident per SM at 128 rows: the model puts the 8-warp
  # tiles 18-25% fast there (issue 39's leave-one-out worst case; docs/model.md).
  for case in "16 wgmma_16x64x64_c1_s8_cl1x1_g8m_swab_efb" "64 wgmma_64x64x64_c1_s8_cl1x1_g8m_swab_efb" \
    "128 mma_128x64x64_w2x2_s4_k4" "128 mma_64x64x64_w2x2_s4_k2"; do
    read -r dm dv <<<"$case"
    step "ncu decode $dv" 120 "$out/ncu-decode-$dv.log" ncu --clock-control none --target-processes all \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
      --section MemoryWorkloadAnalysis --section LaunchStats -k regex:tiletune_gemm --launch-skip 3 --launch-count 1 \
      -o "$out/ncu-decode-$dv" -f "$bin" gemm --m "$dm" --n 4096 --k 4096 --dtype bf16 --layout nt --only "$dv" \
      --no-db --quiet --time-cap-ms 50
    [ -f "$out/ncu-decode-$dv.ncu-rep" ] &&
      ncu --import "$out/ncu-decode-$dv.ncu-rep" --print-summary none >"$out/ncu-decode-$dv.txt" 2>&1
    grep -E "Duration|Achieved Occupancy|Issue Slots Busy|Warp Cycles Per Issued|Stall|DRAM Throughput|Eligible" \
      "$out/ncu-decode-$dv.txt" 2>/dev/null | head -24 >&2
  done
}
phase_tuning() {
  step "bench_tuning (cold and repeat)" 150 "$out/bench_tuning.txt" env BENCH_SHAPES="0 3" BENCH_STRATEGIES=halving \
    BENCH_SUITE=0 scripts/bench/bench_tuning.sh "$bin" "$out/tuning"
  cp profiles/tuning_times_*.json "$out/" 2>/dev/null
  tail -5 "$out/bench_tuning.txt" >&2
  # The whole benchmark suite cold in one run (empty cache and database), default settings.
  suite_dir=$(mktemp -d)
  t0=$SECONDS
  tsuite=${GPU_VALIDATE_TUNING_SUITE:-$suite}
  step "suite cold $(basename "$tsuite")" 240 "$out/suite-cold.txt" "$bin" gemm --suite "$tsuite" --cache-dir "$suite_dir" \
    --db "$suite_dir/tuning.sqlite3" --variant-timeout 10 --out "$out/suite-cold.json" &&
    say "suite cold: $(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['results']))" \
      "$out/suite-cold.json") problems in $((SECONDS - t0)) s"
}

phase_probe() {
  probe=$build/hmma_probe
  if [ ! -x "$probe" ]; then
    probe=$out/hmma_probe
    step "build hmma_probe" 60 "$out/hmma_probe-build.log" nvcc -O3 -arch=native -o "$probe" scripts/bench/hmma_probe.cu
  fi
  step "hmma probe" 60 "$out/hmma_probe.txt" "$probe" "$out/hmma_probe.json"
  tail -3 "$out/hmma_probe.txt" >&2
  step "build tf32_low_bits_probe" 60 "$out/tf32_low_bits_probe-build.log" nvcc -O3 -arch=native \
    -o "$out/tf32_low_bits_probe" scripts/bench/tf32_low_bits_probe.cu
  step "tf32 low bits probe" 30 "$out/tf32_low_bits_probe.txt" "$out/tf32_low_bits_probe" "$out/tf32_low_bits_probe.json"
  cat "$out/tf32_low_bits_probe.txt" >&2
  step "build launch_floor_probe" 60 "$out/launch_floor_probe-build.log" nvcc -O3 -arch=native \
    -o "$out/launch_floor_probe" scripts/bench/launch_floor_probe.cu -lcupti
  step "launch floor probe" 60 "$out/launch_floor_probe.txt" "$out/launch_floor_probe" "$out/launch_floor_probe.json"
  cat "$out/launch_floor_probe.txt" >&2
}
phase_twins() {
  for size in 4096 8192; do
    ids=wgmma_128x256x64_c2_s4_cl1x1_g8m,wgmma_128x256x64_c2_s3_cl1x1_g8m,wgmma_128x256x64_c2_s4_cl1x1_g8n
    ids=$ids,wgmma_128x256x64_c2_s3_cl1x1_g8n
    step "twins $size^3" 120 "$out/twins-$size.log" "$bin" gemm --m "$size" --n "$size" --k "$size" --dtype bf16 \
      --layout nt --only "$ids" --search exhaustive --retune --no-db --json --out "$out/gemm/twins-$size.json"
  done
}
phase_batch() {
  for model in gpt2 tinyllama-1.1b; do
    step "batch measured $model" 60 "$out/batch-$model.txt" "$bin" batch --model "$model" --seq-len 1024 \
      --global-batch 64 --quiet --out "$out/batch-$model.json"
  done
  step "validate_batch --suite" "${GPU_VALIDATE_BATCH_LIMIT_S:-200}" "$out/validate_batch.txt" \
    python3 scripts/validate/validate_batch.py "$out/training_calibration.jsonl" --suite --tiletune "$bin" \
    ${GPU_VALIDATE_BATCH_GPU:+--gpu "$GPU_VALIDATE_BATCH_GPU"} ${GPU_VALIDATE_BATCH_ONLY:+--only $GPU_VALIDATE_BATCH_ONLY}
  tail -16 "$out/validate_batch.txt" >&2
}
phase_model() {
  # `gemm --model`: every distinct GEMM of one step tuned as a suite (default settings,
  # no database), cut at its budget with exit 4 and the finished problems kept.
  for spec in ${GPU_VALIDATE_MODELS:-llama-3-8b:16:decode tinyllama-1.1b:8192:train}; do
    IFS=: read -r mname mtokens mphase <<<"$spec"
    step "gemm --model $mname $mphase $mtokens" 120 "$out/model-$mname-$mphase.txt" "$bin" gemm --model "$mname" \
      --tokens "$mtokens" --phase "$mphase" --no-db --budget-s 100 --out "$out/model-$mname-$mphase.json"
    tail -14 "$out/model-$mname-$mphase.txt" >&2
  done
}
phase_grouped() {
  # Grouped GEMM (issue 36), first run: uneven groups checked (every _grp variant, --verify-only),
  # then the goals' problems timed against the loop of cuBLASLt GEMMs per group (the reference).
  step "grouped verify" 150 "$out/grouped-verify.txt" "$bin" gemm --groups 8 --m-per-group 0,1,127,128,129,0,517,64 \
    --n 1000 --k 776 --group-layout masked --alpha 1.5 --beta 0.5 --verify-only --no-db --variant-timeout 10 \
    --out "$out/grouped-verify.json"
  tally "$out/grouped-verify.json"
  if command -v compute-sanitizer >/dev/null; then
    step "grouped memcheck" 120 "$out/grouped-memcheck.txt" "${san[@]}" --tool memcheck "$bin" gemm --groups 8 \
      --m-per-group 0,1,127,128,129,0,517,64 --n 1000 --k 776 --group-layout masked --beta 0.5 --verify-only \
      --no-db --only wgmma_128x128x64_c2_s5_cl1x1_g8m_grp
    sanitizer_verdict "$out/grouped-memcheck.txt"
  fi
}
phase_groupedtime() {
  for spec in "uniform 14336 4096 contiguous" "zipf:1.2 14336 4096 contiguous" "uniform 4096 14336 contiguous"; do
    read -r routing n k glayout <<<"$spec"
    name="grouped-mixtral-${routing/:/}-${n}x${k}"
    step "gemm $name" 120 "$out/$name.txt" "$bin" gemm --groups 8 --tokens 4096 --top-k 2 --routing "$routing" \
      --n "$n" --k "$k" --group-layout "$glayout" --no-db --budget-s 100 --out "$out/$name.json"
  done
  step "gemm grouped-deepseek-decode" 120 "$out/grouped-deepseek-decode.txt" "$bin" gemm --groups 256 --tokens 64 \
    --top-k 8 --n 4096 --k 7168 --group-layout masked --no-db --budget-s 100 --out "$out/grouped-deepseek-decode.json"
}
phase_decode() {
  # The decode tiles (issue 34): swap-AB, evict-first and split-K in a cluster checked on few rows
  # (--verify-only, every variant), then compute-sanitizer on one split-K swap-AB variant, ping-pong
  # with the TMA-store epilogue and multicast.
  phase_decodeverify
  phase_decodesan
}
phase_decodeverify() {
  for shape in "1 200 136 1 0" "5 1000 776 2 0.5" "64 4096 1024 1 0" "200 136 1280 3 0"; do
    read -r m n k b beta <<<"$shape"
    step "decode verify ${m}x${n}x${k}" 120 "$out/decode-verify-$m.txt" "$bin" gemm --m "$m" --n "$n" --k "$k" \
      --batch "$b" --beta "$beta" --alpha 1.5 --verify-only --no-db --variant-timeout 10 --out "$out/decode-verify-$m.json"
    tally "$out/decode-verify-$m.json"
  done
}
phase_decodesan() {
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck synccheck; do
      step "decode $tool" 120 "$out/decode-$tool.txt" "${san[@]}" --tool "$tool" "$bin" gemm --m 16 --n 512 \
        --k 1024 --verify-only --no-db --only wgmma_16x128x64_c1_s8_cl1x1_g8m_k2_swab
      sanitizer_verdict "$out/decode-$tool.txt"
    done
    # The same with every consumer thread making the arrivals one thread makes (--kernel-debug
    # racecheck): no hazard left says the 2026-12-04 report was racecheck's, not the kernel's.
    step "decode racecheck, every thread arrives" 120 "$out/decode-racecheck-every-thread.txt" "${san[@]}" \
      --tool racecheck "$bin" gemm --m 16 --n 512 --k 1024 --verify-only --no-db --kernel-debug racecheck \
      --only wgmma_16x128x64_c1_s8_cl1x1_g8m_k2_swab
    sanitizer_verdict "$out/decode-racecheck-every-thread.txt"
    # ping-pong consumers with the TMA-store epilogue (C read by TMA: beta 0.5), and multicast
    for c in "memcheck racecheck wgmma_128x128x64_c2_s3_cl1x1_g8m_tmas_pp" \
             "synccheck racecheck wgmma_64x256x64_c1_s4_cl2x1_g8m"; do
      read -r t1 t2 id <<<"$c"
      for tool in $t1 $t2; do
        step "$tool $id" 120 "$out/decode-$tool-$id.txt" "${san[@]}" --tool "$tool" "$bin" gemm --m 200 --n 136 \
          --k 1280 --batch 3 --alpha 1.5 --beta 0.5 --verify-only --no-db --only "$id"
        sanitizer_verdict "$out/decode-$tool-$id.txt"
      done
    done
  fi
}
phase_flushread() {  # the same decode problems timed with the L2 flushed by writes, then by reads
  for m in 16 128; do
    for mode in write read; do
      step "decode ${m}x4096x4096 --l2-flush $mode" 90 "$out/flush-$mode-$m.txt" "$bin" gemm --m "$m" --n 4096 \
        --k 4096 --dtype bf16 --layout nt --no-db --l2-flush "$mode" --out "$out/flush-$mode-$m.json"
    done
  done
  # Each run's pick and cuBLASLt, by flush: the figures the model's decode terms wait on.
  python3 - "$out" <<'PY' | tee "$out/flush-summary.txt" >&2
import json, os, sys
out = sys.argv[1]
for m in (16, 128):
    for mode in ("write", "read"):
        path = os.path.join(out, f"flush-{mode}-{m}.json")
        if not os.path.exists(path):
            print(f"{m}x4096x4096 {mode}: no result"); continue
        r = json.load(open(path)); rec = r.get("recommendation") or {}
        ok = [v for v in r.get("variants", []) if v.get("median_us")]
        efb = [v["median_us"] for v in ok if "_efb" in v["id"]]
        plain = [v["median_us"] for v in ok if "_efb" not in v["id"] and v["id"].startswith("wgmma")]
        print(f"{m}x4096x4096 {mode}: pick {rec.get('id')} {rec.get('median_us')} us, cuBLASLt "
              f"{r['reference'].get('median_us')} us; best evict-first {min(efb, default=None)} us, "
              f"best wgmma without {min(plain, default=None)} us")
PY
  # DRAM bytes the 16-row pick reads and writes under each flush (ncu's own cache control off: the
  # run's flush is what is measured).
  rec=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['recommendation']['id'])" \
    "$out/flush-write-16.json" 2>/dev/null)
  if command -v ncu >/dev/null && [ -n "${rec:-}" ]; then
    for mode in write read; do
      step "ncu 16x4096x4096 --l2-flush $mode" 60 "$out/flush-ncu-$mode.log" ncu --clock-control none \
        --cache-control none --target-processes all -k regex:tiletune_gemm --launch-skip 5 --launch-count 1 \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv \
        --log-file "$out/flush-ncu-$mode.csv" "$bin" gemm --m 16 --n 4096 --k 4096 --dtype bf16 --layout nt \
        --only "$rec" --no-db --l2-flush "$mode" --json --quiet
    done
  fi
}
phase_efbbytes() {  # DRAM bytes and time of evict-first tiles, their plain twins and a split, under each flush
  # (the measured basis the model's evict-first and split terms wait on: docs/model.md, issue 39's lead)
  command -v ncu >/dev/null || { say "efbbytes: no ncu"; return 0; }
  for case in "16 wgmma_16x64x64_c1_s8_cl1x1_g8m_swab" "16 wgmma_16x64x64_c1_s8_cl1x1_g8m_k2_swab" \
              "128 wgmma_64x128x64_c1_s8_cl1x1_g8m" "128 wgmma_64x128x64_c1_s7_cl1x1_g8m_k2"; do
    read -r m v <<<"$case"
    for id in "$v" "${v}_efb"; do
      for mode in write read; do
        step "ncu bytes $m $id $mode" 60 "$out/efbbytes-$m-$id-$mode.log" ncu --clock-control none \
          --cache-control none --target-processes all -k regex:tiletune_gemm --launch-skip 5 --launch-count 1 \
          --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv \
          --log-file "$out/efbbytes-$m-$id-$mode.csv" "$bin" gemm --m "$m" --n 4096 --k 4096 --dtype bf16 \
          --layout nt --only "$id" --no-db --l2-flush "$mode" --json --quiet
      done
    done
  done
  # One line per run: rows, variant, flush, time (ns), DRAM bytes read and written.
  python3 - "$out" <<'PY' | tee "$out/efbbytes-summary.txt" >&2
import csv, glob, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "efbbytes-*.csv"))):
    metrics = {}
    with open(path) as f:
        for row in csv.reader(line for line in f if line.startswith('"')):
            if len(row) > 14 and row[12] != "Metric Name":
                metrics[row[12]] = row[14].replace(",", "")
    name = os.path.basename(path)[len("efbbytes-"):-len(".csv")]
    print(name, metrics.get("gpu__time_duration.sum"), metrics.get("dram__bytes_read.sum"),
          metrics.get("dram__bytes_write.sum"))
PY
}
phase_decodetime() {  # the default (halving) search, as a user runs it
  step "gemm decode suite" 300 "$out/decode-suite.txt" "$bin" gemm --suite profiles/suites/decode.json \
    --no-db --budget-s 280 --out "$out/decode-suite.json"
  tail -20 "$out/decode-suite.txt" >&2
}
phase_decoderead() {  # the same suite with the L2 emptied by reads (clean lines, as before a decode step)
  step "gemm decode suite --l2-flush read" 300 "$out/decode-suite-read.txt" "$bin" gemm \
    --suite profiles/suites/decode.json --l2-flush read --no-db --budget-s 280 --out "$out/decode-suite-read.json"
  tail -20 "$out/decode-suite-read.txt" >&2
}
phase_decodeexhaustive() {  # every decode tile against cuBLASLt, back to back
  step "gemm decode suite exhaustive" 300 "$out/decode-suite-exhaustive.txt" "$bin" gemm \
    --suite profiles/suites/decode.json --search exhaustive --time-cap-ms 300 --no-db --budget-s 280 \
    --out "$out/decode-suite-exhaustive.json"
}
phase_fp8mma() {
  # (on sm_90 ptxas builds mma.sync's fp8 from f16 HMMAs on unpacked operands: the 128x128 tiles
  # spill there, and the split-K variant exists for the 16-row case only)
  fp8_mma="mma_64x64x128_w2x2_s4 mma_64x128x64_w2x4_s3 mma_128x64x64_w4x2_s3"
  for case in "e4m3 200 136 1296 2" "e5m2 72 328 400 1" "e4m3_e5m2 136 200 517 1" "e5m2_e4m3 16 4096 1024 1"; do
    read -r dt m n k b <<<"$case"
    [ "$m" = 16 ] && fp8_mma="$fp8_mma mma_64x64x64_w2x2_s3_k2"
    # shellcheck disable=SC2086
    step "fp8 mma verify $dt ${m}x${n}x${k}" 120 "$out/fp8mma-verify-$dt-$m.txt" env TILETUNE_MMA_FP8_ON_SM90=1 \
      "$bin" gemm --m "$m" --n "$n" --k "$k" --batch "$b" --dtype "$dt" --beta 0.5 --alpha 1.5 --verify-only --no-db \
      --variant-timeout 10 --keep-going --only $fp8_mma --out "$out/fp8mma-verify-$dt-$m.json"
    tally "$out/fp8mma-verify-$dt-$m.json"
  done
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck; do
      step "fp8 mma $tool" 120 "$out/fp8mma-$tool.txt" env TILETUNE_MMA_FP8_ON_SM90=1 "${san[@]}" --tool "$tool" \
        "$bin" gemm --m 200 --n 136 --k 528 --dtype e4m3 --verify-only --no-db --only mma_64x64x128_w2x2_s4
    done
  fi
  # K-major copies: the transposing pre-pass, then the nt kernel above
  for case in "e4m3 nn 200 136 1296" "e5m2_e4m3 tn 72 328 400" "e4m3_e5m2 tt 136 200 517"; do
    read -r dt l m n k <<<"$case"
    step "fp8 mma _kc verify $dt $l" 120 "$out/fp8mma-kc-verify-$dt-$l.txt" env TILETUNE_MMA_FP8_ON_SM90=1 \
      "$bin" gemm --m "$m" --n "$n" --k "$k" --batch 2 --dtype "$dt" --layout "$l" --beta 0.5 --verify-only --no-db \
      --variant-timeout 10 --keep-going --only mma_64x64x128_w2x2_s4_kc mma_64x128x64_w2x4_s3_kc \
      --out "$out/fp8mma-kc-verify-$dt-$l.json"
    tally "$out/fp8mma-kc-verify-$dt-$l.json"
  done
  if command -v compute-sanitizer >/dev/null; then
    step "fp8 mma _kc memcheck" 120 "$out/fp8mma-kc-memcheck.txt" env TILETUNE_MMA_FP8_ON_SM90=1 "${san[@]}" \
      --tool memcheck "$bin" gemm --m 200 --n 136 --k 528 --dtype e4m3 --layout nn --verify-only --no-db \
      --only mma_64x64x128_w2x2_s4_kc
  fi
  # Rowwise scales (_rw), applied by the epilogue: nt, split-K (16 rows) and tn on copies
  for case in "e4m3 nt 200 136 1296 mma_64x64x128_w2x2_s4_rw mma_64x128x64_w2x4_s3_rw" \
              "e4m3 nt 16 4096 1024 mma_64x64x64_w2x2_s3_k2_rw" \
              "e5m2_e4m3 tn 72 328 400 mma_64x64x128_w2x2_s4_rw_kc mma_64x128x64_w2x4_s3_rw_kc"; do
    read -r dt l m n k ids <<<"$case"
    # shellcheck disable=SC2086
    step "fp8 mma _rw verify $dt $l $m" 120 "$out/fp8mma-rw-verify-$dt-$l-$m.txt" env TILETUNE_MMA_FP8_ON_SM90=1 \
      "$bin" gemm --m "$m" --n "$n" --k "$k" --dtype "$dt" --layout "$l" --scaling rowwise --beta 0.5 --verify-only \
      --no-db --variant-timeout 10 --keep-going --only $ids --out "$out/fp8mma-rw-verify-$dt-$l-$m.json"
    tally "$out/fp8mma-rw-verify-$dt-$l-$m.json"
  done
  if command -v compute-sanitizer >/dev/null; then
    step "fp8 mma _rw memcheck" 120 "$out/fp8mma-rw-memcheck.txt" env TILETUNE_MMA_FP8_ON_SM90=1 "${san[@]}" \
      --tool memcheck "$bin" gemm --m 200 --n 136 --k 528 --dtype e4m3 --scaling rowwise --verify-only --no-db \
      --only mma_64x64x128_w2x2_s4_rw
  fi
}
phase_fp8() {
  # (block at M 136: A's scales copied into the stages by TMA, _ts; at M 138 the tiles load them)
  for case in "e4m3 tensor 200 136 1296 2" "e5m2 tensor 72 328 400 1" "e4m3 rowwise 200 400 400 1" \
              "e4m3 block 136 400 528 1" "e4m3 block 138 400 528 1" "e5m2 block 16 4096 1024 1" \
              "e4m3 rowwise 16 4096 1024 1" "e4m3_e5m2 tensor 200 136 528 2" "e5m2_e4m3 rowwise 16 4096 1024 1"; do
    read -r dt sc m n k b <<<"$case"
    step "fp8 verify $dt $sc ${m}x${n}x${k}" 120 "$out/fp8-verify-$dt-$sc-$m.txt" "$bin" gemm --m "$m" --n "$n" --k "$k" \
      --batch "$b" --dtype "$dt" --scaling "$sc" --beta 0.5 --alpha 1.5 --verify-only --no-db --variant-timeout 10 \
      --out "$out/fp8-verify-$dt-$sc-$m.json"
    tally "$out/fp8-verify-$dt-$sc-$m.json"
  done
  for sc in rowwise block; do  # a mixture-of-experts step in fp8: each group's B its own scales
    step "fp8 grouped verify $sc" 150 "$out/fp8-grouped-verify-$sc.txt" "$bin" gemm --groups 8 \
      --m-per-group 0,1,127,128,129,0,517,64 --n 1000 --k 784 --dtype e4m3 --scaling "$sc" --alpha 1.5 --beta 0.5 \
      --verify-only --no-db --variant-timeout 10 --out "$out/fp8-grouped-verify-$sc.json"
    tally "$out/fp8-grouped-verify-$sc.json"
  done
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck synccheck; do
      step "fp8 $tool" 120 "$out/fp8-$tool.txt" "${san[@]}" --tool "$tool" "$bin" gemm --m 256 --n 400 \
        --k 1024 --dtype e4m3 --scaling block --verify-only --no-db --only wgmma_64x192x128_c1_s4_cl1x1_g8m_p1_blk_ts
      sanitizer_verdict "$out/fp8-$tool.txt"
    done
    step "fp8 racecheck, every thread arrives" 120 "$out/fp8-racecheck-every-thread.txt" "${san[@]}" --tool racecheck \
      "$bin" gemm --m 256 --n 400 --k 1024 --dtype e4m3 --scaling block --verify-only --no-db --kernel-debug racecheck \
      --only wgmma_64x192x128_c1_s4_cl1x1_g8m_p1_blk_ts
    sanitizer_verdict "$out/fp8-racecheck-every-thread.txt"
  fi
  # Fast accumulation (_fa) against the bound it states, at the K where it matters.
  step "fp8 verify fast accumulation K 16384" 120 "$out/fp8-verify-fa.txt" "$bin" gemm --m 512 --n 1024 \
    --k 16384 --dtype e4m3 --verify-only --no-db --variant-timeout 10 --out "$out/fp8-verify-fa.json"
  tally "$out/fp8-verify-fa.json"
}
phase_fp8time() {
  for case in "tensor 4096 4096 4096" "tensor 8192 8192 8192" "block 4096 7168 16384"; do
    read -r sc m n k <<<"$case"
    step "fp8 time $sc ${m}x${n}x${k}" 200 "$out/fp8-time-$sc-$m-$k.txt" "$bin" gemm --m "$m" --n "$n" --k "$k" \
      --dtype e4m3 --scaling "$sc" --no-db --budget-s 180 --out "$out/fp8-time-$sc-$m-$k.json"
  done
  # Block scales copied by TMA (_ts, M 4096) against the same tiles loading them (M 4094: A's scale
  # rows not whole 16-byte units), back to back.
  for m in 4096 4094; do
    step "fp8 time block M $m (_ts at 4096, loads at 4094)" 100 "$out/fp8-time-block-m$m.txt" "$bin" gemm --m "$m" \
      --n 7168 --k 16384 --dtype e4m3 --scaling block --no-db --search exhaustive --time-cap-ms 300 \
      --only "wgmma_128x128x128_c2_s4_cl1x1_g8m_p1_blk$([ "$m" = 4096 ] && echo _ts)" \
      "wgmma_128x192x128_c2_s4_cl1x1_g8m_p1_blk$([ "$m" = 4096 ] && echo _ts)" --out "$out/fp8-time-block-m$m.json"
  done
}
phase_kc() {
  for case in "tf32 nn 136 200 168 2" "tf32 tn 1000 776 520 1" "tf32 tt 72 328 1296 1" "e4m3 nn 200 136 1296 2" \
              "e4m3 tn 72 328 400 1"; do
    read -r dt l m n k b <<<"$case"
    step "kc verify $dt $l ${m}x${n}x${k}" 120 "$out/kc-verify-$dt-$l.txt" "$bin" gemm --m "$m" --n "$n" --k "$k" \
      --batch "$b" --dtype "$dt" --layout "$l" --beta 0.5 --alpha 1.5 --verify-only --no-db --variant-timeout 10 \
      --out "$out/kc-verify-$dt-$l.json"
    tally "$out/kc-verify-$dt-$l.json"
  done
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck; do
      step "kc $tool" 120 "$out/kc-$tool.txt" "${san[@]}" --tool "$tool" "$bin" gemm --m 136 --n 200 \
        --k 168 --batch 2 --dtype tf32 --layout tn --verify-only --no-db --only wgmma_128x128x32_c2_s4_cl1x1_g8m_kc
      sanitizer_verdict "$out/kc-$tool.txt"
    done
  fi
}
phase_kctime() {
  for dt in tf32 e4m3; do
    step "kc time $dt nn 4096" 200 "$out/kc-time-$dt.txt" "$bin" gemm --m 4096 --n 4096 --k 4096 --dtype "$dt" \
      --layout nn --no-db --budget-s 180 --out "$out/kc-time-$dt.json"
  done
}
# racecheck's two reports of 2026-12-04 against the racecheck build (--kernel-debug racecheck), alone.
phase_racecheck() {
  command -v compute-sanitizer >/dev/null || { say "racecheck: no compute-sanitizer here"; return 0; }
  for c in "16 512 1024 bf16 none wgmma_16x128x64_c1_s8_cl1x1_g8m_k2_swab" \
    "256 400 1024 e4m3 block wgmma_64x192x128_c1_s4_cl1x1_g8m_p1_blk_ts"; do
    read -r m n k dt sc id <<<"$c"
    local scaling=()
    [ "$sc" != none ] && scaling=(--scaling "$sc")
    local kind  # not `build`: that names the carried build folder (2026-12-04: the tests phase after this ran none)
    for kind in release racecheck; do
      local debug=(--kernel-debug lineinfo)
      [ "$kind" = racecheck ] && debug=(--kernel-debug racecheck)
      step "racecheck $id ($kind build)" 120 "$out/racecheck-$kind-$id.txt" "${san[@]}" --tool racecheck "$bin" gemm \
        --m "$m" --n "$n" --k "$k" --dtype "$dt" "${scaling[@]}" --verify-only --no-db "${debug[@]}" --only "$id"
      sanitizer_verdict "$out/racecheck-$kind-$id.txt"
    done
  done
}
phase_padded() {
  for case in "bf16 nt 136 200 167 2" "f16 nn 136 201 168 1" "tf32 nt 136 136 166 2" "e4m3 nt 72 136 407 1"; do
    read -r dt l m n k b <<<"$case"
    step "padded verify $dt $l ${m}x${n}x${k}" 150 "$out/padded-verify-$dt-$l.txt" "$bin" gemm --m "$m" --n "$n" \
      --k "$k" --batch "$b" --dtype "$dt" --layout "$l" --beta 0.5 --alpha 1.5 --verify-only --no-db \
      --variant-timeout 10 --out "$out/padded-verify-$dt-$l.json"
    tally "$out/padded-verify-$dt-$l.json"
  done
  if command -v compute-sanitizer >/dev/null; then
    for id in wgmma_128x128x64_c2_s4_cl1x1_g8m_kc mma_128x128x32_w2x2_s4_kc; do
      step "padded memcheck $id" 120 "$out/padded-memcheck-$id.txt" "${san[@]}" --tool memcheck "$bin" gemm \
        --m 136 --n 200 --k 167 --batch 2 --dtype bf16 --verify-only --no-db --only "$id"
      sanitizer_verdict "$out/padded-memcheck-$id.txt"
    done
  fi
}
phase_paddedtime() {
  for k in 50257 50264; do
    step "padded time 4096x768x$k" 200 "$out/padded-time-$k.txt" "$bin" gemm --m 4096 --n 768 --k "$k" \
      --dtype bf16 --no-db --budget-s 120 --out "$out/padded-time-$k.json"
  done
}
# The phases in the order given (smoke, above, always first).
for p in $phases; do
  [ "$p" = smoke ] && continue
  if declare -F "phase_$p" >/dev/null; then "phase_$p"; else say "$p: no such phase"; fi
done
[ -s "$out/summary.txt" ] && cat "$out/summary.txt"
say "done: $out/steps.log"
