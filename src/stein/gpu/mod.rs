//! Inverse iteration on the GPU (`kernels/stein.cu`), for the clusters of the plan.
//!
//! LAPACK's xSTEIN iterates one vector at a time and orthogonalizes each iterate against the
//! cluster's earlier vectors by modified Gram–Schmidt: O(n k²) serial work per iteration for a
//! cluster of k, and for matrices like (−1, 2, −1) ORTOL chains nearly every eigenvalue into
//! one cluster. Here the stages are reordered so that each runs at GPU speed:
//!
//! 1. **Iterate** (one thread per vector, all vectors of a batch at once): LAPACK's starting
//!    vector (xLARNV from the seed the plan recorded), xLAGTF, and xSTEIN's iteration — scale,
//!    xLAGTS solve, growth test, MAXITS = 5, EXTRA = 2 — without the reorthogonalization. A
//!    vector alone in its cluster is then LAPACK's, and its growth test is LAPACK's: IFAIL.
//! 2. **Orthogonalize** each cluster in order, in panels of [`PANEL`] columns: classical
//!    Gram–Schmidt against the cluster's earlier columns with GEMMs (a second pass when the
//!    first removed more than a quarter of a column's norm, "twice is enough"), then a
//!    Cholesky QR of the panel, twice. Column j ends orthogonal to every earlier column of its
//!    cluster, as with LAPACK's Gram–Schmidt; the vectors differ from LAPACK's by rounding
//!    for well separated eigenvalues, and span the same invariant subspace otherwise. A
//!    column that the Cholesky factorization finds numerically dependent on the panel's
//!    earlier ones (a pivot below 64 eps of its squared norm, where the Gram matrix's
//!    rounding leaves no information) is decoupled: scaled by that bound instead of the
//!    pivot, and left out of the later columns' orthogonalization. Dividing by such a pivot
//!    sent every later pivot of the panel negative and its columns past 1/eps each, until
//!    the second pass's Gram matrix overflowed (single precision, eigenvalues that agree to
//!    working precision): the panel came out NaN or zero. A decoupled column always has less
//!    than [`RHO_REFINE`] of its norm left, so step 3 refines it.
//! 3. **Refine** what orthogonalization cancelled. Where a column is q = (x − Σ c_i q_i) / r,
//!    the errors of the iterate x outside the cluster's invariant subspace, and those of the
//!    earlier q_i, come out multiplied by up to (1 + Σ |c_i|) / r, compounding along the
//!    cluster; LAPACK's next solve after each Gram–Schmidt damps them again. So every vector
//!    with less than [`RHO_POLISH`] of its iterate's 2-norm left after step 2 gets one more
//!    scaled solve from its orthonormalized direction — the step LAPACK's per-iteration
//!    Gram–Schmidt amounts to — and its cluster is orthogonalized again from its panel on.
//!    (Without it, the glued copies of (−1, 2, −1), whose vectors kept 8–90 % of their
//!    norms, had residuals and orthogonality up to 30–100 times LAPACK's.) After that round
//!    only vectors with less than [`RHO_REFINE`] left are refined again: eigenvalues that
//!    agree to working precision, whose iterates all point into the same nearly degenerate
//!    subspace, so that the surviving direction is mostly rounding. A vector still cancelled
//!    after [`REFINE_ROUNDS`] rounds makes the call fail here (the caller then runs the host
//!    path on the untouched inputs).
//! 4. **Finish**: unit 2-norm, largest-magnitude component positive; Z is downloaded through
//!    pinned buffers into the caller's columns.
//! 5. **Check** ([`check`]): every residual, and each cluster's ZᵀZ − I by GEMM, at most
//!    [`CHECK_LIMIT`], or the call fails here and the caller runs the host path.
//!
//! Z lives on the device as N × C column-major (C columns of the plan at a time, as many as
//! the memory budget allows; a cluster is never split). Orders of blocks of T other than the
//! clusters (blocks of order 1, invalid blocks) are written by the host. For data already on
//! the GPU ([`resident`]) the stages run in the caller's Z (its leading dimension, all columns
//! at once) on the caller's D and E, and blocks of order 1 are set there too.
//!
//! Host memory that grows with N or M is allocated fallibly here too: a failure is a
//! [`DeviceError::HostMemory`], and the caller then runs the host path with the memory it
//! allocated before Z was first written.

mod check;
mod resident;

pub use check::CHECK_LIMIT;
pub(super) use resident::into_device;
pub use resident::OnDevice;

