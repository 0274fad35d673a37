// SPIKE + diagonal pivoting for general tridiagonal systems (hylapack's xGTSV_SPIKE family;
// Chang, Stratton, Kim & Hwu 2012). See src/gtsv/mod.rs for the decomposition and
// src/gtsv/pivoting.rs for the pivoting rule; the device functions below perform the same
// operations in the same order (IEEE division, no FMA contraction).
//
// One level of the recursion works on a system of n rows in LAPACK's layout (dl, d, du, and
// F with leading dimension ldf), padded with identity rows to P partitions of m rows (m <= 32):
// partition j holds interior rows j*m .. j*m+m-2 and the separator row s_j = j*m+m-1. Each
// thread solves one partition's interior by diagonal pivoting. A CTA of T threads stages its
// T*m rows through shared memory: the global reads are consecutive (coalesced), and each thread
// then walks its own row of the tile (stride m+1, no bank conflicts): the data layout
// transformation of the paper (§III-A), done in shared memory instead of a separate pass.

template <typename T> __device__ __forceinline__ T load_a(const T *dl, long long n, long long r, int prev = 0) {
    return ((r >= 1 || prev) && r < n) ? dl[r - 1] : T(0);
}
template <typename T> __device__ __forceinline__ T load_b(const T *d, long long n, long long r) {
    return r < n ? d[r] : T(1);
}
template <typename T> __device__ __forceinline__ T load_c(const T *du, long long n, long long r) {
    return r + 1 < n ? du[r] : T(0);
}

// Stages the CTA's tile of a logical array (rows row0 .. row0 + blockDim.x*M) into shared memory,
// element e of partition t at t*(M+1)+e. kind: 0 = a, 1 = b, 2 = c, 3 = f (column col). Each
// thread loads M elements (stage_load), all before it stores any (stage_store): the loads are
// then in flight together (loads interleaved with shared-memory stores were issued one at a
// time, which made every level cost tens of microseconds whatever its size). A kernel that
// stages several arrays issues all their loads before the first store.
template <typename T, int M>
__device__ __forceinline__ void stage_load(T (&v)[M], int kind, const T *src, long long n, long long row0,
                                           long long ldf, int col, int prev = 0) {
#pragma unroll
    for (int t = 0; t < M; ++t) {
        long long r = row0 + threadIdx.x + (long long)t * blockDim.x;
        if (kind == 0) v[t] = load_a(src, n, r, prev);
        else if (kind == 1) v[t] = load_b(src, n, r);
        else if (kind == 2) v[t] = load_c(src, n, r);
        else v[t] = r < n ? src[r + (long long)col * ldf] : T(0);
    }
}
template <typename T, int M> __device__ __forceinline__ void stage_store(T *s, const T (&v)[M]) {
#pragma unroll
    for (int t = 0; t < M; ++t) {
        int i = threadIdx.x + t * blockDim.x;
        s[(i / M) * (M + 1) + (i % M)] = v[t];
    }
}
template <typename T, int M>
__device__ __forceinline__ void stage(T *s, int kind, const T *src, long long n, long long row0, long long ldf,
                                      int col) {
    T v[M];
    stage_load<T, M>(v, kind, src, n, row0, ldf, col);
    stage_store<T, M>(s, v);
}

// The columns of F a CTA solves for: blockIdx.y's share of the nrhs columns (all of them with a
// grid of one row; one each with a grid of nrhs rows, where a level is too small to fill the
// GPU otherwise).
__device__ __forceinline__ void my_columns(int nrhs, int &col0, int &col1) {
    int per = (nrhs + (int)gridDim.y - 1) / (int)gridDim.y;
    col0 = min(nrhs, (int)blockIdx.y * per);
    col1 = min(nrhs, col0 + per);
}

// The first tiles of a level kernel: the matrix (a, b, c) and, with col0 < nrhs, column col0 of
// F (and of X0 with x0), all loads issued before the first store.
template <typename T, int M>
__device__ __forceinline__ void stage_first(T *sa, T *sb, T *sc, T *sf, T *sx, const T *dl, const T *d,
                                            const T *du, const T *f, long long ldf, int col0, int nrhs,
                                            const T *x0, long long ld0, long long n, long long row0, int prev) {
    T va[M], vb[M], vc[M], vf[M], vx[M];
    bool rhs = col0 < nrhs;
    stage_load<T, M>(va, 0, dl, n, row0, ldf, 0, prev);
    stage_load<T, M>(vb, 1, d, n, row0, ldf, 0);
    stage_load<T, M>(vc, 2, du, n, row0, ldf, 0);
    if (rhs) stage_load<T, M>(vf, 3, f, n, row0, ldf, col0);
    if (rhs && x0) stage_load<T, M>(vx, 3, x0, n, row0, ld0, col0);
    stage_store<T, M>(sa, va);
    stage_store<T, M>(sb, vb);
    stage_store<T, M>(sc, vc);
    if (rhs) stage_store<T, M>(sf, vf);
    if (rhs && x0) stage_store<T, M>(sx, vx);
}

// Diagonal pivoting factorization of the mi-row block (a[k] = A[k][k-1], c[k] = A[k][k+1]).
// Returns false on an exactly zero pivot (the block is singular); the factors then hold Inf/NaN.
template <typename T>
__device__ bool dp_factor(const T *a, const T *b, const T *c, int mi, T *piv, T *mult, unsigned char *first2) {
    const T kappa = T(0.6180339887498949);
    bool ok = true;
    T bt = b[0];
    int k = 0;
    while (k < mi) {
        T a1 = k + 1 < mi ? a[k + 1] : T(0);
        T c0 = k + 1 < mi ? c[k] : T(0);
        T a2 = k + 2 < mi ? a[k + 2] : T(0);
        T b1 = k + 1 < mi ? b[k + 1] : T(0);
        T c1 = k + 2 < mi ? c[k + 1] : T(0);
        T sigma = fmax(fmax(fmax(fmax(fabs(a1), fabs(a2)), fabs(b1)), fabs(c0)), fabs(c1));
        if (k + 1 >= mi || fabs(bt) * sigma >= kappa * fabs(a1 * c0)) {
            if (bt == T(0)) ok = false;
            first2[k] = 0;
            piv[k] = bt;
            mult[k] = c0 / bt;
            bt = b1 - a1 * c0 / bt;
            k += 1;
        } else {
            T delta = bt * b1 - a1 * c0;
            if (delta == T(0)) ok = false;
            first2[k] = 1;
            first2[k + 1] = 0;
            piv[k] = bt;
            piv[k + 1] = delta;
            mult[k] = -(c0 * c1) / delta;
            mult[k + 1] = bt * c1 / delta;
            T b2 = k + 2 < mi ? b[k + 2] : T(0);
            bt = b2 - a2 * (bt * c1 / delta);
            k += 2;
        }
    }
    return ok;
}

// Solves the factored block for f in place.
template <typename T>
__device__ void dp_solve(const T *a, const T *b, const T *c, int mi, const T *piv, const T *mult,
                         const unsigned char *first2, T *f) {
    T yprev = T(0);
    int k = 0;
    while (k < mi) {
        T z = k > 0 ? f[k] - a[k] * yprev : f[k];
        if (first2[k]) {
            T z2 = f[k + 1];
            T delta = piv[k + 1];
            T y0 = (b[k + 1] * z - c[k] * z2) / delta;
            T y1 = (piv[k] * z2 - a[k + 1] * z) / delta;
            f[k] = y0;
            f[k + 1] = y1;
            yprev = y1;
            k += 2;
        } else {
            T y = z / piv[k];
            f[k] = y;
            yprev = y;
            k += 1;
        }
    }
    for (int k2 = mi - 1; k2 >= 0; --k2) {
        int nx = first2[k2] ? k2 + 2 : k2 + 1;
        if (nx < mi) f[k2] = f[k2] - mult[k2] * f[nx];
    }
}

