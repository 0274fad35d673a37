//! The small systems of a strided batch (`kernels/gtsv_batch.cu`), one warp per system in
//! shared memory: each system is read and its X written once. Systems of up to 512 rows are
//! solved by SPIKE with a partition per lane, refined and accepted by the large solver's
//! residual levels ([`Levels`]); the others, and larger systems, by LAPACK xGTSV's partial
//! pivoting, whose answer has LAPACK's accuracy without a check. A system with an exactly zero
//! pivot (INFO > 0) is left to LAPACK. Systems too large for a CTA's shared memory are stacked
//! into one SPIKE solve instead (`crate::gtsv::gtsv_strided_batch`).

use super::transfer::{staged_download, staged_upload, STAGED_PIECE_BYTES};
use super::{sz, Call, GpuOptions, Work};
use crate::device::memory::Pinned;
use crate::device::{kernels, DeviceError, Gpu};
use crate::host::workers::{or_resume, run_parts};
use crate::real::Real;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{result as cu, CudaStream, DevicePtr, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// Shared memory a launch gets without an opt-in.
const SHARED_BYTES: usize = 48 << 10;

/// Systems (warps) per CTA, at most.
const MOST_WARPS: usize = 4;

/// Shared-memory bytes of one system for partial pivoting: D, DU, the second superdiagonal
/// and the multipliers, B's columns (`(4 + nrhs) n` elements), and an interchange flag per row;
/// 16-byte aligned.
fn pivoting_bytes<T>(n: usize, nrhs: usize) -> Option<usize> {
    let elems = nrhs.checked_add(4)?.checked_mul(n)?;
    let bytes = elems.checked_mul(sz::<T>())?.checked_add(n)?;
    bytes.checked_next_multiple_of(16)
}

/// Shared-memory bytes of one system for SPIKE with partitions of `m` rows: A's three
/// diagonals and B's columns padded to `32 (m + 1)` rows, then the 32 separators' system in
/// [`pivoting_bytes`]' layout.
fn spike_bytes<T>(m: usize, nrhs: usize) -> Option<usize> {
    let rows = 32 * (m + 1);
    let elems = nrhs.checked_add(3)?.checked_mul(rows)?;
    elems
        .checked_mul(sz::<T>())?
        .checked_add(pivoting_bytes::<T>(32, 1)?)?
        .checked_next_multiple_of(16)
}

/// How the kernel solves a batch's systems.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    /// SPIKE with partitions of this many rows, then partial pivoting where it is refused.
    Spike(usize),
    /// Partial pivoting alone.
    Pivoting,
}

/// Partition sizes of SPIKE's kernels (`gtsv_batch_spike_*_m{8,16}`).
const SPIKE_M: [usize; 2] = [8, 16];

/// The kernel's method for systems of order `n` with `nrhs` right-hand sides, and the
/// shared-memory bytes of one system; none where one system does not fit in a CTA's shared
/// memory.
fn method<T>(n: usize, nrhs: usize) -> Option<(Method, usize)> {
    let pivoting =
        pivoting_bytes::<T>(n, nrhs).filter(|&b| n >= 1 && nrhs >= 1 && b <= SHARED_BYTES)?;
    let spike = SPIKE_M.into_iter().find(|&m| n <= 32 * m).and_then(|m| {
        let bytes = spike_bytes::<T>(m, nrhs)?.max(pivoting);
        (bytes <= SHARED_BYTES).then_some((Method::Spike(m), bytes))
    });
    Some(spike.unwrap_or((Method::Pivoting, pivoting)))
}

/// Whether a batch of systems of order `n` with `nrhs` right-hand sides goes to the kernel:
/// one system fits in a CTA's shared memory (in double precision with one right-hand side, up
/// to 1198 rows). On the GPU alone the stacked SPIKE solve is faster only for the sizes the
/// kernel solves by partial pivoting alone, above 512 rows (an H200, 4096 random systems of
/// 1024 rows: 0.50 ms against 1.7 ms); through host pointers, the batch's interface, the
/// kernel's path is faster at every such size (16.3 ms against 43.4 ms at n = 512 before
/// SPIKE came to the kernel): the stacked path's stacking and judging on the host cost more
/// than the GPU's solve.
pub fn fits<T>(n: usize, nrhs: usize) -> bool {
    method::<T>(n, nrhs).is_some()
}

