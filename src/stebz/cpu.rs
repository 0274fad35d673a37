//! CPU Sturm counts: a batch of points evaluated together, vectorized across points and
//! threaded across groups of points.
//!
//! The recurrence for one point is a chain of dependent divisions, so one point at a time runs
//! at the latency of the divider. Points of the same block share the rows, so up to 16 (f64)
//! or 32 (f32) of them advance together over each row (the paper's Fig. 5, "vectorized
//! Count"): independent recurrences that fill the SIMD lanes and hide that latency. Each lane performs exactly the
//! operations of [`sturm_count`](super::count::sturm_count), in the same order, so the counts
//! are bitwise those of the reference recurrence (IEEE arithmetic, no contraction).

use super::count::{CountError, Counter, SturmProblem};
use crate::host::workers::{or_resume, run_parts};
use crate::real::Real;
use std::ops::Range;

/// Most points advanced together over the rows of a block: enough independent recurrences to
/// keep the dividers busy (the throughput bound; measured on AVX2 x86-64: 16 in f64, 32 in f32).
fn max_lanes<T: Real>() -> usize {
    if T::PREFIX == 's' {
        32
    } else {
        16
    }
}

/// Points that cost no more than one: below this, a chunk runs at the latency of one
/// recurrence (division, two subtractions), whatever its width (8 in f64, 16 in f32).
fn free_lanes<T: Real>() -> usize {
    max_lanes::<T>() / 2
}

/// A batch with at least this many row-steps is spread over the threads (about 0.2 ms of work
/// for one core: well above the cost of starting a thread).
pub const PARALLEL_STEPS: usize = 400_000;

/// Most points per interval this counter asks for (the driver rounds down to 2^k − 1).
const MAX_POINTS_PER_INTERVAL: usize = 63;

/// Evaluates Sturm counts on the CPU.
pub struct CpuCounter<'a, T> {
    problem: SturmProblem<'a, T>,
    threads: usize,
    /// Rows of the largest block: decides whether a batch can use the threads.
    max_block: usize,
    /// Smallest batch (in row-steps) that is spread over the threads.
    min_parallel_steps: usize,
}

impl<'a, T: Real> CpuCounter<'a, T> {
    /// A counter using every available core.
    pub fn new(problem: &SturmProblem<'a, T>) -> Self {
        let threads = crate::host::threads();
        Self::with_threads(problem, threads)
    }

    /// A counter using at most `threads` threads (1 = sequential).
    pub fn with_threads(problem: &SturmProblem<'a, T>, threads: usize) -> Self {
        let max_block = (0..problem.block_ends.len())
            .map(|b| problem.block_rows(b).len())
            .max()
            .unwrap_or(0);
        CpuCounter {
            problem: *problem,
            threads: threads.max(1),
            max_block,
            min_parallel_steps: PARALLEL_STEPS,
        }
    }

    /// `counts[i] = sturm_count(block blocks[i], x[i])`; never fails.
    pub fn count_into(&self, blocks: &[u32], x: &[T], counts: &mut [i32]) {
        assert!(
            blocks.len() == x.len() && x.len() == counts.len(),
            "batch arrays differ in length"
        );
        let steps: usize = blocks
            .iter()
            .map(|&b| self.problem.block_rows(b as usize).len())
            .sum();
        let parallel = self.threads > 1 && steps >= self.min_parallel_steps;
        // Threads need a chunk each: narrower chunks when there are few points.
        let width = if parallel {
            blocks
                .len()
                .div_ceil(self.threads)
                .clamp(1, max_lanes::<T>())
        } else {
            max_lanes::<T>()
        };
        if !parallel {
            run_chunks(&self.problem, blocks, width, x, counts);
            return;
        }
        // Contiguous runs of chunks of about equal cost, one per thread; each run covers a
        // contiguous range of the batch, so the output splits into disjoint slices. The chunks
        // are walked, never stored (a batch may hold millions of points).
        let nchunks = Chunks::new(blocks, &self.problem, width).count();
        let parts = self.threads.min(nchunks);
        let mut bounds = Vec::with_capacity(parts + 1);
        bounds.push(0usize);
        let mut acc = 0usize;
        for c in Chunks::new(blocks, &self.problem, width) {
            acc += c.cost;
            let want = bounds.len();
            if want < parts && acc * parts >= steps * want {
                bounds.push(c.points.end);
            }
        }
        bounds.push(blocks.len());
        bounds.dedup();
        if bounds.len() <= 2 {
            run_chunks(&self.problem, blocks, width, x, counts);
            return;
        }
        let mut runs = Vec::with_capacity(bounds.len() - 1);
        let mut rest = counts;
        for w in bounds.windows(2) {
            let points = w[0]..w[1];
            let (out, tail) = rest.split_at_mut(points.len());
            rest = tail;
            // A run starts at a chunk boundary, so chunking it alone gives the same chunks.
            runs.push((&blocks[points.clone()], &x[points], out));
        }
        let problem = &self.problem;
        or_resume(run_parts(runs, &|(blocks, x, out)| {
            run_chunks(problem, blocks, width, x, out)
        }));
    }
}

