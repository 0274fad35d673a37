// Interval family (double precision): GEMM with directed rounding, the infimum-supremum interval
// product, the elementwise steps of the midpoint-radius product and the verified solver's
// residual and enclosure kernels. Directed rounding uses CUDA's per-instruction rounding
// intrinsics (__fma_ru, __dadd_rd, ...): no global mode, no contraction (--fmad=false keeps
// the compiler from fusing the round-to-nearest error-free transformations below).
//
// Matrices are column-major with leading dimensions; "op" flags: 0 = as stored, 1 = transposed.

#define HY_INF __longlong_as_double(0x7ff0000000000000LL)
#define RU_FMA(a, b, c) __fma_ru((a), (b), (c))
#define RD_FMA(a, b, c) __fma_rd((a), (b), (c))

// Rounding of one operation: DOWN, UP, or NEAREST (the last only for `hylapack bench
// interval`, to show what directed rounding costs in the same kernel).
#define DOWN 0
#define UP 1
#define NEAREST 2
template <int R> __device__ __forceinline__ double fma_dir(double a, double b, double c) {
    return R == UP ? __fma_ru(a, b, c) : R == DOWN ? __fma_rd(a, b, c) : __fma_rn(a, b, c);
}
template <int R> __device__ __forceinline__ double mul_dir(double a, double b) {
    return R == UP ? __dmul_ru(a, b) : R == DOWN ? __dmul_rd(a, b) : __dmul_rn(a, b);
}

// op(X)[r, c] of a stored matrix, zero outside rows x cols of op(X).
__device__ __forceinline__ double op_load(const double* x, long ld, int trans, int r, int c, int rows, int cols) {
    if (r >= rows || c >= cols) return 0.0;
    return trans ? x[(long)c + (long)r * ld] : x[(long)r + (long)c * ld];
}

// ---------------------------------------------------------------------------------------------
// C = alpha op(A) op(B) + beta C, every operation rounded one way. 128x128 tiles of C per block
// of 256 threads; thread (tx, ty) owns rows tx + 16 i and columns ty + 16 j (i, j < 8), so a
// warp's stores to C are 16 consecutive rows. The k loop runs over 8-wide slabs staged in shared
// memory, double-buffered, the next slab fetched into registers while this one is multiplied.
// ACC: rounding of the products' accumulation (flipped by the host when alpha < 0);
// OUT: rounding of the final alpha/beta step.
#define GM 128
#define GN 128
#define GK 8

template <int ACC, int OUT>
__device__ __forceinline__ void gemm_rounded_body(int m, int n, int k, double alpha,
        const double* __restrict__ A, long lda, int ta, const double* __restrict__ B, long ldb, int tb,
        double beta, double* __restrict__ C, long ldc) {
    __shared__ double As[2][GK][GM];
    __shared__ double Bs[2][GK][GN];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int row0 = blockIdx.x * GM, col0 = blockIdx.y * GN;

    double acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0;

    // Which slab entries this thread fetches: four of A's 128x8 and four of B's 8x128, chosen so
    // that consecutive threads read consecutive addresses of the stored matrix.
    int ar[4], ak[4], bk[4], bc[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        if (!ta) { ar[q] = tid % 128; ak[q] = tid / 128 + 2 * q; }
        else     { ak[q] = tid % 8;   ar[q] = tid / 8 + 32 * q; }
        if (!tb) { bk[q] = tid % 8;   bc[q] = tid / 8 + 32 * q; }
        else     { bc[q] = tid % 128; bk[q] = tid / 128 + 2 * q; }
    }
    double ra[4], rb[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        ra[q] = op_load(A, lda, ta, row0 + ar[q], ak[q], m, k);
        rb[q] = op_load(B, ldb, tb, bk[q], col0 + bc[q], k, n);
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) { As[0][ak[q]][ar[q]] = ra[q]; Bs[0][bk[q]][bc[q]] = rb[q]; }
    __syncthreads();

    int buf = 0;
    for (int k0 = 0; k0 < k; k0 += GK) {
        const bool more = k0 + GK < k;
        if (more) {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                ra[q] = op_load(A, lda, ta, row0 + ar[q], k0 + GK + ak[q], m, k);
                rb[q] = op_load(B, ldb, tb, k0 + GK + bk[q], col0 + bc[q], k, n);
            }
        }
#pragma unroll
        for (int kk = 0; kk < GK; ++kk) {
            double a[8], b[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) a[i] = As[buf][kk][tx + 16 * i];
#pragma unroll
            for (int j = 0; j < 8; ++j) b[j] = Bs[buf][kk][ty + 16 * j];
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fma_dir<ACC>(a[i], b[j], acc[i][j]);
        }
        if (more) {
#pragma unroll
            for (int q = 0; q < 4; ++q) { As[buf ^ 1][ak[q]][ar[q]] = ra[q]; Bs[buf ^ 1][bk[q]][bc[q]] = rb[q]; }
        }
        __syncthreads();
        buf ^= 1;
    }

