// Many small tridiagonal systems (xGTSV_SPIKE_STRIDED_BATCH): LAPACK xGTSV's own algorithm,
// Gaussian elimination with partial pivoting, one warp per system. The warp stages its system
// through shared memory with coalesced loads, one lane eliminates (the recurrence is serial),
// and the warp writes X back. A system therefore costs one read of DL, D, DU, B and one write
// of X, and its answer has LAPACK's accuracy without a check: the operations and comparisons
// are xGTSV's, in its order (IEEE division, no contraction into FMA).
//
// Shared memory per system (`gtsv_batch_bytes` on the host): D, DU and the second
// superdiagonal (which starts as DL, as in xGTSV), B's columns, the multipliers and one
// interchange flag per row.

template <typename T> struct BatchRows {
    T *d, *du, *du2, *b, *fact;
    unsigned char *swapped;
};

template <typename T> __device__ __forceinline__ BatchRows<T> batch_rows(unsigned char *base, int n, int nrhs) {
    BatchRows<T> r;
    T *s = reinterpret_cast<T *>(base);
    r.d = s;
    r.du = s + n;
    r.du2 = s + 2 * n;
    r.fact = s + 3 * n;
    r.b = s + 4 * n;
    r.swapped = reinterpret_cast<unsigned char *>(s + (4 + (long long)nrhs) * n);
    return r;
}

// xGTSV's elimination (rows i = 0 .. n-2, 0-based) of the matrix and of B's first column b:
// on exit d, du and du2 hold U, fact[i] and swapped[i] the step's multiplier and interchange,
// for the other columns. Row i + 1's entries are loaded before row i is stored and carried in
// registers, so that the serial chain holds only the arithmetic. Returns INFO (0, or the
// 1-based row whose pivot is exactly zero).
template <typename T> __device__ int batch_factor(BatchRows<T> r, int n, T *b) {
    T di = r.d[0], ci = n > 1 ? r.du[0] : T(0), bi = b[0];
    for (int i = 0; i + 1 < n; ++i) {
        const T li = r.du2[i], dn = r.d[i + 1], bn = b[i + 1];
        const T cn = i + 2 < n ? r.du[i + 1] : T(0);
        if (fabs(di) >= fabs(li)) {
            if (di == T(0)) return i + 1;
            const T fact = li / di;
            r.d[i] = di;
            r.du[i] = ci;
            r.du2[i] = T(0);
            b[i] = bi;
            r.fact[i] = fact;
            r.swapped[i] = 0;
            di = dn - fact * ci;
            bi = bn - fact * bi;
            ci = cn;
        } else {
            const T fact = di / li;
            r.d[i] = li;
            r.du[i] = dn;
            r.du2[i] = cn;
            b[i] = bn;
            r.fact[i] = fact;
            r.swapped[i] = 1;
            di = ci - fact * dn;
            bi = bi - fact * bn;
            ci = -fact * cn;
        }
    }
    r.d[n - 1] = di;
    b[n - 1] = bi;
    if (n > 1) r.du[n - 1] = ci;
    return di == T(0) ? n : 0;
}

// The elimination's steps on another column of B.
template <typename T> __device__ void batch_forward(BatchRows<T> r, int n, T *b) {
    T bi = b[0];
    for (int i = 0; i + 1 < n; ++i) {
        const T fact = r.fact[i], bn = b[i + 1];
        if (r.swapped[i]) {
            b[i] = bn;
            bi = bi - fact * bn;
        } else {
            b[i] = bi;
            bi = bn - fact * bi;
        }
    }
    b[n - 1] = bi;
}

// xGTSV's back substitution with U on one column, the two rows below carried in registers.
template <typename T> __device__ void batch_back(BatchRows<T> r, int n, T *b) {
    T x1 = b[n - 1] / r.d[n - 1], x2 = T(0);
    b[n - 1] = x1;
    if (n > 1) {
        x2 = x1;
        x1 = (b[n - 2] - r.du[n - 2] * x2) / r.d[n - 2];
        b[n - 2] = x1;
    }
    for (int i = n - 3; i >= 0; --i) {
        const T x = (b[i] - r.du[i] * x1 - r.du2[i] * x2) / r.d[i];
        b[i] = x;
        x2 = x1;
        x1 = x;
    }
}

// System k of the batch: rows k*sa (DL: n-1, D: n, DU: n-1) and B's columns at k*sb (leading
// dimension ldb). X goes to x, packed (system k at k*n*nrhs, leading dimension n), and INFO to
// info[k]; a system with INFO > 0 writes no X (the host solves it again with LAPACK, so that
// it ends as LAPACK leaves it).
template <typename T>
__device__ void batch_solve(int n, int nrhs, long long count, const T *dl, const T *d, const T *du,
                            long long sa, const T *b, long long ldb, long long sb, T *x, int *info,
                            long long bytes) {
    extern __shared__ __align__(16) unsigned char batch_shared[];
    const int warps = blockDim.x / 32, w = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long long k = (long long)blockIdx.x * warps + w;
    if (k >= count) return;
    BatchRows<T> r = batch_rows<T>(batch_shared + w * bytes, n, nrhs);
    const long long a0 = k * sa, b0 = k * sb;
    for (int i = lane; i < n; i += 32) {
        r.d[i] = d[a0 + i];
        r.du[i] = i + 1 < n ? du[a0 + i] : T(0);
        r.du2[i] = i + 1 < n ? dl[a0 + i] : T(0);
    }
    for (int c = 0; c < nrhs; ++c)
        for (int i = lane; i < n; i += 32) r.b[c * n + i] = b[b0 + c * ldb + i];
    __syncwarp();
    int status = 0;
    if (lane == 0) status = batch_factor<T>(r, n, r.b);
    status = __shfl_sync(0xffffffffu, status, 0);
    __syncwarp();
    if (status == 0) {
        for (int c = 1 + lane; c < nrhs; c += 32) batch_forward<T>(r, n, r.b + (long long)c * n);
        for (int c = lane; c < nrhs; c += 32) batch_back<T>(r, n, r.b + (long long)c * n);
    }
    __syncwarp();
    if (status == 0) {
        T *xk = x + k * (long long)n * nrhs;
        for (long long i = lane; i < (long long)n * nrhs; i += 32) xk[i] = r.b[i];
    }
    if (lane == 0) info[k] = status;
}

#define GTSV_BATCH_ENTRIES(T, sfx)                                                                          \
    extern "C" __global__ void gtsv_batch_##sfx(int n, int nrhs, long long count, const T *dl, const T *d,   \
                                                const T *du, long long sa, const T *b, long long ldb,       \
                                                long long sb, T *x, int *info, long long bytes) {           \
        batch_solve<T>(n, nrhs, count, dl, d, du, sa, b, ldb, sb, x, info, bytes);                          \
    }

// One module per precision: the embedding source defines GTSV_BATCH_T and GTSV_BATCH_SFX.
#define GTSV_BATCH_MODULE(T, sfx) GTSV_BATCH_ENTRIES(T, sfx)
GTSV_BATCH_MODULE(GTSV_BATCH_T, GTSV_BATCH_SFX)