impl<T: Real> Counter<T> for CpuCounter<'_, T> {
    /// Enough points to fill the lanes of every thread that the problem can keep busy: with
    /// few active intervals, extra points cost almost nothing (the lanes would idle); with
    /// many, bisection (1) does the least work.
    fn points_per_interval(&self, intervals: usize) -> usize {
        let lanes = free_lanes::<T>();
        let busy = self.max_block * lanes * self.threads >= self.min_parallel_steps;
        let threads = if busy { self.threads } else { 1 };
        (lanes * threads / intervals.max(1)).clamp(1, MAX_POINTS_PER_INTERVAL)
    }

    fn count(&mut self, blocks: &[u32], x: &[T], counts: &mut [i32]) -> Result<(), CountError> {
        if blocks.len() != x.len() || x.len() != counts.len() {
            return Err(CountError("batch arrays differ in length".into()));
        }
        self.count_into(blocks, x, counts);
        Ok(())
    }

    fn name(&self) -> &'static str {
        "cpu"
    }
}

/// Consecutive points of the batch in the same block, evaluated together.
struct Chunk {
    rows: Range<usize>,
    points: Range<usize>,
    /// Row-steps, for balancing threads.
    cost: usize,
}

/// The batch's chunks of at most `width` consecutive points of the same block, in order.
struct Chunks<'b, 'p, T> {
    blocks: &'b [u32],
    problem: &'b SturmProblem<'p, T>,
    width: usize,
    next: usize,
}

impl<'b, 'p, T> Chunks<'b, 'p, T> {
    fn new(blocks: &'b [u32], problem: &'b SturmProblem<'p, T>, width: usize) -> Self {
        Chunks {
            blocks,
            problem,
            width,
            next: 0,
        }
    }
}

impl<T> Iterator for Chunks<'_, '_, T> {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        let (blocks, i) = (self.blocks, self.next);
        let &b = blocks.get(i)?;
        let mut j = i + 1;
        while j < blocks.len() && j - i < self.width && blocks[j] == b {
            j += 1;
        }
        self.next = j;
        let rows = self.problem.block_rows(b as usize);
        let cost = rows.len() * (j - i);
        Some(Chunk {
            rows,
            points: i..j,
            cost,
        })
    }
}

/// Counts the points `x` of blocks `blocks` into `out`, chunk by chunk.
fn run_chunks<T: Real>(
    problem: &SturmProblem<'_, T>,
    blocks: &[u32],
    width: usize,
    x: &[T],
    out: &mut [i32],
) {
    let kernel = kernels::<T>();
    for c in Chunks::new(blocks, problem, width) {
        kernel(
            problem.d,
            problem.e2,
            problem.pivmin,
            c.rows.clone(),
            &x[c.points.clone()],
            &mut out[c.points],
        );
    }
}

type Kernel<T> = fn(&[T], &[T], T, Range<usize>, &[T], &mut [i32]);

/// The widest kernel this CPU runs.
fn kernels<T: Real>() -> Kernel<T> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            return count_chunk_avx2::<T>;
        }
    }
    count_chunk::<T>
}

#[cfg(target_arch = "x86_64")]
fn count_chunk_avx2<T: Real>(
    d: &[T],
    e2: &[T],
    pivmin: T,
    rows: Range<usize>,
    xs: &[T],
    out: &mut [i32],
) {
    #[target_feature(enable = "avx2")]
    fn inner<T: Real>(d: &[T], e2: &[T], pivmin: T, rows: Range<usize>, xs: &[T], out: &mut [i32]) {
        count_chunk(d, e2, pivmin, rows, xs, out)
    }
    // SAFETY: only selected by `kernels` after the CPU reported AVX2.
    unsafe { inner(d, e2, pivmin, rows, xs, out) }
}

/// Counts for up to 32 points over the same rows, with the narrowest lane group that fits.
#[inline(always)]
fn count_chunk<T: Real>(
    d: &[T],
    e2: &[T],
    pivmin: T,
    rows: Range<usize>,
    xs: &[T],
    out: &mut [i32],
) {
    match xs.len() {
        0 => {}
        1..=4 => count_lanes::<T, 4>(d, e2, pivmin, rows, xs, out),
        5..=8 => count_lanes::<T, 8>(d, e2, pivmin, rows, xs, out),
        9..=16 => count_lanes::<T, 16>(d, e2, pivmin, rows, xs, out),
        _ => {
            for (xs, out) in xs.chunks(32).zip(out.chunks_mut(32)) {
                count_lanes::<T, 32>(d, e2, pivmin, rows.clone(), xs, out);
            }
        }
    }
}

