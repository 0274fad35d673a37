//! xSTEIN: eigenvectors of a real symmetric tridiagonal matrix `T` (diagonal D, off-diagonal
//! E) for given eigenvalues, by inverse iteration — the step after bisection (Volkov & Demmel
//! 2007, conclusion), with LAPACK xSTEIN's contract and algorithm.
//!
//! ## The input
//! The eigenvalues W(1..M) come as xSTEBZ returns them with ORDER = 'B': grouped by the
//! diagonal block of T they belong to (IBLOCK(j) = b for block b, whose rows are
//! ISPLIT(b−1)+1 ..= ISPLIT(b)), ascending within a block. Column j of Z receives the
//! eigenvector of W(j): zero outside its block's rows, unit 2-norm, its largest-magnitude
//! component positive.
//!
//! ## Inverse iteration, per eigenvalue λ of a block of order n ≥ 2
//! Factor `T_b − λI = P L U` once (Gaussian elimination with partial pivoting, [`cpu::factor`]);
//! start from x₀ with entries uniform on (−1, 1) ([`random`]); then repeat
//!
//! 1. scale x so that its largest entry is `n ‖T_b‖₁ max(ulp, |u_nn|)`,
//! 2. solve `(T_b − λI) x' = x` ([`cpu::solve`]); a pivot too small to divide by is moved
//!    away from zero by `tol = EPS · max|u_ij|`, then `2 tol`, `4 tol`, … (xLAGTS),
//! 3. orthogonalize x' against the earlier vectors of λ's cluster ([`cpu::reorthogonalize`]),
//!
//! until `‖x'‖∞ ≥ DTPCRT = √(0.1 / n)` has held on EXTRA + 1 = 3 iterations, at most
//! MAXITS = 5 times; x' is then normalized ([`cpu::normalize`]). Since x is scaled to
//! `‖x‖∞ ≈ n ‖T_b‖ max(ulp, |u_nn|)` before each solve, growth past DTPCRT means
//! `‖(T_b − λI)⁻¹ x‖ ≳ 1/(n^{3/2} ‖T_b‖ ulp)`-sized amplification: λ is within
//! O(n ulp ‖T_b‖) of an eigenvalue and x' is dominated by its eigenvector. A vector that never
//! meets the test is still returned (the last iterate, normalized) and reported in IFAIL; INFO
//! counts them.
//!
//! ## Close eigenvalues
//! Within a block, an eigenvalue closer than `10 ulp |λ_j|` to the previous (possibly already
//! moved) shift is moved to `λ_{j−1} + 10 ulp |λ_j|`, so that no two shifts coincide. Shifts
//! that follow each other by at most ORTOL = 10⁻³ ‖T_b‖₁ form a cluster (a chain: the gaps,
//! not the width, decide), and each vector of a cluster is orthogonalized by modified
//! Gram–Schmidt against the cluster's earlier vectors after every solve: O(n k²) per
//! iteration for a cluster of k. Different clusters and blocks share nothing, so they run on
//! several threads ([`crate::host::threads`]) with results independent of the thread count.
//!
//! ## Differences from LAPACK
//! - The starting vectors are LAPACK's (xLARNV from ISEED = 1, 1, 1, 1, one vector per
//!   eigenvalue of a block of order ≥ 2, in the order of W), drawn from the seed the plan
//!   recorded for each. The arithmetic of each stage is xLAGTF's and xLAGTS's operation for
//!   operation; the dot products ([`cpu::reorthogonalize`]) sum in another order than the
//!   BLAS, and the final 2-norm is nearly correctly rounded (squares summed in double-double
//!   after an exact power-of-two scaling, as OpenBLAS's x86 xNRM2 sums in extended precision;
//!   a norm a few ulps off cost up to ~1.5 N ulp of orthogonality at N = 2), so vectors agree
//!   with LAPACK's to rounding, not bit for bit.
//!   Where two components tie for the largest magnitude, rounding decides which is made
//!   positive, so such a vector may come out with the opposite sign of LAPACK's.
//! - Where xLAGTS would overflow (the solve grows past the type's range: many weakly coupled
//!   copies of one block), [`cpu::solve`] rescales the iterate instead.
//! - After a cluster's iterations, [`repair`] checks its vectors: a cluster that lost
//!   orthogonality is orthonormalized once more, and one whose residuals are far above what
//!   inverse iteration reaches (eigenvalues equal to working precision) takes the block's
//!   xSTEQR eigenvectors instead. LAPACK returns such vectors as they are; INFO and IFAIL are
//!   LAPACK's either way.
//! - LAPACK reads ISPLIT and D wherever IBLOCK points. A block whose rows are not inside
//!   1..=N (ISPLIT too short, not increasing, out of range) is not read: its columns are set
//!   to zero and reported as failed in IFAIL and INFO. Eigenvalues LAPACK never visits
//!   (IBLOCK(1) ≤ 0 stops its block loop at once) are not visited here either: their columns
//!   and IFAIL entries are left as they are (IFAIL zero).
//! - [`check_args`] does not take ISPLIT: LAPACK's checks do not read it.
//!
//! ## Data already on the GPU
//! [`device`] runs the same plan and GPU stages on D, E and Z in the caller's GPU memory
//! (the O(N + M) inputs are copied to the host for the checks and the plan; Z is computed in
//! place).

