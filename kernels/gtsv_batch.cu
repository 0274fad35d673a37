// Many small tridiagonal systems (xGTSV_SPIKE_STRIDED_BATCH), one warp per system, staged
// through shared memory with coalesced loads, so that a system costs one read of DL, D, DU, B
// and one write of X.
//
// Two solvers, the first where it applies:
// - SPIKE with one partition per lane (`warp_spike`, systems of up to 32 M rows): each lane
//   factors its partition in registers (spike_partition.cu), the warp solves the 32
//   separators by cyclic reduction (or, where that answer is refused, by partial pivoting in
//   lane 0), and checks the residual of every row. As with a single system, the answer is
//   refined in shared memory while above the large solver's refinement level and kept only
//   below its acceptance level (`Levels`); otherwise the system goes to
// - LAPACK xGTSV's own algorithm (`batch_pivoting`): Gaussian elimination with partial pivoting
//   by one lane (the recurrence is serial), in xGTSV's order of operations (IEEE division, no
//   contraction into FMA), so its answer has LAPACK's accuracy without a check.
//
// Shared memory per system (`method` in src/gtsv/gpu/batch.rs) is the larger of the two
// solvers' layouts (`BatchRows`, `SpikeRows`).

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

// Copies elements 0 .. len-1 through registers, U loads per lane in flight before their
// stores (a load followed by its shared-memory store, one at a time, waits out each load).
template <int U, typename T, typename Load, typename Store>
__device__ __forceinline__ void staged(int len, Load load, Store store) {
    const int lane = threadIdx.x & 31;
    for (int i0 = 0; i0 < len; i0 += 32 * U) {
        T v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            int i = i0 + lane + 32 * u;
            if (i < len) v[u] = load(i);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            int i = i0 + lane + 32 * u;
            if (i < len) store(i, v[u]);
        }
    }
}

// System k of the batch: rows at a0 = k*sa (DL: n-1, D: n, DU: n-1) and B's columns at b0 =
// k*sb (leading dimension ldb); its X at xk (leading dimension ldx). X may be B itself: a
// warp reads all of its system's B before it writes any X.
template <typename T> struct BatchSystem {
    int n, nrhs;
    const T *dl, *d, *du, *b;
    long long ldb;
    T *xk;
    long long ldx;
};

// xGTSV on system s in the warp's shared memory `base`. Returns INFO; with INFO > 0 it writes
// no X (the host solves the system again with LAPACK, so that it ends as LAPACK leaves it).
template <typename T> __device__ int batch_pivoting(const BatchSystem<T> &s, unsigned char *base) {
    const int lane = threadIdx.x & 31, n = s.n, nrhs = s.nrhs;
    BatchRows<T> r = batch_rows<T>(base, n, nrhs);
    __syncwarp();
    staged<4, T>(n, [&](int i) { return s.d[i]; }, [&](int i, T v) { r.d[i] = v; });
    staged<4, T>(n, [&](int i) { return i + 1 < n ? s.du[i] : T(0); }, [&](int i, T v) { r.du[i] = v; });
    staged<4, T>(n, [&](int i) { return i + 1 < n ? s.dl[i] : T(0); }, [&](int i, T v) { r.du2[i] = v; });
    for (int c = 0; c < nrhs; ++c)
        staged<4, T>(n, [&](int i) { return s.b[c * s.ldb + i]; }, [&](int i, T v) { r.b[c * n + i] = v; });
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
    if (status == 0)
        for (int c = 0; c < nrhs; ++c)
            staged<4, T>(n, [&](int i) { return r.b[c * n + i]; }, [&](int i, T v) { s.xk[c * s.ldx + i] = v; });
    return status;
}

