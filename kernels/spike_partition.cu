// The register-resident partition solver that SPIKE's kernels share (`gtsv.cu`, one partition
// per thread of a level; `gtsv_batch.cu`, one partition per lane of a system's warp): diagonal
// pivoting of a partition's interior, its spikes, and the accurate residual of a row. Every
// module made from either file starts with this one (`device/kernels.rs`).

// The diagonal-pivoting factorization of one partition's MI interior rows, in registers: MI is
// a compile-time constant and the loops below are unrolled, so every index is static (a
// dynamically indexed array lives in local memory, which made these kernels slow). Row k starts
// a 2x2 pivot when bit k of `two` is set; r[k] is 1/pivot (1x1) or 1/delta (2x2), pv[k] the
// 2x2 block's leading entry, mult[k] the back-substitution multiplier.
template <typename T, int MI> struct RegFactor {
    T r[MI], pv[MI], mult[MI];
    unsigned two;
};

// The larger of x and y by one comparison: fmax's NaN rules cost a dozen instructions per use in
// double precision. A NaN here only steers the pivoting of an answer that the residual check
// rejects anyway (a NaN in the matrix makes its residual NaN).
template <typename T> __device__ __forceinline__ T larger(T x, T y) { return x > y ? x : y; }

// The pivoting rule of dp_factor (Bunch-Kaufman's kappa), with one division per pivot (its
// reciprocal) instead of one per use. Returns false on an exactly zero pivot.
template <typename T, int MI>
__device__ __forceinline__ bool reg_factor(const T *a, const T *b, const T *c, RegFactor<T, MI> &F) {
    const T kappa = T(0.6180339887498949);
    bool ok = true, skip = false;
    F.two = 0u;
    T bt = b[0];
#pragma unroll
    for (int k = 0; k < MI; ++k) {
        F.pv[k] = T(0);
        if (skip) {
            skip = false;
            F.r[k] = T(0);
            continue;
        }
        T a1 = k + 1 < MI ? a[k + 1] : T(0);
        T c0 = k + 1 < MI ? c[k] : T(0);
        T a2 = k + 2 < MI ? a[k + 2] : T(0);
        T b1 = k + 1 < MI ? b[k + 1] : T(0);
        T c1 = k + 2 < MI ? c[k + 1] : T(0);
        T sigma = larger(larger(larger(larger(fabs(a1), fabs(a2)), fabs(b1)), fabs(c0)), fabs(c1));
        if (k + 1 >= MI || fabs(bt) * sigma >= kappa * fabs(a1 * c0)) {
            if (bt == T(0)) ok = false;
            T inv = T(1) / bt;
            F.r[k] = inv;
            F.mult[k] = c0 * inv;
            bt = b1 - a1 * F.mult[k];
        } else if (k + 1 < MI) {
            T delta = bt * b1 - a1 * c0;
            if (delta == T(0)) ok = false;
            T inv = T(1) / delta;
            F.two |= 1u << k;
            F.r[k] = inv;
            F.pv[k] = bt;
            F.mult[k] = -(c0 * c1) * inv;
            F.mult[k + 1] = bt * c1 * inv;
            T b2 = k + 2 < MI ? b[k + 2] : T(0);
            bt = b2 - a2 * F.mult[k + 1];
            skip = true;
        }
    }
    return ok;
}

// Solves the factored partition for f (in registers) in place.
template <typename T, int MI>
__device__ __forceinline__ void reg_solve(const T *a, const T *b, const T *c, const RegFactor<T, MI> &F, T (&f)[MI]) {
    if (F.two == 0u) {
        // 1x1 pivots only (diagonally dominant partitions, always): no per-row branches.
#pragma unroll
        for (int k = 0; k < MI; ++k) f[k] = (k > 0 ? f[k] - a[k] * f[k - 1] : f[k]) * F.r[k];
#pragma unroll
        for (int k = MI - 2; k >= 0; --k) f[k] = f[k] - F.mult[k] * f[k + 1];
        return;
    }
    T yprev = T(0);
#pragma unroll
    for (int k = 0; k < MI; ++k) {
        bool second = k > 0 && ((F.two >> (k - 1)) & 1u);
        if (second) continue;
        T z = k > 0 ? f[k] - a[k] * yprev : f[k];
        if (k + 1 < MI && ((F.two >> k) & 1u)) {
            T z2 = f[k + 1];
            T y0 = (b[k + 1] * z - c[k] * z2) * F.r[k];
            T y1 = (F.pv[k] * z2 - a[k + 1] * z) * F.r[k];
            f[k] = y0;
            f[k + 1] = y1;
            yprev = y1;
        } else {
            T y = z * F.r[k];
            f[k] = y;
            yprev = y;
        }
    }
#pragma unroll
    for (int k = MI - 2; k >= 0; --k) {
        if ((F.two >> k) & 1u) {
            if (k + 2 < MI) f[k] = f[k] - F.mult[k] * f[k + 2];
        } else {
            f[k] = f[k] - F.mult[k] * f[k + 1];
        }
    }
}