pub mod cpu;
pub mod device;
pub mod gpu;
pub mod random;
pub mod repair;

use crate::dispatch::Backend;
use crate::host::workers::run_on_threads;
use crate::host::{try_room, try_vec, NoMemory};
use crate::real::Real;
use cpu::{ClusterJob, Workspace};
use random::Larnv;
use std::sync::Mutex;

/// xSTEIN's MAXITS: the most solves per eigenvector.
pub const MAXITS: u32 = 5;
/// xSTEIN's EXTRA: the solves after the growth test first passes.
pub const EXTRA: u32 = 2;

/// What [`stein`] returns besides Z.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SteinReport {
    /// LAPACK's INFO: 0; −i for an illegal i-th argument (see [`check_args`]); k > 0: k
    /// eigenvectors failed to converge in MAXITS iterations.
    pub info: i32,
    /// LAPACK's IFAIL (M entries): the (1-based) indices j of the failed eigenvectors,
    /// ascending, then zeros.
    pub ifail: Vec<i32>,
}

/// xSTEIN's argument checks, in LAPACK's order: 0, or −i when the i-th argument is illegal:
/// −1 N < 0; −4 M < 0 or M > N; −9 LDZ < max(1, N); then for j = 2..=M in turn, −6 if
/// IBLOCK(j) < IBLOCK(j−1), −5 if IBLOCK(j) = IBLOCK(j−1) and W(j) < W(j−1). `w` and
/// `iblock` need M entries once N, M and LDZ have passed (they are not read before).
pub fn check_args<T: Real>(n: i32, m: i32, w: &[T], iblock: &[i32], ldz: i32) -> i32 {
    if n < 0 {
        return -1;
    }
    if m < 0 || m > n {
        return -4;
    }
    if ldz < n.max(1) {
        return -9;
    }
    let m = m as usize;
    for j in 1..m {
        if iblock[j] < iblock[j - 1] {
            return -6;
        }
        if iblock[j] == iblock[j - 1] && w[j] < w[j - 1] {
            return -5;
        }
    }
    0
}

/// One piece of work of the plan: a run of consecutive columns of Z, independent of all
/// others.
enum Task<T> {
    /// Eigenvalues of a block of order 1: unit vectors e_row.
    Unit {
        col: usize,
        count: usize,
        row: usize,
    },
    /// Eigenvalues whose block IBLOCK/ISPLIT do not place inside T: zero columns, failed.
    Invalid { col: usize, count: usize },
    /// One cluster of a block of order ≥ 2; its shifts and seeds are the plan's entries of
    /// its columns.
    Cluster {
        col: usize,
        count: usize,
        rows: (usize, usize),
        onenrm: T,
        dtpcrt: T,
    },
}

impl<T> Task<T> {
    /// The first column and the number of columns.
    fn columns(&self) -> (usize, usize) {
        match self {
            Task::Unit { col, count, .. }
            | Task::Invalid { col, count }
            | Task::Cluster { col, count, .. } => (*col, *count),
        }
    }

    /// The order of the block it works on (its scratch size).
    fn rows(&self) -> usize {
        match self {
            Task::Cluster { rows, .. } => rows.1 - rows.0,
            _ => 0,
        }
    }

    /// A rough operation count, to schedule the large tasks first.
    fn cost(&self) -> usize {
        match self {
            Task::Unit { count, .. } | Task::Invalid { count, .. } => *count,
            Task::Cluster { rows, count, .. } => (rows.1 - rows.0) * count * (8 + count),
        }
    }
}