template <typename T> __device__ __forceinline__ void atomic_max_nonneg(T *p, T v);
template <> __device__ __forceinline__ void atomic_max_nonneg<double>(double *p, double v) {
    atomicMax((unsigned long long *)p, (unsigned long long)__double_as_longlong(v));
}
template <> __device__ __forceinline__ void atomic_max_nonneg<float>(float *p, float v) {
    atomicMax((unsigned int *)p, __float_as_uint(v));
}

// Folds a warp's per-thread residual maxima into one column's summaries (the whole warp calls
// it: the shuffles need every lane).
template <typename T> __device__ __forceinline__ void summarize(T *rmax, T *smax, T *bmax, T rm, T sm, T bm) {
    for (int off = 16; off > 0; off >>= 1) {
        rm = fmax(rm, __shfl_xor_sync(0xffffffffu, rm, off));
        sm = fmax(sm, __shfl_xor_sync(0xffffffffu, sm, off));
        bm = fmax(bm, __shfl_xor_sync(0xffffffffu, bm, off));
    }
    if ((threadIdx.x & 31) == 0) {
        atomic_max_nonneg(rmax, rm);
        atomic_max_nonneg(smax, sm);
        atomic_max_nonneg(bmax, bm);
    }
}


// Every level kernel below tiles the partitions the same way: CTA k stages partitions
// k*(T-1) .. k*(T-1)+T-1 (T = blockDim.x threads, one partition each) and owns the first T-1;
// the last one is a halo, the next CTA's first partition, computed here again so that each
// separator row sees both neighbouring partitions without another pass over memory.
__device__ __forceinline__ long long first_partition() { return (long long)blockIdx.x * (blockDim.x - 1); }

// Which of a level kernel's P partitions it answers for, and where (`Span` in src/gtsv/gpu/plan.rs).
// A whole system: own = ldp = P, prev = 0. A slice of a larger system (its top level streamed
// through the GPU in pieces): partitions 0 .. own - 1 are the slice's, partition own (if P > own)
// is the next slice's first, read only for its coupling; prev != 0 says the row before the
// slice exists, at index -1 of DL (and of X0), and the separator values at XS[-1]. The separator
// arrays (RF, XS, RF_SPEC) have leading dimension ldp.
struct Span {
    long long own, ldp;
    int prev;
};

// The accurate residual r = f0 - A x0 of row e of thread t's partition (a refinement step's
// right-hand side) and its scale |a x| + |d x| + |c x| + |f0|, from the staged tiles of F0 (sf)
// and X0 (sx); `before` and `after` are X0 just outside the tile (edge_x). Every kernel that
// needs it evaluates it the same way, so they agree bit for bit.
template <typename T, int M>
__device__ __forceinline__ T residual_row(int e, const T *a, const T *b, const T *c, const T *sf, const T *sx,
                                          T before, T after, T &scale) {
    int t = threadIdx.x;
    const T *xr = sx + t * (M + 1), *fr = sf + t * (M + 1);
    T xm = e > 0 ? xr[e - 1] : (t > 0 ? sx[(t - 1) * (M + 1) + M - 1] : before);
    T xp = e + 1 < M ? xr[e + 1] : (t + 1 < (int)blockDim.x ? sx[(t + 1) * (M + 1)] : after);
    scale = fabs(b[e] * xr[e]) + fabs(a[e] * xm) + fabs(c[e] * xp) + fabs(fr[e]);
    return T(residual_acc(double(fr[e]), double(a[e]), double(xm), double(b[e]), double(xr[e]), double(c[e]),
                          double(xp)));
}

// X0 in the rows just before and after the CTA's tile (zero outside the system).
template <typename T, int M>
__device__ __forceinline__ void edge_x(long long n, const T *x0, long long ld0, int col, long long row0, int prev,
                                       T &before, T &after) {
    long long end = row0 + (long long)blockDim.x * M;
    before = (row0 >= 1 || prev) && row0 - 1 < n ? x0[row0 - 1 + col * ld0] : T(0);
    after = end < n ? x0[end + col * ld0] : T(0);
}

// Pass 1 of a level: factors every partition (M rows, separator last), solves for the spikes
// W = A_j^-1 (a_0 e_0), V = A_j^-1 (c e_last) and Y = A_j^-1 f, and writes the separator
// system straight from their top and bottom entries: row j couples separator j to j-1 and j+1,
//   rdl[j-1] = -a_s WB_j,  rd[j] = d_s - a_s VB_j - c_s WT_{j+1},  rdu[j] = -c_s VT_{j+1},
//   rf[j] = f_s - a_s YB_j - c_s YT_{j+1}
// (P rows in LAPACK's layout; rf is P x nrhs). flags bit 0: a zero pivot.
//
// RES (a refinement step's top level): f is the residual f0 - A x0 (residual_row), not read
// from memory but evaluated here from F = f0 and X0 (leading dimension ld0); the max |r_i|,
// max (|a x| + |d x| + |c x| + |f|) and max |f| of the owned rows go to rmax, smax, bmax.
template <typename T, int M, bool RES, bool SLICE>
__device__ void spike_reduce(long long n, const T *dl, const T *d, const T *du, const T *f, long long ldf, int nrhs,
                             long long P, Span span, T *rdl, T *rd, T *rdu, T *rf, int *flags, const T *x0,
                             long long ld0, T *rmax, T *smax, T *bmax) {
    constexpr int MI = M - 1;
    extern __shared__ unsigned char smem_raw[];
    T *sa = reinterpret_cast<T *>(smem_raw);
    int stride = blockDim.x * (M + 1);
    T *sb = sa + stride, *sc = sb + stride, *sf = sc + stride, *sx = sf + stride;
    T *top_w = sx + (RES ? stride : 0), *top_v = top_w + blockDim.x, *top_y = top_v + blockDim.x;
    int t = threadIdx.x;
    long long j = first_partition() + t;
    long long row0 = first_partition() * M;
    long long my0 = row0 + (long long)t * M;
    // A whole level's kernels are compiled without the span (SLICE false): the same code as
    // before slices existed, no registers spent on it.
    bool owned = t + 1 < (int)blockDim.x && j < (SLICE ? span.own : P);
    int prev = SLICE ? span.prev : 0;
    long long ldp = SLICE ? span.ldp : P;
    // The first column's tiles load with the matrix, not after the factorization.
    int col0, col1;
    my_columns(nrhs, col0, col1);
    stage_first<T, M>(sa, sb, sc, sf, sx, dl, d, du, f, ldf, col0, nrhs, RES ? x0 : nullptr, ld0, n, row0, prev);
    __syncthreads();
    const T *a = sa + t * (M + 1), *b = sb + t * (M + 1), *c = sc + t * (M + 1);
    RegFactor<T, MI> F;
    T tmp[MI], tmp2[MI];
    bool ok = factor_and_spikes<T, MI>(a, b, c, F, tmp, tmp2);
    if (owned && blockIdx.y == 0 && !ok) atomicOr(flags, 1);
    top_w[t] = tmp[0];
    top_v[t] = tmp2[0];
    // The separator row of this partition (its last staged row).
    T as = a[MI], ds = b[MI], cs = c[MI];
    T wb = tmp[MI - 1], vb = tmp2[MI - 1];
    bool next = j + 1 < P;
    __syncthreads();
    if (owned && blockIdx.y == 0) {
        if (j > 0 || prev) rdl[j - 1] = -(as * wb);
        rd[j] = ds - as * vb - cs * (next ? top_w[t + 1] : T(0));
        if (next) rdu[j] = -(cs * top_v[t + 1]);
    }
    for (int col = col0; col < col1; ++col) {
        if (col > col0) {
            __syncthreads();
            stage<T, M>(sf, 3, f, n, row0, ldf, col);
            if (RES) stage<T, M>(sx, 3, x0, n, row0, ld0, col);
            __syncthreads();
        }
        const T *fr = sf + t * (M + 1);
        T fs = fr[MI];
        if (RES) {
            T before, after;
            edge_x<T, M>(n, x0, ld0, col, row0, prev, before, after);
            T rm = T(0), sm = T(0), bm = T(0);
#pragma unroll
            for (int e = 0; e < M; ++e) {
                T scale;
                T r = residual_row<T, M>(e, a, b, c, sf, sx, before, after, scale);
                if (e < MI) tmp[e] = r;
                else fs = r;
                if (owned && my0 + e < n) {
                    rm = fmax(rm, fabs(r));
                    sm = fmax(sm, scale);
                    bm = fmax(bm, fabs(fr[e]));
                }
            }
            summarize(rmax + col, smax + col, bmax + col, rm, sm, bm);
        } else {
#pragma unroll
            for (int e = 0; e < MI; ++e) tmp[e] = fr[e];
        }
        reg_solve<T, MI>(a, b, c, F, tmp);
        top_y[t] = tmp[0];
        __syncthreads();
        if (owned) rf[j + col * ldp] = fs - as * tmp[MI - 1] - cs * (next ? top_y[t + 1] : T(0));
    }
}

