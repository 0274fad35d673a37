//! cuBLAS and cuSOLVER handles bound to their own streams, pooled: creating a handle costs
//! milliseconds, and a handle is tied to the stream it was created on.

use super::{libraries, lock, DeviceError, Gpu};
use cudarc::cublas::CudaBlas;
use cudarc::cusolver::DnHandle;
use cudarc::driver::CudaStream;
use std::sync::{Arc, Mutex, OnceLock};

/// A stream with a cuBLAS handle and, once asked for, a cuSOLVER dense handle on it.
pub struct Linalg {
    pub stream: Arc<CudaStream>,
    pub blas: CudaBlas,
    solver: Option<DnHandle>,
}

impl Linalg {
    /// The cuSOLVER dense handle on this stream, created on first use.
    pub fn solver(&mut self) -> Result<&DnHandle, DeviceError> {
        if self.solver.is_none() {
            if !libraries().cusolver {
                return Err(DeviceError::MissingLibrary("cuSOLVER"));
            }
            let h = DnHandle::new(self.stream.clone()).map_err(DeviceError::from)?;
            self.solver = Some(h);
        }
        Ok(self.solver.as_ref().expect("created above"))
    }
}

/// The pool of streams of default priority, or (`urgent`) of the highest.
fn pool(urgent: bool) -> &'static Mutex<Vec<Linalg>> {
    static POOLS: [OnceLock<Mutex<Vec<Linalg>>>; 2] = [OnceLock::new(), OnceLock::new()];
    POOLS[urgent as usize].get_or_init(|| Mutex::new(Vec::new()))
}

/// A [`Linalg`] borrowed from a pool (the urgent one if `.1`); it goes back when dropped if its
/// stream is healthy.
pub struct PooledLinalg(Option<Linalg>, bool);

impl std::ops::Deref for PooledLinalg {
    type Target = Linalg;
    fn deref(&self) -> &Linalg {
        self.0.as_ref().expect("present until drop")
    }
}

impl std::ops::DerefMut for PooledLinalg {
    fn deref_mut(&mut self) -> &mut Linalg {
        self.0.as_mut().expect("present until drop")
    }
}

impl Drop for PooledLinalg {
    fn drop(&mut self) {
        if let Some(l) = self.0.take() {
            if l.stream.synchronize().is_ok() {
                lock(pool(self.1)).push(l);
            }
        }
    }
}

impl Gpu {
    /// A stream with cuBLAS (and lazily cuSOLVER) handles, from the pool or new.
    pub fn linalg(&'static self) -> Result<PooledLinalg, DeviceError> {
        self.linalg_of(false)
    }

    /// The same on a stream of the highest priority: the GPU starts its kernels' blocks ahead
    /// of those waiting on other streams (a panel factored beside a long update).
    pub fn linalg_urgent(&'static self) -> Result<PooledLinalg, DeviceError> {
        self.linalg_of(true)
    }

    fn linalg_of(&'static self, urgent: bool) -> Result<PooledLinalg, DeviceError> {
        if let Some(l) = lock(pool(urgent)).pop() {
            return Ok(PooledLinalg(Some(l), urgent));
        }
        if !libraries().cublas {
            return Err(DeviceError::MissingLibrary("cuBLAS"));
        }
        let stream = if urgent {
            self.ctx.bind_to_thread()?;
            // Numerically lowest is highest.
            let (_, highest) = cudarc::driver::result::stream::get_priority_range()?;
            self.ctx.new_stream_with_priority(highest)?
        } else {
            self.ctx.new_stream()?
        };
        let blas = CudaBlas::new(stream.clone()).map_err(DeviceError::from)?;
        Ok(PooledLinalg(
            Some(Linalg {
                stream,
                blas,
                solver: None,
            }),
            urgent,
        ))
    }
}