/// The rows (0-based, half-open) of block `b` (1-based) as ISPLIT gives them, if they lie
/// inside 1..=N and are not empty.
fn block_rows(b: i32, isplit: &[i32], n: usize) -> Option<(usize, usize)> {
    let b = usize::try_from(b).ok()?;
    let last = i64::from(*isplit.get(b.checked_sub(1)?)?);
    let first = if b == 1 {
        1
    } else {
        i64::from(isplit[b - 2]) + 1
    };
    (1 <= first && first <= last && last <= n as i64).then(|| (first as usize - 1, last as usize))
}

/// xSTEIN's ONENRM for a block of order ≥ 2: the largest row sum of |T_b|.
fn block_one_norm<T: Real>(d: &[T], e: &[T]) -> T {
    let n = d.len();
    let mut norm = (d[0].abs() + e[0].abs()).max(d[n - 1].abs() + e[n - 2].abs());
    for i in 1..n - 1 {
        norm = norm.max(d[i].abs() + e[i - 1].abs() + e[i].abs());
    }
    norm
}

/// Every decision that couples the eigenvalues, made in xSTEIN's order so that the tasks can
/// then run in any order: per column of Z its shift (the eigenvalue after the perturbation of
/// close ones) and the seed of its starting vector, and the tasks (clusters, unit blocks,
/// invalid blocks) that cover the columns.
struct Plan<'a, T> {
    d: &'a [T],
    e: &'a [T],
    /// The eigenvalues given, which the GPU path's check measures its residuals against.
    w: &'a [T],
    shifts: Vec<T>,
    seeds: Vec<u64>,
    tasks: Vec<Task<T>>,
}

/// Makes the [`Plan`], its memory allocated first (M entries each: a task has at least one
/// column). Needs M ≥ 1, N ≥ 2.
fn plan<'a, T: Real>(
    d: &'a [T],
    e: &'a [T],
    w: &'a [T],
    iblock: &[i32],
    isplit: &[i32],
) -> Result<Plan<'a, T>, NoMemory> {
    let (n, m) = (d.len(), w.len());
    let mut plan = Plan {
        d,
        e,
        w,
        shifts: try_vec(m, T::ZERO).ok_or(NoMemory::of::<T>(m))?,
        seeds: try_vec(m, 0u64).ok_or(NoMemory::of::<u64>(m))?,
        tasks: try_room(m).ok_or(NoMemory::of::<Task<T>>(m))?,
    };
    let ulp = T::ULP;
    let (ten, odm3, odm1) = (T::from_f64(10.0), T::from_f64(1.0e-3), T::from_f64(1.0e-1));
    let mut rng = Larnv::stein_start();
    let mut j1 = 0;
    while j1 < m {
        // LAPACK's block loop runs b = 1..=IBLOCK(M) and takes the eigenvalues from J1 on
        // while IBLOCK(j) = b: blocks without eigenvalues are passed over, and an IBLOCK(J1)
        // below 1 is never reached.
        let b = iblock[j1];
        if b < 1 {
            break;
        }
        let end = j1 + iblock[j1..m].iter().take_while(|&&x| x == b).count();
        let count = end - j1;
        match block_rows(b, isplit, n) {
            None => plan.tasks.push(Task::Invalid { col: j1, count }),
            Some((first, last)) if last - first == 1 => plan.tasks.push(Task::Unit {
                col: j1,
                count,
                row: first,
            }),
            Some((first, last)) => {
                let size = last - first;
                let (db, eb) = (&d[first..last], &e[first..last - 1]);
                let onenrm = block_one_norm(db, eb);
                let ortol = odm3 * onenrm;
                let dtpcrt = (odm1 / T::from_usize(size)).sqrt();
                let mut start = j1;
                let mut xjm = T::ZERO;
                for (jblk, j) in (j1..end).enumerate() {
                    let mut xj = w[j];
                    if jblk > 0 {
                        let pertol = ten * (ulp * xj).abs();
                        if xj - xjm < pertol {
                            xj = xjm + pertol;
                        }
                    }
                    plan.seeds[j] = rng.seed();
                    rng.skip::<T>(size);
                    // xSTEIN restarts the cluster (GPIND = J) when the shifts are more than
                    // ORTOL apart (a NaN gap continues it).
                    if jblk > 0 && (xj - xjm).abs() > ortol {
                        plan.tasks.push(Task::Cluster {
                            col: start,
                            count: j - start,
                            rows: (first, last),
                            onenrm,
                            dtpcrt,
                        });
                        start = j;
                    }
                    plan.shifts[j] = xj;
                    xjm = xj;
                }
                plan.tasks.push(Task::Cluster {
                    col: start,
                    count: end - start,
                    rows: (first, last),
                    onenrm,
                    dtpcrt,
                });
            }
        }
        j1 = end;
    }
    Ok(plan)
}