// Pass 2 of a level: with the separators' solution XS (P x nrhs), each partition re-solves its
// interior with the couplings moved to the right-hand side and writes X (leading dimension ldx).
// X may be F itself (x == f, ldx == ldf): a CTA reads its whole tile before writing it, and a halo
// partition is written only by the CTA that owns it. With check != 0 it also accumulates, per
// column, the max |r_i|, max (|a x| + |d x| + |c x| + |f|) and max |f| of the owned rows,
// separators included, into rmax, smax, bmax (flags bit 1: a non-finite value); the halo's
// solution is what the last separator row needs, so the check needs x != f.
//
// UPD (a refinement step's top level, with check): F holds the original right-hand sides F0;
// the right-hand sides solved for are the residual of the old solution X0 (leading dimension
// ld0), evaluated here as in the RES reduce (residual_row). The kernel writes X0 + the
// correction to X and checks that sum against F0 with the accurate residual (residual_acc):
// no passes of their own for the residual, the sum and its check.
//
// SPEC (top level, with check, not UPD): the check uses the accurate residual, and the kernel
// also does what a refinement step's top-level reduce (spike_reduce with RES) would do with
// that residual, writing the separator system's right-hand sides to rf_spec (P x nrhs, the
// same values bit for bit): a refinement step then starts one level down, with no pass of its
// own over the top level.
template <typename T, int M, bool UPD, bool SPEC, bool SLICE>
__device__ void spike_backsub(long long n, const T *dl, const T *d, const T *du, const T *f, long long ldf, T *x,
                              long long ldx, int nrhs, long long P, Span span, const T *XS, int check, T *rmax,
                              T *smax, T *bmax, int *flags, const T *x0, long long ld0, T *rf_spec) {
    constexpr int MI = M - 1;
    extern __shared__ unsigned char smem_raw[];
    T *sa = reinterpret_cast<T *>(smem_raw);
    int stride = blockDim.x * (M + 1);
    T *sb = sa + stride, *sc = sb + stride, *sf = sc + stride, *sx = sf + stride;
    int t = threadIdx.x;
    long long j = first_partition() + t;
    long long row0 = first_partition() * M;
    bool owned = t + 1 < (int)blockDim.x && j < (SLICE ? span.own : P);
    int prev = SLICE ? span.prev : 0;
    long long ldp = SLICE ? span.ldp : P;
    // The first column's tiles load with the matrix, not after the factorization.
    int col0, col1;
    my_columns(nrhs, col0, col1);
    stage_first<T, M>(sa, sb, sc, sf, sx, dl, d, du, f, ldf, col0, nrhs, UPD ? x0 : nullptr, ld0, n, row0, prev);
    __syncthreads();
    const T *a = sa + t * (M + 1), *b = sb + t * (M + 1), *c = sc + t * (M + 1);
    RegFactor<T, MI> F;
    reg_factor<T, MI>(a, b, c, F);
    T tmp[MI];
    long long my0 = row0 + (long long)t * M;
    for (int col = col0; col < col1; ++col) {
        if (col > col0) {
            __syncthreads();
            stage<T, M>(sf, 3, f, n, row0, ldf, col);
            if (UPD) stage<T, M>(sx, 3, x0, n, row0, ld0, col);
            __syncthreads();
        }
        T *fr = sf + t * (M + 1);
        T xl = ((j > 0 || prev) && j <= P) ? XS[j - 1 + col * ldp] : T(0);
        T xr = j < P ? XS[j + col * ldp] : T(0);
        if (UPD) {
            T before, after, scale;
            edge_x<T, M>(n, x0, ld0, col, row0, prev, before, after);
#pragma unroll
            for (int e = 0; e < MI; ++e) tmp[e] = residual_row<T, M>(e, a, b, c, sf, sx, before, after, scale);
        } else {
#pragma unroll
            for (int e = 0; e < MI; ++e) tmp[e] = fr[e];
        }
        tmp[0] = tmp[0] - a[0] * xl;
        tmp[MI - 1] = tmp[MI - 1] - c[MI - 1] * xr;
        reg_solve<T, MI>(a, b, c, F, tmp);
        // The solution's tile goes to sf (to sx as X0 + correction with UPD), the separator last.
        T *out = UPD ? sx + t * (M + 1) : fr;
        if (UPD) {
            // Row my0 - 1 is the previous partition's separator, outside the tile for t = 0.
            xl = (my0 >= 1 || prev) && my0 - 1 < n ? x0[my0 - 1 + col * ld0] + xl : T(0);
#pragma unroll
            for (int e = 0; e < MI; ++e) tmp[e] = out[e] + tmp[e];
            xr = out[MI] + xr;
        }
        T rm = T(0), sm = T(0), bm = T(0);
        bool finite = true;
        // One row's residual (the plain one, or with UPD or SPEC the accurate one), into rm, sm,
        // bm when `into`.
        auto account = [&](bool into, T fi, T am, T xm, T bi, T xi, T cp, T xp) {
            T r = UPD || SPEC ? T(residual_acc(double(fi), double(am), double(xm), double(bi), double(xi),
                                               double(cp), double(xp)))
                              : fi - (bi * xi + am * xm + cp * xp);
            if (into) {
                T s = fabs(bi * xi) + fabs(am * xm) + fabs(cp * xp) + fabs(fi);
                finite = finite && isfinite(xi) && isfinite(r) && isfinite(s);
                rm = fmax(rm, fabs(r));
                sm = fmax(sm, s);
                bm = fmax(bm, fabs(fi));
            }
            return r;
        };
        // SPEC: the interior rows' residuals, the halo partition's too (its top is needed).
        T rr[MI];
        if (check && (owned || SPEC)) {
#pragma unroll
            for (int e = 0; e < MI; ++e) {
                rr[e] = T(0);
                if (my0 + e >= n) continue;
                T xm = e > 0 ? tmp[e - 1] : xl;
                T xp = e + 1 < MI ? tmp[e + 1] : xr;
                rr[e] = account(owned, fr[e], a[e], xm, b[e], tmp[e], c[e], xp);
            }
        }
        T fs = fr[MI];
        __syncthreads();
#pragma unroll
        for (int e = 0; e < MI; ++e) out[e] = tmp[e];
        out[MI] = xr;
        __syncthreads();
        const T *sol = UPD ? sx : sf;
        // The separator row s: x_{s-1} is this partition's last row, x_{s+1} the next one's first.
        long long s = my0 + MI;
        T rs = T(0);
        if (check && owned && s < n) {
            T xp = s + 1 < n ? sol[(t + 1) * (M + 1)] : T(0);
            rs = account(true, fs, a[MI], tmp[MI - 1], b[MI], xr, c[MI], xp);
        }
        if (check) {
            summarize(rmax + col, smax + col, bmax + col, rm, sm, bm);
            if (!finite) atomicOr(flags, 2);
        }
        int count = (blockDim.x - 1) * M;
        for (int i = t; i < count; i += blockDim.x) {
            long long r = row0 + i;
            if (r < n) x[r + col * ldx] = sol[(i / M) * (M + 1) + (i % M)];
        }
        if (SPEC) {
            // As spike_reduce with RES: Y = A_j^-1 r, then the separator row's right-hand side.
            T *top_y = sf + stride;
            reg_solve<T, MI>(a, b, c, F, rr);
            top_y[t] = rr[0];
            __syncthreads();
            bool next = j + 1 < P;
            if (owned) rf_spec[j + col * ldp] = rs - a[MI] * rr[MI - 1] - c[MI] * (next ? top_y[t + 1] : T(0));
        }
    }
}

