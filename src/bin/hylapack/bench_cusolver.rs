//! cuSOLVER's dense symmetric routines as the `bench syev` peers, device-resident: the matrix
//! is copied to the GPU and the workspace allocated before the timer starts, and the call is
//! timed between synchronisations of its stream.

use hylapack::device::{blas, DeviceError};
use std::time::Instant;

/// What cuSOLVER is asked for (UPLO = lower throughout; Dsyevd and Dsyevdx through the 64-bit
/// API, cusolverDnXsyevd and cusolverDnXsyevdx).
#[derive(Clone, Copy)]
pub enum Job {
    /// Dsytrd: the reduction to tridiagonal form.
    Sytrd,
    /// Dsyevd, with JOBZ = V if `vectors`.
    Syevd { vectors: bool },
    /// Dsyevdx with JOBZ = V and RANGE = I: the il-th to iu-th eigenpairs (1-based).
    SyevdxIndex { il: i32, iu: i32 },
}

/// A timed call: its seconds, the eigenvalues found (none for Dsytrd) and, with vectors, the
/// n x M eigenvectors.
pub struct Timed {
    pub secs: f64,
    pub w: Vec<f64>,
    pub z: Vec<f64>,
}

/// `job` on a device copy of the n x n `a` (its lower triangle).
pub fn run(a: &[f64], n: usize, job: Job) -> Result<Timed, String> {
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    if !hylapack::device::libraries().cusolver {
        return Err("cuSOLVER not installed".into());
    }
    let gpu = hylapack::device::gpu().map_err(|e| e.to_string())?;
    let mut la = gpu.linalg().map_err(|e| e.to_string())?;
    let stream = la.stream.clone();
    let h = la.solver().map_err(|e| e.to_string())?.cu();
    let de = |e: cudarc::driver::DriverError| e.to_string();
    let ds = |e: DeviceError| e.to_string();
    let mut a_d = stream.clone_htod(a).map_err(de)?;
    // W (or D for Dsytrd), E and TAU.
    let mut w_d = stream.alloc_zeros::<f64>(n).map_err(de)?;
    let mut e_d = stream.alloc_zeros::<f64>(n).map_err(de)?;
    let mut tau_d = stream.alloc_zeros::<f64>(n).map_err(de)?;
    let mut info_d = stream.alloc_zeros::<i32>(1).map_err(de)?;
    // Dsyevd and Dsyevdx through the 64-bit API: the 32-bit one's workspace size (an int)
    // overflows at n = 32768.
    let params = blas::SolverParams::new().map_err(ds)?;
    let (ni, nl) = (n as i32, n as i64);
    let range = |il: i32, iu: i32| (i64::from(il), i64::from(iu));
    // Workspace bytes (device, host); Dsytrd's device one holds lwork f64s.
    let (dev_bytes, host_bytes) = {
        let (pa, _g1) = a_d.device_ptr(&stream);
        let (pw, _g2) = w_d.device_ptr(&stream);
        let (pe, _g3) = e_d.device_ptr(&stream);
        let (pt, _g4) = tau_d.device_ptr(&stream);
        // SAFETY: device arrays of the sizes cuSOLVER reads on the handle's stream.
        unsafe {
            match job {
                Job::Sytrd => {
                    blas::dsytrd_buffer_size(h, ni, pa as _, ni, pw as _, pe as _, pt as _)
                        .map(|lwork| (lwork.max(0) as usize * 8, 0))
                }
                Job::Syevd { vectors } => {
                    blas::xsyevd_buffer_size(h, &params, vectors, nl, pa as _, nl, pw as _)
                }
                Job::SyevdxIndex { il, iu } => blas::xsyevdx_index_buffer_size(
                    h,
                    &params,
                    nl,
                    pa as _,
                    nl,
                    range(il, iu),
                    pw as _,
                ),
            }
        }
        .map_err(ds)?
    };
    // Device allocations are aligned far beyond f64's, so Dsytrd takes these bytes as f64s.
    let mut work = stream.alloc_zeros::<u8>(dev_bytes.max(1)).map_err(de)?;
    let mut host_work = vec![0u8; host_bytes];
    stream.synchronize().map_err(de)?;
    let t = Instant::now();
    let m = {
        let (pa, _g1) = a_d.device_ptr_mut(&stream);
        let (pw, _g2) = w_d.device_ptr_mut(&stream);
        let (pe, _g3) = e_d.device_ptr_mut(&stream);
        let (pt, _g4) = tau_d.device_ptr_mut(&stream);
        let (pwork, _g5) = work.device_ptr_mut(&stream);
        let (pinfo, _g6) = info_d.device_ptr_mut(&stream);
        let (pwork, pinfo) = (pwork as *mut std::ffi::c_void, pinfo as *mut i32);
        let hw = host_work.as_mut_slice();
        // SAFETY: as above, with the workspaces cuSOLVER asked for.
        unsafe {
            match job {
                Job::Sytrd => {
                    let lwork = (dev_bytes / 8) as i32;
                    let (pa, pw, pe, pt) = (pa as _, pw as _, pe as _, pt as _);
                    blas::dsytrd(h, ni, pa, ni, pw, pe, pt, pwork.cast(), lwork, pinfo).map(|()| 0)
                }
                Job::Syevd { vectors } => {
                    let work = (pwork, dev_bytes);
                    let (pa, pw) = (pa as _, pw as _);
                    blas::xsyevd(h, &params, vectors, nl, pa, nl, pw, work, hw, pinfo).map(|()| nl)
                }
                Job::SyevdxIndex { il, iu } => {
                    let work = (pwork, dev_bytes);
                    let (pa, pw) = (pa as _, pw as _);
                    let range = range(il, iu);
                    blas::xsyevdx_index(h, &params, nl, pa, nl, range, pw, work, hw, pinfo)
                }
            }
        }
        .map_err(ds)?
    };
    stream.synchronize().map_err(de)?;
    let secs = t.elapsed().as_secs_f64();
    let info = stream.clone_dtoh(&info_d).map_err(de)?;
    if info[0] != 0 {
        return Err(format!("devInfo = {}", info[0]));
    }
    let m = m.max(0) as usize;
    let mut w = stream.clone_dtoh(&w_d).map_err(de)?;
    w.truncate(m);
    let z = match job {
        Job::Syevd { vectors: true } | Job::SyevdxIndex { .. } => {
            let mut z = stream.clone_dtoh(&a_d).map_err(de)?;
            z.truncate(n * m);
            z
        }
        _ => Vec::new(),
    };
    Ok(Timed { secs, w, z })
}