/// Runs one task on its columns (`z` starts at the task's first column, `failed` holds one
/// flag per column of the task) with the scratch `work`.
fn run_task<T: SteinReal>(
    plan: &Plan<'_, T>,
    task: &Task<T>,
    z: &mut [T],
    ldz: usize,
    failed: &mut [bool],
    work: &mut Workspace<T>,
) {
    let (d, e) = (plan.d, plan.e);
    let n = d.len();
    match *task {
        Task::Unit { count, row, .. } => {
            for k in 0..count {
                let column = &mut z[k * ldz..k * ldz + n];
                column.fill(T::ZERO);
                column[row] = T::ONE;
            }
        }
        Task::Invalid { count, .. } => {
            for k in 0..count {
                z[k * ldz..k * ldz + n].fill(T::ZERO);
            }
            failed.fill(true);
        }
        Task::Cluster {
            col,
            count,
            rows,
            onenrm,
            dtpcrt,
        } => {
            let job = ClusterJob {
                d: &d[rows.0..rows.1],
                e: &e[rows.0..rows.1 - 1],
                row0: rows.0,
                n,
                onenrm,
                dtpcrt,
                shifts: &plan.shifts[col..col + count],
                seeds: &plan.seeds[col..col + count],
            };
            cpu::cluster_vectors(&job, z, ldz, failed, work);
            repair::check_cluster(&job, &plan.w[col..col + count], z, ldz, failed);
        }
    }
}

/// A task, its columns of Z and its columns' failure flags.
type Piece<'z, T> = (usize, &'z mut [T], &'z mut [bool]);

/// Below this many estimated operations a call runs on one thread.
const PARALLEL_WORK: usize = 200_000;

/// The precisions xSTEIN runs in, on the host (with LAPACK's xSTEQR where inverse iteration
/// breaks down, [`repair`]) and on the GPU (its GEMMs there).
pub trait SteinReal: Real + crate::lapack::Dense + crate::device::blas::CublasReal {}

impl<T: Real + crate::lapack::Dense + crate::device::blas::CublasReal> SteinReal for T {}

/// Eigenvectors of the symmetric tridiagonal matrix with diagonal `d` (N = `d.len()`) and
/// off-diagonal `e` (N − 1 entries) for the eigenvalues `w` (M = `w.len()`), with LAPACK
/// xSTEIN's contract:
///
/// - `w`, `iblock` (M entries), `isplit`: as xSTEBZ returns them with ORDER = 'B' (see the
///   module notes for what happens with IBLOCK/ISPLIT that do not describe T's blocks).
/// - `z`: the N x M result, column-major with leading dimension `ldz ≥ max(1, N)`; column j
///   is the eigenvector of `w[j]`. Rows N.. of each column are not touched.
///
/// The arguments should pass [`check_args`]; if they do not, nothing is computed and the
/// report carries its INFO (IFAIL is zeroed either way, as LAPACK zeroes it first).
/// [`NoMemory`] if the host memory of the call cannot be allocated: then Z is untouched.
pub fn stein<T: SteinReal>(
    d: &[T],
    e: &[T],
    w: &[T],
    iblock: &[i32],
    isplit: &[i32],
    z: &mut [T],
    ldz: usize,
) -> Result<SteinReport, NoMemory> {
    stein_on(crate::host::threads(), d, e, w, iblock, isplit, z, ldz)
}

/// [`stein`] on at most `threads` threads (the answer does not depend on how many).
#[allow(clippy::too_many_arguments)]
pub fn stein_on<T: SteinReal>(
    threads: usize,
    d: &[T],
    e: &[T],
    w: &[T],
    iblock: &[i32],
    isplit: &[i32],
    z: &mut [T],
    ldz: usize,
) -> Result<SteinReport, NoMemory> {
    stein_run(Backend::Cpu, threads, d, e, w, iblock, isplit, z, ldz, true).map(|run| run.report)
}

