// Sturm counts for symmetric tridiagonal eigenvalues (hylapack's xSTEBZ family).
//
// One thread evaluates the count of one (block, point) pair with LAPACK's recurrence
// (xLAEBZ): t = (d[j] - e2[j-1] / t) - x, a pivot smaller than pivmin in magnitude becomes
// -pivmin, and every t <= 0 counts. Compiled with IEEE division, no flush-to-zero and no
// FMA contraction, so each count equals the CPU's bit for bit.

// One row of the recurrence.
template <typename T>
__device__ __forceinline__ void sturm_step(T &t, int &count, T dj, T e2j, T pivmin, T x) {
    t = dj - e2j / t - x;
    if (fabs(t) < pivmin) t = -pivmin;
    count += t <= T(0);
}

// Rows advance in groups of ROWS whose loads are issued one group ahead, so that memory
// latency overlaps the chain of dependent divisions instead of adding to every row.
#define ROWS 8

template <typename T>
__device__ __forceinline__ int sturm_count(const T *__restrict__ d, const T *__restrict__ e2,
                                           T pivmin, unsigned start, unsigned end, T x) {
    T t = d[start] - x;
    if (fabs(t) < pivmin) t = -pivmin;
    int count = t <= T(0);
    unsigned j = start + 1;
    if (j + ROWS <= end) {
        T dn[ROWS], en[ROWS];
#pragma unroll
        for (int k = 0; k < ROWS; ++k) {
            dn[k] = d[j + k];
            en[k] = e2[j + k - 1];
        }
        for (; j + 2 * ROWS <= end; j += ROWS) {
            T dc[ROWS], ec[ROWS];
#pragma unroll
            for (int k = 0; k < ROWS; ++k) {
                dc[k] = dn[k];
                ec[k] = en[k];
                dn[k] = d[j + ROWS + k];
                en[k] = e2[j + ROWS + k - 1];
            }
#pragma unroll
            for (int k = 0; k < ROWS; ++k) sturm_step(t, count, dc[k], ec[k], pivmin, x);
        }
#pragma unroll
        for (int k = 0; k < ROWS; ++k) sturm_step(t, count, dn[k], en[k], pivmin, x);
        j += ROWS;
    }
    for (; j < end; ++j) sturm_step(t, count, d[j], e2[j - 1], pivmin, x);
    return count;
}

// counts[i] = Sturm count of block blocks[i] (rows block_ends[b-1] .. block_ends[b]) at x[i].
template <typename T>
__device__ void count_points(const T *__restrict__ d, const T *__restrict__ e2, T pivmin,
                             const unsigned *__restrict__ block_ends,
                             const unsigned *__restrict__ blocks, const T *__restrict__ x,
                             int *__restrict__ counts, unsigned npoints) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= npoints) return;
    unsigned b = blocks[i];
    unsigned start = b == 0 ? 0u : block_ends[b - 1];
    counts[i] = sturm_count(d, e2, pivmin, start, block_ends[b], x[i]);
}

#define STAMP_COUNT(T, suffix)                                                                  \
    extern "C" __global__ void stebz_count_##suffix(                                            \
        const T *__restrict__ d, const T *__restrict__ e2, T pivmin,                            \
        const unsigned *__restrict__ block_ends, const unsigned *__restrict__ blocks,           \
        const T *__restrict__ x, int *__restrict__ counts, unsigned npoints) {                  \
        count_points<T>(d, e2, pivmin, block_ends, blocks, x, counts, npoints);                 \
    }

STAMP_COUNT(float, s)
STAMP_COUNT(double, d)
