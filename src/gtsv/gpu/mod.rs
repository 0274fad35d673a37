//! SPIKE on the GPU (`kernels/gtsv.cu`). The core works on device pointers ([`solve_device`],
//! data already on the GPU); [`solve`] is the LAPACK interface: it uploads host arrays (through
//! pinned staging buffers, or straight from the caller's page-locked arrays: `transfer.rs`),
//! runs the same core and downloads only an accepted answer (or, where the arrays move by DMA,
//! overlaps the transfers with the window solve, `B` saved first: `overlapped.rs`).
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
//!
//! Before all that, a large system tries the window solve (`plan/window.rs`): where the top
//! level's separator system is strongly diagonally dominant, each CTA solves its own stretch of
//! partitions with a halo of partitions on each side, the couplings beyond dropped, in one pass
//! over the matrix and no levels; a CTA that finds the halo too short gives way to the above.
//! It writes `X` into the right-hand sides in place, and puts them back when its answer is
//! rejected.

use super::{
    judge, refine, refine_steps, residual_cols, split_rows, Bands, Columns, RefineState, Reject,
    Residual,
};
use crate::device::memory::{par_copy, Pinned};
use crate::device::{self, kernels, DeviceError, Gpu};
use crate::host::workers::alongside;
use crate::lapack::Lapack;
use crate::real::Real;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{
    result as cu, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

pub mod batch;
mod chunked;
mod overlapped;
mod plan;
mod streamed;
mod transfer;

/// Host memory of `len` elements of T, or the rejection that sends the call to LAPACK xGTSV
/// on the caller's arrays (issue #23: never an abort).
fn host<T: Real>(len: usize) -> Result<Vec<T>, Reject> {
    super::try_vec(len, T::ZERO).ok_or(Reject::NoHostMemory(len.saturating_mul(sz::<T>())))
}

pub use chunked::{chunk_rows, solve_chunked};
use plan::*;
pub use streamed::{slice_partitions, solve_streamed, streamed_bytes};
use transfer::{HostIo, HostSystem};

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
    /// Partitions of halo on each side of a CTA of the one-pass window solve (`gtsv_window`,
    /// `HYLAPACK_GTSV_WINDOW`), tried first for systems of at least `window_min_n` rows with
    /// `m` = 8; 0: never. On an H200 (2026-11-27) it took diagonally dominant systems from
    /// 86 to 58 us at 2^16 rows and from 493 to 301 us at 2^23; where it gives way (random
    /// systems) the attempt cost about 30 us, hence no attempt below 2^16 rows.
    pub window_halo: usize,
    pub window_min_n: usize,
    /// Elements per pinned staging buffer (two are used, alternately).
    pub staging_elems: usize,
    /// Device bytes one call may use, below the budget (`HYLAPACK_GPU_MEMORY_LIMIT` or what is
    /// free); a system that needs more is streamed or chunked ([`solve`]). `None`: the budget.
    pub memory_limit: Option<u64>,
    /// How host arrays travel in an in-core solve (and in each chunk of a chunked one):
    /// `HYLAPACK_GTSV_HOST_TRANSFER` and its thresholds by default. The streamed solve's
    /// slices always go through the pageable path's staging buffers.
    pub transfer: crate::config::GtsvTransfer,
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
            window_halo: crate::config::get().gtsv_window,
            window_min_n: 1 << 16,
            staging_elems: 1 << 22,
            memory_limit: None,
            transfer: crate::config::get().gtsv_transfer,
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
    /// Whether the one-pass window solve gave the answer.
    pub window: bool,
    /// Chunks of the last solve (1 unless it was above the memory limit).
    pub chunks: usize,
    /// How the last in-core solve (or chunk) moved its host arrays (`None`: streamed): a
    /// `GtsvHostTransfer`'s name, or `locked` (arrays the caller page-locked, by DMA).
    pub transfer: Option<&'static str>,
    /// Whether the transfers overlapped the window solve (`overlapped.rs`): `upload` then
    /// holds the windows and the downloads that ran alongside it, `solve` the verdict, and
    /// `download` what was left (the full recursion's solve and download where the windows'
    /// answer was rejected).
    pub overlapped: bool,
}

