//! SPIKE on the GPU (`kernels/gtsv.cu`). The core works on device pointers ([`solve_device`],
//! data already on the GPU); [`solve`] is the LAPACK interface: it uploads host arrays through
//! pinned staging buffers, runs the same core and downloads only an accepted answer.
//!
//! Each level of the recursion cuts its system into partitions of `m` rows (one thread each,
//! diagonal pivoting) and, in the same kernel, writes the tridiagonal separator system (one row
//! per partition); it recurses on that until it has at most `base_n` rows, which one CTA solves.
//! The back substitution then runs level by level upwards; on the top level it also computes
//! the residual check of every row, so the decision to accept costs no extra pass over the
//! matrix. Two kernels per level, each one pass over the level's data: a CTA recomputes its
//! neighbour's first partition (a halo) rather than exchange the separator rows' couplings
//! through memory. Once the systems are down to a few thousand rows (`tail_n`), the remaining
//! levels, the bottom and their back substitutions run in one kernel of one CTA (`gtsv_tail`):
//! there a kernel per level cost more in launches than in work. The top level reads the
//! right-hand sides where they are and writes `X` into a buffer of its own, so the caller's `B`
//! stays intact until the answer is accepted. Iterative refinement, when the check finds a
//! residual above LAPACK's level, also runs on the GPU (`Plan::run`).

use super::MAX_REFINE_STEPS;
use super::{judge, refine, residual_cols, split_rows, wants_refinement, Reject, Residual};
use crate::device::memory::{par_copy, Pinned};
use crate::device::{self, kernels, DeviceError, Gpu};
use crate::lapack::Lapack;
use crate::real::Real;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{
    result as cu, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

/// Tuning of the GPU path.
#[derive(Clone, Debug)]
pub struct GpuOptions {
    /// Rows per partition, separator included: 8, 16 or 32 (the partition kernels are compiled
    /// for each, so that a partition's factorization stays in registers).
    pub m: usize,
    /// Threads (partitions) per CTA: a multiple of 32, at most 128 (gtsv_update's launch
    /// bound), with `(5 (m + 1) + 3) · threads · 8` bytes at most 48 KiB (the kernels' shared
    /// memory).
    pub threads: u32,
    /// Systems of at most this many rows are solved by one CTA (the bottom of the recursion).
    pub base_n: usize,
    /// Below the top level, the levels from the first system of at most this many rows down
    /// run in one CTA, one kernel (`gtsv_tail`) instead of two kernels per level; 0: never.
    pub tail_n: usize,
    /// The top level's checking back substitution also prepares a refinement step's top-level
    /// separator system (`gtsv_backsub_spec`), so that a step, when one is needed, starts one
    /// level down: one pass over the matrix fewer per refined call, some arithmetic more per
    /// call.
    pub speculate: bool,
    /// Elements per pinned staging buffer (two are used, alternately).
    pub staging_elems: usize,
    /// Device bytes one call may use, below the budget (`HYLAPACK_GPU_MEMORY_LIMIT` or what is
    /// free); a system that needs more is solved in chunks ([`solve`]). `None`: the budget.
    pub memory_limit: Option<u64>,
}

impl Default for GpuOptions {
    fn default() -> Self {
        // `hylapack bench gtsv --tune` on an H100 (n = 2^23, random): m = 8 took 0.52 ms at
        // 32 to 128 threads, m = 16 0.64 ms, m = 32 1.7 ms (its registers spill); base_n = 32
        // and 128 tie, 1024 is slower.
        GpuOptions {
            m: 8,
            threads: 64,
            base_n: 32,
            tail_n: 4096,
            speculate: true,
            staging_elems: 1 << 22,
            memory_limit: None,
        }
    }
}

/// Wall-clock seconds of the phases of the calling thread's last host-pointer GPU solve (for
/// `hylapack bench gtsv`): upload, GPU solve and check (refinement included), download.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phases {
    pub upload: f64,
    pub solve: f64,
    pub download: f64,
    /// Refinement steps taken.
    pub refine_steps: usize,
    /// Chunks of the last solve (1 unless it was above the memory limit).
    pub chunks: usize,
}

thread_local! {
    static PHASES: Cell<Phases> = Cell::new(Phases::default());
}

/// The phases of this thread's last host-pointer GPU solve.
pub fn last_phases() -> Phases {
    PHASES.with(|p| p.get())
}

fn sz<T>() -> usize {
    std::mem::size_of::<T>()
}

/// A tridiagonal matrix of order `n` in device memory, LAPACK's layout (`dl`, `du`: `n − 1`
/// entries, `d`: `n`).
#[derive(Clone, Copy, Debug)]
pub struct DevMatrix {
    pub n: usize,
    pub dl: CUdeviceptr,
    pub d: CUdeviceptr,
    pub du: CUdeviceptr,
}

/// Column-major device array: first element and leading dimension (in elements).
#[derive(Clone, Copy, Debug)]
pub struct DevCols {
    pub ptr: CUdeviceptr,
    pub ld: usize,
}

/// What the top level's back substitution does besides solving.
#[derive(Clone, Copy, Debug)]
enum Top {
    Solve,
    /// Accumulate the residual summaries of every row; with [`GpuOptions::speculate`], the
    /// accurate residual's, and write the top level's separator right-hand sides for a
    /// refinement step to `spec` (`gtsv_backsub_spec`).
    Check,
    /// A refinement step: the right-hand sides given are the original ones, `f0`, and the
    /// system solved is for the residual of `x0` against them (evaluated by the top level's
    /// kernels, its summaries into the second set); write `x0` + the correction and accumulate
    /// its accurate residual summaries against `f0`. With `from_spec`, the check before it left
    /// the top level's separator system ready in level 0's buffers: no top-level reduce.
    Update {
        x0: DevCols,
        from_spec: bool,
    },
}

/// The systems one `gtsv_tail` launch solves, as `TailSystems` in `kernels/gtsv.cu`: `levels`
/// reductions, system i + 1 the separator system of system i (n = its row count, F at leading
/// dimension n), the last one the bottom.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct TailSystems {
    levels: i64,
    n: [i64; TAIL_MAX_LEVELS + 1],
    dl: [CUdeviceptr; TAIL_MAX_LEVELS + 1],
    d: [CUdeviceptr; TAIL_MAX_LEVELS + 1],
    du: [CUdeviceptr; TAIL_MAX_LEVELS + 1],
    f: [CUdeviceptr; TAIL_MAX_LEVELS + 1],
}

// SAFETY: plain integers in the kernel's struct layout (8-byte fields, no padding).
unsafe impl cudarc::driver::DeviceRepr for TailSystems {}

/// One level: its partition count and the separator system it reduces to (the next level's).
struct Level {
    p: usize,
    /// The reduced system (p rows) and its right-hand sides / solution (p × nrhs, in place).
    next: DevMatrix,
    next_f: CUdeviceptr,
}

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
const TAIL_MAX_LEVELS: usize = 12;

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

/// Per level its partition count and the offsets of its separator system's DL, D, DU, F; the
/// offsets of X, R, X + δ, the summaries and flags, the tail's scratch, the speculative
/// right-hand sides; the total length (elements of `T`); the level the tail kernel starts at
/// ([`tail_start`]).
type WorkLayout = (Vec<(usize, [usize; 4])>, [usize; 6], usize, Option<usize>);

