//! The kernel functions of each precision and partition size, looked up once.

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
    fn load<T: Real>(
        module: &Arc<cudarc::driver::CudaModule>,
        m: usize,
        tag: &str,
    ) -> Result<Self, DeviceError> {
        let f = |name: &str| module.load_function(&format!("gtsv_{name}{tag}_{}_m{m}", T::PREFIX));
        Ok(PartFuncs {
            reduce: f("reduce")?,
            reduce_res: f("reduce_res")?,
            backsub: f("backsub")?,
            backsub_spec: f("backsub_spec")?,
            update: f("update")?,
        })
    }

    /// The slice kernels of each (precision, partition size) loaded so far, from the module
    /// compiled at the first streamed solve.
    pub(super) fn slices<T: Real>(gpu: &Gpu, m: usize) -> Result<Self, DeviceError> {
        static LOADED: std::sync::Mutex<Vec<((char, usize), PartFuncs)>> =
            std::sync::Mutex::new(Vec::new());
        let key = (T::PREFIX, m);
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, f)) = loaded.iter().find(|(k, _)| *k == key) {
            return Ok(f.clone());
        }
        let f = Self::load::<T>(&gpu.module(&kernels::GTSV_SLICE)?, m, "_slice")?;
        loaded.push((key, f.clone()));
        Ok(f)
    }
}

#[derive(Clone)]
pub(super) struct Funcs {
    pub(super) whole: PartFuncs,
    pub(super) base: CudaFunction,
    pub(super) tail: CudaFunction,
    pub(super) residual: CudaFunction,
    pub(super) add: CudaFunction,
}

/// The kernels of each (precision, partition size) loaded so far: looking nine functions up
/// at every call showed in the small solves.
static FUNCS: std::sync::Mutex<Vec<((char, usize), Funcs)>> = std::sync::Mutex::new(Vec::new());

impl Funcs {
    pub(super) fn get<T: Real>(gpu: &Gpu, m: usize) -> Result<Self, DeviceError> {
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
            whole: PartFuncs::load::<T>(&module, m, "")?,
            base: f("base")?,
            tail: fm("tail")?,
            residual: f("residual")?,
            add: f("add")?,
        })
    }
}
