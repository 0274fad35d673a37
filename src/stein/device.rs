//! The device-pointer form of xSTEIN: D, E, W, IBLOCK, ISPLIT and Z already in GPU memory.
//!
//! The O(N + M) inputs are copied to the host ([`host_copies`]): LAPACK's argument checks read
//! W and IBLOCK, and the plan (shifts, seeds, clusters) is made there as for host data. The
//! GPU path then computes the vectors in the caller's Z ([`gpu::into_device`]), reading the
//! caller's D and E where they are: neither they nor Z are copied. Where that path cannot
//! start (no GPU, its memory, its kernels) nothing is written and the caller reports it.
//! Where it fails after it has written Z (a cluster it cannot certify, a failed launch), the
//! host path runs on the host copies and its Z is uploaded — the same fallback as
//! [`super::stein_with`], at the price of moving Z once.

use super::gpu::{self, OnDevice};
use super::{plan, report_failures, Plan, SteinReal, SteinReport, SteinRun, Task};
use crate::device::memory::{copy_2d, Side};
use crate::device::{self, DeviceError};
use crate::dispatch::Backend;
use crate::host::{try_room, try_vec, NoMemory};
use cudarc::driver::sys::CUstream;

/// The caller's arrays in GPU memory (addresses in the primary context of device 0): D (N),
/// E (N − 1), W and IBLOCK (M), ISPLIT (N), and Z (`ldz` × M).
#[derive(Clone, Copy, Debug)]
pub struct DeviceArrays {
    pub d: u64,
    pub e: u64,
    pub w: u64,
    pub iblock: u64,
    pub isplit: u64,
    pub z: u64,
    pub ldz: usize,
}

/// Host copies of the inputs other than Z.
#[derive(Clone, Debug)]
pub struct HostCopies<T> {
    pub d: Vec<T>,
    pub e: Vec<T>,
    pub w: Vec<T>,
    pub iblock: Vec<i32>,
    pub isplit: Vec<i32>,
}

/// Why the device-pointer form gave no answer.
#[derive(Clone, Debug)]
pub enum DeviceFailure {
    /// No usable GPU, or the GPU path could not start (Z untouched), or it failed and so did
    /// the upload of the host path's answer (Z unspecified).
    Gpu(DeviceError),
    /// Host memory (the copies, the plan, the fallback's Z) could not be had.
    HostMemory(NoMemory),
}

impl From<DeviceError> for DeviceFailure {
    fn from(e: DeviceError) -> Self {
        DeviceFailure::Gpu(e)
    }
}

impl From<NoMemory> for DeviceFailure {
    fn from(e: NoMemory) -> Self {
        DeviceFailure::HostMemory(e)
    }
}

/// A host vector of `len` elements, fallibly, filled from device memory at `src` on `stream`
/// (the copy is complete once the stream is synchronized).
fn fetch<U: Clone>(
    stream: &cudarc::driver::CudaStream,
    src: u64,
    len: usize,
    zero: U,
) -> Result<Vec<U>, DeviceFailure> {
    let mut v = try_vec(len, zero).ok_or(NoMemory::of::<U>(len))?;
    if len > 0 {
        // SAFETY: the caller's array holds `len` elements of U (the entry's contract); the host
        // vector outlives the copy, which the caller synchronizes before reading it.
        unsafe { cudarc::driver::result::memcpy_dtoh_async(&mut v, src, stream.cu_stream()) }
            .map_err(DeviceError::from)?;
    }
    Ok(v)
}

/// Copies D, E, W, IBLOCK and ISPLIT (N ≥ 1, M ≥ 1) to the host once the work queued on
/// `after` (a stream of the caller's; null is CUDA's legacy default stream) is done.
///
/// # Safety
/// The arrays are device memory of the primary context with the extents of [`DeviceArrays`];
/// `after` is a live stream of that context.
pub unsafe fn host_copies<T: SteinReal>(
    n: usize,
    m: usize,
    a: &DeviceArrays,
    after: Option<CUstream>,
) -> Result<HostCopies<T>, DeviceFailure> {
    let gpu = device::gpu()?;
    gpu.ctx.bind_to_thread().map_err(DeviceError::from)?;
    let stream = gpu.stream()?;
    if let Some(s) = after {
        // SAFETY: the caller's live stream (this function's contract).
        unsafe { device::wait_for_stream(&stream, s)? };
    }
    let iblock: Vec<i32> = fetch(&stream, a.iblock, m, 0)?;
    stream.synchronize().map_err(DeviceError::from)?;
    // LAPACK reads ISPLIT only up to the last block IBLOCK names: a caller may pass no more
    // (and the driver refuses a copy past the end of an allocation).
    let blocks = iblock.iter().copied().max().unwrap_or(0).clamp(0, n as i32) as usize;
    let copies = HostCopies {
        d: fetch(&stream, a.d, n, T::ZERO)?,
        e: fetch(&stream, a.e, n - 1, T::ZERO)?,
        w: fetch(&stream, a.w, m, T::ZERO)?,
        iblock,
        isplit: fetch(&stream, a.isplit, blocks, 0)?,
    };
    stream.synchronize().map_err(DeviceError::from)?;
    Ok(copies)
}

