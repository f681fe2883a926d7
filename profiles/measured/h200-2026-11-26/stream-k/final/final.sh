#!/usr/bin/env bash
# Final check of this session: the stream-K kernel with one slot base per thread, and the halving
# search with the model's stream-K term.
b=build-gpu/tiletune; o=$OUT
for c in "bf16 nt 20 320 5000 1 wgmma_128x128x64_c2_s4_cl1x1_g8m_sk" "bf16 nn 136 200 1000 3 wgmma_128x128x64_c2_s4_cl1x1_g8m_sk" \
         "f16 tn 136 200 1000 3 wgmma_64x256x64_c1_s3_cl1x1_g8m_sk" "tf32 nt 20 320 5000 1 wgmma_128x128x32_c1_s3_cl1x1_g8m_sk" \
         "bf16 nt 4096 4096 4096 1 wgmma_128x256x64_c2_s4_cl1x1_g8m_sk"; do
  read -r dt lay m n k bt id <<<"$c"
  timeout 30 $b gemm --m $m --n $n --k $k --batch $bt --dtype $dt --layout $lay --alpha 1.5 --beta 0.5 --only $id \
    --verify-only --variant-timeout 8 --no-db --json --quiet | python3 -c "
import json,sys; v=json.load(sys.stdin)['variants'][0]; print('smoke', sys.argv[1], v['status'], v.get('max_rel_error'), v.get('reason','')[:120])" "$c"
done 2>&1 | tee $o/smoke.txt
timeout 40 compute-sanitizer --tool memcheck --target-processes all --error-exitcode 9 $b gemm --m 20 --n 320 --k 5000 \
  --dtype bf16 --layout nt --alpha 1.5 --beta 0.5 --only wgmma_128x128x64_c2_s4_cl1x1_g8m_sk --verify-only --no-db --quiet \
  --variant-timeout 30 2>&1 | grep -E "ERROR SUMMARY" | tee -a $o/smoke.txt
for s in "16 4096 4096" "128 4096 4096" "64 4096 14336"; do read m n k <<<"$s"
  timeout 30 $b gemm --m $m --n $n --k $k --dtype bf16 --layout nt --variant-timeout 10 --time-cap-ms 300 --target-spread 0.02 \
    --no-db --out $o/halving-$m-$n-$k.json >/dev/null 2>&1; python3 -c "
import json,sys; j=json.load(open(sys.argv[1])); r=j['recommendation']
sk=[v for v in j['variants'] if v['id'].endswith('_sk') and v.get('median_us')]
print(sys.argv[2], 'rec', r['id'], round(r['median_us'],1), 'vs cuBLASLt', round(r['vs_reference'],3), 'sk timed', len(sk))" $o/halving-$m-$n-$k.json "$s"
done 2>&1 | tee $o/halving.txt
