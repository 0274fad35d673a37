// Z := Q2 Z, the bulge chasing's back-transformation (hylapack's sb2st_q2 family), a module
// of its own so that the eigenvalue path never compiles it.

// Where sweep i's reflectors start in Q2's compact layout of order n (src/sbr/sb2st/mod.rs,
// sweep_offset): after the n - 1, n - 2, ... entries of the sweeps before.
__device__ __forceinline__ long long sweep_offset(int n, int i) {
    const long long si = i;
    return si * (n - 1) - (i > 0 ? si * (si - 1) / 2 : 0);
}

// An asynchronous copy of one element from global to shared memory (cp.async, sm_80 on;
// a plain copy before), the end of a batch of them, and the wait for every batch.
template <typename T> __device__ __forceinline__ void copy_async(T *dst, const T *src) {
#if __CUDA_ARCH__ >= 800
    unsigned to;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(to) : "l"(dst));
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(to), "l"(src), "n"(sizeof(T))
                 : "memory");
#else
    *dst = *src;
#endif
}
__device__ __forceinline__ void copies_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
__device__ __forceinline__ void copies_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
}

// Reflectors of one sweep never overlap; a later sweep's reflector of step k or k - 1
// overlaps an earlier sweep's of step k and must reach Z first. So the sweeps go G at a time
// (groups from the last to the first), and a group walks down the rows step by step, its G
// reflectors of a step from the last sweep to the first. They span the B + G - 1 rows from
// the group's first sweep's row: the window, held in registers. After a step its first B
// rows are final for the group and it slides down by B rows.
//
// P lanes share a column of Z (column-major, leading dimension ldz): lane l holds the
// window's rows l, l + P, ..., so each reflector costs a lane about B / P multiply-adds
// twice and log2 P shuffles for its dot product, and a window of B + G - 1 rows fits in
// registers for G = 32 (one thread per column spilled it).
//
// Each CTA takes one group for one block of NT / P columns, the groups pipelined: CTA
// rank * blocks + cb takes the rank-th group from the last for column block cb, and before it
// reads rows of Z it waits until the CTA of the group before (rank - 1, launched earlier)
// has written them: its window's rows up to step s + 1 lie in the rows the group before has
// finished after its step s + 2 (progress counts the steps a CTA has written back; INT_MAX
// once done). So few columns still keep many CTAs busy, a few steps apart. A CTA waits only
// for one of a lower index, which the GPU dispatched before it (as decoupled look-back
// scans rely on), so the launch cannot deadlock; the rows go through L2 (__ldcg), not a
// multiprocessor's stale L1.
//
// The kernel applies the sweeps [i_lo, i_hi) (i_lo a multiple of G), their reflectors at
// q[sweep_offset(n, i) - q_base ...], so that Q2 can come in pieces of whole groups.
// Shared memory holds a step's G reflectors, each as B + 2P coefficients: P zeros, the unit
// entry, v's B - 1 entries (zeros past the reflector's end), P zeros; so a lane reads its
// rows' coefficients with no test of range. Their tau (0 for a sweep or step that does not
// exist, which leaves Z alone) follow. Two such buffers: the next step's coefficients arrive
// by asynchronous copies while this step's are applied (on an H200 the kernel stalled on
// those loads: n = m = 16384 1.20 s → 1.07 s; m = 163 21 → 16 ms).
template <typename T, int B, int G, int P, int NT>
__device__ void q2_apply(const T *__restrict__ q, T *z, int n, int m, long long ldz, int i_lo,
                         int i_hi, long long q_base, int *progress) {
    constexpr int W = B + G - 1;
    constexpr int R = (W + P - 1) / P; // the window's rows per lane
    constexpr int S = B + 2 * P;
    constexpr int COLS = NT / P;
    static_assert(B % P == 0 && NT % P == 0 && P <= 32, "lanes");
    extern __shared__ __align__(16) unsigned char smem[];
    constexpr int BUF = G * S + G; // a step's coefficients, then its tau
    T *const buffers = reinterpret_cast<T *>(smem);
    const int blocks = (m + COLS - 1) / COLS;
    const int cb = blockIdx.x % blocks, rank = blockIdx.x / blocks;
    const int sweeps = min(i_hi, n - 2);
    const int i0 = i_lo + ((sweeps - 1 - i_lo) / G) * G - rank * G;
    int *done = progress + blockIdx.x;
    if (sweeps <= i_lo || i0 < i_lo) {
        if (threadIdx.x == 0)
            atomicExch(done, 0x7fffffff);
        return;
    }
    const int *before = rank > 0 ? progress + blockIdx.x - blocks : nullptr;
    // Waits until the group before has written back `steps` steps (or all of its own).
    auto wait = [&](int steps) {
        if (before != nullptr) {
            if (threadIdx.x == 0) {
                while (atomicAdd(const_cast<int *>(before), 0) < steps)
                    __nanosleep(200);
                __threadfence(); // the rows are read after the count (acquire)
            }
            __syncthreads();
        }
    };
    // Starts the copies of the coefficients of the step at row offset kb into `buf`.
    auto fetch = [&](T *buf, int kb) {
        for (int e = threadIdx.x; e < G * S; e += NT) {
            const int j = e / S, r = e % S - P, i = i0 + j;
            if (r > 0 && r < B && i < sweeps && r < n - 1 - i - kb)
                copy_async(buf + e, q + (sweep_offset(n, i) - q_base + kb + r));
            else
                buf[e] = r == 0 ? T(1) : T(0);
        }
        for (int j = threadIdx.x; j < G; j += NT) {
            const int i = i0 + j;
            if (i < sweeps && kb < n - 1 - i)
                copy_async(buf + G * S + j, q + (sweep_offset(n, i) - q_base + kb));
            else
                buf[G * S + j] = T(0);
        }
        copies_commit();
    };
    const int lane = threadIdx.x % P;
    const int c = cb * COLS + threadIdx.x / P;
    const bool mine = c < m;
    T *col = z + (long long)(mine ? c : 0) * ldz;
    T zr[R];
    int top = i0 + 1;
    fetch(buffers, 0);
    wait(2);
#pragma unroll
    for (int t = 0; t < R; ++t) {
        const int row = top + lane + P * t;
        zr[t] = (mine && row < n) ? __ldcg(col + row) : T(0);
    }
    for (int kb = 0, step = 0; top < n; kb += B, top += B, ++step) {
        const T *sv = buffers + (step & 1) * BUF;
        const T *stau = sv + G * S;
        copies_wait();
        // This step's coefficients are in, and the other buffer's are no longer read.
        __syncthreads();
        if (top + B < n)
            fetch(buffers + ((step + 1) & 1) * BUF, kb + B);
#pragma unroll
        for (int j = G - 1; j >= 0; --j) {
            // v[w]: the coefficient of the window's row w (rows j .. j + B - 1), which lies in
            // the lane's registers j / P + u for u = 0 .. B / P. The loops over u have
            // constant trip counts, so that they unroll before the loop over j and every
            // index of zr is a constant (else zr goes to local memory). Two partial sums
            // halve the dot product's chain of dependent FMAs.
            const T *v = sv + j * S + P - j;
            constexpr int U = B / P + 1;
            T cf[U];
            T s[2] = {T(0), T(0)};
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int t = j / P + u;
                if (t < R) {
                    cf[u] = v[lane + P * t];
                    s[u % 2] = fma(cf[u], zr[t], s[u % 2]);
                }
            }
            T x = s[0] + s[1];
#pragma unroll
            for (int o = P / 2; o > 0; o /= 2)
                x += __shfl_xor_sync(0xffffffffu, x, o, P);
            x *= stau[j];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int t = j / P + u;
                if (t < R)
                    zr[t] = fma(-x, cf[u], zr[t]);
            }
        }
