#!/usr/bin/env bash
# The compile tests over the whole cross product: every variant of the default
# search spaces in all four layouts (CI compiles each variant in one layout, the
# layouts rotating over the variants). About 4x the compile label's time.
#   scripts/compile_all_layouts.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
TILETUNE_COMPILE_ALL_LAYOUTS=1 ctest --test-dir "${1:-build}" --output-on-failure -j2 -L compile