/// Whether the kernel solves systems of order `n` by SPIKE (up to 512 rows), not by partial
/// pivoting alone: for a batch already on the GPU, where the stacked SPIKE solve is faster
/// beyond (an H200, 4096 diagonally dominant systems of 1024 rows: 0.17 ms stacked with the
/// window solve, 1.8 ms by pivoting).
pub fn spikes<T>(n: usize, nrhs: usize) -> bool {
    matches!(method::<T>(n, nrhs), Some((Method::Spike(_), _)))
}

/// A strided batch in device memory, laid out as [`crate::gtsv::gtsv_strided_batch`] takes it:
/// system `k` is `dl[k·sa ..]` (n − 1), `d[k·sa ..]` (n), `du[k·sa ..]` (n − 1) and B's columns
/// at `b[k·sb ..]` (leading dimension `ldb`).
#[derive(Clone, Copy, Debug)]
pub struct DevBatch {
    pub n: usize,
    pub nrhs: usize,
    pub count: usize,
    pub dl: CUdeviceptr,
    pub d: CUdeviceptr,
    pub du: CUdeviceptr,
    pub sa: usize,
    pub b: CUdeviceptr,
    pub ldb: usize,
    pub sb: usize,
}

/// A strided batch in host memory (the caller's arrays), laid out as [`DevBatch`]; B, which
/// a solve writes, travels apart.
#[derive(Clone, Copy, Debug)]
pub struct HostBatch<'a, T> {
    pub n: usize,
    pub nrhs: usize,
    pub count: usize,
    pub dl: &'a [T],
    pub d: &'a [T],
    pub du: &'a [T],
    pub sa: usize,
    pub ldb: usize,
    pub sb: usize,
}

/// Where a launch writes X: system `k` at `ptr + k·stride` elements, leading dimension `ld`.
#[derive(Clone, Copy, Debug)]
pub struct XOut {
    pub ptr: CUdeviceptr,
    pub ld: usize,
    pub stride: usize,
}

impl XOut {
    /// Packed: system `k` at `k·n·nrhs`, leading dimension `n`.
    pub fn packed(ptr: CUdeviceptr, n: usize, nrhs: usize) -> Self {
        XOut {
            ptr,
            ld: n,
            stride: n * nrhs,
        }
    }

    /// Into the batch's own B (a warp reads all of its system's B before it writes X).
    pub fn in_place(a: &DevBatch) -> Self {
        XOut {
            ptr: a.b,
            ld: a.ldb,
            stride: a.sb,
        }
    }
}

