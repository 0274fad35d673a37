//! The dyadic multisection (see the module notes of [`crate::stebz`]): each step places
//! `2^k − 1` points in every active interval, counts them all in one batch, and consumes the
//! counts level by level as bisection would, until every interval has converged or reached its
//! block's iteration cap.

use super::counting::{Counting, Trace};
use super::tolerance::converged;
use crate::host::take_room;
use crate::host::workers::{or_resume, run_parts};
use crate::real::Real;

/// Most levels of bisection in one batch (1023 points per interval).
pub(super) const MAX_LEVELS: u32 = 10;

/// Levels of bisection that `points` points per interval buy: the largest `k` with
/// `2^k − 1 ≤ points`, between 1 and [`MAX_LEVELS`].
pub(super) fn levels_for(points: usize) -> u32 {
    let p = points.clamp(1, (1 << MAX_LEVELS) - 1) + 1;
    usize::BITS - 1 - p.leading_zeros()
}

/// Writes eigenvalues by LAPACK position, ignoring positions outside `W` (reachable only with
/// NaN input, where LAPACK's own counts stop making sense).
pub(super) struct Output<'o, T> {
    pub(super) w: &'o mut [T],
    pub(super) iblock: &'o mut [i32],
}

impl<T: Real> Output<'_, T> {
    /// Eigenvalues `nlo + 1 ..= nhi` of a block whose eigenvalue `j` goes to `W(j + iwoff)`.
    pub(super) fn fill(&mut self, iwoff: i64, nlo: i32, nhi: i32, value: T, ib: i32) {
        for j in nlo as i64 + 1..=nhi as i64 {
            let pos = j + iwoff - 1;
            if pos >= 0 && (pos as usize) < self.w.len() {
                self.w[pos as usize] = value;
                self.iblock[pos as usize] = ib;
            }
        }
    }
}

/// An interval `(lo, hi]` holding eigenvalues `nlo + 1 ..= nhi` of block `blk`, after `depth`
/// levels of bisection.
#[derive(Clone, Copy, Debug)]
pub(super) struct Interval<T> {
    pub(super) lo: T,
    pub(super) hi: T,
    pub(super) nlo: i32,
    pub(super) nhi: i32,
    pub(super) depth: i32,
    pub(super) blk: u32,
}

/// Per-block constants of the bisection.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BlockRun<T> {
    pub(super) atol: T,
    pub(super) itmax: i32,
    /// Eigenvalue `j` of the block goes to `W(j + iwoff)` (LAPACK's IWOFF).
    pub(super) iwoff: i64,
    /// 1-based block number.
    pub(super) jb: i32,
}

/// The memory one multisection step works in, taken from the call's
/// [`Scratch`](super::scratch::Scratch): the active intervals and those of the next step (N
/// each), the fills a step finds (N), the levels each interval gets (N), and the step's points,
/// their blocks and counts.
pub(super) struct StepBuffers<'s, T> {
    pub(super) active: &'s mut [Interval<T>],
    pub(super) next: &'s mut [Interval<T>],
    pub(super) fills: &'s mut [Fill<T>],
    pub(super) levels: &'s mut [u8],
    /// The step's points, their blocks and counts: reserved room, filled per step.
    pub(super) xs: &'s mut Vec<T>,
    pub(super) blocks: &'s mut Vec<u32>,
    pub(super) counts: &'s mut Vec<i32>,
}