// Row r's accurate residual f - (a xm + b x + c xp) and its scale |b x| + |a xm| + |c xp| + |f|.
template <typename T>
__device__ __forceinline__ T row_residual(T fi, T am, T xm, T bi, T xi, T cp, T xp, T &scale) {
    scale = fabs(bi * xi) + fabs(am * xm) + fabs(cp * xp) + fabs(fi);
    return T(residual_acc(double(fi), double(am), double(xm), double(bi), double(xi), double(cp), double(xp)));
}

// row_residual of row i of a system in global memory (X and F one column each).
template <typename T>
__device__ __forceinline__ T residual_at(long long n, const T *dl, const T *d, const T *du, const T *xc, const T *fc,
                                         long long i, T &scale) {
    T xm = i > 0 ? xc[i - 1] : T(0), xp = i + 1 < n ? xc[i + 1] : T(0);
    return row_residual(fc[i], load_a(dl, n, i), xm, d[i], xc[i], load_c(du, n, i), xp, scale);
}
// A window's row r of array `kind` (as stage_load): rows before the system are identity rows,
// as load_b pads the rows after it (row 0's coupling to them, a, is zero). An `inner` window
// (rows row0 - 1 .. row0 + NT M all in the system) loads with no checks: one address and
// M loads at fixed offsets, where the checked loads cost a dozen integer instructions each.
template <typename T, int M, int NT>
__device__ __forceinline__ void window_load(T (&v)[M], int kind, const T *src, long long n, long long row0,
                                            long long ldf, int col, bool inner) {
    if (inner) {
        const T *p = src + (kind == 0 ? row0 - 1 : row0) + (kind == 3 ? (long long)col * ldf : 0) + threadIdx.x;
#pragma unroll
        for (int t = 0; t < M; ++t) v[t] = p[t * NT];
        return;
    }
#pragma unroll
    for (int t = 0; t < M; ++t) {
        long long r = row0 + threadIdx.x + (long long)t * NT;
        if (r < 0) v[t] = kind == 1 ? T(1) : T(0);
        else if (kind == 0) v[t] = load_a(src, n, r);
        else if (kind == 1) v[t] = load_b(src, n, r);
        else if (kind == 2) v[t] = load_c(src, n, r);
        else v[t] = r < n ? src[r + (long long)col * ldf] : T(0);
    }
}

// Whether row i of window k's owned rows (0 .. rows - 1) lies within hrows of a boundary
// between windows, where the neighbour reads it as its halo: its X waits in x until the answer
// is accepted (window_commit). The window's other rows take X in place in F, their F saved in x
// first (window_restore puts it back where the answer is rejected).
__device__ __forceinline__ bool window_deferred(long long k, long long windows, long long i, long long rows,
                                                long long hrows) {
    return (k > 0 && i < hrows) || (k + 1 < windows && rows - i <= hrows);
}

// Parallel cyclic reduction of a window's separator system (ra, rb, rc, rr; row t of the
// NT rows is thread t's, its couplings rl, ru and diagonal rd also in registers): after
// the step of stride s, row t couples only to rows t - 2s and t + 2s (rows outside the window
// are identity rows). Each row keeps its diagonal's reciprocal in sq. The steps stop once every
// row's couplings are below the unit roundoff of its diagonal (strongly dominant systems: after
// two or three), where what is left would not change the answer. The solution is rr * sq.
template <typename T, int NT>
__device__ __forceinline__ void window_pcr(T *ra, T *rb, T *rc, T *rr, T *sq, T rl, T rd, T ru, T unit) {
    constexpr int nt = NT;
    const int t = threadIdx.x;
    sq[t] = T(1) / rd;
    bool coupled = !(fabs(rl) + fabs(ru) <= unit * fabs(rd));
    for (int s = 1; s < nt && __syncthreads_or(coupled); s <<= 1) {
        T al = T(0), cl = T(0), fl = T(0), il = T(1), ap = T(0), cp = T(0), fp = T(0), ip = T(1);
        if (t >= s) {
            al = ra[t - s];
            cl = rc[t - s];
            fl = rr[t - s];
            il = sq[t - s];
        }
        if (t + s < nt) {
            ap = ra[t + s];
            cp = rc[t + s];
            fp = rr[t + s];
            ip = sq[t + s];
        }
        T k1 = ra[t] * il, k2 = rc[t] * ip;
        T na = -(al * k1), nc = -(cp * k2);
        T nb = rb[t] - cl * k1 - ap * k2;
        T nf = rr[t] - fl * k1 - fp * k2;
        coupled = !(fabs(na) + fabs(nc) <= unit * fabs(nb));
        T ni = T(1) / nb;
        __syncthreads();
        ra[t] = na;
        rb[t] = nb;
        rc[t] = nc;
        rr[t] = nf;
        sq[t] = ni;
    }
}