thread_local! {
    static PHASES: Cell<Phases> = Cell::new(Phases::default());
}

/// The phases of this thread's last host-pointer GPU solve.
pub fn last_phases() -> Phases {
    PHASES.with(|p| p.get())
}

impl GpuOptions {
    /// Whether a system of `n` rows may be answered by the window solve under these options
    /// (the plan decides: `Plan::windows`).
    fn window_may_run(&self, n: usize) -> bool {
        self.m == 8 && self.window_halo > 0 && n >= self.window_min_n
    }
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
        return Err(DeviceError::Unsupported(format!(
            "unsupported GPU options m = {}, threads = {}",
            o.m, o.threads
        )));
    }
    if n >= (i64::MAX as usize) / 64 || nrhs > i32::MAX as usize {
        return Err(DeviceError::Unsupported(format!(
            "a system of n = {n}, nrhs = {nrhs}"
        )));
    }
    Ok(())
}

/// What one GPU solve holds for its whole call, taken after its options are checked: its
/// reservation of `bytes` from the budget and a pooled stream, with the context bound to this
/// thread. (Fields drop in order: the stream goes back to the pool before the reservation ends.)
struct Call {
    stream: Arc<CudaStream>,
    _pooled: device::PooledStream,
    gpu: &'static Gpu,
    _memory: crate::device::memory::Reservation<'static>,
}

impl Call {
    fn begin(o: &GpuOptions, n: usize, nrhs: usize, bytes: u64) -> Result<Self, DeviceError> {
        check_options(o, n, nrhs)?;
        let gpu = device::gpu()?;
        let memory = gpu.budget.reserve(bytes)?;
        gpu.ctx.bind_to_thread()?;
        let pooled = gpu.stream()?;
        Ok(Call {
            stream: (*pooled).clone(),
            _pooled: pooled,
            gpu,
            _memory: memory,
        })
    }
}

