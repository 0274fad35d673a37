// Band -> tridiagonal bulge chasing on the GPU (hylapack's sb2st family).
//
// The sweeps and steps are those of src/sbr/sb2st/cpu.rs (its module notes say which entries a
// step touches): sweep i annihilates column i below the subdiagonal, then chases the bulge
// down in steps of b rows, and step k of sweep i may start once sweep i - 1 has finished its
// steps 0 ..= k + 2. One CTA runs one sweep at a time, its thread t owning row t of the
// blocks; the sweeps are dealt round-robin to a grid that is resident all at once (the host
// sizes it from the occupancy), so a sweep only ever waits on a running one.
//
// The band (lower storage, 2b + 1 rows: entry (r, c), r >= c, at (r - c) + c * ld) lives in
// global memory, small enough to stay in L2. Other CTAs write it, so it is read with ld.cg
// (L1 is not coherent between SMs) and a step publishes its progress only after a fence.
// done[i] counts the finished steps of sweep i (DONE once it is over). A wait longer than
// the caller's timeout sets *failed, and every CTA then stops: the host falls back to the CPU
// instead of hanging.
//
// Loops stay rolled (unrolled by 4 or 8 at most): one warp runs each step's code once, so a
// fully unrolled kernel (90 KB of instructions) spent most of its time fetching instructions.
// The shared blocks are zero outside the step's rows and columns, so every loop runs to a
// multiple of 4 without tests, and fma() is explicit (the kernels are compiled without
// contraction).

#define DONE 0xffffffffu

__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

template <typename T, int NT>
__device__ __forceinline__ T block_sum(T x, T *red) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    if (NT == 32) return x;
    __syncthreads(); // red may still be read by a previous reduction
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = x;
    __syncthreads();
    x = red[0];
#pragma unroll
    for (int j = 1; j < NT / 32; ++j) x += red[j];
    return x;
}

template <typename T, int NT>
__device__ __forceinline__ T block_max(T x, T *red) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, o));
    if (NT == 32) return x;
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = x;
    __syncthreads();
    x = red[0];
#pragma unroll
    for (int j = 1; j < NT / 32; ++j) x = fmax(x, red[j]);
    return x;
}

// The reflector I - tau v v^T (v[0] = 1) mapping x[0 .. len) (shared memory, complete) to
// beta e1, with xLARFG's sign; thread t gets v[t] (0 past len). As the CPU code: norms of x
// scaled by its largest entry, so no square under- or overflows.
template <typename T, int NT>
__device__ T householder(const T *x, int len, T &tau, T &v, T *red) {
    const int t = threadIdx.x;
    const T alpha = x[0];
    const T xt = (t >= 1 && t < len) ? x[t] : T(0);
    const T big = block_max<T, NT>(fmax(fabs(alpha), fabs(xt)), red);
    const T u = big > T(0) ? xt / big : T(0);
    const T tail2 = block_sum<T, NT>(u * u, red);
    if (tail2 == T(0)) {
        tau = T(0);
        v = t == 0 ? T(1) : T(0);
        return alpha;
    }
    const T a = alpha / big;
    const T norm = big * sqrt(a * a + tail2);
    const T beta = alpha >= T(0) ? -norm : norm;
    tau = (beta - alpha) / beta;
    v = t == 0 ? T(1) : xt * (T(1) / (alpha - beta));
    return beta;
}

// Thread 0 waits until sweep i - 1 has finished `need` steps; false if the wait failed.
__device__ bool wait_for(const unsigned *done, int i, unsigned need, unsigned *failed,
                         unsigned long long timeout_ns) {
    __shared__ unsigned go;
    if (threadIdx.x == 0) {
        unsigned ok = 1;
        if (i > 0) {
            const volatile unsigned *prev = done + i - 1;
            unsigned long long start = 0;
            for (unsigned spins = 0; *prev < need; ++spins) {
                if ((spins & 63) == 0) {
                    const unsigned long long t = now_ns();
                    if (spins == 0) start = t;
                    if (*(volatile unsigned *)failed) {
                        ok = 0;
                        break;
                    }
                    if (t - start > timeout_ns) {
                        atomicExch(failed, 1u);
                        ok = 0;
                        break;
                    }
                }
                __nanosleep(64);
            }
            __threadfence();
        } else if (*(volatile unsigned *)failed) {
            ok = 0;
        }
        go = ok;
    }
    __syncthreads();
    return go != 0;
}