#pragma unroll
        for (int t = 0; t < B / P; ++t) {
            const int row = top + lane + P * t;
            if (mine && row < n)
                col[row] = zr[t];
        }
        // The rows written are visible before the count says so.
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0)
            atomicExch(done, step + 1);
#pragma unroll
        for (int t = 0; t < R - B / P; ++t)
            zr[t] = zr[t + B / P];
        wait(step + 3);
#pragma unroll
        for (int t = R - B / P; t < R; ++t) {
            const int row = top + B + lane + P * t;
            zr[t] = (mine && row < n) ? __ldcg(col + row) : T(0);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0)
        atomicExch(done, 0x7fffffff);
}

#define Q2_THREADS 128

// Shared memory: twice G x (B + 2P) coefficients and G tau.
#define Q2_APPLY(NAME, T, B, G, P)                                                             \
    extern "C" __global__ void __launch_bounds__(Q2_THREADS)                                   \
        NAME(const T *q, T *z, int n, int m, long long ldz, int i_lo, int i_hi,                 \
             long long q_base, int *progress) {                                                \
        q2_apply<T, B, G, P, Q2_THREADS>(q, z, n, m, ldz, i_lo, i_hi, q_base, progress);       \
    }

// Four lanes per column and 32 sweeps per group: on an H200 (double, bandwidth 64) at
// n = m = 16384 this took 1.50 s where 8 lanes took 1.79 s and 64 sweeps 1.97 s; at
// n = 16384, m = 163, 23 ms against 24 ms and 29 ms.
#define Q2_KERNEL(T, PRE, B) Q2_APPLY(sb2st_q2_##PRE##B, T, B, 32, 4)

// One module per precision and bandwidth: the embedding source defines Q2_T, Q2_PRE and Q2_B
// (through one more macro, so that they are replaced before they are pasted).
#define Q2_MODULE(T, PRE, B) Q2_KERNEL(T, PRE, B)
Q2_MODULE(Q2_T, Q2_PRE, Q2_B)