/// Queues the kernel on `stream` (partial pivoting alone unless `spike`): X into `x` for every
/// system whose INFO, written to `info[k]`, is 0 (the others' X is not written); with `spike`,
/// `info[count + k]` is set to 1 where SPIKE left system `k` to partial pivoting, else 0.
///
/// # Safety
/// The batch's arrays hold what its layout says; `x` holds every system's X (or is B itself,
/// [`XOut::in_place`]) and `info` `2 · count` i32s; all stay allocated until the stream has
/// run the kernel.
pub unsafe fn launch<T: Real>(
    gpu: &Gpu,
    stream: &CudaStream,
    a: &DevBatch,
    x: XOut,
    info: CUdeviceptr,
    spike: bool,
) -> Result<(), DeviceError> {
    let (method, bytes) = method::<T>(a.n, a.nrhs)
        .map(|(m, bytes)| match m {
            Method::Spike(_) if !spike => (Method::Pivoting, bytes),
            _ => (m, bytes),
        })
        .ok_or_else(|| {
            DeviceError::Unsupported(format!("batched systems of n = {}, nrhs = {}", a.n, a.nrhs))
        })?;
    let warps = (SHARED_BYTES / bytes).clamp(1, MOST_WARPS);
    let blocks = u32::try_from(a.count.div_ceil(warps))
        .map_err(|_| DeviceError::Unsupported(format!("a batch of {} systems", a.count)))?;
    let name = match method {
        Method::Spike(m) => format!("gtsv_batch_spike_{}_m{m}", T::PREFIX),
        Method::Pivoting => format!("gtsv_batch_{}", T::PREFIX),
    };
    let module = format!("gtsv_batch_{}", T::PREFIX);
    let f = gpu.function(kernels::module_named(&kernels::GTSV_BATCH, &module)?, &name)?;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (32 * warps as u32, 1, 1),
        shared_mem_bytes: (warps * bytes) as u32,
    };
    let (n, nrhs) = (a.n as i32, a.nrhs as i32);
    let (count, sa, ldb, sb) = (a.count as i64, a.sa as i64, a.ldb as i64, a.sb as i64);
    let per = bytes as i64;
    let (ldx, sx) = (x.ld as i64, x.stride as i64);
    let levels = Levels::<T>::new();
    let refused = info + 4 * a.count as CUdeviceptr;
    let mut l = stream.launch_builder(&f);
    l.arg(&n)
        .arg(&nrhs)
        .arg(&count)
        .arg(&a.dl)
        .arg(&a.d)
        .arg(&a.du)
        .arg(&sa)
        .arg(&a.b)
        .arg(&ldb)
        .arg(&sb)
        .arg(&x.ptr)
        .arg(&ldx)
        .arg(&sx)
        .arg(&info)
        .arg(&per);
    if let Method::Spike(_) = method {
        l.arg(&levels).arg(&refused);
    }
    // SAFETY: the arguments match the kernel's signature (gtsv_batch_*, or gtsv_batch_spike_*
    // with the two more); the arrays are valid (this function's contract).
    unsafe { l.launch(cfg) }?;
    Ok(())
}

/// The SPIKE kernel's residual levels (`Levels` in `kernels/gtsv_batch.cu`): the large
/// solver's, so that a batch's system is refined and accepted as a single system would be
/// ([`crate::gtsv::wants_refinement`], [`crate::gtsv::judge`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Levels<T> {
    refine_s: T,
    refine_b: T,
    accept_s: T,
    accept_b: T,
    steps: i32,
}

impl<T: Real> Levels<T> {
    fn new() -> Self {
        use crate::gtsv::{accept_levels, REFINE_B_EPS, REFINE_TOL_EPS};
        let (accept_s, accept_b) = accept_levels::<T>();
        Levels {
            refine_s: T::from_f64(REFINE_TOL_EPS) * T::EPS,
            refine_b: T::from_f64(REFINE_B_EPS) * T::EPS,
            accept_s,
            accept_b,
            steps: crate::gtsv::refine_steps().min(8) as i32,
        }
    }
}

// SAFETY: four reals and an int in C's layout, as the kernel's struct.
unsafe impl<T: Real> cudarc::driver::DeviceRepr for Levels<T> {}

/// Elements of a strided array whose last piece holds `len`: `(count − 1) · stride + len`, or
/// none where `len` is 0 (DL and DU of systems of order 1 may be empty).
fn span(count: usize, stride: usize, len: usize) -> usize {
    if len == 0 {
        0
    } else {
        (count - 1) * stride + len
    }
}

/// What [`solve`] did: every system's INFO, and how many systems SPIKE left to partial
/// pivoting.
#[derive(Clone, Debug)]
pub struct Solved {
    pub info: Vec<i32>,
    pub pivoted: usize,
}

impl Solved {
    /// From a launch's `2 · count` INFOs ([`launch`]).
    pub fn from_infos(raw: &[i32], count: usize, spike: bool) -> Result<Self, DeviceError> {
        let mut info = crate::host::try_vec(count, 0i32)
            .ok_or(DeviceError::HostMemory { bytes: count * 4 })?;
        info.copy_from_slice(&raw[..count]);
        let pivoted = if spike {
            raw[count..2 * count].iter().filter(|&&r| r != 0).count()
        } else {
            0
        };
        Ok(Solved { info, pivoted })
    }
}