// SPIKE's layout in shared memory, for systems padded with identity rows to 32 partitions of
// M rows: a, b (the diagonal), c and B's columns, each with row i at i + i/M (lane t's
// partition at t(M+1), so that the 32 lanes reading row e of their own partitions hit
// different banks), then the separators' system (32 rows, xGTSV's layout).
template <typename T, int M> struct SpikeRows {
    static constexpr int L = 32 * (M + 1);
    T *a, *b, *c, *f;
    BatchRows<T> sep;
    __device__ SpikeRows(unsigned char *base, int nrhs) {
        a = reinterpret_cast<T *>(base);
        b = a + L;
        c = b + L;
        f = c + L;
        sep = batch_rows<T>(reinterpret_cast<unsigned char *>(f + (long long)nrhs * L), 32, 1);
    }
};

// The separators' system, one row per lane (sub, diag, super: coupling to the lane before and
// after), factored by parallel cyclic reduction: five steps, each lane's row combined with the
// rows 1, 2, 4, 8, 16 lanes away (rows past the ends are identity rows). No pivoting, so it is
// only tried first: an answer it spoils fails the check, and the warp solves again with
// partial pivoting (`solve_separators`). k1, k2: each step's multipliers; diag: the last.
template <typename T> struct Cyclic {
    T k1[5], k2[5], diag;
};

template <typename T> __device__ __forceinline__ void cyclic_factor(T sub, T diag, T super, Cyclic<T> &P) {
    const unsigned all = 0xffffffffu;
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int l = 0; l < 5; ++l) {
        const int step = 1 << l;
        const bool lo = lane >= step, hi = lane + step < 32;
        T sub_m = __shfl_up_sync(all, sub, step), diag_m = __shfl_up_sync(all, diag, step),
          super_m = __shfl_up_sync(all, super, step);
        T sub_p = __shfl_down_sync(all, sub, step), diag_p = __shfl_down_sync(all, diag, step),
          super_p = __shfl_down_sync(all, super, step);
        T k1 = lo ? sub / diag_m : T(0), k2 = hi ? super / diag_p : T(0);
        diag = diag - (lo ? k1 * super_m : T(0)) - (hi ? k2 * sub_p : T(0));
        sub = lo ? -k1 * sub_m : T(0);
        super = hi ? -k2 * super_p : T(0);
        P.k1[l] = k1;
        P.k2[l] = k2;
    }
    P.diag = diag;
}

template <typename T> __device__ __forceinline__ T cyclic_solve(const Cyclic<T> &P, T f) {
    const unsigned all = 0xffffffffu;
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int l = 0; l < 5; ++l) {
        const int step = 1 << l;
        T fm = __shfl_up_sync(all, f, step), fp = __shfl_down_sync(all, f, step);
        f = f - (lane >= step ? P.k1[l] * fm : T(0)) - (lane + step < 32 ? P.k2[l] * fp : T(0));
    }
    return f / P.diag;
}

// The separators' solve by partial pivoting (xGTSV's elimination by lane 0, in shared memory)
// for right-hand side `rf` (this lane's row): factors the system first where `factor` (its
// matrix already in place), else reuses its factors. Returns the pivoting's INFO (0: xs holds
// this lane's separator value).
template <typename T> __device__ int solve_separators(BatchRows<T> sep, bool factor, T rf, T &xs) {
    const int lane = threadIdx.x & 31;
    sep.b[lane] = rf;
    __syncwarp();
    int status = 0;
    if (lane == 0) {
        if (factor) status = batch_factor<T>(sep, 32, sep.b);
        else batch_forward<T>(sep, 32, sep.b);
        if (status == 0) batch_back<T>(sep, 32, sep.b);
    }
    status = __shfl_sync(0xffffffffu, status, 0);
    __syncwarp();
    xs = sep.b[lane];
    __syncwarp();
    return status;
}

// A lane's factored partition and the warp's factored separators' system (by cyclic
// reduction, or by pivoting in `sep` where `pivoting`).
template <typename T, int M> struct SpikeFactors {
    const T *a, *b, *c;
    RegFactor<T, M - 1> F;
    T w[M - 1], v[M - 1];
    Cyclic<T> cyclic;
    BatchRows<T> sep;
    bool pivoting;
};

