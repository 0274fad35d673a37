//! How big each level is, and where each piece of one solve's work buffer lies in it.

use super::*;

/// The partition counts of the levels for a system of `n` rows.
fn level_sizes(n: usize, o: &GpuOptions) -> Vec<usize> {
    let base = o.base_n.max(o.m).max(4);
    let mut sizes = Vec::new();
    let mut rows = n;
    while rows > base {
        let p = (rows + 1).div_ceil(o.m);
        sizes.push(p);
        rows = p;
    }
    sizes
}

/// The most levels one `gtsv_tail` launch takes (`TAIL_MAX_LEVELS` in `kernels/gtsv.cu`).
pub(super) const TAIL_MAX_LEVELS: usize = 12;

/// The first level the tail kernel takes for a system of `n` rows (levels of sizes `sizes`),
/// if any: the first below the top whose system has at most `tail_n` rows, or lower where
/// that would make more than [`TAIL_MAX_LEVELS`] levels.
fn tail_start(sizes: &[usize], o: &GpuOptions) -> Option<usize> {
    let first = (1..sizes.len()).find(|&l| sizes[l - 1] <= o.tail_n)?;
    Some(
        first
            .max(sizes.len().saturating_sub(TAIL_MAX_LEVELS))
            .max(1),
    )
}

/// Where the pieces of one solve's work buffer lie ([`work_layout`]): offsets from its start,
/// in elements of `T`.
pub(super) struct WorkLayout {
    pub(super) levels: Vec<LevelLayout>,
    /// The solution X, the refinement's residual R and its candidate X + δ.
    pub(super) x: usize,
    pub(super) r: usize,
    pub(super) x_next: usize,
    /// The summaries, the flags in the element after them.
    pub(super) sums: usize,
    /// The tail kernel's scratch.
    pub(super) scratch: usize,
    /// The speculating check's separator right-hand sides.
    pub(super) spec: usize,
    /// The buffer's length.
    pub(super) total: usize,
    /// The level the tail kernel starts at ([`tail_start`]).
    pub(super) tail: Option<usize>,
}

/// One level's partition count and the offsets of its separator system's DL, D, DU and F.
pub(super) struct LevelLayout {
    pub(super) p: usize,
    pub(super) dl: usize,
    pub(super) d: usize,
    pub(super) du: usize,
    pub(super) f: usize,
}

/// The pieces of one solve's work buffer, in elements of `T`, each rounded up to 32 elements:
/// per level the separator system (DL, D, DU, F); then the solution X, the refinement's
/// residual R (only without levels: with levels the top level's kernels evaluate it) and its
/// candidate X + δ (each n × nrhs), two sets of summaries with the flags in
/// the element after them (one memset clears them, one copy reads them), and the tail
/// kernel's scratch (4 + 2 nrhs entries per partition of its first level), and the top level's
/// speculative separator right-hand sides (p × nrhs, with levels).
pub(super) fn work_layout(n: usize, nrhs: usize, o: &GpuOptions, resident: bool) -> WorkLayout {
    let mut total = 0usize;
    let mut carve = |len: usize| {
        let at = total;
        total += len.max(1).div_ceil(32) * 32;
        at
    };
    let sizes = level_sizes(n, o);
    let tail = tail_start(&sizes, o);
    let scratch = tail.map_or(0, |t| sizes[t] * (4 + 2 * nrhs));
    let r = if sizes.is_empty() { n * nrhs } else { 0 };
    let spec = sizes.first().map_or(0, |&p| p * nrhs);
    let levels = sizes
        .into_iter()
        .map(|p| {
            let [dl, d, du, f] = [p - 1, p, p - 1, p * nrhs].map(&mut carve);
            LevelLayout { p, dl, d, du, f }
        })
        .collect();
    // A streamed top level keeps its X on the host: no n-sized pieces.
    let x = if resident { n * nrhs } else { 0 };
    let r = if resident { r } else { 0 };
    let [x, r, x_next, sums, scratch, spec] =
        [x, r, x, 6 * nrhs.max(1) + 1, scratch, spec].map(&mut carve);
    WorkLayout {
        levels,
        x,
        r,
        x_next,
        sums,
        scratch,
        spec,
        total,
        tail,
    }
}

/// Device bytes of the work buffer of one solve (see [`work_layout`]), not counting the
/// caller's matrix and right-hand sides.
pub fn work_bytes<T>(n: usize, nrhs: usize, o: &GpuOptions) -> u64 {
    (work_layout(n, nrhs, o, true).total * sz::<T>()) as u64
}

/// [`work_bytes`] for a streamed top level (no n-sized pieces).
pub fn streamed_work_bytes<T>(n: usize, nrhs: usize, o: &GpuOptions) -> u64 {
    (work_layout(n, nrhs, o, false).total * sz::<T>()) as u64
}
