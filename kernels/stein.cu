// Inverse iteration for tridiagonal eigenvectors (xSTEIN), the GPU stages of src/stein/gpu.rs.
//
// Layout: the per-vector work arrays of a batch of S vectors are interleaved, entry i of
// vector j at i * S + j, so that the threads of a warp (consecutive vectors) touch consecutive
// addresses at every step of their serial recurrences. Z is column-major with leading
// dimension ldz (the order N of T); a vector of the block with rows row0 .. row0 + size - 1
// lives in those rows of its column.
//
// Kernels (each with s and d entry points):
//   stein_iterate: one thread per vector: xLARNV's starting vector from the vector's seed,
//     xLAGTF's factorization of T_b - lambda I, then xSTEIN's iteration (scale, xLAGTS solve,
//     growth test, MAXITS = 5, EXTRA = 2) without reorthogonalization; the last iterate is left
//     divided by its largest magnitude, with its 2-norm in nu and its status.
//   stein_refine: one more scaled solve from the vector stored in Z (the orthonormalized one;
//     the starting vector where that is zero or not finite), written back divided by its
//     largest magnitude.
//   stein_scatter: the interleaved iterates into their columns of Z (a tiled transpose).
//   stein_chol: Cholesky factor R (upper) of a Gram matrix of at most 64 columns, in place,
//     with its diagonal before and what each pivot leaves (the host's measure of what
//     orthogonalization left); numerically dependent columns are decoupled (see chol).
//   stein_finish: each column scaled to unit 2-norm, its largest-magnitude component positive.
//
// The arithmetic of factor and solve is xLAGTF's and xLAGTS's, operation for operation, as
// src/stein/cpu.rs does it (the module is compiled without contraction into FMA), so a vector
// of a cluster of one agrees with the host path to the bit but for the final normalization.

typedef unsigned long long u64;

#define STEIN_MAXITS 5
#define STEIN_EXTRA 2
#define LARUV_MASK ((1ULL << 48) - 1ULL)
#define LARUV_MULT 33952834046453ULL

template <typename T> struct Limits;
template <> struct Limits<double> {
    static __device__ double eps() { return 1.1102230246251565e-16; }   // half an ulp
    static __device__ double ulp() { return 2.220446049250313e-16; }
    static __device__ double sfmin() { return 2.2250738585072014e-308; }
};
template <> struct Limits<float> {
    static __device__ float eps() { return 5.9604645e-08f; }
    static __device__ float ulp() { return 1.1920929e-07f; }
    static __device__ float sfmin() { return 1.17549435e-38f; }
};

__device__ __forceinline__ double absval(double x) { return fabs(x); }
__device__ __forceinline__ float absval(float x) { return fabsf(x); }

// x / 2^48 summed from its 12-bit digits in precision T, least significant innermost
// (xLARUV's rounding).
template <typename T> __device__ T laruv_fraction(u64 v) {
    const T r = T(1) / T(4096);
    T d0 = T((double)(v & 4095ULL));
    T d12 = T((double)((v >> 12) & 4095ULL));
    T d24 = T((double)((v >> 24) & 4095ULL));
    T d36 = T((double)((v >> 36) & 4095ULL));
    return r * (d36 + r * (d24 + r * (d12 + r * d0)));
}

// xLARNV(2, seed, size, x) into x[i * S], returning max |x_i| as the host's iamax reads it.
template <typename T> __device__ T larnv_fill(u64 seed, int size, T* x, int S) {
    T top = T(0);
    for (int start = 0; start < size; start += 64) {
        int len = size - start < 64 ? size - start : 64;
        u64 base = seed, last = seed, p = 1ULL;
        for (int i = 0; i < len; ++i) {
            p = (p * LARUV_MULT) & LARUV_MASK;
            T u;
            for (;;) {
                u64 v = (base * p) & LARUV_MASK;
                u = laruv_fraction<T>(v);
                if (u == T(1)) { base = v; continue; }
                last = v;
                break;
            }
            T val = T(2) * u - T(1);
            x[(size_t)(start + i) * S] = val;
            T a = absval(val);
            if (start + i == 0) top = a; else if (a > top) top = a;
        }
        seed = last;
    }
    return top;
}