/// What [`stein_with`] did: LAPACK's outputs, where it ran, and why not on the GPU.
#[derive(Clone, Debug)]
pub struct SteinRun {
    pub report: SteinReport,
    pub backend: Backend,
    /// Why a call meant for the GPU ran on the host (the GPU path failed; the host path then
    /// ran on the untouched inputs and overwrote what the GPU had written of Z).
    pub note: Option<String>,
}

/// [`stein`] on `backend`: the GPU path ([`gpu`]) for the clusters of the plan, the host for
/// the rest; if the GPU path fails, the whole call runs on the host (Z is an output only, the
/// inputs are untouched). [`NoMemory`] as for [`stein`]: every host allocation that grows with
/// N or M is made before Z is written, so then Z is untouched.
#[allow(clippy::too_many_arguments)]
pub fn stein_with<T: SteinReal>(
    backend: Backend,
    d: &[T],
    e: &[T],
    w: &[T],
    iblock: &[i32],
    isplit: &[i32],
    z: &mut [T],
    ldz: usize,
) -> Result<SteinRun, NoMemory> {
    stein_run(
        backend,
        crate::host::threads(),
        d,
        e,
        w,
        iblock,
        isplit,
        z,
        ldz,
        true,
    )
}

/// [`stein`] on the GPU only, for callers with a better fallback than the host's inverse
/// iteration: None when the GPU path failed or its check refused its answer (Z then holds
/// nothing of use).
pub(crate) fn stein_gpu_only<T: SteinReal>(
    d: &[T],
    e: &[T],
    w: &[T],
    iblock: &[i32],
    isplit: &[i32],
    z: &mut [T],
    ldz: usize,
) -> Result<Option<SteinReport>, NoMemory> {
    let threads = crate::host::threads();
    let run = stein_run(
        Backend::Gpu,
        threads,
        d,
        e,
        w,
        iblock,
        isplit,
        z,
        ldz,
        false,
    )?;
    Ok(run.note.is_none().then_some(run.report))
}

/// The calls above: with `host_fallback`, a GPU path that fails is followed by the host's on
/// the same inputs; without, the run returns with its `note` set and Z unfinished.
#[allow(clippy::too_many_arguments)]
fn stein_run<T: SteinReal>(
    backend: Backend,
    threads: usize,
    d: &[T],
    e: &[T],
    w: &[T],
    iblock: &[i32],
    isplit: &[i32],
    z: &mut [T],
    ldz: usize,
    host_fallback: bool,
) -> Result<SteinRun, NoMemory> {
    let (n, m) = (d.len(), w.len());
    let int = |x: usize| i32::try_from(x).unwrap_or(i32::MAX);
    let mut run = SteinRun {
        report: SteinReport {
            info: 0,
            ifail: try_vec(m, 0).ok_or(NoMemory::of::<i32>(m))?,
        },
        backend: Backend::Cpu,
        note: None,
    };
    assert!(
        iblock.len() >= m,
        "IBLOCK has {} entries, M = {m}",
        iblock.len()
    );
    run.report.info = check_args(int(n), int(m), w, iblock, int(ldz));
    if run.report.info != 0 || n == 0 || m == 0 {
        return Ok(run);
    }
    assert!(
        e.len() + 1 >= n && z.len() >= (m - 1) * ldz + n,
        "xSTEIN arrays too short for N = {n}, M = {m}, LDZ = {ldz}"
    );
    if n == 1 {
        z[0] = T::ONE;
        return Ok(run);
    }

    // All memory before the first write to Z: the plan, a flag per column, one thread's
    // scratch (more threads only if theirs can be had), the host path's list of pieces. The
    // GPU path comes after: if it fails (its own host memory included), the host path runs on
    // what is already here.
    let plan = plan(d, e, w, iblock, isplit)?;
    let mut failed = try_vec(m, false).ok_or(NoMemory::of::<bool>(m))?;
    let largest = plan.tasks.iter().map(Task::rows).max().unwrap_or(0);
    let mut here = Workspace::try_new(largest).ok_or(Workspace::<T>::bytes(largest))?;
    let pieces = try_room(plan.tasks.len()).ok_or(NoMemory::of::<Piece<T>>(m))?;

    if backend == Backend::Gpu {
        match gpu::clusters(&plan, z, ldz, &mut failed) {
            Ok(()) => {
                // The GPU wrote the clusters; blocks of order 1 and invalid blocks are the
                // host's (no scratch needed).
                for task in &plan.tasks {
                    if matches!(task, Task::Cluster { .. }) {
                        continue;
                    }
                    let (col, count) = task.columns();
                    let (z, f) = (&mut z[col * ldz..], &mut failed[col..col + count]);
                    run_task(&plan, task, z, ldz, f, &mut here);
                }
                run.backend = Backend::Gpu;
                report_failures(&mut run.report, &failed);
                return Ok(run);
            }
            Err(why) => {
                crate::dispatch::debug(|| format!("stein: GPU path failed ({why})"));
                if !host_fallback {
                    run.note = Some(format!("the GPU path failed ({why})"));
                    return Ok(run);
                }
                run.note = Some(format!("the GPU path failed ({why}); ran on the host"));
                failed.fill(false);
            }
        }
    }
    run_on_host(&plan, threads, z, ldz, &mut failed, here, pieces);
    report_failures(&mut run.report, &failed);
    Ok(run)
}