/// Runs the dyadic multisection (see the module notes) on the first `nactive` intervals of
/// `buffers.active` until every interval has converged or reached its block's iteration cap.
/// Returns whether some did not converge.
///
/// Placing a step's points and consuming its counts is independent per interval, so a large
/// step spreads that bookkeeping over the host's threads (chunks of intervals, in order); the
/// results do not depend on how the intervals were chunked. A chunk's points, next intervals
/// and fills go to its own slices of the step buffers: its points after those of the chunks
/// before it (their number is known once each interval's levels are), its next intervals and
/// fills at the offset of its first eigenvalue (each holds at least one of the chunk's
/// eigenvalues, and no two hold the same).
#[allow(clippy::too_many_arguments)]
pub(super) fn multisection<T: Real>(
    counting: &mut Counting<'_, T>,
    trace: &mut Trace,
    buffers: StepBuffers<'_, T>,
    mut nactive: usize,
    runs: &[BlockRun<T>],
    pivmin: T,
    rtol: T,
    out: &mut Output<'_, T>,
) -> bool {
    let StepBuffers {
        mut active,
        mut next,
        fills,
        levels,
        xs,
        blocks,
        counts,
    } = buffers;
    let threads = crate::host::threads();
    let room = xs.capacity().min(blocks.capacity()).min(counts.capacity());
    let mut ncnvrg = false;
    while nactive > 0 {
        let mut kmax = levels_for(counting.points_per_interval(trace, nactive));
        // Fewer levels when the points would not fit (one level always does: room ≥ N).
        while kmax > 1 && nactive * ((1 << kmax) - 1) > room {
            kmax -= 1;
        }
        let points = nactive << kmax;
        let parts = if points >= PARALLEL_POINTS {
            threads.min(nactive)
        } else {
            1
        };
        let chunk = nactive.div_ceil(parts);
        let live = &active[..nactive];

        // Levels per interval; per chunk, its points and its eigenvalues.
        let sized: Vec<(usize, usize)> = in_parallel(
            live.chunks(chunk).zip(levels.chunks_mut(chunk)).collect(),
            |(ivs, ks)| plan_levels(ivs, ks, kmax, runs, pivmin, rtol),
        );
        let levels = &levels[..nactive];
        let total: usize = sized.iter().map(|&(p, _)| p).sum();

        let mut work = Vec::with_capacity(sized.len());
        let (xs, blocks) = (take_room(xs, total), take_room(blocks, total));
        let (mut x_rest, mut b_rest) = (&mut xs[..], &mut blocks[..]);
        for ((ivs, ks), &(p, _)) in live.chunks(chunk).zip(levels.chunks(chunk)).zip(&sized) {
            let (x, x_tail) = std::mem::take(&mut x_rest).split_at_mut(p);
            let (b, b_tail) = std::mem::take(&mut b_rest).split_at_mut(p);
            (x_rest, b_rest) = (x_tail, b_tail);
            work.push((ivs, ks, x, b));
        }
        in_parallel(work, |(ivs, ks, x, b)| place(ivs, ks, x, b));
        let (xs, blocks, counts) = (&xs[..], &blocks[..], take_room(counts, total));
        counting.count(trace, blocks, xs, counts);

        let mut work = Vec::with_capacity(sized.len());
        let (mut n_rest, mut f_rest) = (&mut next[..], &mut fills[..]);
        let mut first = 0;
        for ((ivs, ks), &(p, eigs)) in live.chunks(chunk).zip(levels.chunks(chunk)).zip(&sized) {
            let step = Step {
                xs: &xs[first..first + p],
                counts: &counts[first..first + p],
            };
            first += p;
            let (nx, n_tail) = std::mem::take(&mut n_rest).split_at_mut(eigs);
            let (fl, f_tail) = std::mem::take(&mut f_rest).split_at_mut(eigs);
            (n_rest, f_rest) = (n_tail, f_tail);
            work.push((ivs, ks, step, nx, fl));
        }
        let consumed = in_parallel(work, |(ivs, ks, step, nx, fl)| {
            consume(ivs, ks, step, runs, pivmin, rtol, nx, fl)
        });

        // Fills in order, and the next intervals packed to the front, in order.
        let (mut kept, mut first) = (0, 0);
        for (c, &(_, eigs)) in consumed.iter().zip(&sized) {
            ncnvrg |= c.ncnvrg;
            for f in &fills[first..first + c.fills] {
                out.fill(f.iwoff, f.nlo, f.nhi, f.value, f.ib);
            }
            next.copy_within(first..first + c.next, kept);
            kept += c.next;
            first += eigs;
        }
        std::mem::swap(&mut active, &mut next);
        nactive = kept;
    }
    ncnvrg
}

