// Band -> tridiagonal bulge chasing on the GPU (hylapack's sb2st family).
//
// The sweeps and steps are those of src/sbr/sb2st/cpu.rs (its module notes say which entries a
// step touches): sweep i annihilates column i below the subdiagonal, then chases the bulge
// down in steps of b rows, and step k of sweep i may start once sweep i - 1 has finished its
// steps 0 ..= k + lag - 1 (lag = 2, see the module notes there). One CTA runs one sweep at a
// time; the sweeps are dealt round-robin to a grid that is resident all at once (the host
// sizes it from the occupancy), so a sweep only ever waits on a running one. The time is
// about lag * n steps of latency, so a step is spread
// over R x G threads: thread (r, g) owns row r of the step's blocks in column group g (R / G
// columns), or, where columns are reduced, column t / G and its rows t % G + j G (so the G
// neighbouring lanes of a column read neighbouring words of shared memory).
//
// The band (lower storage, 2b + 1 rows: entry (r, c), r >= c, at (r - c) + c * ld) lives in
// global memory, small enough to stay in L2. Other CTAs write it, so it is read with ld.cg
// (L1 is not coherent between SMs) and a step publishes its progress only after a fence.
// done[i] counts the finished steps of sweep i (DONE once it is over). A wait longer than
// the caller's timeout sets *failed, and every CTA then stops: the host falls back to the CPU
// instead of hanging.
//
// The shared blocks are zero outside the step's rows and columns, so loops need no bounds, and
// fma() is explicit (the kernels are compiled without contraction). Loops over a thread's
// columns are short and unrolled; nothing else is (a fully unrolled kernel spent most of its
// time fetching instructions).

#define DONE 0xffffffffu

// Where sweep i's reflectors start in Q2's compact layout of order n (src/sbr/sb2st/mod.rs,
// sweep_offset): after the n - 1, n - 2, ... entries of the sweeps before.
__device__ __forceinline__ size_t sweep_offset(int n, int i) {
    const size_t si = (size_t)i;
    return si * (size_t)(n - 1) - (i > 0 ? si * (si - 1) / 2 : 0);
}

__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Sum (or max) over the R rows of a value every thread holds for its row r = t % R; all
// threads get the total. R = 32: each warp holds all rows. R = 64: warps 0 and 1 do, and
// hand their halves over through red[0 .. 2). Each call site has slots of its own (RED_*),
// and between two calls at one site lie other barriers, so no barrier is needed before the
// slots are written.
template <typename T, int R, bool MAX>
__device__ __forceinline__ T over_rows(T x, T *red) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const T y = __shfl_xor_sync(0xffffffffu, x, o);
        x = MAX ? fmax(x, y) : x + y;
    }
    if (R == 32) return x;
    if (threadIdx.x < 64 && (threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = x;
    __syncthreads();
    return MAX ? fmax(red[0], red[1]) : red[0] + red[1];
}

// The largest of m and the sum of s over the R rows at once (as over_rows; red[0 .. 4)).
template <typename T, int R>
__device__ __forceinline__ void over_rows_max_sum(T &m, T &s, T *red) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        m = fmax(m, __shfl_xor_sync(0xffffffffu, m, o));
        s += __shfl_xor_sync(0xffffffffu, s, o);
    }
    if (R == 32) return;
    if (threadIdx.x < 64 && (threadIdx.x & 31) == 0) {
        red[threadIdx.x >> 5] = m;
        red[2 + (threadIdx.x >> 5)] = s;
    }
    __syncthreads();
    m = fmax(red[0], red[1]);
    s = red[2] + red[3];
}

// Slots of the shared reduction buffer per call site (the host sizes it for threads / 32 >= 8
// entries at R = 64).
#define RED_NORM 0
#define RED_SCALED 4
#define RED_TWO_SIDED 6