// The window solve: truncated SPIKE in one pass, for systems whose separator system is
// strongly diagonally dominant (diagonally dominant matrices, typically). Window k owns the
// OWN = NT - 2 H partitions k OWN .. k OWN + OWN - 1 (NT = blockDim.x, H = halo) and stages H
// more on each side; the CTAs take windows blockIdx.x, blockIdx.x + gridDim.x, ... up to
// WINDOWS. A window is reduced as spike_reduce reduces a level's partitions, its T-row
// separator system solved in shared memory by parallel cyclic reduction (stable where that
// system is diagonally dominant) with the couplings beyond its outermost partitions dropped,
// and X = Y - W x_L - V x_R written for the partitions it owns: DL, D, DU and F are read once
// (and the halos), X written once, no levels.
//
// Dropping the couplings moves an owned separator by about the product of the halo rows'
// ratios q_j = (|rdl_j| + |rdu_j|) / |rd_j| times the solution beyond the halo. A window where
// some q_j is not below 1/2, or either halo's product is above the unit roundoff, or a
// partition has a zero pivot, writes nothing and sets flags bit 2; CTAs stop at their next
// window: the caller then runs the full recursion. Otherwise the answer is judged as the top
// level's check judges it: the accurate residual of every owned row goes into rmax, smax,
// bmax of column blockIdx.y (flags bit 1: a non-finite value), except the two rows at each
// boundary between windows, whose neighbours another window wrote (gtsv_window_edges).
//
// A launch takes windows first .. last - 1 of the system's `windows` (a host-pointer solve
// launches each stretch as its rows arrive). With in_place, X goes into F in place except in
// the rows the neighbours read (window_deferred), whose X goes to x; the rows taking X in place
// have their F saved in x as they are loaded, so a rejected answer can be undone. Without, all
// of X goes to x and F is only read. Each CTA ends by writing how many windows it loaded to
// reached[blockIdx.x + blockIdx.y gridDim.x] (window_restore undoes those).
template <typename T, int M, int NT>
__device__ void window_solve(long long n, const T *dl, const T *d, const T *du, T *f, long long ldf, T *x,
                             long long ldx, long long P, int halo, long long windows, long long first,
                             long long last, int in_place, T *rmax, T *smax, T *bmax, int *flags,
                             long long *reached) {
    constexpr int MI = M - 1;
    const T unit = sizeof(T) == 8 ? T(1.1102230246251565e-16) : T(5.9604645e-08);
    extern __shared__ unsigned char smem_raw[];
    constexpr int nt = NT;
    const int t = threadIdx.x, col = blockIdx.y;
    constexpr int stride = nt * (M + 1);
    T *sa = reinterpret_cast<T *>(smem_raw);
    T *sb = sa + stride, *sc = sb + stride, *sf = sc + stride;
    T *ra = sf + stride, *rb = ra + nt, *rc = rb + nt, *rr = rc + nt;
    T *top_w = rr + nt, *top_v = top_w + nt, *top_y = top_v + nt, *sq = top_y + nt;
    const long long own = nt - 2 * halo;
    const long long rows = own * M, hrows = (long long)halo * M;
    long long started = 0;
    auto leave = [&]() {
        if (t == 0) reached[blockIdx.x + (long long)blockIdx.y * gridDim.x] = started;
    };
    // Each thread's residual maxima over all the windows its CTA takes, folded into the column's
    // summaries once at the end: an atomic per warp and window (tens of thousands on one
    // address at n = 2^23) queued behind each other at the L2.
    T rm = T(0), sm = T(0), bm = T(0);
    bool finite = true;
    // Whether another CTA gave up, read a window ahead: the load's latency then hides behind a
    // window's work instead of holding the CTA at the barrier.
    int given_up = t == 0 ? *(volatile int *)flags & 4 : 0;
    for (long long k = first + blockIdx.x; k < last; k += gridDim.x) {
        // Also the barrier between windows (their shared memory is reused).
        if (__syncthreads_or(given_up)) {
            leave();
            return;
        }
        if (t == 0) given_up = *(volatile int *)flags & 4;
        ++started;
        long long j0 = k * own - halo;
        long long j = j0 + t;
        long long row0 = j0 * M;
        long long my0 = row0 + (long long)t * M;
        {
            bool inner = row0 >= 1 && row0 + nt * M < n;
            T va[M], vb[M], vc[M], vf[M];
            window_load<T, M, NT>(va, 0, dl, n, row0, ldf, 0, inner);
            window_load<T, M, NT>(vb, 1, d, n, row0, ldf, 0, inner);
            window_load<T, M, NT>(vc, 2, du, n, row0, ldf, 0, inner);
            window_load<T, M, NT>(vf, 3, f, n, row0, ldf, col, inner);
#pragma unroll
            for (int e = 0; e < M; ++e) {
                long long r = row0 + t + (long long)e * NT, i = r - k * rows;
                if (in_place && i >= 0 && i < rows && r < n && !window_deferred(k, windows, i, rows, hrows))
                    x[r + col * ldx] = vf[e];
            }
            stage_store<T, M>(sa, va);
            stage_store<T, M>(sb, vb);
            stage_store<T, M>(sc, vc);
            stage_store<T, M>(sf, vf);
        }
        __syncthreads();
        const T *a = sa + t * (M + 1), *b = sb + t * (M + 1), *c = sc + t * (M + 1), *fr = sf + t * (M + 1);
        T w[MI], v[MI], y[MI];
        bool ok;
        {
            RegFactor<T, MI> F;
            ok = factor_and_spikes<T, MI>(a, b, c, F, w, v);
#pragma unroll
            for (int e = 0; e < MI; ++e) y[e] = fr[e];
            reg_solve<T, MI>(a, b, c, F, y);
        }
        top_w[t] = w[0];
        top_v[t] = v[0];
        top_y[t] = y[0];
        __syncthreads();
        // Partition t's row of the window's separator system (as spike_reduce writes it),
        // without the couplings beyond the window.
        bool next = t + 1 < nt;
        T as = a[MI], ds = b[MI], cs = c[MI];
        T rl = t > 0 ? -(as * w[MI - 1]) : T(0);
        T rd = ds - as * v[MI - 1] - cs * (next ? top_w[t + 1] : T(0));
        T ru = next ? -(cs * top_v[t + 1]) : T(0);
        T rf = fr[MI] - as * y[MI - 1] - cs * (next ? top_y[t + 1] : T(0));
        T q = (fabs(rl) + fabs(ru)) / fabs(rd);
        ra[t] = rl;
        rb[t] = rd;
        rc[t] = ru;
        rr[t] = rf;
        sq[t] = q;
        __syncthreads();
        bool unsuited = !ok || !(q < T(0.5));
        if (t < 32) {
            // The halos' products of q: lane l takes partitions l and l + 32 of each halo
            // (halo < NT / 2 = 64), then a tree across the warp.
            T left = (t < halo ? sq[t] : T(1)) * (t + 32 < halo ? sq[t + 32] : T(1));
            T right = (t < halo ? sq[nt - 1 - t] : T(1)) * (t + 32 < halo ? sq[nt - 33 - t] : T(1));
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) {
                left *= __shfl_xor_sync(0xffffffffu, left, off);
                right *= __shfl_xor_sync(0xffffffffu, right, off);
            }
            unsuited = unsuited || !(left <= unit) || !(right <= unit);
        }
        if (__syncthreads_or(unsuited)) {
            if (t == 0) atomicOr(flags, 4);
            leave();
            return;
        }
        window_pcr<T, NT>(ra, rb, rc, rr, sq, rl, rd, ru, unit);
        top_v[t] = rr[t] * sq[t];
        __syncthreads();
        T xl = t > 0 ? top_v[t - 1] : T(0);
        T xr = top_v[t];
#pragma unroll
        for (int e = 0; e < MI; ++e) y[e] = y[e] - w[e] * xl - v[e] * xr;
        top_w[t] = y[0];
        __syncthreads();
        bool owned = t >= halo && t < nt - halo && j < P;
        if (owned) {
            auto account = [&](long long r, T fi, T am, T xm, T bi, T xi, T cp, T xp) {
                if (r >= n) return;
                T s;
                T ri = row_residual(fi, am, xm, bi, xi, cp, xp, s);
                finite = finite && isfinite(xi) && isfinite(ri) && isfinite(s);
                // A NaN is caught by `finite`, so `larger` (no NaN rules) is enough here.
                rm = larger(rm, fabs(ri));
                sm = larger(sm, s);
                bm = larger(bm, fabs(fi));
            };
            // Row my0 leans on the previous partition's separator, the separator row on the
            // next partition's first row: at the owned range's ends, rows another window
            // writes.
            bool edge_before = t == halo && j > 0, edge_after = t == nt - halo - 1 && j + 1 < P;
#pragma unroll
            for (int e = 0; e < MI; ++e) {
                if (e == 0 && edge_before) continue;
                T xm = e > 0 ? y[e - 1] : xl;
                T xp = e + 1 < MI ? y[e + 1] : xr;
                account(my0 + e, fr[e], a[e], xm, b[e], y[e], c[e], xp);
            }
            if (!edge_after) account(my0 + MI, fr[MI], as, y[MI - 1], ds, xr, cs, top_w[t + 1]);
        }
        // X through the F tile (every thread is done reading it), for coalesced writes.
        __syncthreads();
        T *out = sf + t * (M + 1);
#pragma unroll
        for (int e = 0; e < MI; ++e) out[e] = y[e];
        out[MI] = xr;
        __syncthreads();
        for (int i = t; i < rows; i += nt) {
            long long r = k * rows + i;
            if (r >= n) continue;
            T xi = sf[(halo + i / M) * (M + 1) + i % M];
            if (!in_place || window_deferred(k, windows, i, rows, hrows)) x[r + col * ldx] = xi;
            else f[r + col * ldf] = xi;
        }
    }
    leave();
    summarize(rmax + col, smax + col, bmax + col, rm, sm, bm);
    if (!finite) atomicOr(flags, 2);
}