/// Steps with at least this many points spread their bookkeeping over threads. Measured on a
/// 16-core host: a step of 56k points took ~1.2 ms of bookkeeping either way (starting the
/// threads cost what they saved), so only larger steps use them.
const PARALLEL_POINTS: usize = 1 << 17;

/// `f` on every item, each on its own scoped thread when there is more than one (on this
/// thread where the OS refuses one).
fn in_parallel<I: Send, R: Send>(items: Vec<I>, f: impl Fn(I) -> R + Sync) -> Vec<R> {
    if items.len() <= 1 {
        return items.into_iter().map(f).collect();
    }
    or_resume(run_parts(items, &f))
}

/// The levels `ks[i]` of this step for each interval `active[i]` (at most `kmax`, at most what
/// its block's iteration cap leaves, and no more than it needs); returns the points they place
/// and the eigenvalues the intervals hold.
fn plan_levels<T: Real>(
    active: &[Interval<T>],
    ks: &mut [u8],
    kmax: u32,
    runs: &[BlockRun<T>],
    pivmin: T,
    rtol: T,
) -> (usize, usize) {
    let (mut points, mut eigs) = (0, 0);
    for (iv, k) in active.iter().zip(ks.iter_mut()) {
        let run = &runs[iv.blk as usize];
        let left = (run.itmax - iv.depth).max(1) as u32;
        let levels = levels_needed(iv, run.atol, pivmin, rtol, kmax.min(left));
        *k = levels as u8;
        points += (1usize << levels) - 1;
        eigs += (iv.nhi - iv.nlo).max(0) as usize;
    }
    (points, eigs)
}

/// A heap-ordered tree of midpoints under each interval, node h covering the interval of its
/// parent's left (h even) or right (h odd) half, `2^k − 1` points for an interval of `k`
/// levels, intervals one after the other in `xs` (with their blocks in `blocks`).
fn place<T: Real>(active: &[Interval<T>], ks: &[u8], xs: &mut [T], blocks: &mut [u32]) {
    let mut lo = [T::ZERO; 1 << MAX_LEVELS];
    let mut hi = [T::ZERO; 1 << MAX_LEVELS];
    let mut off = 0;
    for (iv, &k) in active.iter().zip(ks) {
        let size = (1usize << k) - 1;
        for h in 1..=size {
            let (a, b) = if h == 1 {
                (iv.lo, iv.hi)
            } else if h % 2 == 0 {
                (lo[h / 2], xs[off + h / 2 - 1])
            } else {
                (xs[off + h / 2 - 1], hi[h / 2])
            };
            lo[h] = a;
            hi[h] = b;
            xs[off + h - 1] = T::HALF * (a + b);
        }
        blocks[off..off + size].fill(iv.blk);
        off += size;
    }
}

/// Eigenvalues `nlo + 1 ..= nhi` found at `value` (see [`Output::fill`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Fill<T> {
    pub(super) iwoff: i64,
    pub(super) nlo: i32,
    pub(super) nhi: i32,
    pub(super) value: T,
    pub(super) ib: i32,
}

/// The points of one chunk of intervals and their counts.
struct Step<'a, T> {
    xs: &'a [T],
    counts: &'a [i32],
}

/// What consuming one step's counts left for a chunk of intervals: the first `next` entries of
/// its next-interval slice and the first `fills` of its fill slice.
struct Consumed {
    next: usize,
    fills: usize,
    ncnvrg: bool,
}