// Every thread's stores are visible device-wide before sweep i's counter becomes `steps`: the
// barrier orders them before thread 0's fence, which orders them before the counter.
__device__ __forceinline__ void publish(unsigned *done, int i, unsigned steps) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicExch(done + i, steps);
    }
}

// dot(x, y) over the first len4 entries (x[c * xs], y[c * ys]), len4 a multiple of 4, in four
// partial sums so that the additions do not form one long dependent chain.
template <typename T>
__device__ __forceinline__ T dot(const T *x, int xs, const T *y, int ys, int len4) {
    T a0 = T(0), a1 = T(0), a2 = T(0), a3 = T(0);
    for (int c = 0; c < len4; c += 4) {
        a0 = fma(x[c * xs], y[c * ys], a0);
        a1 = fma(x[(c + 1) * xs], y[(c + 1) * ys], a1);
        a2 = fma(x[(c + 2) * xs], y[(c + 2) * ys], a2);
        a3 = fma(x[(c + 3) * xs], y[(c + 3) * ys], a3);
    }
    return (a0 + a2) + (a1 + a3);
}

__device__ __forceinline__ int round4(int x) { return (x + 3) & ~3; }

// Loads a step's blocks into shared memory (column-major, stride S, zero outside): B, lm x m,
// whose entry (t, c) is at b0[c * (ld - 1)] for row t's b0 (null at step 0: no B), and the
// symmetric diagonal block of rows s0 .. s0 + len - 1 (both triangles). Entry (r, c) of the
// band is at (r - c) + c * ld, so along a row of either block the address steps by ld - 1.
// Eight columns' loads are in flight at a time.
template <typename T, int NT>
__device__ __forceinline__ void load_blocks(const T *w, int ld, const T *b0, int lm, int m, int s0,
                                            int len, T *sb, T *sd) {
    constexpr int S = NT + 1;
    const int t = threadIdx.x;
    const T *d0 = w + t + (size_t)s0 * ld;
    const int step = ld - 1;
    for (int c0 = 0; c0 < NT; c0 += 8) {
        T rb[8], rd[8];
#pragma unroll
        for (int c = 0; c < 8; ++c) {
            const int cc = c0 + c;
            rb[c] = (b0 && t < lm && cc < m) ? __ldcg(b0 + cc * step) : T(0);
            rd[c] = (t < len && cc <= t) ? __ldcg(d0 + cc * step) : T(0);
        }
#pragma unroll
        for (int c = 0; c < 8; ++c) {
            const int cc = c0 + c;
            sb[cc * S + t] = rb[c];
            if (cc <= t) {
                sd[cc * S + t] = rd[c];
                sd[t * S + cc] = rd[c];
            }
        }
    }
}

// D := H D H on the diagonal block in sd (rows s0 ..), H = I - tau v v^T with thread t's v in
// `v` and all of it in sv; the lower triangle goes back to the band.
template <typename T, int NT>
__device__ __forceinline__ void two_sided(T *w, int ld, int s0, int len, const T *sd, const T *sv,
                                          T *sy, T v, T tau, T *red) {
    constexpr int S = NT + 1;
    const int t = threadIdx.x;
    if (tau == T(0)) return;
    // y = tau D v, y -= (tau / 2)(y^T v) v, D -= v y^T + y v^T.
    T y = tau * dot(sd + t, S, sv, 1, round4(len));
    const T yv = block_sum<T, NT>(y * v, red);
    y = fma(T(-0.5) * tau * yv, v, y);
    sy[t] = y;
    __syncthreads();
    if (t < len) {
        T *d0 = w + t + (size_t)s0 * ld;
        for (int c = 0; c <= t; ++c)
            __stcg(d0 + c * (ld - 1), fma(-y, sv[c], fma(-v, sy[c], sd[c * S + t])));
    }
}

// Optional profile (prof non-null): thread 0 of each CTA sums the clock cycles of each phase of
// the steps k >= 1 and adds them to prof[0 .. PHASES) at the end, prof[PHASES] the steps.
#define PHASES 6
struct Profile {
    unsigned long long *out;
    unsigned long long sum[PHASES + 1];
    long long last;
    __device__ void start() {
        if (out) last = clock64();
    }
    __device__ void lap(int phase) {
        if (out) {
            const long long now = clock64();
            sum[phase] += now - last;
            last = now;
        }
    }
    __device__ void flush() {
        if (out && threadIdx.x == 0)
            for (int p = 0; p <= PHASES; ++p) atomicAdd(out + p, sum[p]);
    }
};