// x := x + the solution of A z = rhs (`factor`: the first solve with pivoting separators,
// which factors them). Returns false where the separators' pivoting met a zero pivot.
template <typename T, int M>
__device__ __forceinline__ bool spike_correct(const SpikeFactors<T, M> &S, bool factor, const T (&rhs)[M], T (&x)[M]) {
    constexpr int MI = M - 1;
    const int lane = threadIdx.x & 31;
    T y[MI];
#pragma unroll
    for (int e = 0; e < MI; ++e) y[e] = rhs[e];
    reg_solve<T, MI>(S.a, S.b, S.c, S.F, y);
    T yt_next = __shfl_down_sync(0xffffffffu, y[0], 1);
    const T cs = lane == 31 ? T(0) : S.c[MI];
    if (lane == 31) yt_next = T(0);
    const T rf = rhs[MI] - S.a[MI] * y[MI - 1] - cs * yt_next;
    T xs;
    if (!S.pivoting) xs = cyclic_solve<T>(S.cyclic, rf);
    else if (solve_separators<T>(S.sep, factor, rf, xs) != 0) return false;
    T xs_prev = __shfl_up_sync(0xffffffffu, xs, 1);
    if (lane == 0) xs_prev = T(0);
#pragma unroll
    for (int e = 0; e < MI; ++e) x[e] = x[e] + (y[e] - S.w[e] * xs_prev - S.v[e] * xs);
    x[MI] = x[MI] + xs;
    return true;
}

// The large solver's residual levels in units of the scale max(|a x| + |d x| + |c x| + |f|)
// (`_s`) and of max |f| (`_b`): a column is refined while above both refine levels
// (`wants_refinement` in src/gtsv/residual.rs), at most `steps` times, and its answer accepted
// below both accept levels (`judge`).
template <typename T> struct Levels {
    T refine_s, refine_b, accept_s, accept_b;
    int steps;
};

// Solves B's columns from `col` on with the factors S and refines each; an accepted column's
// X replaces its B in shared memory (`Levels`) and `col` moves past it. Returns whether every
// column was accepted; on false, `col` is the refused one, where a solve with other factors
// resumes (the columns before it hold X, no longer B).
template <typename T, int M>
__device__ bool spike_columns(const SpikeRows<T, M> &sh, const SpikeFactors<T, M> &S, const Levels<T> &tol,
                              int nrhs, int &col) {
    constexpr int MI = M - 1;
    const unsigned all = 0xffffffffu;
    const int lane = threadIdx.x & 31;
    const int first = col;
    for (; col < nrhs; ++col) {
        const T *pf = sh.f + col * SpikeRows<T, M>::L + lane * (M + 1);
        T rhs[M], x[M];
#pragma unroll
        for (int e = 0; e < M; ++e) {
            rhs[e] = pf[e];
            x[e] = T(0);
        }
        bool refine = true, accept = false;
        for (int step = 0; step <= tol.steps && refine; ++step) {
            if (!spike_correct<T, M>(S, S.pivoting && col == first && step == 0, rhs, x)) return false;
            // The residual f - A x of every row (rhs of the next step) and its scale.
            T x_before = __shfl_up_sync(all, x[MI], 1), x_after = __shfl_down_sync(all, x[0], 1);
            if (lane == 0) x_before = T(0);
            if (lane == 31) x_after = T(0);
            T rm = T(0), sm = T(0), bm = T(0);
            bool finite = true;
#pragma unroll
            for (int e = 0; e < M; ++e) {
                T xm = e > 0 ? x[e - 1] : x_before, xp = e + 1 < M ? x[e + 1] : x_after;
                T r = T(residual_acc(double(pf[e]), double(S.a[e]), double(xm), double(S.b[e]), double(x[e]),
                                     double(S.c[e]), double(xp)));
                T sc = fabs(S.b[e] * x[e]) + fabs(S.a[e] * xm) + fabs(S.c[e] * xp) + fabs(pf[e]);
                finite = finite && isfinite(x[e]) && isfinite(r) && isfinite(sc);
                rhs[e] = r;
                rm = fmax(rm, fabs(r));
                sm = fmax(sm, sc);
                bm = fmax(bm, fabs(pf[e]));
            }
            for (int off = 16; off > 0; off >>= 1) {
                rm = fmax(rm, __shfl_xor_sync(all, rm, off));
                sm = fmax(sm, __shfl_xor_sync(all, sm, off));
                bm = fmax(bm, __shfl_xor_sync(all, bm, off));
            }
            if (!__all_sync(all, finite)) return false;
            refine = rm > tol.refine_s * sm && rm > tol.refine_b * bm;
            accept = rm <= tol.accept_s * sm && rm <= tol.accept_b * bm;
        }
        if (!accept) return false;
        T *xf = sh.f + col * SpikeRows<T, M>::L;
        __syncwarp();
#pragma unroll
        for (int e = 0; e < M; ++e) xf[lane * (M + 1) + e] = x[e];
        __syncwarp();
    }
    return true;
}

