extern "C" __global__ void tiletune_gemm(float* out, int i, int j) {
  volatile float a[64];
  for (int t = 0; t < 64; ++t) a[(t * i) & 63] = out[t] * t;
  out[0] = a[i & 63] + a[j & 63];
}