use super::{Plan, SteinReal, Task};
use crate::device::blas::{trans, CublasReal};
use crate::device::linalg::PooledLinalg;
use crate::device::memory::Pinned;
use crate::device::{self, kernels, DeviceError, Gpu};
use crate::host::{try_room, try_vec, NoMemory};
use crate::real::Real;
use cudarc::cublas::sys::cublasHandle_t;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg,
};
use std::marker::PhantomData;
use std::sync::Arc;

/// Columns orthogonalized together (the Cholesky QR kernel holds a PANEL² Gram matrix in
/// shared memory).
pub const PANEL: usize = 64;
/// A vector with less than this share of its iterate's 2-norm left after the first
/// orthogonalization gets one more solve (its errors would come out magnified).
pub const RHO_POLISH: f64 = 0.9;
/// A vector with less than this share of its 2-norm left after an orthogonalization is
/// (numerically) dependent on its cluster's earlier vectors and is refined again.
pub const RHO_REFINE: f64 = 1.0 / 16.0;
/// Refinement rounds before the GPU path gives up on a cluster.
pub const REFINE_ROUNDS: usize = 3;
/// Most vectors iterated at once (their interleaved work is (5 words + 1 byte) per row).
const MAX_BATCH: usize = 16384;

/// One column of a cluster: where its vector lives and what the plan decided for it.
#[derive(Clone, Copy, Debug)]
struct Col<T> {
    /// The column of Z (0-based, global).
    col: usize,
    row0: usize,
    size: usize,
    shift: T,
    /// The eigenvalue given (the shift before the perturbation of close ones).
    eigenvalue: T,
    seed: u64,
    scale_base: T,
    dtpcrt: T,
}

/// A cluster of two or more vectors: its first column and count, its block's rows.
#[derive(Clone, Copy, Debug)]
struct Cluster {
    col: usize,
    k: usize,
    row0: usize,
    size: usize,
}

/// A failure of the GPU path's own making (not a CUDA call's): the caller runs the host path.
fn failure(e: impl std::fmt::Display) -> DeviceError {
    DeviceError::Driver(e.to_string())
}

/// The failure of a host allocation of `len` elements of `U`.
fn no_host_memory<U>(len: usize) -> DeviceError {
    DeviceError::HostMemory {
        bytes: NoMemory::of::<U>(len).bytes,
    }
}

/// `len` copies of `value` in host memory, fallibly.
fn host_vec<U: Clone>(len: usize, value: U) -> Result<Vec<U>, DeviceError> {
    try_vec(len, value).ok_or_else(|| no_host_memory::<U>(len))
}

/// An empty host vector with room for `len` elements, fallibly.
fn host_room<U>(len: usize) -> Result<Vec<U>, DeviceError> {
    try_room(len).ok_or_else(|| no_host_memory::<U>(len))
}

/// `f` of each item, in fallibly allocated host memory.
fn host_map<I, U>(items: &[I], f: impl Fn(&I) -> U) -> Result<Vec<U>, DeviceError> {
    let mut v = host_room(items.len())?;
    v.extend(items.iter().map(f));
    Ok(v)
}

/// A device array's contents in a new host vector (a fallible `clone_dtoh`), once the stream
/// has reached it.
fn download_all<U: DeviceRepr + Clone>(
    stream: &Arc<CudaStream>,
    x: &CudaSlice<U>,
    zero: U,
) -> Result<Vec<U>, DeviceError> {
    let mut host = host_vec(x.len(), zero)?;
    stream.memcpy_dtoh(x, &mut host[..])?;
    stream.synchronize()?;
    Ok(host)
}

/// cuBLAS in precision `T` on raw device pointers (column-major).
struct Blas<T> {
    handle: cublasHandle_t,
    precision: PhantomData<T>,
}

impl<T: CublasReal> Blas<T> {
    /// C := alpha op(A) op(B) + beta C.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        &self,
        ta: bool,
        tb: bool,
        (m, n, k): (usize, usize, usize),
        alpha: f64,
        (a, lda): (u64, usize),
        (b, ldb): (u64, usize),
        beta: f64,
        (c, ldc): (u64, usize),
    ) -> Result<(), DeviceError> {
        let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
        let s = T::gemm(
            self.handle,
            trans(ta),
            trans(tb),
            m as i32,
            n as i32,
            k as i32,
            &alpha,
            a as *const T,
            lda as i32,
            b as *const T,
            ldb as i32,
            &beta,
            c as *mut T,
            ldc as i32,
        );
        Ok(s.result()?)
    }

    /// B := B R⁻¹ for B m × n and R n × n upper triangular.
    unsafe fn trsm_right_upper(
        &self,
        (m, n): (usize, usize),
        (r, ldr): (u64, usize),
        (b, ldb): (u64, usize),
    ) -> Result<(), DeviceError> {
        let s = T::trsm_right_upper(
            self.handle,
            m as i32,
            n as i32,
            r as *const T,
            ldr as i32,
            b as *mut T,
            ldb as i32,
        );
        Ok(s.result()?)
    }
}