/// A launch's INFOs in page-locked host memory that the kernel writes over the bus: no device
/// buffer to take, no zeroing and no copy back, each of which cost as much as a small batch's
/// solve.
struct Infos {
    buf: Pinned<i32>,
    count: usize,
    ptr: CUdeviceptr,
}

impl Infos {
    fn new(gpu: &'static Gpu, count: usize) -> Result<Self, DeviceError> {
        let mut buf = gpu.pinned::<i32>(2 * count)?;
        let ptr = buf.device_ptr()?;
        Ok(Infos { buf, count, ptr })
    }

    /// Marks the buffer in use by the kernel just queued on `stream`.
    fn launched(&mut self, stream: &CudaStream) -> Result<(), DeviceError> {
        self.buf.mark(stream)
    }

    /// What the kernel wrote (waits for it).
    fn read(mut self, spike: bool) -> Result<Solved, DeviceError> {
        Solved::from_infos(self.buf.as_slice()?, self.count, spike)
    }
}

/// Solves `count` systems of order `n` ([`fits`]) on the GPU for host arrays: uploads the
/// caller's arrays as they lie, runs the kernel, and writes X into B for every system whose
/// INFO is 0. A system with INFO > 0 has its B untouched (the caller then solves it with
/// LAPACK, which ends it as LAPACK does). `Err`: the GPU could not run it, and nothing changed.
pub fn solve<T: Real>(
    o: &GpuOptions,
    sys: &HostBatch<'_, T>,
    b: &mut [T],
) -> Result<Solved, DeviceError> {
    let HostBatch {
        n,
        nrhs,
        count,
        dl,
        d,
        du,
        sa,
        ldb,
        sb,
    } = *sys;
    assert!(n >= 1 && nrhs >= 1 && count >= 1 && sa >= n && ldb >= n && sb >= ldb * nrhs);
    let (la, ld, lb) = (
        span(count, sa, n - 1),
        span(count, sa, n),
        ldb * (nrhs - 1) + n,
    );
    let lb = span(count, sb, lb);
    let lx = count * n * nrhs;
    let bytes = ((2 * la + ld + lb + lx) * sz::<T>()) as u64;
    if let Some(limit) = o.memory_limit.filter(|&l| bytes > l) {
        return Err(DeviceError::Unsupported(format!(
            "the batch needs {bytes} bytes of device memory, above the limit of {limit}"
        )));
    }
    let call = Call::begin(o, n, nrhs, bytes)?;
    let (gpu, stream) = (call.gpu, call.stream.clone());
    // SAFETY (allocations): the uploads fill the inputs, and X is read back only for systems
    // whose INFO is 0, which the kernel wrote.
    let (dl_d, d_d, du_d, b_d, x_d) = unsafe {
        (
            stream.alloc::<T>(la.max(1))?,
            stream.alloc::<T>(ld)?,
            stream.alloc::<T>(la.max(1))?,
            stream.alloc::<T>(lb)?,
            stream.alloc::<T>(lx)?,
        )
    };
    let batch = DevBatch {
        n,
        nrhs,
        count,
        dl: dl_d.device_ptr(&stream).0,
        d: d_d.device_ptr(&stream).0,
        du: du_d.device_ptr(&stream).0,
        sa,
        b: b_d.device_ptr(&stream).0,
        ldb,
        sb,
    };
    let parts = vec![
        (&dl[..la], batch.dl),
        (&d[..ld], batch.d),
        (&du[..la], batch.du),
        (&b[..lb], batch.b),
    ];
    let piece = (STAGED_PIECE_BYTES / sz::<T>()).max(1);
    staged_upload(gpu, &stream, parts, piece)?;
    let x = x_d.device_ptr(&stream).0;
    let mut infos = Infos::new(gpu, count)?;
    // SAFETY: the buffers above hold the batch's layout, X and the INFOs, and live until the
    // stream is synchronized (`infos.read`, the download).
    unsafe {
        launch::<T>(
            gpu,
            &stream,
            &batch,
            XOut::packed(x, n, nrhs),
            infos.ptr,
            true,
        )?
    };
    infos.launched(&stream)?;
    let solved = infos.read(true)?;
    let no_memory = |what: &str| DeviceError::Unsupported(format!("no host memory for {what}"));
    let mut xs = crate::host::try_vec(lx, T::ZERO).ok_or_else(|| no_memory("X"))?;
    staged_download(gpu, &stream, vec![(x, &mut xs[..])], piece)?;
    scatter(&xs, &solved.info, b, n, nrhs, ldb, sb);
    Ok(solved)
}