#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const int c = col0 + ty + 16 * j;
        if (c >= n) continue;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int r = row0 + tx + 16 * i;
            if (r >= m) continue;
            const double t = mul_dir<OUT>(alpha, acc[i][j]);
            double* out = C + (long)r + (long)c * ldc;
            *out = beta == 0.0 ? t : fma_dir<OUT>(beta, *out, t);
        }
    }
}

#define GEMM_ROUNDED(NAME, ACC, OUT)                                                            \
    extern "C" __global__ void __launch_bounds__(256, 1) NAME(int m, int n, int k, double alpha,\
            const double* A, long lda, int ta, const double* B, long ldb, int tb, double beta,   \
            double* C, long ldc) {                                                               \
        gemm_rounded_body<ACC, OUT>(m, n, k, alpha, A, lda, ta, B, ldb, tb, beta, C, ldc);       \
    }
GEMM_ROUNDED(gemm_rounded_uu, UP, UP)
GEMM_ROUNDED(gemm_rounded_du, DOWN, UP)
GEMM_ROUNDED(gemm_rounded_dd, DOWN, DOWN)
GEMM_ROUNDED(gemm_rounded_ud, UP, DOWN)
GEMM_ROUNDED(gemm_nearest, NEAREST, NEAREST)

// ---------------------------------------------------------------------------------------------
// Infimum-supremum interval product [C] = [A][B] (finite bounds). 64x64 tiles per block of 256
// threads, 4x4 intervals per thread (rows tx + 16 i, columns ty + 16 j). Each term's product
// bound is the min (max) of two endpoint products, each fused into the running bound rounded
// down (up): min_p RD(p + lo) = RD(min_p p + lo) since rounding is monotone.
#define IM 64
#define IK 8

extern "C" __global__ void __launch_bounds__(256) igemm_infsup(int m, int n, int k,
        const double* __restrict__ Ai, const double* __restrict__ As_, long lda, int ta,
        const double* __restrict__ Bi, const double* __restrict__ Bs_, long ldb, int tb,
        double* __restrict__ Ci, double* __restrict__ Cs, long ldc) {
    __shared__ double sAi[IK][IM], sAs[IK][IM], sBi[IK][IM], sBs[IK][IM];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int row0 = blockIdx.x * IM, col0 = blockIdx.y * IM;
    double lo[4][4], hi[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) { lo[i][j] = 0.0; hi[i][j] = 0.0; }

    for (int k0 = 0; k0 < k; k0 += IK) {
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            int r, kk;
            if (!ta) { r = tid % 64; kk = tid / 64 + 4 * q; } else { kk = tid % 8; r = tid / 8 + 32 * q; }
            sAi[kk][r] = op_load(Ai, lda, ta, row0 + r, k0 + kk, m, k);
            sAs[kk][r] = op_load(As_, lda, ta, row0 + r, k0 + kk, m, k);
            int c;
            if (!tb) { kk = tid % 8; c = tid / 8 + 32 * q; } else { c = tid % 64; kk = tid / 64 + 4 * q; }
            sBi[kk][c] = op_load(Bi, ldb, tb, k0 + kk, col0 + c, k, n);
            sBs[kk][c] = op_load(Bs_, ldb, tb, k0 + kk, col0 + c, k, n);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < IK; ++kk) {
            double ai[4], as[4], bi[4], bs[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) { ai[i] = sAi[kk][tx + 16 * i]; as[i] = sAs[kk][tx + 16 * i]; }
#pragma unroll
            for (int j = 0; j < 4; ++j) { bi[j] = sBi[kk][ty + 16 * j]; bs[j] = sBs[kk][ty + 16 * j]; }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    // For a fixed a, x·b is smallest at b's lower end if x ≥ 0, else at its
                    // upper end (and the reverse for the largest): two candidates per bound.
                    const double l = lo[i][j], h = hi[i][j];
                    const bool pi = ai[i] >= 0.0, ps = as[i] >= 0.0;
                    lo[i][j] = fmin(RD_FMA(ai[i], pi ? bi[j] : bs[j], l), RD_FMA(as[i], ps ? bi[j] : bs[j], l));
                    hi[i][j] = fmax(RU_FMA(ai[i], pi ? bs[j] : bi[j], h), RU_FMA(as[i], ps ? bs[j] : bi[j], h));
                }
        }
        __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int c = col0 + ty + 16 * j;
        if (c >= n) continue;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = row0 + tx + 16 * i;
            if (r >= m) continue;
            Ci[(long)r + (long)c * ldc] = lo[i][j];
            Cs[(long)r + (long)c * ldc] = hi[i][j];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Midpoint-radius product, elementwise steps (mirroring src/interval/cpu.rs).