// SPIKE on system s (n <= 32 M) in the warp's shared memory `base`; see the top of the file.
// The separators are solved by cyclic reduction first, by partial pivoting where that answer
// is refused. Returns whether X was written: false sends the system to batch_pivoting.
template <typename T, int M>
__device__ bool warp_spike(const BatchSystem<T> &s, unsigned char *base, const Levels<T> &tol) {
    constexpr int MI = M - 1, R = 32 * M;
    const unsigned all = 0xffffffffu;
    const int lane = threadIdx.x & 31, n = s.n;
    SpikeRows<T, M> sh(base, s.nrhs);
    auto at = [](int i) { return i + i / M; };
    {
        // The three diagonals and B's first column: all 4 M loads of a lane in flight at once.
        T va[M], vb[M], vc[M], vf[M];
#pragma unroll
        for (int u = 0; u < M; ++u) {
            const int i = lane + 32 * u;
            va[u] = i >= 1 && i < n ? s.dl[i - 1] : T(0);
            vb[u] = i < n ? s.d[i] : T(1);
            vc[u] = i + 1 < n ? s.du[i] : T(0);
            vf[u] = i < n ? s.b[i] : T(0);
        }
#pragma unroll
        for (int u = 0; u < M; ++u) {
            const int i = at(lane + 32 * u);
            sh.a[i] = va[u];
            sh.b[i] = vb[u];
            sh.c[i] = vc[u];
            sh.f[i] = vf[u];
        }
    }
    for (int col = 1; col < s.nrhs; ++col) {
        T *f = sh.f + col * SpikeRows<T, M>::L;
        staged<M, T>(R, [&](int i) { return i < n ? s.b[col * s.ldb + i] : T(0); }, [&](int i, T v) { f[at(i)] = v; });
    }
    __syncwarp();
    SpikeFactors<T, M> S;
    S.a = sh.a + lane * (M + 1);
    S.b = sh.b + lane * (M + 1);
    S.c = sh.c + lane * (M + 1);
    S.sep = sh.sep;
    if (!__all_sync(all, factor_and_spikes<T, MI>(S.a, S.b, S.c, S.F, S.w, S.v))) return false;
    // The separators' system: row t couples separator t to t-1 and t+1 (src/gtsv/mod.rs).
    const T as = S.a[MI], cs = lane == 31 ? T(0) : S.c[MI];
    T wt_next = __shfl_down_sync(all, S.w[0], 1), vt_next = __shfl_down_sync(all, S.v[0], 1);
    if (lane == 31) wt_next = vt_next = T(0);
    const T sub = lane == 0 ? T(0) : -as * S.w[MI - 1], diag = S.b[MI] - as * S.v[MI - 1] - cs * wt_next,
            super = -cs * vt_next;
    cyclic_factor<T>(sub, diag, super, S.cyclic);
    S.pivoting = false;
    int col = 0;
    if (!spike_columns<T, M>(sh, S, tol, s.nrhs, col)) {
        sh.sep.d[lane] = diag;
        sh.sep.du[lane] = super;
        if (lane > 0) sh.sep.du2[lane - 1] = sub;
        if (lane == 31) sh.sep.du2[31] = T(0);
        S.pivoting = true;
        if (!spike_columns<T, M>(sh, S, tol, s.nrhs, col)) return false;
    }
    // Every column accepted: X from the tiles, with coalesced stores (B in global memory is
    // untouched until here, so partial pivoting can still start from it).
    for (int c = 0; c < s.nrhs; ++c) {
        const T *xf = sh.f + c * SpikeRows<T, M>::L;
        T *out = s.xk + (long long)c * s.ldx;
        staged<M, T>(n, [&](int i) { return xf[at(i)]; }, [&](int i, T v) { out[i] = v; });
    }
    return true;
}