/// `L` recurrences side by side; lanes past `xs.len()` repeat the last point and are dropped.
#[inline(always)]
fn count_lanes<T: Real, const L: usize>(
    d: &[T],
    e2: &[T],
    pivmin: T,
    rows: Range<usize>,
    xs: &[T],
    out: &mut [i32],
) {
    debug_assert!(!xs.is_empty() && xs.len() <= L && out.len() == xs.len() && !rows.is_empty());
    let mut x = [xs[xs.len() - 1]; L];
    x[..xs.len()].copy_from_slice(xs);
    let mut t = [T::ZERO; L];
    let mut c = [0i32; L];
    let d0 = d[rows.start];
    for l in 0..L {
        let mut v = d0 - x[l];
        if v.abs() < pivmin {
            v = -pivmin;
        }
        t[l] = v;
        c[l] = (v <= T::ZERO) as i32;
    }
    let dd = &d[rows.start + 1..rows.end];
    let ee = &e2[rows.start..rows.end - 1];
    for (&dj, &ej) in dd.iter().zip(ee) {
        for l in 0..L {
            t[l] = dj - ej / t[l] - x[l];
        }
        // A pivot below PIVMIN is rare: test for it off the chain of dependent divisions (a
        // predictable branch) instead of selecting in every lane on it.
        let mut tiny = false;
        for v in &t {
            tiny |= v.abs() < pivmin;
        }
        if tiny {
            for v in &mut t {
                if v.abs() < pivmin {
                    *v = -pivmin;
                }
            }
        }
        for l in 0..L {
            c[l] += (t[l] <= T::ZERO) as i32;
        }
    }
    out.copy_from_slice(&c[..xs.len()]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stebz::count::sturm_count;
    use crate::testmat::{self, Rng, TridiagFamily};

    /// Every lane width, every thread split, against the scalar reference, bit for bit, with
    /// PIVMIN small (fix-ups only at exact zeros) and large (fix-ups everywhere).
    #[test]
    fn lanes_match_sturm_count() {
        let mut rng = Rng::new(7);
        for family in TridiagFamily::all() {
            let (d, e) = testmat::tridiag::<f64>(family, 300, &mut rng);
            let e2: Vec<f64> = e.iter().map(|v| v * v).chain([0.0]).collect();
            let ends = [100usize, 101, 300];
            let mut blocks = Vec::new();
            let mut x = Vec::new();
            for b in 0..3u32 {
                for _ in 0..(1 + rng.below(70)) {
                    blocks.push(b);
                    x.push(rng.range(-3.0, 4.0));
                }
            }
            // A few points exactly at matrix entries.
            blocks.extend([0, 2, 2]);
            x.extend([d[0], d[150], 0.0]);
            for pivmin in [1e-300, 1e-3] {
                let problem = SturmProblem {
                    d: &d,
                    e2: &e2,
                    pivmin,
                    block_ends: &ends,
                };
                let want: Vec<i32> = (0..x.len())
                    .map(|i| {
                        sturm_count(
                            &d,
                            &e2,
                            pivmin,
                            problem.block_rows(blocks[i] as usize),
                            x[i],
                        )
                    })
                    .collect();
                for width in [1, 5, 8, 16, 32, 40] {
                    let mut got = vec![0; x.len()];
                    run_chunks(&problem, &blocks, width, &x, &mut got);
                    assert_eq!(got, want, "{} width {width} pivmin {pivmin}", family.name());
                }
                for threads in [1, 2, 3] {
                    let counter = CpuCounter {
                        problem,
                        threads,
                        max_block: 200,
                        min_parallel_steps: 0,
                    };
                    let mut got = vec![0; x.len()];
                    counter.count_into(&blocks, &x, &mut got);
                    assert_eq!(
                        got,
                        want,
                        "{} threads {threads} pivmin {pivmin}",
                        family.name()
                    );
                }
            }
            // f32 takes the 32-lane kernel.
            let d32: Vec<f32> = d.iter().map(|&v| v as f32).collect();
            let e32: Vec<f32> = e2.iter().map(|&v| v as f32).collect();
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let problem = SturmProblem {
                d: &d32,
                e2: &e32,
                pivmin: 1e-30f32,
                block_ends: &ends,
            };
            let counter = CpuCounter {
                problem,
                threads: 2,
                max_block: 200,
                min_parallel_steps: 0,
            };
            let mut got = vec![0; x.len()];
            counter.count_into(&blocks, &x32, &mut got);
            for i in 0..x.len() {
                let rows = problem.block_rows(blocks[i] as usize);
                assert_eq!(
                    got[i],
                    sturm_count(&d32, &e32, problem.pivmin, rows, x32[i]),
                    "f32 {}",
                    family.name()
                );
            }
        }
    }
}