// xLAGTF on T_b - lam I (rows row0 .. row0+size-1 of d, e), factors interleaved; returns
// xLAGTS's TOL (EPS max |u_ij|, or EPS when U is zero).
template <typename T>
__device__ T factor(const T* d, const T* e, int row0, int size, T lam, T* u0, T* u1, T* u2,
                    T* l, unsigned char* sw, int S) {
    T ak = d[row0] - lam;
    T bk = e[row0];
    T scale1 = absval(ak) + absval(bk);
    T big = T(0);
    for (int k = 0; k < size - 1; ++k) {
        T ck = e[row0 + k];
        T an = d[row0 + k + 1] - lam;
        bool more = k + 2 < size;
        T bn = more ? e[row0 + k + 1] : T(0);
        T scale2 = absval(ck) + absval(an);
        if (more) scale2 = scale2 + absval(bn);
        T piv1 = ak == T(0) ? T(0) : absval(ak) / scale1;
        T u2k = T(0), lk;
        unsigned char s = 0;
        if (ck == T(0)) {
            scale1 = scale2;
            lk = ck;
        } else {
            T piv2 = absval(ck) / scale2;
            if (piv2 <= piv1) {
                scale1 = scale2;
                lk = ck / ak;
                an = an - lk * bk;
            } else {
                s = 1;
                T mult = ak / ck;
                ak = ck;
                T next = an;
                an = bk - mult * next;
                if (more) {
                    u2k = bn;
                    bn = -mult * u2k;
                }
                bk = next;
                lk = mult;
            }
        }
        size_t at = (size_t)k * S;
        u0[at] = ak;
        u1[at] = bk;
        u2[at] = u2k;
        l[at] = lk;
        sw[at] = s;
        big = fmax(big, absval(ak));
        big = fmax(big, absval(bk));
        big = fmax(big, absval(u2k));
        ak = an;
        bk = bn;
    }
    u0[(size_t)(size - 1) * S] = ak;
    big = fmax(big, absval(ak));
    T tol = big * Limits<T>::eps();
    return tol == T(0) ? Limits<T>::eps() : tol;
}

// x <- (T_b - lam I)^{-1} (scale x) with the factors (xLAGTS, JOB = -1); returns max |x_i|
// as the host's iamax reads it (the first entry's NaN wins).
template <typename T>
__device__ T solve(const T* u0, const T* u1, const T* u2, const T* l, const unsigned char* sw,
                   T tol, int size, T scale, T* x, int S) {
    // Forward: the permuted elimination with L; y_{k-1} is final once row k is seen.
    T cur = x[0] * scale;
    for (int k = 1; k < size; ++k) {
        size_t at = (size_t)k * S, prev_at = (size_t)(k - 1) * S;
        T yk = x[at] * scale;
        T lk = l[prev_at];
        if (sw[prev_at]) {
            T prev = cur;
            x[prev_at] = yk;
            cur = prev - lk * yk;
        } else {
            x[prev_at] = cur;
            cur = yk - lk * cur;
        }
    }
    x[(size_t)(size - 1) * S] = cur;
    // Backward with U, perturbing tiny pivots.
    const T sfmin = Limits<T>::sfmin();
    const T bignum = T(1) / sfmin;
    T y1 = T(0), y2 = T(0), rest = T(0), first = T(0);
    for (int k = size - 1; k >= 0; --k) {
        size_t at = (size_t)k * S;
        T temp = x[at];
        if (k + 1 < size) temp = temp - u1[at] * y1;
        if (k + 2 < size) temp = temp - u2[at] * y2;
        T ak = u0[at];
        T pert = signbit(ak) ? -tol : tol;
        for (;;) {
            T absak = absval(ak);
            if (absak < T(1)) {
                if (absak < sfmin) {
                    if (absak == T(0) || absval(temp) * sfmin > absak) {
                        ak = ak + pert;
                        pert = T(2) * pert;
                        continue;
                    }
                    temp = temp * bignum;
                    ak = ak * bignum;
                } else if (absval(temp) > absak * bignum) {
                    ak = ak + pert;
                    pert = T(2) * pert;
                    continue;
                }
            }
            break;
        }
        T yk = temp / ak;
        x[at] = yk;
        T a = absval(yk);
        if (k == 0) first = a; else if (a > rest) rest = a;
        y2 = y1;
        y1 = yk;
    }
    if (first != first) return first;
    return first >= rest ? first : rest;
}

