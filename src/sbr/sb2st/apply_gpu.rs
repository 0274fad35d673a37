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
    {
        let (zp, _rz) = zd.device_ptr_mut(&stream);
        let (tp, _rt) = zt.device_ptr_mut(&stream);
        // SAFETY: `handle` is bound to `stream`; Z is n x m with leading dimension ldz, Zᵀ
        // m x n with ldt ≥ m, both within their buffers.
        unsafe {
            T::geam_copy(
                handle,
                true,
                m_arg,
                n_arg,
                zp as *const T,
                ldz_arg,
                tp as *mut T,
                ldt_arg,
            )
        }
        .result()?;
    }
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
    {
        let (zp, _rz) = zd.device_ptr_mut(&stream);
        let (tp, _rt) = zt.device_ptr_mut(&stream);
        // SAFETY: as above, back: Z := (Zᵀ)ᵀ, rows n .. ldz of each column untouched.
        unsafe {
            T::geam_copy(
                handle,
                true,
                n_arg,
                m_arg,
                tp as *const T,
                ldt_arg,
                zp as *mut T,
                ldz_arg,
            )
        }
        .result()?;
    }
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
