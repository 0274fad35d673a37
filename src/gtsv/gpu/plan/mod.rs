//! One solve's device state and its kernel pipeline ([`Plan`]): the levels of the recursion,
//! the work buffer they are carved from, the tail kernel and the refinement on the GPU.
//!
//! The stages are files of their own: [`layout`] sizes the levels and carves the work buffer,
//! [`work`] keeps that buffer between calls, [`functions`] loads the kernels, [`launch`]
//! enqueues the levels' kernels, [`refine`] reads the check's summaries and refines on the
//! device, [`window`] tries the one-pass window solve before all of them. (`plan` is private to `gpu`: `pub(crate)` in these files reaches `gpu` only.)

use super::*;
use crate::device::memory::Reservation;

mod functions;
mod launch;
mod layout;
mod refine;
mod window;
mod work;

use functions::*;
pub(crate) use launch::{Top, TopSlice};
use layout::*;
pub use layout::{streamed_work_bytes, work_bytes};
pub(crate) use work::Work;

/// One level: its partition count and the separator system it reduces to (the next level's).
struct Level {
    p: usize,
    /// The reduced system (p rows) and its right-hand sides / solution (p × nrhs, in place).
    next: DevMatrix,
    next_f: CUdeviceptr,
}

/// The raw address of a buffer this module allocated on `stream` (all its work stays on that
/// one stream, so cudarc's cross-stream event tracking is not needed).
pub(super) fn addr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> CUdeviceptr {
    s.device_ptr(stream).0
}

/// Copies `cols` columns of `rows` elements between column-major device arrays on `stream`.
///
/// # Safety
/// Both arrays hold `cols` columns of `rows` elements at their leading dimensions.
pub(super) unsafe fn copy_cols<T>(
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
pub(super) struct Plan<T> {
    gpu: &'static Gpu,
    stream: Arc<CudaStream>,
    funcs: Funcs,
    /// The slice kernels, for a streamed top level only.
    slice_funcs: Option<PartFuncs>,
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
    /// The host copy of `sums` and the flags (6·nrhs + 1 elements), allocated by
    /// [`Self::reserve_host_sums`] before the GPU works.
    host_sums: Vec<T>,
    _elem: std::marker::PhantomData<T>,
}

impl<T: Real> Plan<T> {
    pub(super) fn new(
        gpu: &'static Gpu,
        stream: Arc<CudaStream>,
        o: &GpuOptions,
        a: DevMatrix,
        nrhs: usize,
    ) -> Result<Self, DeviceError> {
        Self::build(gpu, stream, o, a, nrhs, true)
    }

    /// A plan for a system of `n` rows whose top level is streamed through the GPU in slices
    /// ([`Self::reduce_top`], [`Self::backsub_top`]): its device state is the levels' only.
    pub(super) fn new_streamed(
        gpu: &'static Gpu,
        stream: Arc<CudaStream>,
        o: &GpuOptions,
        n: usize,
        nrhs: usize,
    ) -> Result<Self, DeviceError> {
        let a = DevMatrix {
            n,
            dl: 0,
            d: 0,
            du: 0,
        };
        Self::build(gpu, stream, o, a, nrhs, false)
    }

    fn build(
        gpu: &'static Gpu,
        stream: Arc<CudaStream>,
        o: &GpuOptions,
        a: DevMatrix,
        nrhs: usize,
        resident: bool,
    ) -> Result<Self, DeviceError> {
        let funcs = Funcs::get::<T>(gpu, o.m)?;
        let slice_funcs = if resident {
            None
        } else {
            Some(PartFuncs::slices::<T>(gpu, o.m)?)
        };
        let layout = work_layout(a.n, nrhs, o, resident);
        let work = Work::take(gpu, &stream, layout.total * sz::<T>())?;
        let base = work.base();
        let at = |e: usize| base + (e * sz::<T>()) as u64;
        let levels = layout
            .levels
            .iter()
            .map(|l| Level {
                p: l.p,
                next: DevMatrix {
                    n: l.p,
                    dl: at(l.dl),
                    d: at(l.d),
                    du: at(l.du),
                },
                next_f: at(l.f),
            })
            .collect();
        Ok(Plan {
            gpu,
            funcs,
            slice_funcs,
            o: o.clone(),
            a,
            nrhs,
            levels,
            tail: layout.tail,
            x: at(layout.x),
            r: at(layout.r),
            x_next: at(layout.x_next),
            sums: at(layout.sums),
            flags: at(layout.sums + 6 * nrhs.max(1)),
            scratch: at(layout.scratch),
            spec: at(layout.spec),
            _work: work,
            host_sums: Vec::new(),
            _elem: std::marker::PhantomData,
            stream,
        })
    }

    /// Allocates the host copy of the summaries (see `host_sums`); [`Reject::NoHostMemory`]
    /// when it cannot be allocated (the call then runs LAPACK xGTSV: issue #23).
    pub(super) fn reserve_host_sums(&mut self) -> Result<(), Reject> {
        let need = 6 * self.nrhs.max(1) + 1;
        if self.host_sums.len() < need {
            self.host_sums = host::<T>(need)?;
        }
        Ok(())
    }

    pub(super) fn x_cols(&self) -> DevCols {
        DevCols {
            ptr: self.x,
            ld: self.a.n,
        }
    }

    /// The flags' address (an i32: bit 0 a zero pivot, bit 1 a value not finite, bit 2 a
    /// window given up).
    pub(super) fn flags(&self) -> CUdeviceptr {
        self.flags
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

    /// The top level's partition count (the plan has levels).
    pub(super) fn top_partitions(&self) -> usize {
        self.levels[0].p
    }
}
