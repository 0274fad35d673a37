//! Z := Q2 Z on the GPU (`kernels/sb2st_q2.cu`, whose notes give the order of
//! the reflectors): Z goes up, is transposed so that a warp's threads own neighbouring columns,
//! takes the reflectors a group of sweeps at a time, and comes back.

use super::Reflectors;
use crate::device::blas::CublasReal;
use crate::device::{self, kernels, DeviceError};
use cudarc::driver::{DevicePtrMut, LaunchConfig, PushKernelArg};

/// Threads per CTA of the kernel (`Q2_THREADS`).
const THREADS: usize = 128;

/// Whether the kernel takes Q2 of bandwidth `b` (its windows are compiled for 32 and 64).
pub fn supports(b: usize) -> bool {
    b == 32 || b == 64
}

/// Why [`apply_left`] stopped: the error, and whether Z was being written back (then it holds
/// neither Z nor the product); else Z is untouched.
#[derive(Debug)]
pub struct Q2Stopped {
    pub error: DeviceError,
    pub torn: bool,
}

impl<E: Into<DeviceError>> From<E> for Q2Stopped {
    fn from(e: E) -> Self {
        Q2Stopped {
            error: e.into(),
            torn: false,
        }
    }
}

/// Z := Q2 Z for the n x m `z` (leading dimension `ldz`), as [`Reflectors::apply_left`], on
/// the GPU with `group` sweeps per pass over Z (16 or 32).
pub fn apply_left<T: CublasReal>(
    q: &Reflectors<T>,
    m: usize,
    z: &mut [T],
    ldz: usize,
    group: usize,
) -> Result<(), Q2Stopped> {
    let (n, b) = (q.n, q.b);
    if n < 3 || m == 0 {
        return Ok(());
    }
    if !supports(b) || !(group == 16 || group == 32) {
        return Err(DeviceError::Unsupported(format!(
            "Q2 on the GPU: bandwidth {b}, {group} sweeps per pass"
        ))
        .into());
    }
    assert!(ldz >= n && z.len() >= ldz * (m - 1) + n, "Z too short");
    let int = |x: usize| {
        i32::try_from(x).map_err(|_| DeviceError::Unsupported(format!("{x} exceeds 32 bits")))
    };
    let span = ldz * (m - 1) + n;
    // Rows of Zᵀ start on 256-byte boundaries.
    let ldt = m.next_multiple_of(32);
    let (n_arg, m_arg, ldz_arg, ldt_arg) = (int(n)?, int(m)?, int(ldz)?, int(ldt)?);
    let gpu = device::gpu()?;
    let elem = std::mem::size_of::<T>();
    let _memory = gpu
        .budget
        .reserve(((q.v.len() + span + ldt * n) * elem) as u64)?;
    let la = gpu.linalg()?;
    let stream = la.stream.clone();
    let func = gpu.function(
        &kernels::SB2ST_Q2,
        &format!("sb2st_q2_{}{b}_{group}", T::PREFIX),
    )?;
    let v = stream.clone_htod(&q.v)?;
    let mut zd = stream.clone_htod(&z[..span])?;
    let mut zt = stream.alloc_zeros::<T>(ldt * n)?;
    let handle = *la.blas.handle();
    // SAFETY (both): `handle` is bound to `stream`; Z is n x m with leading dimension ldz,
    // Zᵀ m x n with ldt ≥ m, both within their buffers.
    unsafe {
        transpose::<T>(
            handle,
            &stream,
            (&mut zd, ldz_arg),
            (&mut zt, ldt_arg),
            (n_arg, m_arg),
        )
    }?;
    let cfg = LaunchConfig {
        grid_dim: (m.div_ceil(THREADS) as u32, 1, 1),
        block_dim: (THREADS as u32, 1, 1),
        shared_mem_bytes: (group * b * elem) as u32,
    };
    let ldt_long = ldt as i64;
    let mut launch = stream.launch_builder(&func);
    launch
        .arg(&v)
        .arg(&mut zt)
        .arg(&n_arg)
        .arg(&m_arg)
        .arg(&ldt_long);
    // SAFETY: the arguments match sb2st_q2_{s,d}{b}_{group}: `v` holds Q2's layout of order n
    // and bandwidth b (n(n − 1)/2 entries), `zt` n rows of ldt ≥ m entries; one thread per
    // column, group · b entries of shared memory.
    unsafe { launch.launch(cfg) }?;
    // Back, rows n .. ldz of each column untouched.
    unsafe {
        transpose::<T>(
            handle,
            &stream,
            (&mut zt, ldt_arg),
            (&mut zd, ldz_arg),
            (m_arg, n_arg),
        )
    }?;
    // Everything before the download has finished or failed by now.
    stream.synchronize()?;
    let torn = |e: cudarc::driver::DriverError| Q2Stopped {
        error: e.into(),
        torn: true,
    };
    stream.memcpy_dtoh(&zd, &mut z[..span]).map_err(torn)?;
    stream.synchronize().map_err(torn)?;
    Ok(())
}

/// `to` := `from`ᵀ for the rows x cols `from` (column-major, their leading dimensions given),
/// by cuBLAS geam on `stream`.
///
/// # Safety
/// `handle` is bound to `stream`; both matrices lie within their buffers.
unsafe fn transpose<T: CublasReal>(
    handle: cudarc::cublas::sys::cublasHandle_t,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    (from, ld_from): (&mut cudarc::driver::CudaSlice<T>, i32),
    (to, ld_to): (&mut cudarc::driver::CudaSlice<T>, i32),
    (rows, cols): (i32, i32),
) -> Result<(), DeviceError> {
    let (fp, _rf) = from.device_ptr_mut(stream);
    let (tp, _rt) = to.device_ptr_mut(stream);
    T::geam_copy(
        handle,
        true,
        cols,
        rows,
        fp as *const T,
        ld_from,
        tp as *mut T,
        ld_to,
    )
    .result()?;
    Ok(())
}