// Divides x by top and returns the 2-norm of the result (in double).
template <typename T> __device__ double divide_by_top(T* x, int size, T top, int S) {
    double sum = 0.0;
    T inv = T(1) / top;
    for (int i = 0; i < size; ++i) {
        size_t at = (size_t)i * S;
        T v = x[at] * inv;
        x[at] = v;
        sum += (double)v * (double)v;
    }
    return sqrt(sum);
}

// status: 0 converged, 1 failed the growth test (IFAIL), 2 not finite (the host falls back).
template <typename T>
__device__ void iterate(const T* d, const T* e, int ncols, int S, const int* row0s,
                        const int* sizes, const T* shifts, const u64* seeds,
                        const T* scale_bases, const T* dtpcrts, T* u0, T* u1, T* u2, T* l,
                        unsigned char* sw, T* x, int* status, double* nu) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= ncols) return;
    int row0 = row0s[j], size = sizes[j];
    T* xj = x + j;
    T* u0j = u0 + j; T* u1j = u1 + j; T* u2j = u2 + j; T* lj = l + j;
    unsigned char* swj = sw + j;
    T top = larnv_fill<T>(seeds[j], size, xj, S);
    T tol = factor<T>(d, e, row0, size, shifts[j], u0j, u1j, u2j, lj, swj, S);
    T unn = absval(u0j[(size_t)(size - 1) * S]);
    T base = scale_bases[j] * (Limits<T>::ulp() > unn ? Limits<T>::ulp() : unn);
    if (unn != unn) base = scale_bases[j] * Limits<T>::ulp();
    T dtpcrt = dtpcrts[j];
    int its = 0, checks = 0, st = 0;
    for (;;) {
        ++its;
        if (its > STEIN_MAXITS) { st = 1; break; }
        T scale = base / top;
        top = solve<T>(u0j, u1j, u2j, lj, swj, tol, size, scale, xj, S);
        if (top < dtpcrt) continue;
        ++checks;
        if (checks > STEIN_EXTRA) break;
    }
    if (!(top > T(0)) || !isfinite((double)top)) {
        status[j] = 2;
        nu[j] = 0.0;
        return;
    }
    double norm = divide_by_top<T>(xj, size, top, S);
    status[j] = isfinite(norm) ? st : 2;
    nu[j] = norm;
}

// status: 0, or 2 where the solve's result is not finite. A column of Z that is zero or not
// finite (nothing the orthogonalization should leave, but a scaled solve from it would be NaN)
// is replaced by the vector's starting vector.
template <typename T>
__device__ void refine(const T* d, const T* e, int ncols, int S, const int* row0s,
                       const int* sizes, const T* shifts, const u64* seeds,
                       const T* scale_bases, const int* cols, T* u0, T* u1, T* u2, T* l,
                       unsigned char* sw, T* x, T* z, long long ldz, int* status, double* nu) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= ncols) return;
    int row0 = row0s[j], size = sizes[j];
    T* xj = x + j;
    T* zj = z + (size_t)cols[j] * ldz + row0;
    T top = T(0);
    bool finite = true;
    for (int i = 0; i < size; ++i) {
        T v = zj[i];
        xj[(size_t)i * S] = v;
        finite = finite && isfinite((double)v);
        T a = absval(v);
        if (a > top) top = a;
    }
    if (!finite || !(top > T(0))) top = larnv_fill<T>(seeds[j], size, xj, S);
    T* u0j = u0 + j;
    T tol = factor<T>(d, e, row0, size, shifts[j], u0j, u1 + j, u2 + j, l + j, sw + j, S);
    T unn = absval(u0j[(size_t)(size - 1) * S]);
    T base = scale_bases[j] * (Limits<T>::ulp() > unn ? Limits<T>::ulp() : unn);
    if (unn != unn) base = scale_bases[j] * Limits<T>::ulp();
    top = solve<T>(u0j, u1 + j, u2 + j, l + j, sw + j, tol, size, base / top, xj, S);
    if (!(top > T(0)) || !isfinite((double)top)) {
        status[j] = 2;
        nu[j] = 0.0;
        return;
    }
    double norm = divide_by_top<T>(xj, size, top, S);
    for (int i = 0; i < size; ++i) zj[i] = xj[(size_t)i * S];
    status[j] = isfinite(norm) ? 0 : 2;
    nu[j] = norm;
}