/// The device pointer of a buffer (all work of a call is queued on one stream, so the
/// pointer stays valid, and ordered, as long as the buffer lives).
fn ptr<T>(s: &CudaSlice<T>, stream: &Arc<CudaStream>) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

struct Kernels {
    iterate: CudaFunction,
    refine: CudaFunction,
    scatter: CudaFunction,
    chol: CudaFunction,
    finish: CudaFunction,
    offdiag: CudaFunction,
    residual: CudaFunction,
}

/// Device state of one call.
struct Run<'a, T: SteinReal> {
    gpu: &'static Gpu,
    stream: Arc<CudaStream>,
    blas: Blas<T>,
    k: Kernels,
    n: usize,
    /// D and E: the call's uploads, or the caller's arrays (device-pointer form).
    d: u64,
    e: u64,
    /// Z's columns [z0, z0 + cap), N rows each at leading dimension `ldz`: the call's own
    /// buffer (ldz = N), or the caller's matrix (z0 = 0).
    z: u64,
    ldz: usize,
    z0: usize,
    /// Interleaved work of a batch: u0, u1, u2, l, x (batch × maxrows each), swaps.
    work: [CudaSlice<T>; 5],
    swaps: CudaSlice<u8>,
    batch: usize,
    /// Gram–Schmidt coefficients (max cluster × PANEL), the panel's Gram matrix, its diagonals.
    coef: CudaSlice<T>,
    gram: CudaSlice<T>,
    diag: CudaSlice<T>,
    cols: &'a [Col<T>],
    /// Device buffers the addresses above point into (D, E, Z where the call made them).
    _owned: Vec<CudaSlice<T>>,
}

/// How much of the call fits the device at once: vectors per batch, columns of Z (when the
/// call holds Z itself), and the bytes reserved for both.
struct Shape {
    batch: usize,
    cap: usize,
    bytes: usize,
}

/// The largest batch and (with `own_z`) the most columns of a device Z that fit the budget;
/// without `own_z`, D, E and Z are the caller's and cost nothing here.
fn shape<T>(gpu: &Gpu, n: usize, cols: &[Col<T>], clusters: &[Cluster], own_z: bool) -> Shape {
    let es = std::mem::size_of::<T>();
    let maxrows = cols.iter().map(|c| c.size).max().unwrap_or(1);
    let maxk = clusters.iter().map(|c| c.k).max().unwrap_or(1);
    // Columns of Z from the first cluster column to the last.
    let span = cols.last().map_or(0, |c| c.col + 1 - cols[0].col);
    let inputs = if own_z { 2 * n } else { 0 };
    let fixed = (inputs + maxk * PANEL + PANEL * PANEL + 2 * PANEL) * es + (1 << 20);
    let per_vector = maxrows * (5 * es + 1) + 64;
    let z_cols = |cap: usize| if own_z { cap * n * es } else { 0 };
    let available = gpu.budget.available() as usize;
    let need = |batch: usize, cap: usize| fixed + batch * per_vector + z_cols(cap);
    let mut batch = cols.len().clamp(1, MAX_BATCH);
    let mut cap = span;
    while need(batch, cap) > available && batch > 256 {
        batch /= 2;
    }
    while own_z && need(batch, cap) > available && cap > maxk {
        cap = (cap / 2).max(maxk);
    }
    Shape {
        batch,
        cap,
        bytes: need(batch, cap),
    }
}

/// Where D, E and Z are on the device (and what holds them, if the call made them).
struct Arrays<T> {
    d: u64,
    e: u64,
    z: u64,
    ldz: usize,
    owned: Vec<CudaSlice<T>>,
}