// [inf, sup] (rows x cols, leading dimension ld) -> mid, |mid|, rad packed (leading dimension
// rows); flags[0] |= 1 if some radius is non-zero.
extern "C" __global__ void midrad_split(int rows, int cols, const double* inf, const double* sup, long ld,
        double* mid, double* amid, double* rad, int* flags) {
    // Rows across blockIdx.x (no integer division per element), columns strided over blockIdx.y.
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    bool nonzero = false;
    for (int c = blockIdx.y; c < cols; c += gridDim.y) {
        const double lo = inf[r + c * ld], hi = sup[r + c * ld];
        const double m = 0.5 * lo + 0.5 * hi;
        const double d = fmax(__dsub_ru(hi, m), __dsub_ru(m, lo));
        const long t = r + (long)c * rows;
        mid[t] = m;
        amid[t] = fabs(m);
        rad[t] = d;
        nonzero |= d != 0.0;
    }
    if (nonzero) atomicOr(flags, 1);
}

// out = RU(x + RU(g * y)) elementwise (g = 0: RU(x + y) with y scaled by one, see host).
extern "C" __global__ void add_scaled_up(long len, const double* x, double g, const double* y, double* out) {
    for (long t = blockIdx.x * (long)blockDim.x + threadIdx.x; t < len; t += (long)gridDim.x * blockDim.x)
        out[t] = __dadd_ru(x[t], __dmul_ru(g, y[t]));
}

// [C] from P = fl(mA mB) and T = fl(radius product), both m x n packed.
extern "C" __global__ void midrad_finish(int m, int n, const double* P, const double* T, double inflate,
        double t_eta, double p_eta, double* Ci, double* Cs, long ldc) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= m) return;
    for (int c = blockIdx.y; c < n; c += gridDim.y) {
        const long t = r + (long)c * m;
        const double p = P[t];
        const double rad = __dadd_ru(__dmul_ru(__dadd_ru(T[t], t_eta), inflate), p_eta);
        double lo = -HY_INF, hi = HY_INF;
        if (isfinite(p) && !isnan(rad)) { lo = __dsub_rd(p, rad); hi = __dadd_ru(p, rad); }
        Ci[r + c * ldc] = lo;
        Cs[r + c * ldc] = hi;
    }
}

// ---------------------------------------------------------------------------------------------
// Verified solver.

// Dot2 residual b - A x for every row and right-hand side: d (nearest), and lo <= exact <= hi.
// One thread per (row, column of x): a warp's threads read consecutive rows of A.
__device__ __forceinline__ void two_sum(double a, double b, double& s, double& e) {
    s = __dadd_rn(a, b);
    const double bb = __dsub_rn(s, a);
    e = __dadd_rn(__dsub_rn(a, __dsub_rn(s, bb)), __dsub_rn(b, bb));
}

