// Z := Q2 Z, the bulge chasing's back-transformation (hylapack's sb2st_q2 family), a module
// of its own so that the eigenvalue path never compiles it.

// Where sweep i's reflectors start in Q2's compact layout of order n (src/sbr/sb2st/mod.rs,
// sweep_offset): after the n - 1, n - 2, ... entries of the sweeps before.
__device__ __forceinline__ size_t sweep_offset(int n, int i) {
    const size_t si = (size_t)i;
    return si * (size_t)(n - 1) - (i > 0 ? si * (si - 1) / 2 : 0);
}

// The product is taken from Q2's compact layout q (order n, bandwidth B). Z is stored transposed, entry (r, c) at zt[r * ldt + c], and each thread owns
// one of its m columns, so a warp reads 32 neighbouring words per row. Reflectors of one sweep
// never overlap; a later sweep's reflector of step k or k - 1 overlaps an earlier sweep's of
// step k and must reach Z first. So the sweeps go G at a time (G <= B), groups from the last
// to the first, and a group walks down the rows step by step, its G reflectors of a step from
// the last sweep to the first. They span the B + G - 1 rows from the group's first sweep's
// row, which each thread holds in registers (fully unrolled loops, constant indices); after a
// step the first B rows are final for the group and the window slides down by B rows.
// The CTA stages each step's G x B reflector entries in shared memory (zero past a
// reflector's end or its sweep's last step).
template <typename T, int B, int G>
__device__ void q2_apply(const T *__restrict__ q, T *__restrict__ zt, int n, int m, long long ldt) {
    constexpr int W = B + G - 1;
    extern __shared__ __align__(16) unsigned char smem[];
    T *sv = reinterpret_cast<T *>(smem);
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const bool mine = c < m;
    T *col = zt + c;
    const int sweeps = n - 2;
    T z[W];
    for (int i0 = ((sweeps - 1) / G) * G; i0 >= 0; i0 -= G) {
        int top = i0 + 1;
#pragma unroll
        for (int w = 0; w < W; ++w)
            z[w] = (mine && top + w < n) ? col[(long long)(top + w) * ldt] : T(0);
        for (int kb = 0; top < n; kb += B, top += B) {
            __syncthreads(); // the previous step's entries are read
            for (int e = threadIdx.x; e < G * B; e += blockDim.x) {
                const int j = e / B, r = e % B, i = i0 + j;
                T x = T(0);
                if (i < sweeps && r < n - 1 - i - kb) x = q[sweep_offset(n, i) + kb + r];
                sv[e] = x;
            }
            __syncthreads();
#pragma unroll
            for (int j = G - 1; j >= 0; --j) {
                const T *v = sv + j * B;
                T s = z[j];
#pragma unroll
                for (int r = 1; r < B; ++r) s = fma(v[r], z[j + r], s);
                s *= v[0];
                z[j] -= s;
#pragma unroll
                for (int r = 1; r < B; ++r) z[j + r] = fma(-s, v[r], z[j + r]);
            }
#pragma unroll
            for (int w = 0; w < B; ++w)
                if (mine && top + w < n) col[(long long)(top + w) * ldt] = z[w];
#pragma unroll
            for (int w = 0; w < G - 1; ++w) z[w] = z[w + B];
#pragma unroll
            for (int w = G - 1; w < W; ++w) {
                const int row = top + B + w;
                z[w] = (mine && row < n) ? col[(long long)row * ldt] : T(0);
            }
        }
    }
}

// Shared memory: one step's G x B reflector entries.
#define Q2_APPLY(NAME, T, B, G)                                                                \
    extern "C" __global__ void __launch_bounds__(Q2_THREADS)                                   \
        NAME(const T *q, T *zt, int n, int m, long long ldt) {                                 \
        q2_apply<T, B, G>(q, zt, n, m, ldt);                                                   \
    }

#define Q2_THREADS 128
Q2_APPLY(sb2st_q2_s32_32, float, 32, 32)
Q2_APPLY(sb2st_q2_d32_32, double, 32, 32)
Q2_APPLY(sb2st_q2_s64_32, float, 64, 32)
Q2_APPLY(sb2st_q2_d64_32, double, 64, 32)
Q2_APPLY(sb2st_q2_s32_16, float, 32, 16)
Q2_APPLY(sb2st_q2_d32_16, double, 32, 16)
Q2_APPLY(sb2st_q2_s64_16, float, 64, 16)
Q2_APPLY(sb2st_q2_d64_16, double, 64, 16)