template <typename T, int NT>
__device__ void chase(T *w, int n, int b, int ld, unsigned *done, unsigned *failed,
                      unsigned long long timeout_ns, unsigned long long *prof_out) {
    Profile prof = {prof_out, {0, 0, 0, 0, 0, 0, 0}, 0};
    constexpr int S = NT + 1;
    extern __shared__ __align__(16) unsigned char smem[];
    T *sb = reinterpret_cast<T *>(smem); // off-diagonal block, column-major, stride S
    T *sd = sb + NT * S;                 // diagonal block
    T *sv = sd + NT * S;                 // the sweep's reflector
    T *sy = sv + NT;
    T *red = sy + NT;
    const int t = threadIdx.x;
    for (int i = blockIdx.x; i < n - 2; i += gridDim.x) {
        // Step 0: the reflector of column i, applied to the diagonal block of its rows.
        if (!wait_for(done, i, 3, failed, timeout_ns)) return;
        int st = i + 1, m = min(b, n - 1 - i);
        if (t < m) sv[t] = __ldcg(w + (st + t - i) + (size_t)i * ld);
        load_blocks<T, NT>(w, ld, nullptr, 0, 0, st, m, sb, sd);
        __syncthreads();
        T tau, v;
        T beta = householder<T, NT>(sv, m, tau, v, red);
        __syncthreads(); // everyone has read sv
        sv[t] = v;
        if (t < m) __stcg(w + (st + t - i) + (size_t)i * ld, t == 0 ? beta : T(0));
        __syncthreads();
        two_sided<T, NT>(w, ld, st, m, sd, sv, sy, v, tau, red);
        publish(done, i, 1);
        for (unsigned k = 1;; ++k) {
            const int j1 = st + m;
            if (j1 >= n) {
                publish(done, i, DONE);
                break;
            }
            const int lm = min(b, n - j1);
            prof.start();
            if (!wait_for(done, i, k + 3, failed, timeout_ns)) return;
            prof.lap(0);
            // The block B below the last diagonal block (rows j1 .., columns st ..) and the
            // next diagonal block.
            T *b0 = w + (j1 - st + t) + (size_t)st * ld; // B's row t
            load_blocks<T, NT>(w, ld, b0, lm, m, j1, lm, sb, sd);
            __syncthreads();
            prof.lap(1);
            // B := B H (the bulge appears), row by row.
            if (tau != T(0)) {
                const T s = tau * dot(sb + t, S, sv, 1, round4(m));
#pragma unroll 4
                for (int c = 0; c < round4(m); ++c) sb[c * S + t] = fma(-s, sv[c], sb[c * S + t]);
            }
            __syncthreads();
            // A new H annihilates B's first column below its first row ...
            beta = householder<T, NT>(sb, lm, tau, v, red);
            __syncthreads();
            sv[t] = v;
            if (t < lm) sb[t] = t == 0 ? beta : T(0);
            __syncthreads();
            // ... and goes to the rest of B from the left, column by column ...
            if (tau != T(0) && t >= 1 && t < m) {
                const T s = tau * dot(sv, 1, sb + t * S, 1, round4(lm));
#pragma unroll 4
                for (int r = 0; r < round4(lm); ++r) sb[t * S + r] = fma(-sv[r], s, sb[t * S + r]);
            }
            __syncthreads();
            prof.lap(2);
            if (t < lm) {
#pragma unroll 4
                for (int c = 0; c < m; ++c) __stcg(b0 + c * (ld - 1), sb[c * S + t]);
            }
            prof.lap(3);
            // ... and to the next diagonal block from both sides.
            two_sided<T, NT>(w, ld, j1, lm, sd, sv, sy, v, tau, red);
            prof.lap(4);
            publish(done, i, k + 1);
            prof.lap(5);
            prof.sum[PHASES] += 1;
            st = j1;
            m = lm;
        }
    }
    prof.flush();
}

// Shared memory of chase<T, NT>: two blocks of NT x (NT + 1), three vectors of NT.
#define CHASE(NAME, T, NT)                                                                     \
    extern "C" __global__ void __launch_bounds__(NT)                                           \
        NAME(T *w, int n, int b, int ld, unsigned *done, unsigned *failed,                     \
             unsigned long long timeout_ns, unsigned long long *prof) {                        \
        chase<T, NT>(w, n, b, ld, done, failed, timeout_ns, prof);                             \
    }

CHASE(sb2st_chase_s32, float, 32)
CHASE(sb2st_chase_d32, double, 32)
CHASE(sb2st_chase_s64, float, 64)
CHASE(sb2st_chase_d64, double, 64)
