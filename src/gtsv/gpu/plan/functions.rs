//! The kernel functions of each precision and partition size (looked up once, in the
//! device's function cache).

use super::*;

/// The partition kernels of one kind: a whole level's, or (with a [`Span`] argument after P) a
/// slice's of a streamed top level.
#[derive(Clone)]
pub(super) struct PartFuncs {
    pub(super) reduce: CudaFunction,
    pub(super) reduce_res: CudaFunction,
    pub(super) backsub: CudaFunction,
    pub(super) backsub_spec: CudaFunction,
    pub(super) update: CudaFunction,
}

impl PartFuncs {
    fn get<T: Real>(gpu: &Gpu, m: usize, slices: bool) -> Result<Self, DeviceError> {
        let source = module::<T>(m, slices)?;
        let tag = if slices { "_slice" } else { "" };
        let f = |name: &str| gpu.function(source, &format!("gtsv_{name}{tag}_{}_m{m}", T::PREFIX));
        Ok(PartFuncs {
            reduce: f("reduce")?,
            reduce_res: f("reduce_res")?,
            backsub: f("backsub")?,
            backsub_spec: f("backsub_spec")?,
            update: f("update")?,
        })
    }

    /// The slice kernels of a streamed top level (their module is compiled at the first
    /// streamed solve).
    pub(super) fn slices<T: Real>(gpu: &Gpu, m: usize) -> Result<Self, DeviceError> {
        Self::get::<T>(gpu, m, true)
    }
}

#[derive(Clone)]
pub(super) struct Funcs {
    pub(super) whole: PartFuncs,
    pub(super) base: CudaFunction,
    pub(super) tail: CudaFunction,
    pub(super) residual: CudaFunction,
    pub(super) add: CudaFunction,
    pub(super) window: CudaFunction,
    pub(super) window_edges: CudaFunction,
    pub(super) window_commit: CudaFunction,
    pub(super) window_restore: CudaFunction,
}

impl Funcs {
    /// The kernels of one precision and partition size, looked up in the device's function
    /// cache at the first call and kept here: the dozen lookups took 8-15 us of every solve
    /// (H200, n = 2^23).
    pub(super) fn get<T: Real>(gpu: &Gpu, m: usize) -> Result<Self, DeviceError> {
        static KEPT: std::sync::Mutex<Vec<((usize, usize), Funcs)>> =
            std::sync::Mutex::new(Vec::new());
        let key = (sz::<T>(), m);
        let kept = |v: &Vec<((usize, usize), Funcs)>| {
            v.iter().find(|(k, _)| *k == key).map(|(_, f)| f.clone())
        };
        if let Some(f) = kept(&KEPT.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(f);
        }
        let f = Self::look_up::<T>(gpu, m)?;
        let mut v = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        if kept(&v).is_none() {
            v.push((key, f.clone()));
        }
        Ok(f)
    }

    fn look_up<T: Real>(gpu: &Gpu, m: usize) -> Result<Self, DeviceError> {
        let source = module::<T>(m, false)?;
        let f = |name: &str| gpu.function(source, &format!("gtsv_{name}_{}", T::PREFIX));
        let fm = |name: &str| gpu.function(source, &format!("gtsv_{name}_{}_m{m}", T::PREFIX));
        Ok(Funcs {
            whole: PartFuncs::get::<T>(gpu, m, false)?,
            base: f("base")?,
            tail: fm("tail")?,
            residual: f("residual")?,
            add: f("add")?,
            window: fm("window")?,
            window_edges: f("window_edges")?,
            window_commit: f("window_commit")?,
            window_restore: f("window_restore")?,
        })
    }
}

/// The kernel module of `T` and partition size `m` (whole levels, or a streamed level's slices).
fn module<T: Real>(m: usize, slices: bool) -> Result<&'static kernels::KernelSource, DeviceError> {
    let tag = if slices { "_slice" } else { "" };
    kernels::module_named(&kernels::GTSV, &format!("gtsv{tag}_{}_m{m}", T::PREFIX))
}