// Block (32, 8); grid (ceil(ncols / 32), ceil(maxrows / 32)).
template <typename T>
__device__ void scatter(const T* x, int S, int ncols, const int* row0s, const int* sizes,
                        const int* cols, T* z, long long ldz) {
    __shared__ T tile[32][33];
    int j0 = blockIdx.x * 32, i0 = blockIdx.y * 32;
    int tx = threadIdx.x, ty = threadIdx.y;
    for (int r = ty; r < 32; r += 8) {
        int i = i0 + r, j = j0 + tx;
        if (j < ncols && i < sizes[j]) tile[r][tx] = x[(size_t)i * S + j];
    }
    __syncthreads();
    for (int c = ty; c < 32; c += 8) {
        int j = j0 + c, i = i0 + tx;
        if (j < ncols && i < sizes[j]) z[(size_t)cols[j] * ldz + row0s[j] + i] = tile[tx][c];
    }
}

// One block of 256 threads. g: bp x bp (bp <= 64), leading dimension ldg; overwritten by R
// (upper, zero below). diag[j] = g_jj before, diag[64 + j] = what the pivot says is left of
// column j (sqrt of the pivot, 0 where it is not positive).
//
// A pivot not above STEIN_DEPENDENT eps g_jj carries no information (the Gram matrix's
// rounding is about eps g_jj): column j is numerically dependent on the earlier ones. Its
// r_jj is then sqrt(STEIN_DEPENDENT eps g_jj) (so X R^-1 stays bounded) and the rest of its
// row of R is zero: the later columns are not orthogonalized against its noise. Dividing by
// such a pivot instead sent r_jk = g_jk / r_jj to ~1/eps, every later pivot negative, and the
// columns of X R^-1 past 1/eps each: the second pass's Gram matrix overflowed (single
// precision), and the panel came out NaN or zero. A dependent column has less than
// sqrt(STEIN_DEPENDENT eps) of its norm left, so the host always flags it for refinement.
#define STEIN_DEPENDENT 64
template <typename T> __device__ void chol(T* g, int ldg, int bp, T* diag) {
    __shared__ T a[64][65];
    __shared__ int dependent;
    int tid = threadIdx.x;
    for (int t = tid; t < bp * bp; t += blockDim.x) {
        int i = t % bp, j = t / bp;
        a[i][j] = g[(size_t)j * ldg + i];
    }
    __syncthreads();
    for (int j = tid; j < bp; j += blockDim.x) diag[j] = a[j][j];
    __syncthreads();
    for (int j = 0; j < bp; ++j) {
        if (tid == 0) {
            T g0 = diag[j];
            T floor = T(STEIN_DEPENDENT) * Limits<T>::eps() * g0;
            T piv = a[j][j];
            bool dep = !(piv > floor) || !(piv > Limits<T>::sfmin());
            if (dep) {
                if (!(floor > Limits<T>::sfmin())) floor = Limits<T>::sfmin();
                a[j][j] = sqrt(floor);
            } else {
                a[j][j] = sqrt(piv);
            }
            diag[64 + j] = piv > T(0) ? sqrt(piv) : T(0);
            dependent = dep ? 1 : 0;
        }
        __syncthreads();
        T r = a[j][j];
        bool dep = dependent != 0;
        for (int k = j + 1 + tid; k < bp; k += blockDim.x) a[j][k] = dep ? T(0) : a[j][k] / r;
        __syncthreads();
        int w = bp - j - 1;
        if (!dep) {
            for (int t = tid; t < w * w; t += blockDim.x) {
                int k = j + 1 + t % w, m = j + 1 + t / w;
                if (k <= m) a[k][m] = a[k][m] - a[j][k] * a[j][m];
            }
        }
        __syncthreads();
    }
    for (int t = tid; t < bp * bp; t += blockDim.x) {
        int i = t % bp, j = t / bp;
        g[(size_t)j * ldg + i] = i <= j ? a[i][j] : T(0);
    }
}