/// IFAIL and INFO from the failure flags (one per column of Z).
fn report_failures(report: &mut SteinReport, failed: &[bool]) {
    let int = |x: usize| i32::try_from(x).unwrap_or(i32::MAX);
    let mut k = 0;
    for (j, _) in failed.iter().enumerate().filter(|(_, &f)| f) {
        report.ifail[k] = int(j + 1);
        k += 1;
    }
    report.info = int(k);
}

/// The host path of [`stein_run`]: every task of the plan on up to `threads` threads, with the
/// memory the caller allocated (`here`: one thread's scratch; `pieces`: room for one entry per
/// task).
fn run_on_host<'z, T: SteinReal>(
    plan: &Plan<'_, T>,
    threads: usize,
    z: &'z mut [T],
    ldz: usize,
    failed: &'z mut [bool],
    mut here: Workspace<T>,
    mut pieces: Vec<Piece<'z, T>>,
) {
    // Each task owns the columns it writes (and reads back: a cluster's earlier vectors).
    let (mut rest, mut flags) = (z, failed);
    let (mut at, mut flag_at) = (0, 0);
    for (i, task) in plan.tasks.iter().enumerate() {
        let (col, count) = task.columns();
        let tail = std::mem::take(&mut rest);
        let (_, tail) = tail.split_at_mut(col * ldz - at);
        // Whole columns, except that the last column of Z may end at row N.
        let len = (count * ldz).min(tail.len());
        let (mine, tail) = tail.split_at_mut(len);
        let (_, f_tail) = std::mem::take(&mut flags).split_at_mut(col - flag_at);
        let (f_mine, f_tail) = f_tail.split_at_mut(count);
        pieces.push((i, mine, f_mine));
        (rest, flags) = (tail, f_tail);
        (at, flag_at) = (col * ldz + len, col + count);
    }

    let largest = plan.tasks.iter().map(Task::rows).max().unwrap_or(0);
    let work: usize = plan.tasks.iter().map(Task::cost).sum();
    let threads = threads.min(plan.tasks.len());
    if threads <= 1 || work < PARALLEL_WORK {
        for (i, z, f) in pieces {
            run_task(plan, &plan.tasks[i], z, ldz, f, &mut here);
        }
    } else {
        // Largest first, taken by whichever thread is free; each task's result depends only
        // on its own inputs, so the schedule does not change the answer. A thread without
        // memory for its scratch takes no task; this one has its scratch already.
        pieces.sort_by_key(|(i, _, _)| std::cmp::Reverse(plan.tasks[*i].cost()));
        let queue = Mutex::new(pieces.into_iter());
        let next = || queue.lock().unwrap_or_else(|p| p.into_inner()).next();
        let here = Mutex::new(Some(here));
        run_on_threads(threads, || {
            let mine = here.lock().unwrap_or_else(|p| p.into_inner()).take();
            let Some(mut work) = mine.or_else(|| Workspace::try_new(largest)) else {
                return;
            };
            while let Some((i, z, f)) = next() {
                run_task(plan, &plan.tasks[i], z, ldz, f, &mut work);
            }
        });
    }
}