// The warp's system of the batch, or none past its end.
template <typename T>
__device__ bool my_system(int n, int nrhs, long long count, const T *dl, const T *d, const T *du, long long sa,
                          const T *b, long long ldb, long long sb, T *x, long long ldx, long long sx, long long &k,
                          BatchSystem<T> &s) {
    k = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (k >= count) return false;
    const long long a0 = k * sa;
    s = BatchSystem<T>{n, nrhs, dl + a0, d + a0, du + a0, b + k * sb, ldb, x + k * sx, ldx};
    return true;
}

// X goes to x (system k at k*sx, leading dimension ldx; x may be b with B's layout), and INFO
// to info[k].
template <typename T>
__device__ void batch_solve(int n, int nrhs, long long count, const T *dl, const T *d, const T *du,
                            long long sa, const T *b, long long ldb, long long sb, T *x, long long ldx,
                            long long sx, int *info, long long bytes) {
    extern __shared__ __align__(16) unsigned char batch_shared[];
    long long k;
    BatchSystem<T> s;
    if (!my_system<T>(n, nrhs, count, dl, d, du, sa, b, ldb, sb, x, ldx, sx, k, s)) return;
    int status = batch_pivoting<T>(s, batch_shared + (threadIdx.x / 32) * bytes);
    if ((threadIdx.x & 31) == 0) info[k] = status;
}

// As batch_solve, SPIKE first (systems of n <= 32 M rows); refused[k] is 1 where system k went
// on to partial pivoting, else 0 (a write per system, not a counter: the caller need not zero
// it, and it may live in host memory).
template <typename T, int M>
__device__ void batch_spike_solve(int n, int nrhs, long long count, const T *dl, const T *d, const T *du,
                                  long long sa, const T *b, long long ldb, long long sb, T *x, long long ldx,
                                  long long sx, int *info, long long bytes, Levels<T> tol, int *refused) {
    extern __shared__ __align__(16) unsigned char batch_shared[];
    long long k;
    BatchSystem<T> s;
    if (!my_system<T>(n, nrhs, count, dl, d, du, sa, b, ldb, sb, x, ldx, sx, k, s)) return;
    unsigned char *base = batch_shared + (threadIdx.x / 32) * bytes;
    int status = 0;
    const bool spiked = warp_spike<T, M>(s, base, tol);
    if (!spiked) status = batch_pivoting<T>(s, base);
    if ((threadIdx.x & 31) == 0) {
        info[k] = status;
        refused[k] = spiked ? 0 : 1;
    }
}