// An accepted window answer's deferred rows (window_deferred) of column blockIdx.y, X from x
// into F: rows b rows - hrows .. b rows + hrows - 1 around the boundaries b = 1 .. windows - 1
// (where these overlap, a row is copied twice, the same value).
template <typename T>
__device__ void window_commit(long long n, T *f, long long ldf, const T *x, long long ldx, long long rows,
                              long long hrows, long long windows) {
    const int col = blockIdx.y;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (windows - 1) * 2 * hrows) return;
    const long long r = (i / (2 * hrows) + 1) * rows - hrows + i % (2 * hrows);
    if (r >= 0 && r < n) f[r + col * ldf] = x[r + col * ldx];
}

// A rejected window answer undone in column blockIdx.y: CTA k puts back F of window k's rows
// that took X in place, from x, if a CTA of the window solve loaded window k (window k is the
// (k / ctas)-th that CTA k % ctas took).
template <typename T>
__device__ void window_restore(long long n, T *f, long long ldf, const T *x, long long ldx, long long rows,
                               long long hrows, long long windows, long long ctas, const long long *reached) {
    const int col = blockIdx.y;
    const long long k = blockIdx.x;
    if (k / ctas >= reached[k % ctas + col * ctas]) return;
    for (long long i = threadIdx.x; i < rows; i += blockDim.x) {
        const long long r = k * rows + i;
        if (r < n && !window_deferred(k, windows, i, rows, hrows)) f[r + col * ldf] = x[r + col * ldx];
    }
}

// The accurate residual of the rows at the boundaries between window_solve's CTAs, from X as
// written: rows k ROWS - 1 and k ROWS for k = 1 .. CTAS - 1 (ROWS: the rows a CTA owns), of
// column blockIdx.y, into rmax, smax, bmax (flags bit 1: a non-finite value). Nothing where
// the window solve gave up (flags bit 2, final once it has run).
template <typename T>
__device__ void window_edges(long long n, const T *dl, const T *d, const T *du, const T *f, long long ldf,
                             const T *x, long long ldx, long long rows, long long ctas, T *rmax, T *smax, T *bmax,
                             int *flags) {
    if (*(volatile int *)flags & 4) return;
    int col = blockIdx.y;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    T rm = T(0), sm = T(0), bm = T(0);
    bool finite = true;
    if (i < 2 * (ctas - 1)) {
        long long r = (i / 2 + 1) * rows - 1 + (i % 2);
        if (r < n) {
            T s;
            T ri = residual_at(n, dl, d, du, x + col * ldx, f + col * ldf, r, s);
            T xi = x[r + col * ldx];
            finite = isfinite(xi) && isfinite(ri) && isfinite(s);
            rm = fabs(ri);
            sm = s;
            bm = fabs(f[r + col * ldf]);
        }
    }
    summarize(rmax + col, smax + col, bmax + col, rm, sm, bm);
    if (!finite) atomicOr(flags, 2);
}

// The bottom of the recursion: one CTA solves a small system (n <= the shared arrays' size) by
// diagonal pivoting. Thread 0 factors (the factors go to shared memory); then each thread
// solves one right-hand side in place in global memory.
template <typename T>
__device__ void base_solve(long long n, const T *dl, const T *d, const T *du, T *f, long long ldf, int nrhs, int *flags) {
    extern __shared__ unsigned char smem_raw[];
    T *sa = reinterpret_cast<T *>(smem_raw);
    T *sb = sa + n, *sc = sb + n, *piv = sc + n, *mult = piv + n;
    unsigned char *first2 = reinterpret_cast<unsigned char *>(mult + n);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        sa[i] = load_a(dl, n, i);
        sb[i] = load_b(d, n, i);
        sc[i] = load_c(du, n, i);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (!dp_factor(sa, sb, sc, (int)n, piv, mult, first2)) atomicOr(flags, 1);
    }
    __syncthreads();
    for (int col = threadIdx.x; col < nrhs; col += blockDim.x) {
        dp_solve(sa, sb, sc, (int)n, piv, mult, first2, f + col * ldf);
    }
}

// The bottom levels of the recursion in one CTA (gtsv_tail): where the systems are a few
// thousand rows, a kernel per level costs its launch and ramp (about 6 us each on an H100)
// for a few hundred threads' work; here the levels follow each other after a barrier. The
// systems: sys 0 is the first one the tail reduces, sys k + 1 the separator system of sys k
// (its P = n[k + 1] partitions), sys `levels` the bottom one, solved by base_solve. Each
// system's F has leading dimension n[k] and is overwritten by its solution, as the level
// kernels do. The arithmetic is theirs, operation for operation, so the answers agree bit for
// bit.
#define TAIL_MAX_LEVELS 12
struct TailSystems {
    long long levels;
    long long n[TAIL_MAX_LEVELS + 1];
    unsigned long long dl[TAIL_MAX_LEVELS + 1], d[TAIL_MAX_LEVELS + 1], du[TAIL_MAX_LEVELS + 1],
        f[TAIL_MAX_LEVELS + 1];
};

// One partition's rows (separator last) straight from global memory, identity-padded.
template <typename T, int M>
__device__ __forceinline__ void tail_rows(const T *dl, const T *d, const T *du, long long n, long long r0, T (&a)[M],
                                          T (&b)[M], T (&c)[M]) {
#pragma unroll
    for (int e = 0; e < M; ++e) {
        a[e] = load_a(dl, n, r0 + e);
        b[e] = load_b(d, n, r0 + e);
        c[e] = load_c(du, n, r0 + e);
    }
}