impl<'a, T: SteinReal> Run<'a, T> {
    /// The kernels, cuBLAS on the linalg stream, and the work arrays of `batch` vectors.
    fn new(
        gpu: &'static Gpu,
        linalg: &PooledLinalg,
        n: usize,
        cols: &'a [Col<T>],
        maxk: usize,
        batch: usize,
        at: Arrays<T>,
    ) -> Result<Self, DeviceError> {
        let stream = linalg.stream.clone();
        let module = kernels::module_named(&kernels::STEIN, &format!("stein_{}", T::PREFIX))?;
        let f = |name: &str| gpu.function(module, &format!("stein_{name}_{}", T::PREFIX));
        let k = Kernels {
            iterate: f("iterate")?,
            refine: f("refine")?,
            scatter: f("scatter")?,
            chol: f("chol")?,
            finish: f("finish")?,
            offdiag: f("offdiag")?,
            residual: f("residual")?,
        };
        let blas = Blas {
            handle: *linalg.blas.handle(),
            precision: PhantomData,
        };
        let maxrows = cols.iter().map(|c| c.size).max().unwrap_or(1);
        let words = batch * maxrows;
        let alloc = |len: usize| stream.alloc_zeros::<T>(len.max(1));
        Ok(Run {
            gpu,
            n,
            d: at.d,
            e: at.e,
            z: at.z,
            ldz: at.ldz,
            z0: 0,
            work: [
                alloc(words)?,
                alloc(words)?,
                alloc(words)?,
                alloc(words)?,
                alloc(words)?,
            ],
            swaps: stream.alloc_zeros::<u8>(words.max(1))?,
            batch,
            coef: alloc(maxk * PANEL)?,
            gram: alloc(PANEL * PANEL)?,
            diag: alloc(2 * PANEL)?,
            cols,
            blas,
            k,
            stream,
            _owned: at.owned,
        })
    }

    /// Runs the clusters in groups whose columns fit `cap` columns of Z; `zero` clears each
    /// group's columns first (the call's own Z, reused), `done` takes each group's width.
    fn groups(
        &mut self,
        clusters: &[Cluster],
        cap: usize,
        zero: bool,
        failed: &mut [bool],
        mut done: impl FnMut(&mut Self, usize) -> Result<(), DeviceError>,
    ) -> Result<(), DeviceError> {
        let mut at = 0;
        while at < clusters.len() {
            let start = clusters[at].col;
            let mut end = at;
            while end < clusters.len() && clusters[end].col + clusters[end].k - start <= cap {
                end += 1;
            }
            if end == at {
                let es = self.es() as u64;
                return Err(DeviceError::OutOfBudget {
                    needed: clusters[at].k as u64 * self.n as u64 * es,
                    available: cap as u64 * self.n as u64 * es,
                });
            }
            let group = &clusters[at..end];
            let width = group[group.len() - 1].col + group[group.len() - 1].k - start;
            if zero {
                self.z0 = start;
                self.zero_columns(start, width)?;
            }
            self.group(group, failed)?;
            done(self, width)?;
            at = end;
        }
        Ok(())
    }
}

/// Runs every cluster task of `plan` on the GPU into `z` (leading dimension `ldz`) and sets
/// the flag in `failed` (one per column of Z) of each column that failed the growth test; the
/// other tasks are left to the caller. Nothing of `z` outside the columns from the first
/// cluster's to the last cluster's (rows < N) is written. On `Err` those columns and flags may
/// hold partial results (they are outputs only: the caller clears the flags and runs the host
/// path).
pub(super) fn clusters<T: SteinReal>(
    plan: &Plan<'_, T>,
    z: &mut [T],
    ldz: usize,
    failed: &mut [bool],
) -> Result<(), DeviceError> {
    let (d, e) = (plan.d, plan.e);
    let n = d.len();
    let gpu = device::gpu()?;
    let (cols, clusters) = columns(plan)?;
    if cols.is_empty() {
        return Ok(());
    }
    let maxk = clusters.iter().map(|c| c.k).max().unwrap_or(1);
    let shape = shape(gpu, n, &cols, &clusters, true);
    let _reservation = gpu.budget.reserve(shape.bytes as u64)?;
    let linalg = gpu.linalg()?;
    let stream = &linalg.stream;
    let owned = vec![
        stream.clone_htod(d)?,
        stream.clone_htod(&e[..n - 1])?,
        stream.alloc_zeros::<T>(n * shape.cap)?,
    ];
    let at = Arrays {
        d: ptr(&owned[0], stream),
        e: ptr(&owned[1], stream),
        z: ptr(&owned[2], stream),
        ldz: n,
        owned,
    };
    let mut run = Run::new(gpu, &linalg, n, &cols, maxk, shape.batch, at)?;
    run.groups(&clusters, shape.cap, true, failed, |run, width| {
        run.download(width, z, ldz)
    })?;
    run.stream.synchronize()?;
    Ok(())
}