// One block of 256 threads per column (grid ncols).
template <typename T>
__device__ void finish(T* z, long long ldz, const int* cols, const int* row0s, const int* sizes) {
    __shared__ double vals[256];
    __shared__ int idx[256];
    int c = blockIdx.x, tid = threadIdx.x;
    int size = sizes[c];
    T* x = z + (size_t)cols[c] * ldz + row0s[c];
    double best = -1.0;
    int at = 0x7fffffff;
    for (int i = tid; i < size; i += 256) {
        double a = fabs((double)x[i]);
        if (a > best) { best = a; at = i; }
    }
    vals[tid] = best;
    idx[tid] = at;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (tid < s) {
            double a = vals[tid + s];
            int ia = idx[tid + s];
            if (a > vals[tid] || (a == vals[tid] && ia < idx[tid])) {
                vals[tid] = a;
                idx[tid] = ia;
            }
        }
        __syncthreads();
    }
    double big = vals[0];
    int jmax = idx[0];
    __syncthreads();
    // The norm nearly correctly rounded, as the host's normalize: entries scaled by a power of
    // two near 1/big (exact), squares summed in double-double, the square root corrected once.
    bool scaled = big > 0.0 && isfinite(big);
    int e = 0;
    if (scaled) frexp(big, &e);
    double hi = 0.0, lo = 0.0;
    for (int i = tid; i < size; i += 256) {
        double a = scaled ? ldexp((double)x[i], -e) : (double)x[i];
        double p = a * a;
        double p_err = fma(a, a, -p);
        double s = hi + p;
        double t = s - hi;
        lo += (hi - (s - t)) + (p - t) + p_err;
        hi = s;
    }
    __shared__ double los[256];
    vals[tid] = hi;
    los[tid] = lo;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (tid < s) {
            double a = vals[tid], b = vals[tid + s];
            double sum = a + b;
            double t = sum - a;
            los[tid] += los[tid + s] + (a - (sum - t)) + (b - t);
            vals[tid] = sum;
        }
        __syncthreads();
    }
    double h = vals[0] + los[0];
    double l = los[0] - (h - vals[0]);
    double r = sqrt(h);
    if (r > 0.0) r = r + (fma(-r, r, h) + l) / (2.0 * r);
    double norm = scaled ? ldexp(r, e) : r;
    T scale = T(1.0 / norm);
    if (jmax < size && x[jmax] < T(0)) scale = -scale;
    __syncthreads();
    for (int i = tid; i < size; i += 256) x[i] = x[i] * scale;
}