// reg_solve for two right-hand sides at once: two independent dependency chains per step, so a
// latency-bound thread issues twice the work (the spikes W and V).
template <typename T, int MI>
__device__ __forceinline__ void reg_solve2(const T *a, const T *b, const T *c, const RegFactor<T, MI> &F, T (&f)[MI],
                                           T (&g)[MI]) {
    if (F.two == 0u) {
#pragma unroll
        for (int k = 0; k < MI; ++k) {
            f[k] = (k > 0 ? f[k] - a[k] * f[k - 1] : f[k]) * F.r[k];
            g[k] = (k > 0 ? g[k] - a[k] * g[k - 1] : g[k]) * F.r[k];
        }
#pragma unroll
        for (int k = MI - 2; k >= 0; --k) {
            f[k] = f[k] - F.mult[k] * f[k + 1];
            g[k] = g[k] - F.mult[k] * g[k + 1];
        }
        return;
    }
    T fprev = T(0), gprev = T(0);
#pragma unroll
    for (int k = 0; k < MI; ++k) {
        bool second = k > 0 && ((F.two >> (k - 1)) & 1u);
        if (second) continue;
        T zf = k > 0 ? f[k] - a[k] * fprev : f[k];
        T zg = k > 0 ? g[k] - a[k] * gprev : g[k];
        if (k + 1 < MI && ((F.two >> k) & 1u)) {
            T zf2 = f[k + 1], zg2 = g[k + 1];
            T f0 = (b[k + 1] * zf - c[k] * zf2) * F.r[k];
            T g0 = (b[k + 1] * zg - c[k] * zg2) * F.r[k];
            T f1 = (F.pv[k] * zf2 - a[k + 1] * zf) * F.r[k];
            T g1 = (F.pv[k] * zg2 - a[k + 1] * zg) * F.r[k];
            f[k] = f0;
            g[k] = g0;
            f[k + 1] = f1;
            g[k + 1] = g1;
            fprev = f1;
            gprev = g1;
        } else {
            T yf = zf * F.r[k], yg = zg * F.r[k];
            f[k] = yf;
            g[k] = yg;
            fprev = yf;
            gprev = yg;
        }
    }
#pragma unroll
    for (int k = MI - 2; k >= 0; --k) {
        if ((F.two >> k) & 1u) {
            if (k + 2 < MI) {
                f[k] = f[k] - F.mult[k] * f[k + 2];
                g[k] = g[k] - F.mult[k] * g[k + 2];
            }
        } else {
            f[k] = f[k] - F.mult[k] * f[k + 1];
            g[k] = g[k] - F.mult[k] * g[k + 1];
        }
    }
}

// Factors a partition (rows a, b, c with its separator row last) and solves for its spikes
// W = A_j^-1 (a_0 e_0) and V = A_j^-1 (c e_last). Returns false on a zero pivot.
template <typename T, int MI>
__device__ __forceinline__ bool factor_and_spikes(const T *a, const T *b, const T *c, RegFactor<T, MI> &F,
                                                  T (&w)[MI], T (&v)[MI]) {
    bool ok = reg_factor<T, MI>(a, b, c, F);
#pragma unroll
    for (int e = 0; e < MI; ++e) {
        w[e] = e == 0 ? a[0] : T(0);
        v[e] = e == MI - 1 ? c[MI - 1] : T(0);
    }
    reg_solve2<T, MI>(a, b, c, F, w, v);
    return ok;
}

// a + b = s + e exactly (two-sum).
__device__ __forceinline__ void two_sum(double a, double b, double &s, double &e) {
    s = a + b;
    double bb = s - a;
    e = (a - (s - bb)) + (b - bb);
}

// f - (a*xm + b*x0 + c*xp) in double precision with exact products (fma) and a compensated sum:
// the same evaluation as residual_accurate in src/gtsv/mod.rs.
__device__ __forceinline__ double residual_acc(double f, double a, double xm, double b, double x0, double c,
                                               double xp) {
    double s = f, e = 0.0;
    double as[3] = {b, a, c}, xs[3] = {x0, xm, xp};
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        double p = as[k] * xs[k];
        double pl = fma(as[k], xs[k], -p);
        double s2, e2;
        two_sum(s, -p, s2, e2);
        s = s2;
        e += e2 - pl;
    }
    return s + e;
}