// scratch: 4 P + 2 P nrhs elements for the first (largest) system's P: each partition's top
// and bottom entries of W, V and Y.
template <typename T, int M>
__device__ void tail_solve(const TailSystems &S, int nrhs, T *scratch, int *flags) {
    constexpr int MI = M - 1;
    for (int k = 0; k < S.levels; ++k) {
        long long n = S.n[k], P = S.n[k + 1];
        const T *dl = (const T *)S.dl[k], *d = (const T *)S.d[k], *du = (const T *)S.du[k];
        const T *f = (const T *)S.f[k];
        T *wt = scratch, *wb = wt + P, *vt = wb + P, *vb = vt + P, *yt = vb + P, *yb = yt + P * nrhs;
        for (long long j = threadIdx.x; j < P; j += blockDim.x) {
            T a[M], b[M], c[M];
            tail_rows<T, M>(dl, d, du, n, j * M, a, b, c);
            RegFactor<T, MI> F;
            T w[MI], v[MI];
            if (!factor_and_spikes<T, MI>(a, b, c, F, w, v)) atomicOr(flags, 1);
            wt[j] = w[0];
            wb[j] = w[MI - 1];
            vt[j] = v[0];
            vb[j] = v[MI - 1];
            for (int col = 0; col < nrhs; ++col) {
#pragma unroll
                for (int e = 0; e < MI; ++e) {
                    long long r = j * M + e;
                    w[e] = r < n ? f[r + col * n] : T(0);
                }
                reg_solve<T, MI>(a, b, c, F, w);
                yt[j + col * P] = w[0];
                yb[j + col * P] = w[MI - 1];
            }
        }
        __syncthreads();
        // The separator rows: row j couples separator j to j - 1 and j + 1 (as spike_reduce).
        T *rdl = (T *)S.dl[k + 1], *rd = (T *)S.d[k + 1], *rdu = (T *)S.du[k + 1], *rf = (T *)S.f[k + 1];
        for (long long j = threadIdx.x; j < P; j += blockDim.x) {
            long long s = j * M + MI;
            T as = load_a(dl, n, s), ds = load_b(d, n, s), cs = load_c(du, n, s);
            bool next = j + 1 < P;
            if (j > 0) rdl[j - 1] = -(as * wb[j]);
            rd[j] = ds - as * vb[j] - cs * (next ? wt[j + 1] : T(0));
            if (next) rdu[j] = -(cs * vt[j + 1]);
            for (int col = 0; col < nrhs; ++col) {
                T fs = s < n ? f[s + col * n] : T(0);
                rf[j + col * P] = fs - as * yb[j + col * P] - cs * (next ? yt[j + 1 + col * P] : T(0));
            }
        }
        __syncthreads();
    }
    {
        long long k = S.levels;
        base_solve<T>(S.n[k], (const T *)S.dl[k], (const T *)S.d[k], (const T *)S.du[k], (T *)S.f[k], S.n[k], nrhs,
                      flags);
        __syncthreads();
    }
    // Upward: each partition re-solves its interior with the separators' values moved to the
    // right-hand side (as spike_backsub) and writes its rows of F, separator included.
    for (int k = (int)S.levels - 1; k >= 0; --k) {
        long long n = S.n[k], P = S.n[k + 1];
        const T *dl = (const T *)S.dl[k], *d = (const T *)S.d[k], *du = (const T *)S.du[k];
        T *f = (T *)S.f[k];
        const T *XS = (const T *)S.f[k + 1];
        for (long long j = threadIdx.x; j < P; j += blockDim.x) {
            T a[M], b[M], c[M];
            tail_rows<T, M>(dl, d, du, n, j * M, a, b, c);
            RegFactor<T, MI> F;
            reg_factor<T, MI>(a, b, c, F);
            for (int col = 0; col < nrhs; ++col) {
                T y[MI];
#pragma unroll
                for (int e = 0; e < MI; ++e) {
                    long long r = j * M + e;
                    y[e] = r < n ? f[r + col * n] : T(0);
                }
                T xl = j > 0 ? XS[j - 1 + col * P] : T(0);
                T xr = XS[j + col * P];
                y[0] = y[0] - a[0] * xl;
                y[MI - 1] = y[MI - 1] - c[MI - 1] * xr;
                reg_solve<T, MI>(a, b, c, F, y);
#pragma unroll
                for (int e = 0; e < MI; ++e) {
                    long long r = j * M + e;
                    if (r < n) f[r + col * n] = y[e];
                }
                if (j * M + MI < n) f[j * M + MI + col * n] = xr;
            }
        }
        __syncthreads();
    }
}

// Iterative refinement's residual: for each of ncols columns, r = f - A x accurately (stored in
// r, leading dimension ldr, unless r is null), and the column's max |r_i|,
// max (|a x| + |d x| + |c x| + |f|) and max |f| accumulated into rmax, smax, bmax (which start at
// zero); flags bit 1 on a non-finite value. Grid-stride over rows; every thread of a warp runs
// the same number of iterations (the shuffles need them all).
template <typename T>
__device__ void residual(long long n, const T *dl, const T *d, const T *du, const T *x, long long ldx, const T *f,
                         long long ldf, int ncols, T *r, long long ldr, T *rmax, T *smax, T *bmax, int *flags) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (int col = 0; col < ncols; ++col) {
        const T *xc = x + col * ldx;
        const T *fc = f + col * ldf;
        T rm = T(0), sm = T(0), bm = T(0);
        bool finite = true;
        for (long long base = (long long)blockIdx.x * blockDim.x; base < n; base += stride) {
            long long i = base + threadIdx.x;
            if (i < n) {
                T s;
                T ri = residual_at(n, dl, d, du, xc, fc, i, s);
                if (r) r[i + col * ldr] = ri;
                finite = finite && isfinite(xc[i]) && isfinite(ri) && isfinite(s);
                rm = fmax(rm, fabs(ri));
                sm = fmax(sm, s);
                bm = fmax(bm, fabs(fc[i]));
            }
        }
        summarize(rmax + col, smax + col, bmax + col, rm, sm, bm);
        if (!finite) atomicOr(flags, 2);
    }
}

// r := x + r over n rows of ncols columns (a refinement step's candidate x + delta).
template <typename T> __device__ void add_into(long long n, int ncols, const T *x, long long ldx, T *r, long long ldr) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (int col = 0; col < ncols; ++col)
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
            r[i + col * ldr] = x[i + col * ldx] + r[i + col * ldr];
}