/// xSTEIN for the inputs `c` (which pass [`super::check_args`]; N ≥ 1, M ≥ 1) into the
/// caller's Z at `a.z`, with LAPACK's INFO and IFAIL. Z is written where LAPACK writes it:
/// rows 0..N of the columns its block loop reaches. `backend` is the GPU, or the host where
/// the host path's answer was uploaded (`note` says why). Returns when Z holds the answer.
///
/// # Safety
/// `a.z` is device memory of the primary context holding `a.ldz` × M elements (`a.ldz` ≥ N)
/// that nothing else uses during the call; `a.d` and `a.e` hold N and N − 1 elements.
pub unsafe fn stein_device<T: SteinReal>(
    c: &HostCopies<T>,
    a: &DeviceArrays,
) -> Result<SteinRun, DeviceFailure> {
    let (n, m) = (c.d.len(), c.w.len());
    let mut run = SteinRun {
        report: SteinReport {
            info: 0,
            ifail: try_vec(m, 0).ok_or(NoMemory::of::<i32>(m))?,
        },
        backend: Backend::Gpu,
        note: None,
    };
    // LAPACK sets Z(1,1) = 1 for N = 1 whatever IBLOCK says.
    let plan = if n == 1 {
        Plan {
            d: &c.d,
            e: &c.e,
            w: &c.w,
            shifts: Vec::new(),
            seeds: Vec::new(),
            tasks: Vec::new(),
        }
    } else {
        plan(&c.d, &c.e, &c.w, &c.iblock, &c.isplit)?
    };
    let mut units =
        try_room(if n == 1 { 1 } else { m }).ok_or(NoMemory::of::<(usize, usize)>(m))?;
    let mut covered = 0;
    if n == 1 {
        units.push((0, 0));
        covered = 1;
    }
    for t in &plan.tasks {
        let (col, count) = t.columns();
        covered = covered.max(col + count);
        if let Task::Unit { row, .. } = *t {
            units.extend((col..col + count).map(|j| (row, j)));
        }
    }
    if covered == 0 {
        // LAPACK's block loop reaches no column (IBLOCK(1) < 1): nothing to write, and no
        // GPU memory to ask for (an empty allocation is an error to the driver).
        return Ok(run);
    }
    let mut failed = try_vec(m, false).ok_or(NoMemory::of::<bool>(m))?;
    let on_device = OnDevice {
        d: a.d,
        e: a.e,
        z: a.z,
        ldz: a.ldz,
    };
    match gpu::into_device(&plan, &units, covered, on_device, &mut failed) {
        Ok(()) => {
            for t in &plan.tasks {
                if let Task::Invalid { col, count } = *t {
                    failed[col..col + count].fill(true);
                }
            }
            report_failures(&mut run.report, &failed);
            Ok(run)
        }
        Err(f) if !f.z_written => Err(DeviceFailure::Gpu(f.error)),
        Err(f) => {
            crate::dispatch::debug(|| format!("stein: GPU path failed ({})", f.error));
            run.report = host_fallback(c, a, covered)?;
            run.backend = Backend::Cpu;
            run.note = Some(format!(
                "the GPU path failed ({}); ran on the host, Z uploaded",
                f.error
            ));
            Ok(run)
        }
    }
}

/// The host path on the host copies, its first `covered` columns uploaded into Z.
fn host_fallback<T: SteinReal>(
    c: &HostCopies<T>,
    a: &DeviceArrays,
    covered: usize,
) -> Result<SteinReport, DeviceFailure> {
    let (n, m) = (c.d.len(), c.w.len());
    let mut z = try_vec(n * m, T::ZERO).ok_or(NoMemory::of::<T>(n * m))?;
    let report = super::stein(&c.d, &c.e, &c.w, &c.iblock, &c.isplit, &mut z, n)?;
    let gpu = device::gpu()?;
    gpu.ctx.bind_to_thread().map_err(DeviceError::from)?;
    let stream = gpu.stream()?;
    if covered == 0 {
        return Ok(report);
    }
    let from = Side::Host(z.as_mut_ptr().cast(), n);
    // SAFETY: the host Z holds N × M elements, the caller's Z ldz × M (ldz ≥ N); the copy is
    // complete before `z` is dropped (synchronized below).
    unsafe { copy_2d::<T>(from, Side::Device(a.z, a.ldz), n, covered, &stream)? };
    stream.synchronize().map_err(DeviceError::from)?;
    Ok(report)
}