// The GPU path's check of its finished vectors (a failure sends the call to the host path).
// Orthogonality: the column sums of |G - I| (LAPACK's tests judge ||Z^T Z - I||_1) from the
// k x bp block G (leading dimension k) of Z_c^T Z_c whose entry (i, j) is G of the panel's
// columns i and j (i >= j below the panel's diagonal, i < j its mirror, skipped). Entry (i, j)
// adds to sums[j] and, mirrored, to sums[i]; one CTA per column j.
template <typename T>
__device__ void offdiag(const T* g, int k, double* sums) {
    __shared__ double part[256];
    const int j = blockIdx.x, tid = threadIdx.x;
    const T* col = g + (long long)j * k;
    double own = 0.0;
    for (int i = j + tid; i < k; i += 256) {
        const double x = fabs((double)col[i] - (i == j ? 1.0 : 0.0));
        own += x;
        if (i > j) atomicAdd(sums + i, x);
    }
    part[tid] = own;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (tid < s) part[tid] += part[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(sums + j, part[0]);
}

// Residual: ||T_b x - lambda x||_1 over the block's rows (lambda the column's eigenvalue),
// one CTA of 256 threads per column.
template <typename T>
__device__ void residual(const T* z, long long ldz, const int* cols, const int* row0s,
                         const int* sizes, const T* lambdas, const T* d, const T* e, double* out) {
    __shared__ double part[256];
    const int c = blockIdx.x, tid = threadIdx.x;
    const int row0 = row0s[c], size = sizes[c];
    const T* x = z + cols[c] * ldz + row0;
    const T* db = d + row0;
    const T* eb = e + row0;
    const double lambda = (double)lambdas[c];
    double r = 0.0;
    for (int i = tid; i < size; i += 256) {
        double t = ((double)db[i] - lambda) * (double)x[i];
        if (i > 0) t += (double)eb[i - 1] * (double)x[i - 1];
        if (i + 1 < size) t += (double)eb[i] * (double)x[i + 1];
        r += fabs(t);
    }
    part[tid] = r;
    __syncthreads();
    for (int h = 128; h > 0; h >>= 1) {
        if (tid < h) part[tid] += part[tid + h];
        __syncthreads();
    }
    if (tid == 0) out[c] = part[0];
}

#define STEIN_ENTRIES(T, P)                                                                    \
    extern "C" __global__ void stein_iterate_##P(                                              \
        const T* d, const T* e, int ncols, int S, const int* row0s, const int* sizes,          \
        const T* shifts, const u64* seeds, const T* scale_bases, const T* dtpcrts, T* u0,      \
        T* u1, T* u2, T* l, unsigned char* sw, T* x, int* status, double* nu) {                \
        iterate<T>(d, e, ncols, S, row0s, sizes, shifts, seeds, scale_bases, dtpcrts, u0, u1,  \
                   u2, l, sw, x, status, nu);                                                  \
    }                                                                                          \
    extern "C" __global__ void stein_refine_##P(                                               \
        const T* d, const T* e, int ncols, int S, const int* row0s, const int* sizes,          \
        const T* shifts, const u64* seeds, const T* scale_bases, const int* cols, T* u0,       \
        T* u1, T* u2, T* l, unsigned char* sw, T* x, T* z, long long ldz, int* status,         \
        double* nu) {                                                                          \
        refine<T>(d, e, ncols, S, row0s, sizes, shifts, seeds, scale_bases, cols, u0, u1, u2,  \
                  l, sw, x, z, ldz, status, nu);                                               \
    }                                                                                          \
    extern "C" __global__ void stein_scatter_##P(const T* x, int S, int ncols,                 \
                                                 const int* row0s, const int* sizes,           \
                                                 const int* cols, T* z, long long ldz) {       \
        scatter<T>(x, S, ncols, row0s, sizes, cols, z, ldz);                                   \
    }                                                                                          \
    extern "C" __global__ void stein_chol_##P(T* g, int ldg, int bp, T* diag) {                \
        chol<T>(g, ldg, bp, diag);                                                             \
    }                                                                                          \
    extern "C" __global__ void stein_finish_##P(T* z, long long ldz, const int* cols,          \
                                                const int* row0s, const int* sizes) {          \
        finish<T>(z, ldz, cols, row0s, sizes);                                                 \
    }                                                                                          \
    extern "C" __global__ void stein_offdiag_##P(const T* g, int k, double* sums) {            \
        offdiag<T>(g, k, sums);                                                                \
    }                                                                                          \
    extern "C" __global__ void stein_residual_##P(const T* z, long long ldz, const int* cols,  \
                                                  const int* row0s, const int* sizes,          \
                                                  const T* lambdas, const T* d, const T* e,    \
                                                  double* out) {                               \
        residual<T>(z, ldz, cols, row0s, sizes, lambdas, d, e, out);                           \
    }

// One module per precision: the embedding source defines STEIN_T and STEIN_PRE (through one
// more macro, so that they are replaced before they are pasted).
#define STEIN_MODULE(T, P) STEIN_ENTRIES(T, P)
STEIN_MODULE(STEIN_T, STEIN_PRE)