/// The columns of the plan's clusters, in order, and the clusters themselves.
#[allow(clippy::type_complexity)]
fn columns<T: Real>(plan: &Plan<'_, T>) -> Result<(Vec<Col<T>>, Vec<Cluster>), DeviceError> {
    let is_cluster = |t: &&Task<T>| matches!(t, Task::Cluster { .. });
    let count: usize = plan
        .tasks
        .iter()
        .filter(is_cluster)
        .map(|t| t.columns().1)
        .sum();
    let mut cols = host_room(count)?;
    let mut clusters = host_room(plan.tasks.iter().filter(is_cluster).count())?;
    for t in &plan.tasks {
        if let Task::Cluster {
            col,
            count,
            rows,
            onenrm,
            dtpcrt,
        } = *t
        {
            let size = rows.1 - rows.0;
            let scale_base = T::from_usize(size) * onenrm;
            clusters.push(Cluster {
                col,
                k: count,
                row0: rows.0,
                size,
            });
            for j in col..col + count {
                cols.push(Col {
                    col: j,
                    row0: rows.0,
                    size,
                    shift: plan.shifts[j],
                    eigenvalue: plan.w[j],
                    seed: plan.seeds[j],
                    scale_base,
                    dtpcrt,
                });
            }
        }
    }
    Ok((cols, clusters))
}

