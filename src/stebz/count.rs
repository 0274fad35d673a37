//! The Sturm count: how many eigenvalues of a tridiagonal block lie below a point.
//! Every backend evaluates exactly this recurrence, so counts agree across CPU and GPU.

use crate::real::Real;

/// A tridiagonal matrix prepared for Sturm counts, as LAPACK xSTEBZ prepares it.
#[derive(Clone, Copy, Debug)]
pub struct SturmProblem<'a, T> {
    /// Diagonal, `n` entries.
    pub d: &'a [T],
    /// Squared off-diagonal, `n` entries: `e2[j]` couples rows `j` and `j + 1`; zero where the
    /// matrix splits and in the last entry.
    pub e2: &'a [T],
    /// Smallest pivot magnitude allowed in the recurrence.
    pub pivmin: T,
    /// One past the last row of each block (LAPACK's ISPLIT, 0-based exclusive ends).
    pub block_ends: &'a [usize],
}

impl<T> SturmProblem<'_, T> {
    /// Rows `start..end` of block `b`.
    pub fn block_rows(&self, b: usize) -> std::ops::Range<usize> {
        let start = if b == 0 { 0 } else { self.block_ends[b - 1] };
        start..self.block_ends[b]
    }
}

/// LAPACK's count (xLAEBZ): the number of non-positive pivots of `T - x I` restricted to rows
/// `rows`, with pivots smaller than `pivmin` in magnitude replaced by `-pivmin`.
/// The evaluation order `(d[j] - e2[j-1] / t) - x` is LAPACK's; the GPU kernels use the same.
#[inline]
pub fn sturm_count<T: Real>(
    d: &[T],
    e2: &[T],
    pivmin: T,
    rows: std::ops::Range<usize>,
    x: T,
) -> i32 {
    let mut t = d[rows.start] - x;
    if t.abs() < pivmin {
        t = -pivmin;
    }
    let mut count = (t <= T::ZERO) as i32;
    for j in rows.start + 1..rows.end {
        t = d[j] - e2[j - 1] / t - x;
        if t.abs() < pivmin {
            t = -pivmin;
        }
        count += (t <= T::ZERO) as i32;
    }
    count
}

/// Why a batch of counts could not be evaluated (only the GPU can fail).
#[derive(Debug, Clone)]
pub struct CountError(pub String);

impl std::fmt::Display for CountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Evaluates Sturm counts in batches; one implementation per backend.
pub trait Counter<T: Real> {
    /// Points to place inside each interval in the next multisection step when `intervals`
    /// intervals are active (1 = bisection). Chosen by the backend's performance model.
    fn points_per_interval(&self, intervals: usize) -> usize;

    /// `counts[i] = sturm_count(block blocks[i], x[i])` for every `i`.
    fn count(&mut self, blocks: &[u32], x: &[T], counts: &mut [i32]) -> Result<(), CountError>;

    /// A short name for logs ("cpu", "gpu", "gpu+cpu").
    fn name(&self) -> &'static str;
}