/// Solves on the GPU for host arrays. `Err`: the GPU could not run it (nothing changed);
/// `Ok(Err)`: SPIKE's answer was rejected (nothing changed); `Ok(Ok)`: `X` is in `b`.
///
/// A system whose device memory ([`bytes_needed`]) is above the budget (or
/// `o.memory_limit`) streams its top level through the GPU ([`solve_streamed`]) where the
/// levels below fit, else is solved in chunks ([`solve_chunked`]).
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
    } else if let Some(own) = slice_partitions::<T>(n, nrhs, o, limit) {
        solve_streamed(o, dl, d, du, b, ldb, nrhs, own)
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
    let call = Call::begin(o, n, nrhs, bytes_needed::<T>(n, nrhs, o))?;
    let (gpu, stream) = (call.gpu, call.stream.clone());
    let t0 = Instant::now();
    let host = HostSystem {
        dl,
        d,
        du,
        b: &*b,
        ldb,
        nrhs,
    };
    // Declared before the device buffers: a page-locked caller's array is unlocked only after
    // their drops are queued, once the stream is idle.
    let mut io = HostIo::open(gpu, &stream, &o.transfer, o.staging_elems, &host)?;
    let opened = Instant::now();
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
    // Arrays that move by DMA and a system the window solve may answer: the transfers overlap
    // the solve.
    if keep_b && matches!(io, HostIo::Direct { .. }) && o.window_may_run(n) {
        let m = Bands { dl, d, du };
        return overlapped::solve_overlapped(gpu, &stream, o, &mut io, m, b, ldb, nrhs, a, f);
    }
    // B is saved (when kept) on another thread while the upload runs: both only read it, and
    // the upload is bound by the bus, the copy by host memory.
    let words = if keep_b {
        match SavedB::<T>::reserve(n, nrhs) {
            Ok(words) => Some(words),
            Err(r) => return Ok(Err(r)),
        }
    } else {
        None
    };
    let (words, uploaded) = alongside(
        || words.map(|w| SavedB::copy(host.b, ldb, n, nrhs, w)),
        || io.upload(&stream, &host, a, f),
    );
    uploaded?;
    let t1 = Instant::now();
    let mut plan = Plan::<T>::new(gpu, stream.clone(), o, a, nrhs)?;
    let planned = Instant::now();
    let (mut saved, mut plain) = (None, None);
    let verdict = plan.run(f, || match words {
        Some(words) => saved = Some(SavedB::new(b, ldb, n, nrhs, words)),
        None => plain = Some(b),
    })?;
    let t2 = Instant::now();
    let x = match verdict {
        Ok(x) => x,
        Err(r) => return Ok(Err(r)),
    };
    match saved.as_mut() {
        Some(s) => {
            io.download(&stream, x, s.b, ldb, n, nrhs)?;
            s.committed = true;
        }
        None => {
            let b = plain.expect("set while the GPU worked");
            io.download(&stream, x, b, ldb, n, nrhs)?;
        }
    }
    let t3 = Instant::now();
    // "upload" holds the device allocations and B's copy too; "opened" the page-locking.
    let ms = |from: Instant, to: Instant| (to - from).as_secs_f64() * 1e3;
    crate::dispatch::debug(|| {
        format!(
            "gtsv gpu: n={n} {}: opened {:.3} ms, upload {:.3} ms, plan {:.3} ms, solve {:.3} ms, \
             download {:.3} ms",
            io.mode(),
            ms(t0, opened),
            ms(opened, t1),
            ms(t1, planned),
            ms(planned, t2),
            ms(t2, t3)
        )
    });
    PHASES.with(|p| {
        let mut v = p.get();
        v.upload = (t1 - t0).as_secs_f64();
        v.solve = (t2 - t1).as_secs_f64();
        v.download = (t3 - t2).as_secs_f64();
        v.chunks = 1;
        v.transfer = Some(io.mode());
        v.overlapped = false;
        p.set(v);
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
    let t0 = Instant::now();
    let call = Call::begin(o, a.n, nrhs, work_bytes::<T>(a.n, nrhs, o))?;
    let (gpu, stream) = (call.gpu, call.stream.clone());
    if let Some(s) = after {
        // SAFETY: the caller's stream, live for the call (the C entry's contract).
        unsafe { device::wait_for_stream(&stream, s)? };
    }
    let begun = Instant::now();
    let mut plan = Plan::<T>::new(gpu, stream.clone(), o, a, nrhs)?;
    let t1 = Instant::now();
    let x = match plan.run(b, || ())? {
        Ok(x) => x,
        Err(r) => return Ok(Err(r)),
    };
    let t2 = Instant::now();
    if x.ptr != b.ptr {
        // SAFETY: b and X both hold nrhs columns of n rows.
        unsafe { copy_cols::<T>(&stream, b, x, a.n, nrhs)? };
    }
    stream.synchronize()?;
    let us = |from: Instant, to: Instant| (to - from).as_secs_f64() * 1e6;
    crate::dispatch::debug(|| {
        let p = last_phases();
        format!(
            "gtsv device: n={} nrhs={nrhs}: opened {:.1} us (plan {:.1}), solved {:.1} us ({}), X into B {:.1} us",
            a.n,
            us(t0, t1),
            us(begun, t1),
            us(t1, t2),
            if p.window { "window".to_string() } else { format!("{} refine", p.refine_steps) },
            us(t2, Instant::now())
        )
    });
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

/// Copies `dst.len()` elements of device memory at `src` into `dst` (host memory the caller
/// allocated, fallibly where its size depends on the problem).
pub fn download_into<T: Real>(src: CUdeviceptr, dst: &mut [T]) -> Result<(), DeviceError> {
    let gpu = device::gpu()?;
    gpu.ctx.bind_to_thread()?;
    let pooled = gpu.stream()?;
    if !dst.is_empty() {
        // SAFETY: the caller's src holds dst.len() elements; the copy completes before return.
        unsafe { cu::memcpy_dtoh_async(dst, src, pooled.cu_stream())? };
    }
    pooled.synchronize()?;
    Ok(())
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
    /// Words of 8 bytes holding n × nrhs elements of T (column c's rows from c · n).
    saved: Vec<u64>,
    /// Rows of each column saved so far (from the first): only these may be written.
    rows: usize,
    committed: bool,
}

/// Rows `rows` of B's `nrhs` columns (leading dimension `ldb`) into `saved`, which packs
/// columns of `n` rows.
fn save_rows<T: Real>(
    saved: &mut [u64],
    b: &[T],
    ldb: usize,
    n: usize,
    nrhs: usize,
    rows: std::ops::Range<usize>,
) {
    assert!(saved.len() * 8 >= n * nrhs * sz::<T>(), "saved B too small");
    // SAFETY: `saved` holds at least n × nrhs elements of T (f32 or f64: plain data, alignment
    // at most 8, any bit pattern valid).
    let packed = unsafe { std::slice::from_raw_parts_mut(saved.as_mut_ptr() as *mut T, n * nrhs) };
    for c in 0..nrhs {
        par_copy(
            &mut packed[c * n + rows.start..c * n + rows.end],
            &b[c * ldb + rows.start..c * ldb + rows.end],
        );
    }
}

impl<'a, T: Real> SavedB<'a, T> {
    /// The words that will hold `n × nrhs` elements (from the pool when it has them), or
    /// [`Reject::NoHostMemory`] when they cannot be allocated.
    fn reserve(n: usize, nrhs: usize) -> Result<Vec<u64>, Reject> {
        let words = n.saturating_mul(nrhs).saturating_mul(sz::<T>()).div_ceil(8);
        let mut saved = std::mem::take(&mut *SAVE_POOL.lock().unwrap_or_else(|p| p.into_inner()));
        // Every word is overwritten before it is read: only words the pool lacks are zeroed,
        // not the whole buffer on every call (64 MB at n = 2^23).
        saved.truncate(words);
        saved
            .try_reserve_exact(words - saved.len())
            .map_err(|_| Reject::NoHostMemory(words.saturating_mul(8)))?;
        saved.resize(words, 0);
        Ok(saved)
    }

    /// Copies the first `n` rows of B's columns into `saved` (from [`Self::reserve`] with the
    /// same `n` and `nrhs`).
    fn copy(b: &[T], ldb: usize, n: usize, nrhs: usize, mut saved: Vec<u64>) -> Vec<u64> {
        save_rows(&mut saved, b, ldb, n, nrhs, 0..n);
        saved
    }

    /// Guards `b`, whose rows `saved` holds (from [`Self::copy`] of the same `b`, which must
    /// not have changed since).
    fn new(b: &'a mut [T], ldb: usize, n: usize, nrhs: usize, saved: Vec<u64>) -> Self {
        SavedB {
            b,
            ldb,
            n,
            nrhs,
            saved,
            rows: n,
            committed: false,
        }
    }

    /// Guards `b` with none of its rows saved yet (`rows` is raised as they are); `saved` from
    /// [`Self::reserve`].
    fn empty(b: &'a mut [T], ldb: usize, n: usize, nrhs: usize, saved: Vec<u64>) -> Self {
        let mut s = Self::new(b, ldb, n, nrhs, saved);
        s.rows = 0;
        s
    }
}

impl<T: Copy> Drop for SavedB<'_, T> {
    fn drop(&mut self) {
        let (n, rows) = (self.n, self.rows);
        if !self.committed {
            // SAFETY: as in `save_rows`.
            let saved = unsafe {
                std::slice::from_raw_parts(self.saved.as_ptr() as *const T, n * self.nrhs)
            };
            for (c, col) in saved.chunks(n.max(1)).enumerate() {
                self.b[c * self.ldb..c * self.ldb + rows].copy_from_slice(&col[..rows]);
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
    use super::chunked::chunked_pass;
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
            let bands = Bands {
                dl: &a.dl,
                d: &a.d,
                du: &a.du,
            };
            chunked_pass(bands, Columns::all(&f, n), nrhs, c, &mut x, 3, &mut lapack)
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