/// The pieces of one solve's work buffer, in elements of `T`, each rounded up to 32 elements:
/// per level the separator system (DL, D, DU, F); then the solution X, the refinement's
/// residual R (only without levels: with levels the top level's kernels evaluate it) and its
/// candidate X + δ (each n × nrhs), two sets of summaries with the flags in
/// the element after them (one memset clears them, one copy reads them), and the tail
/// kernel's scratch (4 + 2 nrhs entries per partition of its first level), and the top level's
/// speculative separator right-hand sides (p × nrhs, with levels).
fn work_layout(n: usize, nrhs: usize, o: &GpuOptions) -> WorkLayout {
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
        .map(|p| (p, [p - 1, p, p - 1, p * nrhs].map(&mut carve)))
        .collect();
    let rest = [n * nrhs, r, n * nrhs, 6 * nrhs.max(1) + 1, scratch, spec].map(&mut carve);
    (levels, rest, total, tail)
}

/// Device bytes of the work buffer of one solve (see [`work_layout`]), not counting the
/// caller's matrix and right-hand sides.
pub fn work_bytes<T>(n: usize, nrhs: usize, o: &GpuOptions) -> u64 {
    (work_layout(n, nrhs, o).2 * sz::<T>()) as u64
}

/// The work buffer of the last solve, kept for the next one: `cuMemAllocAsync` hands freed
/// memory back at every synchronization, and mapping ~100 MiB afresh cost more than the solve
/// itself. Kept only up to 1 GiB and a sixteenth of the budget, because the budget does not
/// count it while idle.
static SPARE: std::sync::Mutex<Option<CudaSlice<u8>>> = std::sync::Mutex::new(None);

/// A work buffer taken from [`SPARE`] (or allocated) for one solve and given back on drop.
struct Work {
    buf: Option<CudaSlice<u8>>,
    stream: Arc<CudaStream>,
    keep_max: usize,
}

impl Work {
    fn take(gpu: &Gpu, stream: &Arc<CudaStream>, bytes: usize) -> Result<Self, DeviceError> {
        let spare = SPARE.lock().unwrap_or_else(|e| e.into_inner()).take();
        let buf = match spare {
            Some(b) if b.len() >= bytes => b,
            // SAFETY: every element is written by a kernel, a copy or a memset before it is read.
            _ => unsafe { stream.alloc::<u8>(bytes) }?,
        };
        Ok(Work {
            buf: Some(buf),
            stream: stream.clone(),
            keep_max: (gpu.budget.limit() / 16).min(1 << 30) as usize,
        })
    }

    fn base(&self) -> CUdeviceptr {
        addr(self.buf.as_ref().expect("work buffer"), &self.stream)
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let Some(buf) = self.buf.take() else { return };
        // Another solve may take it on another stream: this one's kernels must be done.
        if buf.len() > self.keep_max || self.stream.synchronize().is_err() {
            return;
        }
        let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        if spare.as_ref().is_none_or(|s| s.len() < buf.len()) {
            *spare = Some(buf);
        }
    }
}

/// Device bytes a host-pointer call needs: the uploaded matrix and right-hand sides, and the
/// work buffers (what is reserved from the budget).
pub fn bytes_needed<T>(n: usize, nrhs: usize, o: &GpuOptions) -> u64 {
    ((3 * n + n * nrhs) * sz::<T>()) as u64 + work_bytes::<T>(n, nrhs, o)
}

/// Two pinned buffers used alternately (each waits for its own last copy before it is reused).
struct Staging<T> {
    bufs: [Pinned<T>; 2],
    next: usize,
}

impl<T: Real> Staging<T> {
    fn new(gpu: &'static Gpu, elems: usize) -> Result<Self, DeviceError> {
        Ok(Staging {
            bufs: [gpu.pinned(elems)?, gpu.pinned(elems)?],
            next: 0,
        })
    }

    fn chunk(&self) -> usize {
        self.bufs[0].len()
    }

    /// Copies `src` to device memory at `dst` (which holds at least `src.len()` elements): the
    /// host copy into one buffer overlaps the transfer from the other.
    fn upload(
        &mut self,
        stream: &Arc<CudaStream>,
        src: &[T],
        dst: CUdeviceptr,
    ) -> Result<(), DeviceError> {
        let chunk = self.chunk();
        for (k, piece) in src.chunks(chunk).enumerate() {
            let i = self.next;
            self.next ^= 1;
            par_copy(&mut self.bufs[i].as_mut_slice()?[..piece.len()], piece);
            let at = dst + (k * chunk * sz::<T>()) as u64;
            // SAFETY: dst holds src.len() elements; the pinned buffer records the end of the
            // copy and is not reused before it.
            unsafe { self.bufs[i].copy_to_device(piece.len(), at, stream)? };
        }
        Ok(())
    }

    /// Copies `dst.len()` elements of device memory at `src` into `dst`: piece k + 1 is in
    /// flight while piece k is copied out of its buffer.
    fn download(
        &mut self,
        stream: &Arc<CudaStream>,
        src: CUdeviceptr,
        dst: &mut [T],
    ) -> Result<(), DeviceError> {
        let chunk = self.chunk();
        let pieces = dst.len().div_ceil(chunk);
        let mut pending: Option<(usize, usize)> = None; // (buffer, piece)
        for k in 0..=pieces {
            if k < pieces {
                let i = k % 2;
                let len = chunk.min(dst.len() - k * chunk);
                let at = src + (k * chunk * sz::<T>()) as u64;
                // SAFETY: src holds dst.len() elements; reading the pinned buffer waits for the
                // end of this copy.
                unsafe { self.bufs[i].copy_from_device(len, at, stream)? };
            }
            if let Some((i, piece)) = pending.take() {
                let len = chunk.min(dst.len() - piece * chunk);
                par_copy(
                    &mut dst[piece * chunk..piece * chunk + len],
                    &self.bufs[i].as_slice()?[..len],
                );
            }
            if k < pieces {
                pending = Some((k % 2, k));
            }
        }
        Ok(())
    }
}

#[derive(Clone)]
struct Funcs {
    reduce: CudaFunction,
    reduce_res: CudaFunction,
    backsub: CudaFunction,
    backsub_spec: CudaFunction,
    update: CudaFunction,
    base: CudaFunction,
    tail: CudaFunction,
    residual: CudaFunction,
    add: CudaFunction,
}

/// The kernels of each (precision, partition size) loaded so far: looking nine functions up
/// at every call showed in the small solves.
static FUNCS: std::sync::Mutex<Vec<((char, usize), Funcs)>> = std::sync::Mutex::new(Vec::new());

impl Funcs {
    fn get<T: Real>(gpu: &Gpu, m: usize) -> Result<Self, DeviceError> {
        let key = (T::PREFIX, m);
        let mut loaded = FUNCS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, f)) = loaded.iter().find(|(k, _)| *k == key) {
            return Ok(f.clone());
        }
        let f = Self::load::<T>(gpu, m)?;
        loaded.push((key, f.clone()));
        Ok(f)
    }

    fn load<T: Real>(gpu: &Gpu, m: usize) -> Result<Self, DeviceError> {
        let module = gpu.module(&kernels::GTSV)?;
        let f = |name: &str| module.load_function(&format!("gtsv_{name}_{}", T::PREFIX));
        let fm = |name: &str| module.load_function(&format!("gtsv_{name}_{}_m{m}", T::PREFIX));
        Ok(Funcs {
            reduce: fm("reduce")?,
            reduce_res: fm("reduce_res")?,
            backsub: fm("backsub")?,
            backsub_spec: fm("backsub_spec")?,
            update: fm("update")?,
            base: f("base")?,
            tail: fm("tail")?,
            residual: f("residual")?,
            add: f("add")?,
        })
    }
}

/// The raw address of a buffer this module allocated on `stream` (all its work stays on that
/// one stream, so cudarc's cross-stream event tracking is not needed).
fn addr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> CUdeviceptr {
    s.device_ptr(stream).0
}

