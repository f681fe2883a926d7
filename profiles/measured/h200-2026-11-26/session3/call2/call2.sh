#!/usr/bin/env bash
# Session 13, call 2: the cuBLASLt opened on first use, the GPU tests' new timer check, schema 2 with measured records.
set -u
O=/tmp/gv4; mkdir -p $O
export BUILD_DIR=build-gpu GPU_VALIDATE_TARBALL=$OUT/gv4.tgz GPU_VALIDATE_BUDGET_S=170 GPU_VALIDATE_NO_SANITIZER=1
export GPU_TESTS_FILTER='-gpu.every_variant_is_correct_on_odd_shapes:gpu.wgmma_variants_are_correct_on_partial_tiles'
scripts/validate/gpu_validate.sh $O tests 2>&1 | tail -30
b=build-gpu/tiletune; db=$O/t.sqlite3
s=$SECONDS; timeout 60 $b gemm --m 4096 --n 4096 --k 4096 --db $db --out $O/first.json --quiet; echo "first: exit $? in $((SECONDS-s)) s"
s=$SECONDS; timeout 30 $b gemm --m 4096 --n 4096 --k 4096 --db $db --out $O/repeat.json --quiet; echo "repeat: exit $? in $((SECONDS-s)) s"
timeout 60 $b gemm --m 64 --n 4096 --k 4096 --db $db --quiet --out $O/second.json; echo "second: exit $?"
python3 - $O <<'PY'
import json, sys
o = sys.argv[1]
for f in ("first", "repeat", "second"):
    j = json.load(open(f"{o}/{f}.json"))
    r = j["recommendation"]
    print(f, r["id"], round(r["median_us"], 1), "vs cuBLASLt", round(r["vs_reference"], 3), "ref", j["reference"].get("timer"),
          "db", json.dumps(j.get("tuning_db")), "variants", len(j["variants"]))
PY
$b db list --db $db; ls -la $db
timeout 30 $b gemm --gpu h200 --m 2048 --n 2048 --k 4096 --db $db --json --quiet | python3 -c "import json,sys; j=json.load(sys.stdin); print('offline', j['recommendation']['id'], [n for n in j.get('notes',[]) if 'calibrated' in n][:1])"
cp $db $O/ 2>/dev/null
tar czf $OUT/gv4.tgz -C /tmp gv4