extern "C" __global__ void residual_dot2(int n, int nrhs, const double* A, long lda, const double* b, long ldb,
        const double* x, double* d, double* lo, double* hi, double slack) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y;
    if (i >= n || c >= nrhs) return;
    const double* xc = x + (long)c * n;
    double p = b[i + (long)c * ldb], s = 0.0, tlo = 0.0, thi = 0.0;
    for (int l = 0; l < n; ++l) {
        const double a = -A[i + (long)l * lda], xl = xc[l];
        const double h = __dmul_rn(a, xl);
        const double r = __fma_rn(a, xl, -h);
        double q;
        two_sum(p, h, p, q);
        s = __dadd_rn(s, __dadd_rn(q, r));
        tlo = __dadd_rd(tlo, __dadd_rd(q, r));
        thi = __dadd_ru(thi, __dadd_ru(q, r));
    }
    const long o = i + (long)c * n;
    d[o] = __dadd_rn(p, s);
    lo[o] = __dsub_rd(__dadd_rd(p, tlo), slack);
    hi[o] = __dadd_ru(__dadd_ru(p, thi), slack);
}

// Upper bounds of the 2-norms of the rows of R (n x n, leading dimension n) and of the columns
// of A: out[i] for i < n rows of R, out[n + j] columns of A.
extern "C" __global__ void norms_up(int n, const double* R, const double* A, long lda, double* out) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 2 * n) return;
    double ss = 0.0;
    if (t < n) {
        for (int l = 0; l < n; ++l) { const double v = R[t + (long)l * n]; ss = __fma_ru(v, v, ss); }
    } else {
        const double* col = A + (long)(t - n) * lda;
        for (int l = 0; l < n; ++l) { const double v = col[l]; ss = __fma_ru(v, v, ss); }
    }
    out[t] = __dsqrt_ru(ss);
}

// [C] = I - R A as midpoint Cm and radius Cr (n x n) from P = fl(R A), overwriting P with Cm.
extern "C" __global__ void build_c(int n, double* P, const double* norms, double gamma, double n_eta,
        double* Cr, int* flags) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    bool bad = false;
    for (int j = blockIdx.y; j < n; j += gridDim.y) {
        const long t = i + (long)j * n;
        const double e = __dadd_ru(__dmul_ru(gamma, __dmul_ru(norms[i], norms[n + j])), n_eta);
        const double delta = i == j ? 1.0 : 0.0, p = P[t];
        const double lo = __dsub_rd(delta, p), hi = __dsub_ru(delta, p);
        const double m = 0.5 * lo + 0.5 * hi;
        const double r = __dadd_ru(fmax(__dsub_ru(hi, m), __dsub_ru(m, lo)), e);
        P[t] = m;
        Cr[t] = r;
        bad |= !isfinite(m) || !isfinite(r);
    }
    if (bad) atomicOr(flags, 1);
}

// [lo, hi] ⊇ M <vm, vr> (+ [-Mr, Mr] <vm, vr> when Mr is not null), M n x n (leading dimension n),
// vectors n x nrhs. One thread per (row, column).
extern "C" __global__ void enclose_mv(int n, int nrhs, const double* M, const double* Mr, const double* vm,
        const double* vr, double* lo, double* hi) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, c = blockIdx.y;
    if (i >= n || c >= nrhs) return;
    const double* m = vm + (long)c * n;
    const double* r = vr + (long)c * n;
    double slo = 0.0, shi = 0.0, rad = 0.0;
    for (int l = 0; l < n; ++l) {
        const double a = M[i + (long)l * n];
        slo = __fma_rd(a, m[l], slo);
        shi = __fma_ru(a, m[l], shi);
        rad = __fma_ru(fabs(a), r[l], rad);
        if (Mr) rad = __fma_ru(Mr[i + (long)l * n], __dadd_ru(fabs(m[l]), r[l]), rad);
    }
    const long o = i + (long)c * n;
    lo[o] = __dsub_rd(slo, rad);
    hi[o] = __dadd_ru(shi, rad);
}
