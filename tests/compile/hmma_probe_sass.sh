#!/usr/bin/env bash
# The HMMA probe (scripts/bench/hmma_probe.cu) measures what it claims only if
# its loop is tensor-core instructions on registers: nvcc builds it for sm_80 and
# sm_90, and its SASS must hold HMMA.16816.F32.BF16 in each kernel and no load
# or spill (LDG, LDS, LDL, STL); a build with a load planted in the loop must fail
# the same check. No GPU needed.
#   tests/compile/hmma_probe_sass.sh NVCC CUOBJDUMP SOURCE WORK_DIR
set -uo pipefail
nvcc=$1 cuobjdump=$2 src=$3 work=$4
mkdir -p "$work"
# check ARCH [NVCC FLAGS...]: 0 when the SASS is register-only HMMA, 1 otherwise (says why).
check() {
  local arch=$1
  shift
  local cubin="$work/hmma_probe_$arch$*.cubin"
  cubin=${cubin// /}
  "$nvcc" -O3 -cubin -arch="$arch" "$@" -o "$cubin" "$src" || { echo "nvcc failed for $arch"; exit 2; }
  local sass
  sass=$("$cuobjdump" -sass "$cubin") || { echo "cuobjdump failed"; exit 2; }
  local kernels hmma loads
  kernels=$(grep -c "Function :" <<<"$sass")
  hmma=$(grep -c "HMMA.16816.F32.BF16" <<<"$sass")
  loads=$(grep -cE "\b(LDG|LDS|LDL|STL|LD)\b" <<<"$sass")
  echo "$arch $*: $kernels kernels, $hmma HMMA.16816.F32.BF16, $loads loads or spills"
  ((kernels >= 2 && hmma >= 12 * kernels && loads == 0))
}
rc=0
for arch in sm_80 sm_90; do
  check "$arch" || { echo "FAIL: $arch is not a register-only HMMA loop"; rc=1; }
done
if check sm_90 -DHMMA_PROBE_PLANTED_LOAD; then
  echo "FAIL: the planted load in the loop was not caught"
  rc=1
else
  echo "ok: the planted load is caught"
fi
exit $rc
