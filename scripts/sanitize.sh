#!/usr/bin/env bash
# The unit and cli tests once more under AddressSanitizer + UndefinedBehaviorSanitizer,
# the fuzzers' seeds and regression inputs replayed, then every libFuzzer target run
# for a bounded time. Clang (scripts/setup.sh installs it), in its own build folder.
#   scripts/sanitize.sh        FUZZ_SECONDS=25 per target (0: no fuzzing), SANITIZE_BUILD_DIR=build-sanitize
# A fuzzer's finding is saved under $SANITIZE_BUILD_DIR/fuzz-findings/; copy it into
# tests/fuzz/regressions/<target>/ with the fix, so every build replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SANITIZE_BUILD_DIR:-build-sanitize}
fuzz_seconds=${FUZZ_SECONDS:-25}
cxx=${SANITIZE_CXX:-$(command -v clang++ || command -v clang++-14 || true)}
[ -n "$cxx" ] || { echo "sanitize: clang++ is not installed (scripts/setup.sh installs it)" >&2; exit 3; }
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
t0=$SECONDS
# -O1: ASan's usual level. Unoptimised, the build took 704 s instead of 998 s, but the tests
# under ASan 711 s instead of 436 s; the tests themselves are built at -O0 (tests/CMakeLists.txt).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_CXX_COMPILER="$cxx" -DTILETUNE_FUZZ=ON "${launcher[@]}" >/dev/null
targets=(tiletune unit_tests cli_tests fake_worker tiletune_standins)
while read -r name _; do targets+=("fuzz_$name" "fuzz_replay_$name"); done <"$build/fuzz_targets.txt"
cmake --build "$build" --parallel --target "${targets[@]}"
echo "sanitize: built in $((SECONDS - t0)) s" >&2

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:protect_shadow_gap=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0}
# The cli tests' kernel cache from the plain build (scripts/test.sh runs that first): NVRTC
# is not instrumented, so compiling every variant again would only cost minutes.
if [ -z "${TILETUNE_TEST_SCRATCH:-}" ] && [ -d build/tests/cli_tmp/cache ]; then
  export TILETUNE_TEST_SCRATCH=$PWD/build/tests/cli_tmp
fi
t1=$SECONDS
# Left out (the plain run has them): the tests whose work is NVRTC's (not instrumented) or a
# grep of the tree, the exhaustive sweeps of the kernels' host emulation and model checks
# (every variant, every interleaving: 400 of the 840 s these tests took under ASan), the
# sweeps of the emulation's schedules (ping-pong, multicast, TMA store, fp8 variants and
# scales: 260 of the 637 s left; the mma family's fp8 sweeps: 400 of 1345 s later; later the
# edge shapes, cluster split-K, fast accumulation, fp8 output and mixed-format sweeps and the
# mma padded copies: 185 of 1002 s; each mechanism's planted-defect test runs the same emulator
# here), and the calibration's figures over every recorded result (75 s; the calibration's
# other tests run here).
ctest --test-dir "$build" --output-on-failure -j2 -L 'unit|cli|fuzz_replay' \
  -E '^(compile_selection\.(bounded_plans|cached_programs|the_bound_follows)|family_isolation\.no_file_outside|'\
'mma_datapath\.every_variant_matches|wgmma_emulation\.(every_default_variant|stream_k_units|'\
'pingpong_tiles_match|multicast_clusters_match|tma_store_epilogue_matches|edge_shapes_match|cluster_split_k_matches)|'\
'wgmma_fp8_emulation\.(fp8_variants_match|rowwise_and_block_scales_match|mixed_formats_decode|f16_and_f32_c_match)|'\
'wgmma_fast_accumulation\.emulated_variants_match|mma_padded_copies\.emulated_padding_and_gemm|'\
'mma_datapath\.fp8_(variants_match|on_k_major_copies|with_rowwise_scales)|'\
'wgmma_ring\.every_interleaving|tile_addressing\.(copies_and_fragment|the_replay_finds|the_epilogue_puts)|'\
'wgmma_schedule\.(every_plan_cuts|walking_every_unit)|model_calibration\.(offline_pick_figures|held_out_figures|'\
'ranks_the_recorded|the_profile_in_the_repo|ranking_on_the_2026))'
echo "sanitize: unit, cli and fuzz replay tests passed under ASan+UBSan in $((SECONDS - t1)) s" >&2

if [ "$fuzz_seconds" -gt 0 ]; then
  mkdir -p "$build/fuzz-findings"
  # One fuzzer per core at a time (each is one process): the five took 65 s one after another.
  fuzz() {
    local name=$1 dirs=$2 corpus="$build/fuzz-corpus/$1" rc=0
    mkdir -p "$corpus"
    # shellcheck disable=SC2086  # $dirs: the seed folders, one word each
    # A fixed seed and a bounded number of runs make CI's fuzzing repeatable (FUZZ_SEED/FUZZ_RUNS to explore more).
    "$build/tests/fuzz/fuzz_$name" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-10000}" \
      -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
      -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$build/fuzz-findings/$name-" \
      "$corpus" $dirs 2>"$build/fuzz-findings/$name.log" || rc=$?
    echo "$rc" >"$build/fuzz-findings/$name.status"
  }
  rm -f "$build/fuzz-findings/"*.status
  cores=$(nproc 2>/dev/null || echo 2)
  names=()
  while read -r name dirs; do
    echo "sanitize: fuzzing $name for at most $fuzz_seconds s" >&2
    names+=("$name")
    fuzz "$name" "$dirs" &
    while (($(jobs -rp | wc -l) >= cores)); do wait -n || true; done
  done <"$build/fuzz_targets.txt"
  wait
  failed=0
  for name in "${names[@]}"; do
    if [ "$(cat "$build/fuzz-findings/$name.status" 2>/dev/null)" != 0 ]; then
      tail -40 "$build/fuzz-findings/$name.log" >&2
      echo "sanitize: fuzz_$name found a failing input: $(ls "$build/fuzz-findings/$name-"* 2>/dev/null | head -1)" >&2
      failed=1
    else
      echo "sanitize: fuzz_$name: $(grep -E "stat::number_of_executed_units|cov:" "$build/fuzz-findings/$name.log" | tail -2 | tr '\n' ' ')" >&2
    fi
  done
  [ "$failed" = 0 ] || exit 1
fi
echo "sanitize: all passed in $((SECONDS - t0)) s" >&2