/// Copies each system's packed X (`n · nrhs` elements) into its B columns, on host threads,
/// for the systems whose INFO is 0.
fn scatter<T: Real>(
    xs: &[T],
    info: &[i32],
    b: &mut [T],
    n: usize,
    nrhs: usize,
    ldb: usize,
    sb: usize,
) {
    let count = info.len();
    let threads = crate::device::memory::copy_threads(std::mem::size_of_val(xs));
    let per = count.div_ceil(threads).max(1);
    // Each part: its first system and the B it owns (whole strides; the last may be short).
    let mut parts = Vec::new();
    let mut rest = b;
    let mut k0 = 0;
    while k0 < count {
        let k1 = (k0 + per).min(count);
        let take = ((k1 - k0) * sb).min(rest.len());
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(take);
        parts.push((k0, k1, head));
        rest = tail;
        k0 = k1;
    }
    let copy = |(k0, k1, part): (usize, usize, &mut [T])| {
        for k in k0..k1 {
            if info[k] != 0 {
                continue;
            }
            let x = &xs[k * n * nrhs..(k + 1) * n * nrhs];
            let bk = &mut part[(k - k0) * sb..];
            for c in 0..nrhs {
                bk[c * ldb..c * ldb + n].copy_from_slice(&x[c * n..(c + 1) * n]);
            }
        }
    };
    or_resume(run_parts(parts, &copy));
}

/// Solves a batch already in device memory (the benchmark's rows): X into `x`, INFO into
/// `info` (`2 · count` i32s: see [`launch`], which `spike` is passed to); returns once both
/// are there.
///
/// # Safety
/// As for [`launch`]; the arrays are in the device's primary context.
pub unsafe fn solve_device<T: Real>(
    a: &DevBatch,
    x: XOut,
    info: CUdeviceptr,
    spike: bool,
) -> Result<(), DeviceError> {
    let gpu = crate::device::gpu()?;
    gpu.ctx.bind_to_thread()?;
    let pooled = gpu.stream()?;
    let stream: Arc<CudaStream> = (*pooled).clone();
    // SAFETY: this function's contract.
    unsafe { launch::<T>(gpu, &stream, a, x, info, spike)? };
    stream.synchronize()?;
    Ok(())
}

/// Solves a batch ([`fits`]) already in device memory in place: X into B for every system
/// whose INFO is 0, the others' B untouched. Work queued on `after` (a stream of the caller's,
/// in the process's primary context; null for the legacy default stream) before the call is
/// waited for; returns once X is in B.
///
/// # Safety
/// The batch's arrays are device memory of the primary context holding what its layout says,
/// and nothing else touches them during the call; `after` is live for the call.
pub unsafe fn solve_in_place<T: Real>(
    o: &GpuOptions,
    a: &DevBatch,
    after: Option<cudarc::driver::sys::CUstream>,
) -> Result<Solved, DeviceError> {
    assert!(a.n >= 1 && a.nrhs >= 1 && a.count >= 1);
    let call = Call::begin(o, a.n, a.nrhs, 0)?;
    let (gpu, stream) = (call.gpu, call.stream.clone());
    if let Some(s) = after {
        // SAFETY: the caller's stream, live for the call (this function's contract).
        unsafe { crate::device::wait_for_stream(&stream, s)? };
    }
    let mut infos = Infos::new(gpu, a.count)?;
    // SAFETY: the batch's arrays (this function's contract) and the INFOs, which live until
    // the stream is synchronized (`infos.read`).
    unsafe { launch::<T>(gpu, &stream, a, XOut::in_place(a), infos.ptr, true)? };
    infos.launched(&stream)?;
    infos.read(true)
}