/// Copies `cols` columns of `rows` elements between column-major device arrays on `stream`.
///
/// # Safety
/// Both arrays hold `cols` columns of `rows` elements at their leading dimensions.
unsafe fn copy_cols<T>(
    stream: &CudaStream,
    dst: DevCols,
    src: DevCols,
    rows: usize,
    cols: usize,
) -> Result<(), DeviceError> {
    for c in 0..cols {
        cu::memcpy_dtod_async(
            dst.ptr + (c * dst.ld * sz::<T>()) as u64,
            src.ptr + (c * src.ld * sz::<T>()) as u64,
            rows * sz::<T>(),
            stream.cu_stream(),
        )?;
    }
    Ok(())
}

/// One solve's device state: the work buffers of every level, the solution `X` (n × nrhs,
/// leading dimension n), the flags and the per-column residual summaries, carved out of one
/// allocation (dozens of small allocations, each with cudarc's tracking events, cost more than
/// the kernels of a mid-sized solve).
struct Plan<'g, T> {
    gpu: &'g Gpu,
    stream: Arc<CudaStream>,
    funcs: Funcs,
    o: GpuOptions,
    a: DevMatrix,
    nrhs: usize,
    levels: Vec<Level>,
    /// The first level the tail kernel takes ([`tail_start`]), if any.
    tail: Option<usize>,
    x: CUdeviceptr,
    /// The refinement's residual (n × nrhs, leading dimension n; only without levels) and its
    /// candidate solution.
    r: CUdeviceptr,
    x_next: CUdeviceptr,
    /// rmax | smax | bmax, nrhs each, twice (the second set for a refinement step's old
    /// residual).
    sums: CUdeviceptr,
    flags: CUdeviceptr,
    /// The tail kernel's spike entries.
    scratch: CUdeviceptr,
    /// The speculating check's separator right-hand sides (level 0's p × nrhs).
    spec: CUdeviceptr,
    /// Owns every buffer above.
    _work: Work,
    _elem: std::marker::PhantomData<T>,
}

impl<'g, T: Real> Plan<'g, T> {
    fn new(
        gpu: &'g Gpu,
        stream: Arc<CudaStream>,
        o: &GpuOptions,
        a: DevMatrix,
        nrhs: usize,
    ) -> Result<Self, DeviceError> {
        let funcs = Funcs::get::<T>(gpu, o.m)?;
        let (offsets, [x_at, r_at, x_next_at, sums_at, scratch_at, spec_at], total, tail) =
            work_layout(a.n, nrhs, o);
        let work = Work::take(gpu, &stream, total * sz::<T>())?;
        let base = work.base();
        let at = |e: usize| base + (e * sz::<T>()) as u64;
        let levels = offsets
            .into_iter()
            .map(|(p, o)| Level {
                p,
                next: DevMatrix {
                    n: p,
                    dl: at(o[0]),
                    d: at(o[1]),
                    du: at(o[2]),
                },
                next_f: at(o[3]),
            })
            .collect();
        Ok(Plan {
            gpu,
            funcs,
            o: o.clone(),
            a,
            nrhs,
            levels,
            tail,
            x: at(x_at),
            r: at(r_at),
            x_next: at(x_next_at),
            sums: at(sums_at),
            flags: at(sums_at + 6 * nrhs.max(1)),
            scratch: at(scratch_at),
            spec: at(spec_at),
            _work: work,
            _elem: std::marker::PhantomData,
            stream,
        })
    }

    fn x_cols(&self) -> DevCols {
        DevCols {
            ptr: self.x,
            ld: self.a.n,
        }
    }

    /// The three summary arrays' addresses.
    fn sums_ptrs(&self) -> (CUdeviceptr, CUdeviceptr, CUdeviceptr) {
        let k = (self.nrhs.max(1) * sz::<T>()) as u64;
        (self.sums, self.sums + k, self.sums + 2 * k)
    }

    /// The second set of summary arrays (a refinement step's old residual).
    fn old_sums_ptrs(&self) -> (CUdeviceptr, CUdeviceptr, CUdeviceptr) {
        let k = (self.nrhs.max(1) * sz::<T>()) as u64;
        let (r, s, b) = self.sums_ptrs();
        (r + 3 * k, s + 3 * k, b + 3 * k)
    }