// The reflector I - tau v v^T (v[0] = 1) mapping x[0 .. len) (shared memory, complete) to
// beta e1, with xLARFG's sign; each thread gets v[r] of its row r (0 past len). The largest
// entry and the plain sum of squares come from one reduction; where the largest entry is so
// large or small that a square could over- or underflow, the squares are summed again scaled
// by it, as the CPU code always does.
template <typename T, int R>
__device__ T householder(const T *x, int len, T &tau, T &v, T *red) {
    const int r = threadIdx.x % R;
    const T alpha = x[0];
    const T xr = (r >= 1 && r < len) ? x[r] : T(0);
    T big = fmax(fabs(alpha), fabs(xr)), tail2 = xr * xr;
    over_rows_max_sum<T, R>(big, tail2, red + RED_NORM);
    // With big inside [1 / safe, safe], R squares of at most big^2 stay finite, and squares
    // that underflow are below eps^2 big^2.
    const T safe = sizeof(T) == 8 ? T(0x1p480) : T(0x1p40);
    const bool plain = big == T(0) || (big <= safe && big >= T(1) / safe);
    if (!plain) {
        const T u = big > T(0) ? xr / big : T(0);
        tail2 = over_rows<T, R, false>(u * u, red + RED_SCALED);
    }
    if (tail2 == T(0)) {
        tau = T(0);
        v = r == 0 ? T(1) : T(0);
        return alpha;
    }
    T norm;
    if (plain) {
        norm = sqrt(alpha * alpha + tail2);
    } else {
        const T a = alpha / big;
        norm = big * sqrt(a * a + tail2);
    }
    const T beta = alpha >= T(0) ? -norm : norm;
    tau = (beta - alpha) / beta;
    v = r == 0 ? T(1) : xr * (T(1) / (alpha - beta));
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
                __nanosleep(32);
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

// Optional profile (out non-null): thread 0 of each CTA sums the clock cycles of each phase of
// the steps k >= 1 and adds them to out[0 .. PHASES) at the end, out[PHASES] the steps.
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

template <typename T, int R, int G>
struct Step {
    static constexpr int S = R + 1;           // shared blocks' column stride
    static constexpr int CG = R / G;          // columns per group, rows per row group
    T *sb, *sd, *sv, *sy, *part, *red;        // shared memory
    int r, g;                                 // this thread's row and column group

    // Loads B (lm x m, entry (r, c) at b0[c * (ld - 1)] for row r's b0; none if b0 is null)
    // and the symmetric diagonal block of rows s0 .. s0 + len - 1 into shared memory (both
    // triangles), zero outside. Along a row of either block the address steps by ld - 1.
    // Returns this thread's entries of B in rb.
    __device__ void load(const T *w, int ld, const T *b0, int lm, int m, int s0, int len,
                         T (&rb)[CG]) {
        const T *d0 = w + r + (size_t)s0 * ld;
        const int step = ld - 1;
        T rd[CG];
#pragma unroll
        for (int j = 0; j < CG; ++j) {
            const int c = g * CG + j;
            rb[j] = (b0 && r < lm && c < m) ? __ldcg(b0 + c * step) : T(0);
            rd[j] = (r < len && c <= r) ? __ldcg(d0 + c * step) : T(0);
        }
#pragma unroll
        for (int j = 0; j < CG; ++j) {
            const int c = g * CG + j;
            sb[c * S + r] = rb[j];
            if (c <= r) { // (r, c) and its mirror; the upper part is the other rows' mirror
                sd[c * S + r] = rd[j];
                sd[r * S + c] = rd[j];
            }
        }
    }

    // The sum over the groups of each thread's partial for its row (all G threads get it).
    __device__ T row_total(T partial) {
        part[g * R + r] = partial;
        __syncthreads();
        T s = part[r];
#pragma unroll
        for (int q = 1; q < G; ++q) s += part[q * R + r];
        return s;
    }

    // D := H D H on the diagonal block in sd (rows s0 .. s0 + len - 1), H = I - tau v v^T
    // with this row's v in v and all of it in sv; the lower triangle goes back to the band.
    __device__ void two_sided(T *w, int ld, int s0, int len, T v, T tau) {
        if (tau == T(0)) return;
        // y = tau D v, y -= (tau / 2)(y^T v) v, D -= v y^T + y v^T.
        T partial = T(0);
#pragma unroll
        for (int j = 0; j < CG; ++j) partial = fma(sd[(g * CG + j) * S + r], sv[g * CG + j], partial);
        T y = tau * row_total(partial);
        const T yv = over_rows<T, R, false>(y * v, red + RED_TWO_SIDED);
        y = fma(T(-0.5) * tau * yv, v, y);
        if (g == 0) sy[r] = y;
        __syncthreads();
        T *d0 = w + r + (size_t)s0 * ld;
#pragma unroll
        for (int j = 0; j < CG; ++j) {
            const int c = g * CG + j;
            if (r < len && c <= r)
                __stcg(d0 + c * (ld - 1), fma(-y, sv[c], fma(-v, sy[c], sd[c * S + r])));
        }
    }
};

template <typename T, int R, int G>
__device__ void chase(T *w, int n, int b, int ld, unsigned lag, unsigned *done, unsigned *failed,
                      unsigned long long timeout_ns, unsigned long long *prof_out, T *q) {
    using St = Step<T, R, G>;
    constexpr int S = St::S, CG = St::CG;
    extern __shared__ __align__(16) unsigned char smem[];
    T *base = reinterpret_cast<T *>(smem);
    St p;
    p.sb = base;              // B, column-major
    p.sd = p.sb + R * S;      // the diagonal block
    p.sv = p.sd + R * S;      // the sweep's reflector
    p.sy = p.sv + R;
    p.part = p.sy + R;        // G x R partial sums
    p.red = p.part + G * R;
    p.r = threadIdx.x % R;
    p.g = threadIdx.x / R;
    const int r = p.r, g = p.g;
    const int t = threadIdx.x;
    Profile prof = {prof_out, {0, 0, 0, 0, 0, 0, 0}, 0};
    T rb[CG];
    for (int i = blockIdx.x; i < n - 2; i += gridDim.x) {
        // Step 0: the reflector of column i, applied to the diagonal block of its rows.
        if (!wait_for(done, i, lag, failed, timeout_ns)) return;
        int st = i + 1, m = min(b, n - 1 - i);
        if (g == 0) p.sy[r] = r < m ? __ldcg(w + (st + r - i) + (size_t)i * ld) : T(0);
        p.load(w, ld, nullptr, 0, 0, st, m, rb);
        __syncthreads();
        T tau, v;
        T beta = householder<T, R>(p.sy, m, tau, v, p.red);
        __syncthreads(); // everyone has read sy
        if (g == 0) {
            p.sv[r] = v;
            if (r < m) __stcg(w + (st + r - i) + (size_t)i * ld, r == 0 ? beta : T(0));
            if (q != nullptr && r < m) q[sweep_offset(n, i) + r] = r == 0 ? tau : v;
        }
        __syncthreads();
        p.two_sided(w, ld, st, m, v, tau);
        publish(done, i, 1);
        for (unsigned k = 1;; ++k) {
            const int j1 = st + m;
            if (j1 >= n) {
                publish(done, i, DONE);
                break;
            }
            const int lm = min(b, n - j1);
            prof.start();
            if (!wait_for(done, i, k + lag, failed, timeout_ns)) return;
            prof.lap(0);
            // The block B below the last diagonal block (rows j1 .., columns st ..) and the
            // next diagonal block.
            T *b0 = w + (j1 - st + r) + (size_t)st * ld; // B's row r
            p.load(w, ld, b0, lm, m, j1, lm, rb);
            __syncthreads();
            prof.lap(1);
            // B := B H (the bulge appears), row by row.
            if (tau != T(0)) {
                T partial = T(0);
#pragma unroll
                for (int j = 0; j < CG; ++j) partial = fma(rb[j], p.sv[g * CG + j], partial);
                const T s = tau * p.row_total(partial);
#pragma unroll
                for (int j = 0; j < CG; ++j)
                    p.sb[(g * CG + j) * S + r] = fma(-s, p.sv[g * CG + j], rb[j]);
                __syncthreads();
            }
            // A new H annihilates B's first column below its first row ...
            beta = householder<T, R>(p.sb, lm, tau, v, p.red);
            __syncthreads();
            if (g == 0) {
                p.sv[r] = v;
                p.sb[r] = r == 0 ? beta : T(0);
                if (q != nullptr && r < lm) q[sweep_offset(n, i) + (j1 - i - 1) + r] = r == 0 ? tau : v;
            }
            __syncthreads();
            // ... and goes to the rest of B from the left, column c = t / G by its G
            // neighbouring lanes h = t % G, lane h on rows h + j G.
            if (tau != T(0)) {
                const int c = t / G, h = t % G;
                T *col = p.sb + c * S + h;
                const T *vh = p.sv + h;
                T partial = T(0);
#pragma unroll
                for (int j = 0; j < CG; ++j) partial = fma(vh[j * G], col[j * G], partial);
#pragma unroll
                for (int o = 1; o < G; o <<= 1) partial += __shfl_xor_sync(0xffffffffu, partial, o);
                if (c >= 1 && c < m) {
                    const T s = tau * partial;
#pragma unroll
                    for (int j = 0; j < CG; ++j) col[j * G] = fma(-vh[j * G], s, col[j * G]);
                }
            }
            __syncthreads();
            prof.lap(2);
#pragma unroll
            for (int j = 0; j < CG; ++j) {
                const int c = g * CG + j;
                if (r < lm && c < m) __stcg(b0 + c * (ld - 1), p.sb[c * S + r]);
            }
            prof.lap(3);
            // ... and to the next diagonal block from both sides.
            p.two_sided(w, ld, j1, lm, v, tau);
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

// With q non-null, each step also records its reflector in Q2's compact layout (tau in place
// of the unit entry, then v's others), as the CPU chase keeps it.
// R rows, G x R threads, two CTAs per SM at least (at b = 64 one CTA of 512 threads per SM
// would hold fewer sweeps than the pipeline has from n = 32768 on). Shared memory: two blocks
// of R x (R + 1), G + 2 vectors of R, and one entry per warp for reductions (the host computes
// the same size).
#define CHASE(NAME, T, R, G)                                                                   \
    extern "C" __global__ void __launch_bounds__(G * R, 2)                                        \
        NAME(T *w, int n, int b, int ld, unsigned lag, unsigned *done, unsigned *failed,       \
             unsigned long long timeout_ns, unsigned long long *prof, T *q) {                  \
        chase<T, R, G>(w, n, b, ld, lag, done, failed, timeout_ns, prof, q);                   \
    }

// Eight threads per row. On an H100 at n = 16384, with sweeps three steps apart, the chase
// took 191 ms at b = 32 and 391 ms at b = 64, against 212 and 409 ms with four; two steps
// apart, at b = 64, 233 ms against 274 ms with sixteen (one CTA of 1024 threads per SM), and
// 566 against 696 ms at n = 32768.
// One module per precision and bandwidth: the embedding source defines SB2ST_T, SB2ST_PRE and
// SB2ST_R (through one more macro, so that they are replaced before they are pasted).
#define CHASE_NAMED(T, PRE, R) CHASE(sb2st_chase_##PRE##R, T, R, 8)
#define CHASE_MODULE(T, PRE, R) CHASE_NAMED(T, PRE, R)
CHASE_MODULE(SB2ST_T, SB2ST_PRE, SB2ST_R)

