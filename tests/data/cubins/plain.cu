extern "C" __global__ void tiletune_gemm(float* out) { __shared__ float s[256]; s[threadIdx.x] = out[threadIdx.x]; __syncthreads(); out[threadIdx.x] = s[255-threadIdx.x]; }