// The stacked solve's check of each system on its own (`solve_stacked_in_place` in
// src/gtsv/gpu/batch.rs): warp w = k nrhs + col sums up column col of system k, X at x (system
// k at k*sx, leading dimension ldx), as `residual` in gtsv.cu does for a whole system: max |r|
// (r = b - A x, accurately), max (|a x| + |d x| + |c x| + |b|) and max |b| into sums[3w ..],
// and whether every value was finite into finite[w].
template <typename T>
__device__ void batch_judge(int n, int nrhs, long long count, const T *dl, const T *d, const T *du, long long sa,
                            const T *b, long long ldb, long long sb, const T *x, long long ldx, long long sx,
                            T *sums, int *finite) {
    const unsigned all = 0xffffffffu;
    const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (w >= count * nrhs) return;
    const int lane = threadIdx.x & 31;
    const long long k = w / nrhs, col = w % nrhs;
    const T *ak = dl + k * sa, *dk = d + k * sa, *ck = du + k * sa;
    const T *bk = b + k * sb + col * ldb, *xk = x + k * sx + col * ldx;
    T rm = T(0), sm = T(0), bm = T(0);
    bool fin = true;
    for (int i = lane; i < n; i += 32) {
        const T ai = i > 0 ? ak[i - 1] : T(0), ci = i + 1 < n ? ck[i] : T(0), di = dk[i], fi = bk[i];
        const T xm = i > 0 ? xk[i - 1] : T(0), xi = xk[i], xp = i + 1 < n ? xk[i + 1] : T(0);
        const T r = T(residual_acc(double(fi), double(ai), double(xm), double(di), double(xi), double(ci), double(xp)));
        const T sc = fabs(di * xi) + fabs(ai * xm) + fabs(ci * xp) + fabs(fi);
        fin = fin && isfinite(xi) && isfinite(r) && isfinite(sc);
        rm = fmax(rm, fabs(r));
        sm = fmax(sm, sc);
        bm = fmax(bm, fabs(fi));
    }
    for (int off = 16; off > 0; off >>= 1) {
        rm = fmax(rm, __shfl_xor_sync(all, rm, off));
        sm = fmax(sm, __shfl_xor_sync(all, sm, off));
        bm = fmax(bm, __shfl_xor_sync(all, bm, off));
    }
    fin = __all_sync(all, fin);
    if (lane == 0) {
        sums[3 * w] = rm;
        sums[3 * w + 1] = sm;
        sums[3 * w + 2] = bm;
        finite[w] = fin ? 1 : 0;
    }
}

// BOUNDS: unbounded, the m = 8 kernel held 208 registers (9 warps per SM); bounded to 168 it
// keeps 12 resident, with a few spills: 4096 diagonally dominant systems of 256 rows took
// 41.5 us on an H200, against 44.6 us unbounded and 44.2 us bounded to 128 registers.
#define GTSV_BATCH_SPIKE(T, sfx, M, BOUNDS)                                                                 \
    extern "C" __global__ void BOUNDS gtsv_batch_spike_##sfx##_m##M(int n, int nrhs, long long count,        \
                                                                    const T *dl, const T *d, const T *du,   \
                                                                    long long sa, const T *b, long long ldb, \
                                                                    long long sb, T *x, long long ldx,     \
                                                                    long long sx, int *info,               \
                                                                    long long bytes, Levels<T> tol,        \
                                                                    int *refused) {                        \
        batch_spike_solve<T, M>(n, nrhs, count, dl, d, du, sa, b, ldb, sb, x, ldx, sx, info, bytes, tol,   \
                                refused);                                                                  \
    }

#define GTSV_BATCH_ENTRIES(T, sfx)                                                                          \
    extern "C" __global__ void gtsv_batch_##sfx(int n, int nrhs, long long count, const T *dl, const T *d,   \
                                                const T *du, long long sa, const T *b, long long ldb,       \
                                                long long sb, T *x, long long ldx, long long sx, int *info, \
                                                long long bytes) {                                          \
        batch_solve<T>(n, nrhs, count, dl, d, du, sa, b, ldb, sb, x, ldx, sx, info, bytes);                 \
    }                                                                                                       \
    extern "C" __global__ void gtsv_batch_judge_##sfx(int n, int nrhs, long long count, const T *dl,          \
                                                      const T *d, const T *du, long long sa, const T *b,    \
                                                      long long ldb, long long sb, const T *x, long long ldx, \
                                                      long long sx, T *sums, int *finite) {                 \
        batch_judge<T>(n, nrhs, count, dl, d, du, sa, b, ldb, sb, x, ldx, sx, sums, finite);                \
    }                                                                                                       \
    GTSV_BATCH_SPIKE(T, sfx, 8, __launch_bounds__(128, 3))                                                  \
    GTSV_BATCH_SPIKE(T, sfx, 16, )

// One module per precision: the embedding source defines GTSV_BATCH_T and GTSV_BATCH_SFX.
#define GTSV_BATCH_MODULE(T, sfx) GTSV_BATCH_ENTRIES(T, sfx)
GTSV_BATCH_MODULE(GTSV_BATCH_T, GTSV_BATCH_SFX)