fn launch_1d(count: usize, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((count as u32).div_ceil(threads), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl<T: SteinReal> Run<'_, T> {
    fn es(&self) -> usize {
        std::mem::size_of::<T>()
    }

    /// The device address of Z's (row, global column).
    fn zp(&self, row: usize, col: usize) -> u64 {
        self.z + (((col - self.z0) * self.ldz + row) * self.es()) as u64
    }

    /// Iterates, orthogonalizes, refines and finishes the clusters of one group.
    fn group(&mut self, group: &[Cluster], failed: &mut [bool]) -> Result<(), DeviceError> {
        let first = self.cols.partition_point(|c| c.col < group[0].col);
        let last = group[group.len() - 1];
        let end = self.cols.partition_point(|c| c.col < last.col + last.k);
        let cols = &self.cols[first..end];
        // Stage times for `HYLAPACK_LOG=debug` (each stage ends in a download, so they hold).
        let started = std::time::Instant::now();
        let mut stages: Vec<String> = Vec::new();
        let mut lap = |what: String| {
            stages.push(format!(
                "{what} {:.1} ms",
                started.elapsed().as_secs_f64() * 1e3
            ));
        };
        // ‖iterate‖₂ / ‖iterate‖∞ per column of the group.
        let mut nu = host_vec(cols.len(), 0.0f64)?;
        for (b, chunk) in cols.chunks(self.batch).enumerate() {
            let (status, norms) = self.iterate(chunk)?;
            for (i, (&s, &v)) in status.iter().zip(&norms).enumerate() {
                match s {
                    0 => {}
                    1 => failed[chunk[i].col] = true,
                    _ => return Err(failure("an iterate is not finite")),
                }
                nu[b * self.batch + i] = v;
            }
        }
        // Positions in `cols` (blocks of order 1 may sit between clusters).
        let pos = |col: usize| cols.partition_point(|c| c.col < col);
        let mut refine: Vec<usize> = host_room(cols.len())?;
        lap(format!("iterate {}:", cols.len()));
        for c in group.iter().filter(|c| c.k >= 2) {
            let at = pos(c.col);
            for j in self.orthogonalize(c, 0, &nu[at..at + c.k], RHO_POLISH)? {
                refine.push(c.col + j);
            }
        }
        lap("orthogonalize:".to_string());
        for round in 0..=REFINE_ROUNDS {
            if refine.is_empty() {
                break;
            }
            if round == REFINE_ROUNDS {
                return Err(failure(format!(
                    "{} vectors of a nearly degenerate cluster stay dependent after {REFINE_ROUNDS} refinements",
                    refine.len()
                )));
            }
            let chosen: Vec<Col<T>> = host_map(&refine, |&c| cols[pos(c)])?;
            for chunk in chosen.chunks(self.batch) {
                let norms = self.refine(chunk)?;
                for (c, v) in chunk.iter().zip(norms) {
                    nu[pos(c.col)] = v;
                }
            }
            let mut next = host_room(refine.len())?;
            for c in group.iter().filter(|c| c.k >= 2) {
                let inside = |j: &&usize| **j >= c.col && **j < c.col + c.k;
                let Some(&lowest) = refine.iter().find(inside) else {
                    continue;
                };
                let from = (lowest - c.col) / PANEL * PANEL;
                // Unchanged columns are orthonormal already.
                let mut nu_c = host_vec(c.k, 1.0f64)?;
                for &j in refine.iter().filter(inside) {
                    nu_c[j - c.col] = nu[pos(j)];
                }
                for j in self.orthogonalize(c, from, &nu_c, RHO_REFINE)? {
                    next.push(c.col + j);
                }
            }
            lap(format!("refine {} (round {round}):", refine.len()));
            refine = next;
        }
        self.finish(cols)?;
        lap("finish:".to_string());
        self.check(group, cols)?;
        lap("check:".to_string());
        let largest = group.iter().map(|c| c.k).max().unwrap_or(0);
        crate::dispatch::debug(|| {
            format!(
                "stein gpu: {} clusters (largest {largest}); {}",
                group.len(),
                stages.join(", ")
            )
        });
        Ok(())
    }

    fn upload<U: cudarc::driver::DeviceRepr>(&self, v: &[U]) -> Result<CudaSlice<U>, DeviceError> {
        Ok(self.stream.clone_htod(v)?)
    }

    /// Per-column parameters as device arrays: (row0, size, shift, scale base, column).
    #[allow(clippy::type_complexity)]
    fn params(
        &self,
        chunk: &[Col<T>],
    ) -> Result<
        (
            CudaSlice<i32>,
            CudaSlice<i32>,
            CudaSlice<T>,
            CudaSlice<T>,
            CudaSlice<i32>,
        ),
        DeviceError,
    > {
        let row0 = host_map(chunk, |c| c.row0 as i32)?;
        let size = host_map(chunk, |c| c.size as i32)?;
        let shift = host_map(chunk, |c| c.shift)?;
        let base = host_map(chunk, |c| c.scale_base)?;
        let col = host_map(chunk, |c| (c.col - self.z0) as i32)?;
        Ok((
            self.upload(&row0)?,
            self.upload(&size)?,
            self.upload(&shift)?,
            self.upload(&base)?,
            self.upload(&col)?,
        ))
    }

    /// Stage 1 for one batch: the vectors into their columns of Z (divided by their largest
    /// magnitude); returns each one's status and 2-norm.
    fn iterate(&mut self, chunk: &[Col<T>]) -> Result<(Vec<i32>, Vec<f64>), DeviceError> {
        let m = chunk.len();
        let (row0, size, shift, base, col) = self.params(chunk)?;
        let seeds = host_map(chunk, |c| c.seed)?;
        let dtpcrt = host_map(chunk, |c| c.dtpcrt)?;
        let (seeds, dtpcrt) = (self.upload(&seeds)?, self.upload(&dtpcrt)?);
        let mut status = self.stream.alloc_zeros::<i32>(m)?;
        let mut nu = self.stream.alloc_zeros::<f64>(m)?;
        let (ncols, stride) = (m as i32, self.batch as i32);
        let [u0, u1, u2, l, x] = &mut self.work;
        let mut launch = self.stream.launch_builder(&self.k.iterate);
        launch
            .arg(&self.d)
            .arg(&self.e)
            .arg(&ncols)
            .arg(&stride)
            .arg(&row0)
            .arg(&size)
            .arg(&shift)
            .arg(&seeds)
            .arg(&base)
            .arg(&dtpcrt)
            .arg(&mut *u0)
            .arg(&mut *u1)
            .arg(&mut *u2)
            .arg(&mut *l)
            .arg(&mut self.swaps)
            .arg(&mut *x)
            .arg(&mut status)
            .arg(&mut nu);
        // SAFETY: the arguments match stein_iterate_{s,d}; every row a thread touches is below
        // its size ≤ maxrows, in the batch's interleaved arrays (stride = batch ≥ m).
        unsafe { launch.launch(launch_1d(m, 128)) }?;
        let maxrows = chunk.iter().map(|c| c.size).max().unwrap_or(1);
        let ldz = self.ldz as i64;
        let cfg = LaunchConfig {
            grid_dim: ((m as u32).div_ceil(32), (maxrows as u32).div_ceil(32), 1),
            block_dim: (32, 8, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = self.stream.launch_builder(&self.k.scatter);
        launch
            .arg(&self.work[4])
            .arg(&stride)
            .arg(&ncols)
            .arg(&row0)
            .arg(&size)
            .arg(&col)
            .arg(&self.z)
            .arg(&ldz);
        // SAFETY: stein_scatter's arguments; each column's rows lie inside Z's N rows.
        unsafe { launch.launch(cfg) }?;
        let status = download_all(&self.stream, &status, 0)?;
        let nu = download_all(&self.stream, &nu, 0.0)?;
        Ok((status, nu))
    }

    /// Stage 3 for one batch: one more solve from the vectors in Z, in place; their 2-norms.
    fn refine(&mut self, chunk: &[Col<T>]) -> Result<Vec<f64>, DeviceError> {
        let m = chunk.len();
        let (row0, size, shift, base, col) = self.params(chunk)?;
        let seeds = self.upload(&host_map(chunk, |c| c.seed)?)?;
        let mut status = self.stream.alloc_zeros::<i32>(m)?;
        let mut nu = self.stream.alloc_zeros::<f64>(m)?;
        let (ncols, stride, ldz) = (m as i32, self.batch as i32, self.ldz as i64);
        let [u0, u1, u2, l, x] = &mut self.work;
        let mut launch = self.stream.launch_builder(&self.k.refine);
        launch
            .arg(&self.d)
            .arg(&self.e)
            .arg(&ncols)
            .arg(&stride)
            .arg(&row0)
            .arg(&size)
            .arg(&shift)
            .arg(&seeds)
            .arg(&base)
            .arg(&col)
            .arg(&mut *u0)
            .arg(&mut *u1)
            .arg(&mut *u2)
            .arg(&mut *l)
            .arg(&mut self.swaps)
            .arg(&mut *x)
            .arg(&self.z)
            .arg(&ldz)
            .arg(&mut status)
            .arg(&mut nu);
        // SAFETY: as for stein_iterate, and the columns lie inside Z.
        unsafe { launch.launch(launch_1d(m, 128)) }?;
        let status = download_all(&self.stream, &status, 0)?;
        let nu = download_all(&self.stream, &nu, 0.0)?;
        if status.iter().any(|&s| s != 0) {
            return Err(failure("a refined iterate is not finite"));
        }
        Ok(nu)
    }

    /// Stage 2 for one cluster from its panel starting at column `from` (cluster-relative);
    /// `nu` holds each column's 2-norm before. Returns the columns (cluster-relative) with
    /// less than `keep` of their norm left.
    fn orthogonalize(
        &mut self,
        c: &Cluster,
        from: usize,
        nu: &[f64],
        keep: f64,
    ) -> Result<Vec<usize>, DeviceError> {
        let (n, s) = (self.ldz, c.size);
        let q = self.zp(c.row0, c.col);
        let (coef, gram) = (ptr(&self.coef, &self.stream), ptr(&self.gram, &self.stream));
        let mut flagged = host_room(c.k - from)?;
        let mut p = from;
        while p < c.k {
            let bp = PANEL.min(c.k - p);
            let x = self.zp(c.row0, c.col + p);
            // SAFETY (all cuBLAS calls below): the operands lie inside Z (rows row0..row0+s of
            // the cluster's columns, leading dimension N), the coefficients (p × bp ≤ maxk ×
            // PANEL) and the Gram matrix (PANEL²).
            unsafe {
                if p > 0 {
                    self.cgs(q, p, x, bp, s, coef)?;
                }
                self.gram(x, bp, s, gram)?;
            }
            let mut diag = self.chol(bp, true)?;
            let before: Vec<f64> = (0..bp).map(|j| diag[j].to_f64().max(0.0).sqrt()).collect();
            if p > 0 && (0..bp).any(|j| before[j] < 0.75 * nu[p + j]) {
                unsafe {
                    self.cgs(q, p, x, bp, s, coef)?;
                    self.gram(x, bp, s, gram)?;
                }
                diag = self.chol(bp, true)?;
            }
            for j in 0..bp {
                let rho = diag[PANEL + j].to_f64() / nu[p + j];
                if rho.is_nan() || rho < keep {
                    flagged.push(p + j);
                }
            }
            unsafe {
                self.blas.trsm_right_upper((s, bp), (gram, PANEL), (x, n))?;
                self.gram(x, bp, s, gram)?;
            }
            self.chol(bp, false)?;
            unsafe { self.blas.trsm_right_upper((s, bp), (gram, PANEL), (x, n))? };
            p += bp;
        }
        Ok(flagged)
    }

    /// X −= Q (Qᵀ X) for the `e` earlier columns Q and the `bp` columns X (rows: `s`).
    unsafe fn cgs(
        &self,
        q: u64,
        e: usize,
        x: u64,
        bp: usize,
        s: usize,
        coef: u64,
    ) -> Result<(), DeviceError> {
        let n = self.ldz;
        self.blas
            .gemm(true, false, (e, bp, s), 1.0, (q, n), (x, n), 0.0, (coef, e))?;
        self.blas.gemm(
            false,
            false,
            (s, bp, e),
            -1.0,
            (q, n),
            (coef, e),
            1.0,
            (x, n),
        )
    }

    /// The Gram matrix XᵀX of the panel into `gram` (leading dimension PANEL).
    unsafe fn gram(&self, x: u64, bp: usize, s: usize, gram: u64) -> Result<(), DeviceError> {
        let n = self.ldz;
        self.blas.gemm(
            true,
            false,
            (bp, bp, s),
            1.0,
            (x, n),
            (x, n),
            0.0,
            (gram, PANEL),
        )
    }

    /// Cholesky of the Gram matrix in place; with `read`, returns the diagonal before (first
    /// PANEL entries) and of R (next PANEL).
    fn chol(&mut self, bp: usize, read: bool) -> Result<Vec<T>, DeviceError> {
        let (ld, b) = (PANEL as i32, bp as i32);
        let mut launch = self.stream.launch_builder(&self.k.chol);
        launch
            .arg(&mut self.gram)
            .arg(&ld)
            .arg(&b)
            .arg(&mut self.diag);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: stein_chol's arguments; bp ≤ PANEL = the kernel's shared array.
        unsafe { launch.launch(cfg) }?;
        if !read {
            return Ok(Vec::new());
        }
        let diag = self.stream.clone_dtoh(&self.diag)?;
        self.stream.synchronize()?;
        Ok(diag)
    }

    /// Stage 4: unit norm, sign.
    fn finish(&mut self, cols: &[Col<T>]) -> Result<(), DeviceError> {
        let (row0, size, _, _, col) = self.params(cols)?;
        let ldz = self.ldz as i64;
        let mut launch = self.stream.launch_builder(&self.k.finish);
        launch
            .arg(&self.z)
            .arg(&ldz)
            .arg(&col)
            .arg(&row0)
            .arg(&size);
        let cfg = LaunchConfig {
            grid_dim: (cols.len() as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: stein_finish's arguments; every column lies inside Z.
        unsafe { launch.launch(cfg) }?;
        Ok(())
    }

    /// Zeros rows 0..N of the global columns `col..col + count` of Z.
    fn zero_columns(&mut self, col: usize, count: usize) -> Result<(), DeviceError> {
        if count == 0 {
            return Ok(());
        }
        let es = self.es();
        self.stream.context().bind_to_thread()?;
        // SAFETY: the columns lie inside Z (N ≤ ldz rows each, 4-byte aligned: the element
        // size divides the address and the pitch); the stream is Z's.
        unsafe {
            cudarc::driver::sys::cuMemsetD2D32Async(
                self.zp(0, col),
                self.ldz * es,
                0,
                self.n * es / 4,
                count,
                self.stream.cu_stream(),
            )
            .result()?;
        }
        Ok(())
    }

    /// The call's own Z (leading dimension N): its first `width` columns into the caller's
    /// columns z0.. (rows 0..N), through two pinned buffers in turn.
    fn download(&mut self, width: usize, z: &mut [T], ldz: usize) -> Result<(), DeviceError> {
        let n = self.n;
        let chunk_cols = ((32usize << 20) / (n * self.es())).clamp(1, width.max(1));
        let mut bufs: [Pinned<T>; 2] = [
            self.gpu.pinned(chunk_cols * n)?,
            self.gpu.pinned(chunk_cols * n)?,
        ];
        let base = self.z;
        let chunks: Vec<(usize, usize)> = (0..width)
            .step_by(chunk_cols)
            .map(|c| (c, chunk_cols.min(width - c)))
            .collect();
        let queue = |buf: &mut Pinned<T>, (c, w): (usize, usize)| -> Result<(), DeviceError> {
            let src = base + (c * n * self.es()) as u64;
            // SAFETY: columns c..c+w of the device Z (N rows each, contiguous).
            unsafe { buf.copy_from_device(w * n, src, &self.stream) }
        };
        if let Some(&c) = chunks.first() {
            queue(&mut bufs[0], c)?;
        }
        for (i, &(c, w)) in chunks.iter().enumerate() {
            if let Some(&next) = chunks.get(i + 1) {
                queue(&mut bufs[(i + 1) % 2], next)?;
            }
            let host = bufs[i % 2].as_slice()?;
            let to = (self.z0 + c) * ldz;
            crate::host::scatter_columns(
                &host[..w * n],
                n,
                &mut z[to..to + (w - 1) * ldz + n],
                ldz,
            );
        }
        Ok(())
    }
}