    /// Enqueues the whole SPIKE pipeline for `ncols` columns: reads `rhs`, writes the solution to
    /// `out` (which may be `rhs` itself, but only with [`Top::Solve`]). With at least one level,
    /// `top` says what else the top level's back substitution does (the summaries go to `sums`,
    /// which must then be zero).
    ///
    /// The kernels keep no factorization in memory: each partition's diagonal-pivoting
    /// factorization is recomputed in registers from DL, D, DU by every kernel that needs it
    /// (cheaper than storing and re-reading it). The pivoting decisions depend only on A, so a
    /// second run on another right-hand side (a refinement step) solves with exactly the same
    /// factorization.
    fn launch(
        &self,
        ncols: usize,
        rhs: DevCols,
        out: DevCols,
        top: Top,
    ) -> Result<(), DeviceError> {
        let (o, stream, funcs) = (&self.o, &self.stream, &self.funcs);
        let nrhs_i = ncols as i32;
        let flags = self.flags;
        let (rmax, smax, bmax) = self.sums_ptrs();
        let (old_rmax, old_smax, old_bmax) = self.old_sums_ptrs();
        // A CTA of `threads` threads owns threads − 1 partitions (the last thread is a halo).
        // Shared memory: `tiles` staged arrays of (m + 1) × threads and 3 × threads more. A level
        // whose CTAs would not fill the GPU twice over gets a row of CTAs per right-hand side
        // (each refactors its partitions: cheap next to a latency-bound loop over the columns).
        let sms = self.gpu.info.multiprocessors.max(1) as usize;
        let tile_cfg = |p: usize, tiles: usize| {
            let ctas = p.div_ceil(o.threads as usize - 1);
            let rows = if ctas < 2 * sms {
                ncols.clamp(1, 65535)
            } else {
                1
            };
            LaunchConfig {
                grid_dim: (ctas as u32, rows as u32, 1),
                block_dim: (o.threads, 1, 1),
                shared_mem_bytes: ((tiles * (o.m + 1) + 3) * o.threads as usize * sz::<T>()) as u32,
            }
        };
        // Level l's system and right-hand sides: the caller's on top, else the reduced ones.
        let system = |l: usize| -> (DevMatrix, DevCols) {
            if l == 0 {
                (self.a, rhs)
            } else {
                let up = &self.levels[l - 1];
                (
                    up.next,
                    DevCols {
                        ptr: up.next_f,
                        ld: up.p,
                    },
                )
            }
        };

        // Levels from `tail` down run in the tail kernel, the bottom included.
        let tail = self.tail;
        let upper = tail.unwrap_or(self.levels.len());
        let from_spec = matches!(
            top,
            Top::Update {
                from_spec: true,
                ..
            }
        );
        // Downward: reduce each level to its separator system.
        for (l, lev) in self.levels.iter().enumerate().take(upper) {
            if l == 0 && from_spec {
                continue;
            }
            let (a, f) = system(l);
            let (n_l, p_l, ldf) = (a.n as i64, lev.p as i64, f.ld as i64);
            let res = match top {
                Top::Update { x0, .. } if l == 0 => Some(x0),
                _ => None,
            };
            let func = if res.is_some() {
                &funcs.reduce_res
            } else {
                &funcs.reduce
            };
            let mut launch = stream.launch_builder(func);
            launch
                .arg(&n_l)
                .arg(&a.dl)
                .arg(&a.d)
                .arg(&a.du)
                .arg(&f.ptr)
                .arg(&ldf)
                .arg(&nrhs_i)
                .arg(&p_l);
            launch
                .arg(&lev.next.dl)
                .arg(&lev.next.d)
                .arg(&lev.next.du)
                .arg(&lev.next_f)
                .arg(&flags);
            let (x0, ld0) = res.map_or((0, 0), |x0| (x0.ptr, x0.ld as i64));
            if res.is_some() {
                launch
                    .arg(&x0)
                    .arg(&ld0)
                    .arg(&old_rmax)
                    .arg(&old_smax)
                    .arg(&old_bmax);
            }
            // SAFETY: arguments match gtsv_reduce_{s,d}_m{m} (gtsv_reduce_res_{s,d}_m{m} with
            // X0 of n rows at ld0); the next system has p rows (p − 1 off-diagonal entries) and
            // its F is p x nrhs (>= ncols); the system has n rows with F of leading dimension ldf,
            // and rows < n only are read.
            let tiles = if res.is_some() { 5 } else { 4 };
            unsafe { launch.launch(tile_cfg(lev.p, tiles)) }?;
        }
        // The bottom: one CTA, in place. Without levels the bottom is the caller's system: its
        // right-hand sides are first copied to `out`.
        if let Some(t) = tail {
            self.launch_tail(t, nrhs_i)?;
        } else {
            let (a, f) = match self.levels.last() {
                Some(lev) => (
                    lev.next,
                    DevCols {
                        ptr: lev.next_f,
                        ld: lev.p,
                    },
                ),
                None => {
                    if out.ptr != rhs.ptr {
                        // SAFETY: both hold ncols columns of n rows.
                        unsafe { copy_cols::<T>(stream, out, rhs, self.a.n, ncols)? };
                    }
                    (self.a, out)
                }
            };
            let (n_b, ldf) = (a.n as i64, f.ld as i64);
            let cfg = LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (128, 1, 1),
                shared_mem_bytes: (a.n * (5 * sz::<T>() + 1)) as u32,
            };
            let mut launch = stream.launch_builder(&funcs.base);
            launch
                .arg(&n_b)
                .arg(&a.dl)
                .arg(&a.d)
                .arg(&a.du)
                .arg(&f.ptr)
                .arg(&ldf)
                .arg(&nrhs_i)
                .arg(&flags);
            // SAFETY: arguments match gtsv_base_{s,d}; n_b <= base_n rows fit the shared arrays
            // requested (5 arrays of T and one of bytes).
            unsafe { launch.launch(cfg) }?;
        }
        // Upward: back substitution; the top level also evaluates the residual check.
        for l in (0..upper).rev() {
            let lev = &self.levels[l];
            let (a, f) = system(l);
            let x = if l == 0 { out } else { f };
            let (n_l, p_l, ldf, ldx) = (a.n as i64, lev.p as i64, f.ld as i64, x.ld as i64);
            let top = if l == 0 { top } else { Top::Solve };
            // A CTA's halo partition is the next CTA's, which may already have overwritten it
            // when X is F: the check reads the halo's solution, so it needs X apart from F.
            assert!(
                matches!(top, Top::Solve) || x.ptr != f.ptr,
                "the residual check needs X apart from F"
            );
            let check_i = matches!(top, Top::Check) as i32;
            let spec = matches!(top, Top::Check) && o.speculate;
            let func = match top {
                Top::Update { .. } => &funcs.update,
                Top::Check if spec => &funcs.backsub_spec,
                _ => &funcs.backsub,
            };
            let mut launch = stream.launch_builder(func);
            launch
                .arg(&n_l)
                .arg(&a.dl)
                .arg(&a.d)
                .arg(&a.du)
                .arg(&f.ptr)
                .arg(&ldf)
                .arg(&x.ptr)
                .arg(&ldx)
                .arg(&nrhs_i)
                .arg(&p_l)
                .arg(&lev.next_f);
            if !matches!(top, Top::Update { .. }) && !spec {
                launch.arg(&check_i);
            }
            launch.arg(&rmax).arg(&smax).arg(&bmax).arg(&flags);
            let (x0, ld0) = match top {
                Top::Update { x0, .. } => (x0.ptr, x0.ld as i64),
                _ => (0, 0),
            };
            if matches!(top, Top::Update { .. }) {
                launch.arg(&x0).arg(&ld0);
            }
            if spec {
                launch.arg(&self.spec);
            }
            // SAFETY: arguments match gtsv_backsub_{s,d}_m{m} (gtsv_update_{s,d}_m{m} with
            // Top::Update, gtsv_backsub_spec_{s,d}_m{m} with a speculating Top::Check, whose
            // spec buffer holds p x nrhs); XS (the next system's solution) is p x nrhs; X, F
            // (and X0) hold n rows of ncols columns at their leading dimensions.
            let tiles = if matches!(top, Top::Update { .. }) {
                5
            } else {
                4
            };
            unsafe { launch.launch(tile_cfg(lev.p, tiles)) }?;
        }
        Ok(())
    }

    /// The levels from `t` (>= 1) down, the bottom included, in one CTA (`gtsv_tail`): each
    /// system is reduced and, after the bottom's solve, overwritten by its solution as the
    /// level kernels would.
    fn launch_tail(&self, t: usize, nrhs_i: i32) -> Result<(), DeviceError> {
        let count = self.levels.len() - t;
        debug_assert!(t >= 1 && count <= TAIL_MAX_LEVELS);
        let mut sys = TailSystems {
            levels: count as i64,
            ..TailSystems::default()
        };
        for (i, lev) in self.levels[t - 1..].iter().enumerate() {
            sys.n[i] = lev.p as i64;
            sys.dl[i] = lev.next.dl;
            sys.d[i] = lev.next.d;
            sys.du[i] = lev.next.du;
            sys.f[i] = lev.next_f;
        }
        let bottom = self.levels.last().expect("a tail has levels").p;
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: (bottom * (5 * sz::<T>() + 1)) as u32,
        };
        let mut launch = self.stream.launch_builder(&self.funcs.tail);
        launch
            .arg(&sys)
            .arg(&nrhs_i)
            .arg(&self.scratch)
            .arg(&self.flags);
        // SAFETY: arguments match gtsv_tail_{s,d}_m{m}; system i + 1 is system i's separator
        // system (its partition count), every F holds nrhs columns at leading dimension n;
        // the scratch holds 4 + 2 nrhs entries per partition of the first system
        // (work_layout); the bottom's shared arrays are requested as for gtsv_base.
        unsafe { launch.launch(cfg) }?;
        Ok(())
    }

    /// A flat grid for the row-wise kernels: enough CTAs to fill the GPU, no more.
    fn rows_cfg(&self) -> LaunchConfig {
        let ctas = self
            .a
            .n
            .div_ceil(256)
            .min(8 * self.gpu.info.multiprocessors.max(1) as usize)
            .max(1);
        LaunchConfig {
            grid_dim: (ctas as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Clears the flags and summaries before a kernel accumulates into them.
    fn clear(&mut self) -> Result<(), DeviceError> {
        let cs = self.stream.cu_stream();
        // SAFETY: the summaries and the flags' element after them lie inside this plan's
        // allocation (work_layout); the stream orders the writes.
        unsafe { cu::memset_d8_async(self.sums, 0, (6 * self.nrhs.max(1) + 1) * sz::<T>(), cs)? };
        Ok(())
    }

    /// Reads the flags and the summaries of `ncols` columns (waits for the stream).
    fn read_sums(&self, ncols: usize) -> Result<(i32, Vec<Residual<T>>), DeviceError> {
        let (flags, sums, _) = self.read_both_sums(ncols)?;
        Ok((flags, sums))
    }

    /// [`Self::read_sums`] for both sets of summaries: the check's and the old residual's of a
    /// refinement step ([`Top::Update`]).
    #[allow(clippy::type_complexity)]
    fn read_both_sums(
        &self,
        ncols: usize,
    ) -> Result<(i32, Vec<Residual<T>>, Vec<Residual<T>>), DeviceError> {
        let k = self.nrhs.max(1);
        let mut s = vec![T::ZERO; 6 * k + 1];
        let cs = self.stream.cu_stream();
        // SAFETY: the summaries and the flags' element lie inside this plan's allocation; the
        // host buffer outlives the synchronize below.
        unsafe { cu::memcpy_dtoh_async(&mut s[..], self.sums, cs)? };
        self.stream.synchronize()?;
        // The kernels' int flags are the first 4 bytes of the last element (T has 4 or 8).
        // SAFETY: an i32 is no larger than T and every bit pattern is a valid i32.
        let flags = [unsafe { std::mem::transmute_copy::<T, i32>(&s[6 * k]) }];
        let finite = flags[0] & 2 == 0;
        let set = |at: usize| -> Vec<Residual<T>> {
            (0..ncols)
                .map(|c| (s[at + c], s[at + k + c], s[at + 2 * k + c], finite))
                .collect()
        };
        Ok((flags[0], set(0), set(3 * k)))
    }

    /// The accurate residual summaries of `ncols` columns of `x` against `f`, storing
    /// `r = f − A x` into `r` if given.
    fn residual(
        &mut self,
        ncols: usize,
        x: DevCols,
        f: DevCols,
        r: Option<DevCols>,
    ) -> Result<Vec<Residual<T>>, DeviceError> {
        self.clear()?;
        let a = self.a;
        let (n_i, ncols_i, ldx, ldf) = (a.n as i64, ncols as i32, x.ld as i64, f.ld as i64);
        let (r_ptr, ldr) = r.map_or((0u64, 1i64), |r| (r.ptr, r.ld as i64));
        let (rmax, smax, bmax) = self.sums_ptrs();
        let flags = self.flags;
        let cfg = self.rows_cfg();
        let mut launch = self.stream.launch_builder(&self.funcs.residual);
        launch
            .arg(&n_i)
            .arg(&a.dl)
            .arg(&a.d)
            .arg(&a.du)
            .arg(&x.ptr)
            .arg(&ldx)
            .arg(&f.ptr)
            .arg(&ldf)
            .arg(&ncols_i)
            .arg(&r_ptr)
            .arg(&ldr)
            .arg(&rmax)
            .arg(&smax)
            .arg(&bmax)
            .arg(&flags);
        // SAFETY: arguments match gtsv_residual_{s,d}; x, f (and r) hold ncols columns of n rows.
        unsafe { launch.launch(cfg) }?;
        Ok(self.read_sums(ncols)?.1)
    }

    /// `r := x + r` over the plan's n × nrhs columns.
    fn add_into(&self, x: DevCols, r: DevCols) -> Result<(), DeviceError> {
        let (n_i, nrhs_i, ldx, ldr) = (self.a.n as i64, self.nrhs as i32, x.ld as i64, r.ld as i64);
        let mut launch = self.stream.launch_builder(&self.funcs.add);
        launch
            .arg(&n_i)
            .arg(&nrhs_i)
            .arg(&x.ptr)
            .arg(&ldx)
            .arg(&r.ptr)
            .arg(&ldr);
        // SAFETY: arguments match gtsv_add_{s,d}; x and r hold nrhs columns of n rows.
        unsafe { launch.launch(self.rows_cfg()) }?;
        Ok(())
    }

    /// Solves for `rhs` (n × nrhs on the device): `Ok(Ok(()))` when the answer in `self.x` is
    /// accepted, `Ok(Err)` when it is rejected.
    ///
    /// When some column's residual is above LAPACK's level ([`super::wants_refinement`]), up to
    /// [`MAX_REFINE_STEPS`] steps of iterative refinement run here, as [`super::refine`] does on
    /// the host: `r = f − A x` accurately, `A δ = r` by the same pipeline, and `x + δ` kept for
    /// a column only where it lowers that column's residual.
    ///
    /// `meanwhile` runs on the host while the GPU solves (before the first wait).
    fn run(
        &mut self,
        rhs: DevCols,
        meanwhile: impl FnOnce(),
    ) -> Result<Result<(), Reject>, DeviceError> {
        let (n, nrhs) = (self.a.n, self.nrhs);
        let device_check = !self.levels.is_empty();
        let x = self.x_cols();
        self.clear()?;
        let top = if device_check { Top::Check } else { Top::Solve };
        self.launch(nrhs, rhs, x, top)?;
        meanwhile();
        let (flags, sums) = self.read_sums(nrhs)?;
        if flags & 1 != 0 {
            return Ok(Err(Reject::ZeroPivot));
        }
        // Without levels (one CTA solved it) nothing was checked yet.
        let mut checks = if device_check {
            sums
        } else {
            self.residual(nrhs, x, rhs, None)?
        };
        if checks.iter().any(|c| !c.3) {
            return Ok(Err(Reject::NonFinite));
        }
        let mut stalled = vec![false; nrhs];
        let mut steps = 0;
        // The speculating check left the first step's top-level separator system ready.
        let mut spec_ready = device_check && self.o.speculate;
        while steps < MAX_REFINE_STEPS {
            let cols: Vec<usize> = (0..nrhs)
                .filter(|&c| !stalled[c] && wants_refinement(&checks[c]))
                .collect();
            if cols.is_empty() {
                break;
            }
            // All columns are corrected together (the kernels take a column count); only those
            // in `cols` may change. The pivoting depends on A only, so the correction's solve
            // meets no zero pivot the first one did not.
            let (x, rc) = (self.x_cols(), DevCols { ptr: self.r, ld: n });
            let (cand, old, new) = if self.levels.is_empty() {
                // One CTA solves A δ = r in place; then r := x + δ and its residual.
                let old = self.residual(nrhs, x, rhs, Some(rc))?;
                self.clear()?;
                self.launch(nrhs, rc, rc, Top::Solve)?;
                self.add_into(x, rc)?;
                (rc, old, self.residual(nrhs, rc, rhs, None)?)
            } else {
                // The top level's kernels evaluate r = f − A x themselves; its back
                // substitution writes x + δ and checks it.
                let xn = DevCols {
                    ptr: self.x_next,
                    ld: n,
                };
                let from_spec = std::mem::take(&mut spec_ready);
                if from_spec {
                    // Its right-hand sides become level 0's separator system's.
                    std::mem::swap(&mut self.levels[0].next_f, &mut self.spec);
                }
                self.clear()?;
                self.launch(nrhs, rhs, xn, Top::Update { x0: x, from_spec })?;
                let (_, new, old) = self.read_both_sums(nrhs)?;
                // Without a top-level reduce, x's accurate summaries are the check's.
                let old = if from_spec { checks.clone() } else { old };
                (xn, old, new)
            };
            for &c in &cols {
                checks[c] = old[c];
            }
            steps += 1;
            let better: Vec<usize> = cols
                .iter()
                .copied()
                .filter(|&c| new[c].3 && new[c].0 < checks[c].0)
                .collect();
            for &c in &cols {
                if better.contains(&c) {
                    checks[c] = new[c];
                } else {
                    stalled[c] = true;
                }
            }
            if better.len() == nrhs {
                // Every column improved: the candidate becomes the solution.
                let into = if cand.ptr == self.r {
                    &mut self.r
                } else {
                    &mut self.x_next
                };
                std::mem::swap(&mut self.x, into);
            } else {
                for &c in &better {
                    let col = |p: CUdeviceptr| DevCols {
                        ptr: p + (c * n * sz::<T>()) as u64,
                        ld: n,
                    };
                    // SAFETY: column c of both, n elements.
                    unsafe { copy_cols::<T>(&self.stream, col(self.x), col(cand.ptr), n, 1)? };
                }
            }
        }
        self.stream.synchronize()?;
        PHASES.with(|p| {
            let mut v = p.get();
            v.refine_steps = steps;
            p.set(v);
        });
        Ok(judge(checks))
    }
}

fn check_options(o: &GpuOptions, n: usize, nrhs: usize) -> Result<(), DeviceError> {
    // The level kernels' dynamic shared memory stays under the 48 KiB a launch gets without
    // an opt-in.
    let shared = (5 * (o.m + 1) + 3) * o.threads as usize * 8;
    if ![8, 16, 32].contains(&o.m)
        || o.threads == 0
        || !o.threads.is_multiple_of(32)
        || o.threads > 128
        || shared > 48 << 10
    {
        return Err(DeviceError::Driver(format!(
            "bad GPU options m = {}, threads = {}",
            o.m, o.threads
        )));
    }
    if n >= (i64::MAX as usize) / 64 || nrhs > i32::MAX as usize {
        return Err(DeviceError::Driver("system too large".into()));
    }
    Ok(())
}

/// Solves on the GPU for host arrays. `Err`: the GPU could not run it (nothing changed);
/// `Ok(Err)`: SPIKE's answer was rejected (nothing changed); `Ok(Ok)`: `X` is in `b`.
///
/// A system whose device memory ([`bytes_needed`]) is above the budget (or
/// `o.memory_limit`) is solved in chunks ([`solve_chunked`]).
pub fn solve<T: Lapack>(
    o: &GpuOptions,
    dl: &[T],
    d: &[T],
    du: &[T],
    b: &mut [T],
    ldb: usize,
    nrhs: usize,
) -> Result<Result<(), Reject>, DeviceError> {
    let n = d.len();
    check_options(o, n, nrhs)?;
    let gpu = device::gpu()?;
    let limit = o
        .memory_limit
        .unwrap_or(u64::MAX)
        .min(gpu.budget.available());
    if bytes_needed::<T>(n, nrhs, o) <= limit {
        solve_whole(o, dl, d, du, b, ldb, nrhs, true)
    } else {
        solve_chunked(o, dl, d, du, b, ldb, nrhs, limit)
    }
}

/// [`solve`] in one piece.
///
/// With `keep_b`, `B` is saved while the GPU works and restored unless the whole answer
/// arrived, so a download that fails partway cannot leave it half-overwritten ([`SavedB`]);
/// without, `B` is scratch of the caller's (a chunk's right-hand sides).
#[allow(clippy::too_many_arguments)]
fn solve_whole<T: Real>(
    o: &GpuOptions,
    dl: &[T],
    d: &[T],
    du: &[T],
    b: &mut [T],
    ldb: usize,
    nrhs: usize,
    keep_b: bool,
) -> Result<Result<(), Reject>, DeviceError> {
    let n = d.len();
    check_options(o, n, nrhs)?;
    let gpu = device::gpu()?;
    let _memory = gpu.budget.reserve(bytes_needed::<T>(n, nrhs, o))?;
    gpu.ctx.bind_to_thread()?;
    let pooled = gpu.stream()?;
    let stream: Arc<CudaStream> = (*pooled).clone();
    let t0 = Instant::now();
    let mut staging = Staging::<T>::new(gpu, o.staging_elems.max(1024))?;
    // SAFETY (allocations): every element is written by an upload before it is read.
    let (dl_d, d_d, du_d, f_d) = unsafe {
        (
            stream.alloc::<T>(n.max(2) - 1)?,
            stream.alloc::<T>(n)?,
            stream.alloc::<T>(n.max(2) - 1)?,
            stream.alloc::<T>(n * nrhs)?,
        )
    };
    let a = DevMatrix {
        n,
        dl: addr(&dl_d, &stream),
        d: addr(&d_d, &stream),
        du: addr(&du_d, &stream),
    };
    let f = DevCols {
        ptr: addr(&f_d, &stream),
        ld: n,
    };
    staging.upload(&stream, &dl[..n - 1], a.dl)?;
    staging.upload(&stream, d, a.d)?;
    staging.upload(&stream, &du[..n - 1], a.du)?;
    if ldb == n {
        staging.upload(&stream, &b[..n * nrhs], f.ptr)?;
    } else {
        for col in 0..nrhs {
            let src = &b[col * ldb..col * ldb + n];
            staging.upload(&stream, src, f.ptr + (col * n * sz::<T>()) as u64)?;
        }
    }
    let t1 = Instant::now();
    let mut plan = Plan::<T>::new(gpu, stream.clone(), o, a, nrhs)?;
    // Save B while the GPU works.
    let (mut saved, mut plain) = (None, None);
    let verdict = plan.run(f, || {
        if keep_b {
            saved = Some(SavedB::new(b, ldb, n, nrhs))
        } else {
            plain = Some(b)
        }
    })?;
    let t2 = Instant::now();
    if let Err(r) = verdict {
        return Ok(Err(r));
    }
    let x = plan.x_cols();
    let mut download = |b: &mut [T]| -> Result<(), DeviceError> {
        if ldb == n {
            // The columns are contiguous: one stream of pieces, transfers overlapping copies.
            staging.download(&stream, x.ptr, &mut b[..n * nrhs])?;
        } else {
            for col in 0..nrhs {
                let dst = &mut b[col * ldb..col * ldb + n];
                staging.download(&stream, x.ptr + (col * n * sz::<T>()) as u64, dst)?;
            }
        }
        stream.synchronize()?;
        Ok(())
    };
    match saved.as_mut() {
        Some(s) => {
            download(s.b)?;
            s.committed = true;
        }
        None => download(plain.expect("set while the GPU worked"))?,
    }
    let t3 = Instant::now();
    PHASES.with(|p| {
        let mut v = p.get();
        v.upload = (t1 - t0).as_secs_f64();
        v.solve = (t2 - t1).as_secs_f64();
        v.download = (t3 - t2).as_secs_f64();
        v.chunks = 1;
        p.set(v);
    });
    Ok(Ok(()))
}

/// Rows per chunk for [`solve_chunked`]: the most whose solve (with `nrhs` + 2 columns: the
/// right-hand sides and the two spikes) fits in `limit` bytes.
pub fn chunk_rows<T>(n: usize, nrhs: usize, o: &GpuOptions, limit: u64) -> Option<usize> {
    let fits = |c: usize| bytes_needed::<T>(c, nrhs + 2, o) <= limit;
    if !fits(2) {
        return None;
    }
    let (mut lo, mut hi) = (2usize, n.max(2)); // fits(lo); the answer is in lo..=hi
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// SPIKE over chunks, for systems larger than the GPU memory allowed: the rows are cut into
/// chunks of `c` rows separated by single separator rows (the decomposition of the module
/// comment, with chunks for blocks). Each chunk is solved on the GPU (`solve_whole`, with its
/// own check and refinement) for its right-hand sides and its two spikes; the host then solves
/// the small separator system with LAPACK xGTSV, forms `X = Y − W x_L − V x_R`, checks the
/// residual of the whole system and refines it (each correction again over chunks), and writes
/// `B` only when the answer is accepted.
#[allow(clippy::too_many_arguments)]
pub fn solve_chunked<T: Lapack>(
    o: &GpuOptions,
    dl: &[T],
    d: &[T],
    du: &[T],
    b: &mut [T],
    ldb: usize,
    nrhs: usize,
    limit: u64,
) -> Result<Result<(), Reject>, DeviceError> {
    let n = d.len();
    let c = chunk_rows::<T>(n, nrhs, o, limit).ok_or(DeviceError::OutOfBudget {
        needed: bytes_needed::<T>(2, nrhs + 2, o),
        available: limit,
    })?;
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1);
    let chunks = (n - 1) / (c + 1) + 1;
    let mut x = vec![T::ZERO; n * nrhs];
    let t0 = Instant::now();
    let mut on_gpu = |dl: &[T], d: &[T], du: &[T], g: &mut [T], ld: usize, k: usize| {
        solve_whole(o, dl, d, du, g, ld, k, false)
    };
    // The chunks' solves record their own phases; this call's are set on every way out.
    let record = || {
        PHASES.with(|p| {
            p.set(Phases {
                solve: t0.elapsed().as_secs_f64(),
                chunks,
                ..Phases::default()
            })
        })
    };
    let first = chunked_pass(dl, d, du, b, ldb, nrhs, c, &mut x, threads, &mut on_gpu)?;
    if let Err(r) = first {
        record();
        return Ok(Err(r));
    }
    let all: Vec<usize> = (0..nrhs).collect();
    let mut checks = residual_cols(dl, d, du, &x, n, &all, b, ldb, &all, None, threads, false);
    refine(
        dl,
        d,
        du,
        &mut x,
        n,
        b,
        ldb,
        &mut checks,
        threads,
        |r: &mut [T], k: usize| {
            let mut delta = vec![T::ZERO; n * k];
            let solved = chunked_pass(dl, d, du, r, n, k, c, &mut delta, threads, &mut on_gpu)?;
            r.copy_from_slice(&delta);
            Ok::<bool, DeviceError>(solved.is_ok())
        },
    )?;
    record();
    if let Err(r) = judge(checks) {
        return Ok(Err(r));
    }
    for col in 0..nrhs {
        par_copy(&mut b[col * ldb..col * ldb + n], &x[col * n..(col + 1) * n]);
    }
    Ok(Ok(()))
}

/// The solver of one chunk: (dl, d, du, right-hand sides, their leading dimension, columns).
type ChunkSolver<'a, T> = dyn FnMut(&[T], &[T], &[T], &mut [T], usize, usize) -> Result<Result<(), Reject>, DeviceError>
    + 'a;

/// One solve over chunks of `c` rows (see [`solve_chunked`]): `x` (n × nrhs, leading dimension
/// n) receives the solution for `f` (leading dimension `ldf`), unchecked beyond the chunks' own
/// checks and the separator system's solvability. `solve_chunk` solves one chunk in place.
#[allow(clippy::too_many_arguments)]
fn chunked_pass<T: Lapack>(
    dl: &[T],
    d: &[T],
    du: &[T],
    f: &[T],
    ldf: usize,
    nrhs: usize,
    c: usize,
    x: &mut [T],
    threads: usize,
    solve_chunk: &mut ChunkSolver<'_, T>,
) -> Result<Result<(), Reject>, DeviceError> {
    let n = d.len();
    let m = c + 1; // a chunk and its separator
    let q = (n - 1) / m; // separators; chunk j is rows j m .. j m + c (the last: .. n)
    let (mut w, mut v) = (vec![T::ZERO; n], vec![T::ZERO; n]);
    let k = nrhs + 2;
    for j in 0..=q {
        let r0 = j * m;
        let r1 = if j < q { r0 + c } else { n };
        let rows = r1 - r0;
        // The chunk's right-hand sides, then its spikes: A_j⁻¹ (a e_1) and A_j⁻¹ (c e_last).
        let mut g = vec![T::ZERO; rows * k];
        for col in 0..nrhs {
            g[col * rows..(col + 1) * rows].copy_from_slice(&f[col * ldf + r0..col * ldf + r1]);
        }
        if j > 0 {
            g[nrhs * rows] = dl[r0 - 1];
        }
        if j < q {
            g[(nrhs + 1) * rows + rows - 1] = du[r1 - 1];
        }
        let tail = rows.saturating_sub(1);
        if let Err(r) = solve_chunk(
            &dl[r0..r0 + tail],
            &d[r0..r1],
            &du[r0..r0 + tail],
            &mut g,
            rows,
            k,
        )? {
            return Ok(Err(r));
        }
        for col in 0..nrhs {
            x[col * n + r0..col * n + r1].copy_from_slice(&g[col * rows..(col + 1) * rows]);
        }
        w[r0..r1].copy_from_slice(&g[nrhs * rows..(nrhs + 1) * rows]);
        v[r0..r1].copy_from_slice(&g[(nrhs + 1) * rows..]);
    }
    if q == 0 {
        return Ok(Ok(()));
    }
    // The separator system (see the module comment of `gtsv`): unknown j is x at s_j.
    let (mut rdl, mut rd, mut rdu) = (vec![T::ZERO; q - 1], vec![T::ZERO; q], vec![T::ZERO; q - 1]);
    let mut rf = vec![T::ZERO; q * nrhs];
    for j in 0..q {
        let s = (j + 1) * m - 1;
        let (top, bot) = (s + 1, s - 1); // first row of chunk j + 1, last row of chunk j
        let (a_s, c_s) = (dl[s - 1], du[s]);
        if j > 0 {
            rdl[j - 1] = -(a_s * w[bot]);
        }
        rd[j] = d[s] - a_s * v[bot] - c_s * w[top];
        if j + 1 < q {
            rdu[j] = -(c_s * v[top]);
        }
        for col in 0..nrhs {
            rf[j + col * q] = f[col * ldf + s] - a_s * x[col * n + bot] - c_s * x[col * n + top];
        }
    }
    if T::gtsv(&mut rdl, &mut rd, &mut rdu, &mut rf, q, nrhs) != 0 {
        return Ok(Err(Reject::ReducedSingular));
    }
    // X = Y − W x_L − V x_R on the chunk rows, x_s on the separators, in parallel over rows.
    let threads = threads.clamp(1, n);
    let bounds: Vec<usize> = (0..=threads).map(|t| t * n / threads).collect();
    let parts = split_rows(x, n, nrhs, &bounds);
    let (w, v, rf) = (&w, &v, &rf);
    std::thread::scope(|sc| {
        for (t, mut cols) in parts.into_iter().enumerate() {
            let row0 = bounds[t];
            sc.spawn(move || {
                for (col, xc) in cols.iter_mut().enumerate() {
                    let xs = |j: usize| rf[j + col * q];
                    for (e, xi) in xc.iter_mut().enumerate() {
                        let i = row0 + e;
                        let (j, off) = (i / m, i % m);
                        if off == c && j < q {
                            *xi = xs(j);
                        } else {
                            let left = if j > 0 { w[i] * xs(j - 1) } else { T::ZERO };
                            let right = if j < q { v[i] * xs(j) } else { T::ZERO };
                            *xi = *xi - left - right;
                        }
                    }
                }
            });
        }
    });
    Ok(Ok(()))
}

/// Solves `A X = B` for data already in device memory: `a` is read, `b` (n × nrhs at leading
/// dimension `b.ld`) is overwritten by `X` only if the answer is accepted. Work queued on
/// `after` (a stream of the caller's, in the process's primary context) before the call is
/// waited for; the call returns when `X` is in `b`.
pub fn solve_device<T: Real>(
    o: &GpuOptions,
    a: DevMatrix,
    b: DevCols,
    nrhs: usize,
    after: Option<cudarc::driver::sys::CUstream>,
) -> Result<Result<(), Reject>, DeviceError> {
    check_options(o, a.n, nrhs)?;
    let gpu = device::gpu()?;
    let _memory = gpu.budget.reserve(work_bytes::<T>(a.n, nrhs, o))?;
    gpu.ctx.bind_to_thread()?;
    let pooled = gpu.stream()?;
    let stream: Arc<CudaStream> = (*pooled).clone();
    if let Some(s) = after {
        // SAFETY: the caller's stream, live for the call (the C entry's contract).
        unsafe { device::wait_for_stream(&stream, s)? };
    }
    let mut plan = Plan::<T>::new(gpu, stream.clone(), o, a, nrhs)?;
    if let Err(r) = plan.run(b, || ())? {
        return Ok(Err(r));
    }
    // SAFETY: b and X both hold nrhs columns of n rows.
    unsafe { copy_cols::<T>(&stream, b, plan.x_cols(), a.n, nrhs)? };
    stream.synchronize()?;
    Ok(Ok(()))
}

/// Returns when the work queued so far on the caller's stream `s` is done.
///
/// # Safety
/// `s` is a live stream of the process's primary context for the whole call.
pub unsafe fn wait_for_caller(s: cudarc::driver::sys::CUstream) -> Result<(), DeviceError> {
    let gpu = device::gpu()?;
    gpu.ctx.bind_to_thread()?;
    let pooled = gpu.stream()?;
    // SAFETY: the caller's stream, live for the call (this function's contract).
    unsafe { device::wait_for_stream(&pooled, s)? };
    pooled.synchronize()?;
    Ok(())
}

/// Copies `len` elements of device memory at `src` to a new host vector.
pub fn download<T: Real>(src: CUdeviceptr, len: usize) -> Result<Vec<T>, DeviceError> {
    let gpu = device::gpu()?;
    gpu.ctx.bind_to_thread()?;
    let pooled = gpu.stream()?;
    let mut v = vec![T::ZERO; len];
    if len > 0 {
        // SAFETY: the caller's src holds len elements; the copy completes before return.
        unsafe { cu::memcpy_dtoh_async(&mut v[..], src, pooled.cu_stream())? };
    }
    pooled.synchronize()?;
    Ok(v)
}

/// Copies `src` to device memory at `dst` (which holds `src.len()` elements).
pub fn upload<T: Real>(src: &[T], dst: CUdeviceptr) -> Result<(), DeviceError> {
    let gpu = device::gpu()?;
    gpu.ctx.bind_to_thread()?;
    let pooled = gpu.stream()?;
    if !src.is_empty() {
        // SAFETY: the caller's dst holds src.len() elements; the copy completes before return.
        unsafe { cu::memcpy_htod_async(dst, src, pooled.cu_stream())? };
    }
    pooled.synchronize()?;
    Ok(())
}

/// Host memory for [`SavedB`], kept between calls: faulting in fresh pages costs several times
/// more than the copy itself (measured on an H100 host: about 30 ms for 64 MB).
static SAVE_POOL: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

/// Bytes of [`SAVE_POOL`] kept after a call; a larger buffer is freed.
const SAVE_POOL_BYTES: usize = 1 << 30;

/// The user's `B` (its first `n` rows of each column), saved before `X` is written into it:
/// restored on drop unless the answer was committed, so a download that fails partway (or a
/// panic) leaves `B` exactly as it came, for the CPU path or LAPACK to run on.
struct SavedB<'a, T: Copy> {
    b: &'a mut [T],
    ldb: usize,
    n: usize,
    nrhs: usize,
    /// Words of 8 bytes holding n × nrhs elements of T.
    saved: Vec<u64>,
    committed: bool,
}

impl<'a, T: Real> SavedB<'a, T> {
    fn new(b: &'a mut [T], ldb: usize, n: usize, nrhs: usize) -> Self {
        let mut saved = std::mem::take(&mut *SAVE_POOL.lock().unwrap_or_else(|p| p.into_inner()));
        saved.resize((n * nrhs * sz::<T>()).div_ceil(8), 0);
        let mut s = SavedB {
            b,
            ldb,
            n,
            nrhs,
            saved,
            committed: false,
        };
        // SAFETY: `saved` holds at least n × nrhs elements of T (f32 or f64: plain data,
        // alignment at most 8, any bit pattern valid).
        let packed =
            unsafe { std::slice::from_raw_parts_mut(s.saved.as_mut_ptr() as *mut T, n * nrhs) };
        for c in 0..nrhs {
            par_copy(&mut packed[c * n..(c + 1) * n], &s.b[c * ldb..c * ldb + n]);
        }
        s
    }
}

impl<T: Copy> Drop for SavedB<'_, T> {
    fn drop(&mut self) {
        let n = self.n;
        if !self.committed {
            // SAFETY: as in `new`.
            let saved = unsafe {
                std::slice::from_raw_parts(self.saved.as_ptr() as *const T, n * self.nrhs)
            };
            for (c, col) in saved.chunks(n.max(1)).enumerate() {
                self.b[c * self.ldb..c * self.ldb + n].copy_from_slice(col);
            }
        }
        let words = std::mem::take(&mut self.saved);
        if words.capacity() * 8 <= SAVE_POOL_BYTES {
            let mut pool = SAVE_POOL.lock().unwrap_or_else(|p| p.into_inner());
            if words.capacity() > pool.capacity() {
                *pool = words;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testmat::Rng;

    /// The chunk algebra (spikes, separator system, `X = Y − W x_L − V x_R`) with LAPACK as the
    /// chunk solver, against LAPACK on the whole system, at chunk boundaries.
    #[test]
    fn chunked_pass_matches_lapack() {
        let mut rng = Rng::new(crate::testmat::seed_from_time());
        let c = 37;
        for n in [
            2,
            3,
            c,
            c + 1,
            c + 2,
            2 * (c + 1),
            2 * (c + 1) + 1,
            3 * (c + 1) - 1,
            1000,
        ] {
            let a = crate::gtsv::matrices::diagonally_dominant(n, &mut rng);
            let nrhs = 2;
            let f: Vec<f64> = (0..n * nrhs).map(|_| rng.range(-1.0, 1.0)).collect();
            let mut x = vec![0.0; n * nrhs];
            let mut lapack =
                |dl: &[f64], d: &[f64], du: &[f64], g: &mut [f64], ld: usize, k: usize| {
                    let (mut dl, mut d, mut du) = (dl.to_vec(), d.to_vec(), du.to_vec());
                    Ok(if f64::gtsv(&mut dl, &mut d, &mut du, g, ld, k) == 0 {
                        Ok(())
                    } else {
                        Err(Reject::ZeroPivot)
                    })
                };
            chunked_pass(&a.dl, &a.d, &a.du, &f, n, nrhs, c, &mut x, 3, &mut lapack)
                .unwrap()
                .unwrap();
            let (mut dl, mut d, mut du, mut want) =
                (a.dl.clone(), a.d.clone(), a.du.clone(), f.clone());
            assert_eq!(f64::gtsv(&mut dl, &mut d, &mut du, &mut want, n, nrhs), 0);
            for i in 0..n * nrhs {
                assert!(
                    (x[i] - want[i]).abs() <= 1e-12 * (1.0 + want[i].abs()),
                    "n {n} i {i}: {} vs {}",
                    x[i],
                    want[i]
                );
            }
        }
    }
}