/// Consumes the counts level by level, as bisection would, writing the intervals still to
/// bisect to `next` and the eigenvalues found to `fills`.
#[allow(clippy::too_many_arguments)]
fn consume<T: Real>(
    active: &[Interval<T>],
    ks: &[u8],
    step: Step<'_, T>,
    runs: &[BlockRun<T>],
    pivmin: T,
    rtol: T,
    next: &mut [Interval<T>],
    fills: &mut [Fill<T>],
) -> Consumed {
    let mut out = Consumed {
        next: 0,
        fills: 0,
        ncnvrg: false,
    };
    // Depth-first over at most MAX_LEVELS levels: never more than MAX_LEVELS + 1 entries.
    let mut stack: Vec<(usize, Interval<T>)> = Vec::with_capacity(2 * MAX_LEVELS as usize);
    let mut off = 0;
    for (iv, &k) in active.iter().zip(ks) {
        let run = runs[iv.blk as usize];
        let size = (1usize << k) - 1;
        stack.push((1, *iv));
        while let Some((h, s)) = stack.pop() {
            let mid = step.xs[off + h - 1];
            let c = step.counts[off + h - 1].max(s.nlo).min(s.nhi);
            let depth = s.depth + 1;
            let half = |lo, hi, nlo, nhi| Interval {
                lo,
                hi,
                nlo,
                nhi,
                depth,
                blk: s.blk,
            };
            let kids = if c == s.nhi {
                [Some(half(s.lo, mid, s.nlo, s.nhi)), None]
            } else if c == s.nlo {
                [None, Some(half(mid, s.hi, s.nlo, s.nhi))]
            } else {
                [
                    Some(half(s.lo, mid, s.nlo, c)),
                    Some(half(mid, s.hi, c, s.nhi)),
                ]
            };
            let leaf = 2 * h > size;
            let mut deeper = [None, None];
            for (side, kid) in kids.into_iter().enumerate() {
                let Some(kid) = kid else { continue };
                let value = T::HALF * (kid.lo + kid.hi);
                let fill = |ib| Fill {
                    iwoff: run.iwoff,
                    nlo: kid.nlo,
                    nhi: kid.nhi,
                    value,
                    ib,
                };
                if converged(kid.lo, kid.hi, kid.nlo, kid.nhi, run.atol, pivmin, rtol) {
                    fills[out.fills] = fill(run.jb);
                    out.fills += 1;
                } else if depth >= run.itmax {
                    out.ncnvrg = true;
                    fills[out.fills] = fill(-run.jb);
                    out.fills += 1;
                } else if leaf {
                    next[out.next] = kid;
                    out.next += 1;
                } else {
                    deeper[side] = Some((2 * h + side, kid));
                }
            }
            // Right first, so that the left half is walked (and queued) first.
            stack.extend(deeper.into_iter().rev().flatten());
        }
        off += size;
    }
    out
}

/// An upper estimate of the levels of bisection `iv` still needs (at least 1, at most `cap`, the
/// levels this step places): spending more points than that on it would be wasted.
fn levels_needed<T: Real>(iv: &Interval<T>, atol: T, pivmin: T, rtol: T, cap: u32) -> u32 {
    let (lo, hi) = (iv.lo.to_f64(), iv.hi.to_f64());
    // The smallest magnitude in the interval bounds the relative part of the tolerance below.
    let floor = if lo > 0.0 {
        lo
    } else if hi < 0.0 {
        -hi
    } else {
        0.0
    };
    let tol = atol
        .to_f64()
        .max(pivmin.to_f64())
        .max(rtol.to_f64() * floor);
    let mut width = hi - lo;
    let mut k = 0;
    // (NaN ends count as never narrow enough.)
    while k < cap && !matches!(width.partial_cmp(&tol), Some(std::cmp::Ordering::Less)) {
        width *= 0.5;
        k += 1;
    }
    k.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        let got = [0, 1, 2, 3, 4, 7, 8, 15, 16, 63, 64, 1023, 5000].map(levels_for);
        assert_eq!(got, [1, 1, 1, 2, 2, 3, 3, 4, 4, 6, 6, 10, 10]);
    }
}