/// Solves a batch already in device memory by stacking its systems block-diagonally on the
/// device (zero couplings between neighbours) into one SPIKE solve ([`super::solve_device`]),
/// then judging each system on its own on the GPU (the stack's check is normwise over all
/// systems, which could hide a poor answer of a system with small entries). X goes into B in
/// place for the accepted systems; the others' B is untouched. Returns which systems were
/// accepted, or the stack's rejection (nothing written). Work queued on `after` before the
/// call is waited for.
///
/// # Safety
/// As for [`solve_in_place`].
pub unsafe fn solve_stacked_in_place<T: Real>(
    o: &GpuOptions,
    a: &DevBatch,
    after: Option<cudarc::driver::sys::CUstream>,
) -> Result<Result<Vec<bool>, crate::gtsv::Reject>, DeviceError> {
    use crate::device::memory::{copy_2d, Side};
    use crate::gtsv::{judge, Residual};
    let (n, nrhs, count) = (a.n, a.nrhs, a.count);
    assert!(n >= 1 && nrhs >= 1 && count >= 1);
    let too_large = || DeviceError::Unsupported(format!("a stack of {count} systems of {n} rows"));
    let big = n.checked_mul(count).ok_or_else(too_large)?;
    let cols = count.checked_mul(nrhs).ok_or_else(too_large)?;
    let elems = big
        .checked_mul(3 + nrhs)
        .and_then(|e| e.checked_add(3 * cols))
        .ok_or_else(too_large)?;
    let bytes = elems
        .checked_mul(sz::<T>())
        .and_then(|b| b.checked_add(cols * 4))
        .ok_or_else(too_large)?;
    let call = Call::begin(o, big, nrhs, bytes as u64)?;
    let (gpu, stream) = (call.gpu, call.stream.clone());
    if let Some(s) = after {
        // SAFETY: the caller's stream, live for the call (this function's contract).
        unsafe { crate::device::wait_for_stream(&stream, s)? };
    }
    // The stacked DL, DU, D, X (B's columns) and the judge's sums and flags, in the work
    // buffer kept between calls.
    let work = Work::take(gpu, &stream, bytes)?;
    let at = |base: CUdeviceptr, elems: usize| base + (elems * sz::<T>()) as CUdeviceptr;
    let sdl_p = work.base();
    let (sdu_p, sd_p, sbx_p) = (at(sdl_p, big), at(sdl_p, 2 * big), at(sdl_p, 3 * big));
    let (sums_p, finite_p) = (at(sbx_p, big * nrhs), at(sbx_p, big * nrhs + 3 * cols));
    // SAFETY: DL and DU of the stack, in the work buffer: their couplings between systems
    // stay zero; the copies below fill the rest.
    unsafe { cu::memset_d8_async(sdl_p, 0, 2 * big * sz::<T>(), stream.cu_stream())? };
    // SAFETY: each source holds `count` pieces of its layout (this function's contract), each
    // destination `count` pieces of `n` rows; all live until the synchronize below.
    unsafe {
        if n > 1 {
            copy_2d::<T>(
                Side::Device(a.dl, a.sa),
                Side::Device(sdl_p, n),
                n - 1,
                count,
                &stream,
            )?;
            copy_2d::<T>(
                Side::Device(a.du, a.sa),
                Side::Device(sdu_p, n),
                n - 1,
                count,
                &stream,
            )?;
        }
        copy_2d::<T>(
            Side::Device(a.d, a.sa),
            Side::Device(sd_p, n),
            n,
            count,
            &stream,
        )?;
        for c in 0..nrhs {
            let from = Side::Device(at(a.b, c * a.ldb), a.sb);
            copy_2d::<T>(from, Side::Device(at(sbx_p, c * big), n), n, count, &stream)?;
        }
    }
    stream.synchronize()?;
    let stack = super::DevMatrix {
        n: big,
        dl: sdl_p,
        d: sd_p,
        du: sdu_p,
    };
    let x = super::DevCols {
        ptr: sbx_p,
        ld: big,
    };
    if let Err(reject) = super::solve_device::<T>(o, stack, x, nrhs, None)? {
        return Ok(Err(reject));
    }
    let module = format!("gtsv_batch_{}", T::PREFIX);
    let name = format!("gtsv_batch_judge_{}", T::PREFIX);
    let f = gpu.function(kernels::module_named(&kernels::GTSV_BATCH, &module)?, &name)?;
    let blocks = u32::try_from(cols.div_ceil(4)).map_err(|_| too_large())?;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    let (ni, ki, ci) = (n as i32, nrhs as i32, count as i64);
    let (sa, ldb, sb) = (a.sa as i64, a.ldb as i64, a.sb as i64);
    let (ldx, sx) = (big as i64, n as i64);
    let mut l = stream.launch_builder(&f);
    l.arg(&ni)
        .arg(&ki)
        .arg(&ci)
        .arg(&a.dl)
        .arg(&a.d)
        .arg(&a.du)
        .arg(&sa)
        .arg(&a.b)
        .arg(&ldb)
        .arg(&sb)
        .arg(&sbx_p)
        .arg(&ldx)
        .arg(&sx)
        .arg(&sums_p)
        .arg(&finite_p);
    // SAFETY: the arguments match gtsv_batch_judge_*; the original arrays (this function's
    // contract), the stacked X and the outputs live until the synchronize below.
    unsafe { l.launch(cfg) }?;
    let host_memory = |bytes| DeviceError::HostMemory { bytes };
    let mut s_host =
        crate::host::try_vec(3 * cols, T::ZERO).ok_or_else(|| host_memory(3 * cols * sz::<T>()))?;
    let mut f_host = crate::host::try_vec(cols, 0i32).ok_or_else(|| host_memory(cols * 4))?;
    // SAFETY: both device arrays hold what the host ones take; waited for before they are read.
    unsafe {
        cu::memcpy_dtoh_async(&mut s_host[..], sums_p, stream.cu_stream())?;
        cu::memcpy_dtoh_async(&mut f_host[..], finite_p, stream.cu_stream())?;
    }
    stream.synchronize()?;
    let mut accepted = crate::host::try_vec(count, false).ok_or_else(|| host_memory(count))?;
    for (k, ok) in accepted.iter_mut().enumerate() {
        let column = |c: usize| {
            let w = k * nrhs + c;
            Residual {
                rmax: s_host[3 * w],
                smax: s_host[3 * w + 1],
                bmax: s_host[3 * w + 2],
                finite: f_host[w] != 0,
            }
        };
        *ok = judge((0..nrhs).map(column)).is_ok();
    }
    // The accepted systems' X into B, a run of consecutive ones per copy.
    let mut k0 = 0;
    while k0 < count {
        if !accepted[k0] {
            k0 += 1;
            continue;
        }
        let k1 = (k0..count).find(|&k| !accepted[k]).unwrap_or(count);
        for c in 0..nrhs {
            let from = Side::Device(at(sbx_p, c * big + k0 * n), n);
            let to = Side::Device(at(a.b, k0 * a.sb + c * a.ldb), a.sb);
            // SAFETY: systems k0 .. k1 of the stacked X and of B (this function's contract).
            unsafe { copy_2d::<T>(from, to, n, k1 - k0, &stream)? };
        }
        k0 = k1;
    }
    stream.synchronize()?;
    Ok(Ok(accepted))
}