#define STAMP_GTSV(T, sfx)                                                                                    \
    extern "C" __global__ void gtsv_residual_##sfx(long long n, const T *dl, const T *d, const T *du,           \
                                                   const T *x, long long ldx, const T *f, long long ldf,       \
                                                   int ncols, T *r, long long ldr, T *rmax, T *smax, T *bmax,  \
                                                   int *flags) {                                               \
        residual<T>(n, dl, d, du, x, ldx, f, ldf, ncols, r, ldr, rmax, smax, bmax, flags);                    \
    }                                                                                                         \
    extern "C" __global__ void gtsv_add_##sfx(long long n, int ncols, const T *x, long long ldx, T *r,          \
                                              long long ldr) {                                                 \
        add_into<T>(n, ncols, x, ldx, r, ldr);                                                               \
    }                                                                                                         \
    extern "C" __global__ void gtsv_base_##sfx(long long n, const T *dl, const T *d, const T *du, T *f,         \
                                               long long ldf, int nrhs, int *flags) {                          \
        base_solve<T>(n, dl, d, du, f, ldf, nrhs, flags);                                                     \
    }                                                                                                         \
    extern "C" __global__ void gtsv_window_edges_##sfx(long long n, const T *dl, const T *d, const T *du,      \
        const T *f, long long ldf, const T *x, long long ldx, long long rows, long long ctas, T *rmax,          \
        T *smax, T *bmax, int *flags) {                                                                       \
        window_edges<T>(n, dl, d, du, f, ldf, x, ldx, rows, ctas, rmax, smax, bmax, flags);                   \
    }                                                                                                         \
    extern "C" __global__ void gtsv_window_commit_##sfx(long long n, T *f, long long ldf, const T *x,            \
        long long ldx, long long rows, long long hrows, long long windows) {                                   \
        window_commit<T>(n, f, ldf, x, ldx, rows, hrows, windows);                                           \
    }                                                                                                         \
    extern "C" __global__ void gtsv_window_restore_##sfx(long long n, T *f, long long ldf, const T *x,           \
        long long ldx, long long rows, long long hrows, long long windows, long long ctas,                     \
        const long long *reached) {                                                                           \
        window_restore<T>(n, f, ldf, x, ldx, rows, hrows, windows, ctas, reached);                           \
    }

// The five partition kernels of one partition size: SPAN_PARAM is empty (a whole level's, SLICE
// false) or `, Span span` (a slice's, names with `tag` = _slice).
#define WITH_SPAN(...) __VA_ARGS__
#define STAMP_GTSV_PARTS(T, sfx, M, tag, SLICE, SPAN_PARAM, SPAN_ARG)                                      \
    extern "C" __global__ void gtsv_reduce##tag##_##sfx##_m##M(long long n, const T *dl, const T *d,          \
        const T *du, const T *f, long long ldf, int nrhs, long long P SPAN_PARAM, T *rdl, T *rd, T *rdu,    \
        T *rf, int *flags) {                                                                              \
        spike_reduce<T, M, false, SLICE>(n, dl, d, du, f, ldf, nrhs, P, SPAN_ARG, rdl, rd, rdu, rf, flags,  \
                                         nullptr, 0, nullptr, nullptr, nullptr);                          \
    }                                                                                                     \
    extern "C" __global__ void gtsv_reduce_res##tag##_##sfx##_m##M(long long n, const T *dl, const T *d,      \
        const T *du, const T *f, long long ldf, int nrhs, long long P SPAN_PARAM, T *rdl, T *rd, T *rdu,    \
        T *rf, int *flags, const T *x0, long long ld0, T *rmax, T *smax, T *bmax) {                       \
        spike_reduce<T, M, true, SLICE>(n, dl, d, du, f, ldf, nrhs, P, SPAN_ARG, rdl, rd, rdu, rf, flags,   \
                                        x0, ld0, rmax, smax, bmax);                                       \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(128, 4) gtsv_backsub##tag##_##sfx##_m##M(long long n,     \
        const T *dl, const T *d, const T *du, const T *f, long long ldf, T *x, long long ldx, int nrhs,    \
        long long P SPAN_PARAM, const T *XS, int check, T *rmax, T *smax, T *bmax, int *flags) {          \
        spike_backsub<T, M, false, false, SLICE>(n, dl, d, du, f, ldf, x, ldx, nrhs, P, SPAN_ARG, XS, check, \
                                                 rmax, smax, bmax, flags, nullptr, 0, nullptr);           \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(128, 4) gtsv_backsub_spec##tag##_##sfx##_m##M(long long n, \
        const T *dl, const T *d, const T *du, const T *f, long long ldf, T *x, long long ldx, int nrhs,    \
        long long P SPAN_PARAM, const T *XS, T *rmax, T *smax, T *bmax, int *flags, T *rf_spec) {         \
        spike_backsub<T, M, false, true, SLICE>(n, dl, d, du, f, ldf, x, ldx, nrhs, P, SPAN_ARG, XS, 1, rmax, \
                                                smax, bmax, flags, nullptr, 0, rf_spec);                  \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(128, 3) gtsv_update##tag##_##sfx##_m##M(long long n,      \
        const T *dl, const T *d, const T *du, const T *f, long long ldf, T *x, long long ldx, int nrhs,    \
        long long P SPAN_PARAM, const T *XS, T *rmax, T *smax, T *bmax, int *flags, const T *x0,          \
        long long ld0) {                                                                                  \
        spike_backsub<T, M, true, false, SLICE>(n, dl, d, du, f, ldf, x, ldx, nrhs, P, SPAN_ARG, XS, 1, rmax, \
                                                smax, bmax, flags, x0, ld0, nullptr);                     \
    }

// The partition kernels, one per partition size M (rows, separator included). This source
// compiles to one module per precision and M, named by the embedding source's GTSV_T (the
// type), GTSV_SFX (s or d) and GTSV_M: a call compiles only its own at first use (all six took
// NVRTC 54 s on an H100 host, double with M = 8 2.3 s). With GTSV_SLICES defined it
// holds the _slice variants with a Span instead, compiled only when a top level is first
// streamed.
// gtsv_update holds the most registers (227 for double, m = 8, unbounded: 4 CTAs of 64 per SM);
// its bound keeps it at 170 or fewer, 6 such CTAs. gtsv_backsub's bound takes it from 142 to
// 128 registers (8 CTAs of 64, a few bytes spilled): 2-6% faster at n = 2^23 on an H100; the
// same bound on gtsv_reduce (96 registers) spilled more and was slower.
#ifdef GTSV_SLICES
#define STAMP_GTSV_M(T, sfx, M) STAMP_GTSV_PARTS(T, sfx, M, _slice, true, WITH_SPAN(, Span span), span)
#else
#define STAMP_GTSV_M(T, sfx, M)                                                                           \
    STAMP_GTSV_PARTS(T, sfx, M, , false, , Span{})                                                         \
    extern "C" __global__ void __launch_bounds__(256, 1) gtsv_tail_##sfx##_m##M(TailSystems systems, int nrhs, \
                                                                           T *scratch, int *flags) {       \
        tail_solve<T, M>(systems, nrhs, scratch, flags);                                                  \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(128, 4) gtsv_window_##sfx##_m##M(long long n, const T *dl,  \
        const T *d, const T *du, T *f, long long ldf, T *x, long long ldx, long long P, int halo,           \
        long long windows, long long first, long long last, int in_place, T *rmax, T *smax, T *bmax,        \
        int *flags, long long *reached) {                                                                  \
        window_solve<T, M, 128>(n, dl, d, du, f, ldf, x, ldx, P, halo, windows, first, last, in_place, rmax, \
                                smax, bmax, flags, reached);                                             \
    }
#endif

// Through one more macro, so that GTSV_SFX and GTSV_M are replaced before they are pasted.
#define STAMP_MODULE(T, sfx, M)                                                                            \
    STAMP_GTSV_M(T, sfx, M)                                                                                \
    STAMP_WHOLE(T, sfx)
#ifdef GTSV_SLICES
#define STAMP_WHOLE(T, sfx)
#else
#define STAMP_WHOLE(T, sfx) STAMP_GTSV(T, sfx)
#endif
STAMP_MODULE(GTSV_T, GTSV_SFX, GTSV_M)
