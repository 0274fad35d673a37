//! The only code that touches cudarc: discovery, one shared context, a stream pool, kernels
//! (NVRTC + on-disk cache, in `kernels`), the memory budget and pinned staging (in `memory`),
//! pooled cuBLAS/cuSOLVER handles (in `linalg`) and the raw cuBLAS/cuSOLVER calls (in `blas`).
//!
//! Discovery never panics or aborts: each CUDA library is probed with `is_culib_present()`
//! before cudarc touches it (cudarc panics on a missing library), and the probe itself runs
//! under `catch_unwind`.

pub mod blas;
pub mod kernels;
pub mod linalg;
pub mod memory;

use crate::config;
use crate::log;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Why the GPU (or one GPU operation) is unavailable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceError {
    /// libcuda (the NVIDIA driver) is not installed.
    NoDriver,
    /// The driver loaded but reports no usable device.
    NoDevice(String),
    /// libnvrtc is missing, so no kernel can be compiled.
    NoNvrtc,
    /// A CUDA library this operation needs is missing (cuBLAS, cuSPARSE, cuSOLVER).
    MissingLibrary(&'static str),
    /// A driver call failed.
    Driver(String),
    /// NVRTC could not compile a kernel.
    Compile(String),
    /// A CUDA library call failed: which library, and its status.
    Library {
        library: &'static str,
        status: String,
    },
    /// The memory budget (HYLAPACK_GPU_MEMORY_LIMIT or what is free) is too small.
    OutOfBudget { needed: u64, available: u64 },
    /// Host memory for a staging or result buffer of this many bytes could not be allocated.
    HostMemory { bytes: usize },
    /// The call is outside what the GPU path supports (sizes beyond its index types, options
    /// it was not built for).
    Unsupported(String),
    /// This process is a `fork()` child of the one that took the GPU: a CUDA context does not
    /// survive a fork.
    Forked,
}

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceError::NoDriver => f.write_str("the NVIDIA driver (libcuda) is not installed"),
            DeviceError::NoDevice(s) => write!(f, "no usable CUDA device ({s})"),
            DeviceError::NoNvrtc => {
                f.write_str("NVRTC (libnvrtc) is not installed, kernels cannot be compiled")
            }
            DeviceError::MissingLibrary(l) => write!(f, "the CUDA library {l} is not installed"),
            DeviceError::Driver(s) => write!(f, "CUDA driver error: {s}"),
            DeviceError::Compile(s) => write!(f, "kernel compilation failed: {s}"),
            DeviceError::Library { library, status } => write!(f, "{library} error: {status}"),
            DeviceError::HostMemory { bytes } => {
                write!(f, "{bytes} bytes of host memory could not be allocated")
            }
            DeviceError::Unsupported(s) => write!(f, "not supported on the GPU path: {s}"),
            DeviceError::Forked => {
                f.write_str("the GPU belongs to the parent process (CUDA does not survive fork)")
            }
            DeviceError::OutOfBudget { needed, available } => {
                write!(
                    f,
                    "needs {needed} bytes of GPU memory, {available} available within the budget"
                )
            }
        }
    }
}

impl std::error::Error for DeviceError {}

impl From<cudarc::driver::DriverError> for DeviceError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        DeviceError::Driver(e.to_string())
    }
}

impl From<cudarc::cublas::result::CublasError> for DeviceError {
    fn from(e: cudarc::cublas::result::CublasError) -> Self {
        DeviceError::Library {
            library: "cuBLAS",
            status: format!("{:?}", e.0),
        }
    }
}

impl From<cudarc::cusolver::result::CusolverError> for DeviceError {
    fn from(e: cudarc::cusolver::result::CusolverError) -> Self {
        DeviceError::Library {
            library: "cuSOLVER",
            status: format!("{:?}", e.0),
        }
    }
}

impl From<cudarc::cusparse::result::CusparseError> for DeviceError {
    fn from(e: cudarc::cusparse::result::CusparseError) -> Self {
        DeviceError::Library {
            library: "cuSPARSE",
            status: format!("{:?}", e.0),
        }
    }
}

impl From<cudarc::nvrtc::result::NvrtcError> for DeviceError {
    fn from(e: cudarc::nvrtc::result::NvrtcError) -> Self {
        DeviceError::Compile(format!("{:?}", e.0))
    }
}

impl DeviceError {
    /// A cuSOLVER status other than success as an error (for calls made through `sys`).
    pub fn check_cusolver(
        what: &str,
        status: cudarc::cusolver::sys::cusolverStatus_t,
    ) -> Result<(), DeviceError> {
        if status == cudarc::cusolver::sys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            Ok(())
        } else {
            Err(DeviceError::Library {
                library: "cuSOLVER",
                status: format!("{what}: {status:?}"),
            })
        }
    }
}

/// The CUDA libraries hylapack may load, and whether each is present on this host.
#[derive(Clone, Debug)]
pub struct Libraries {
    pub driver: bool,
    pub nvrtc: bool,
    pub cublas: bool,
    pub cusparse: bool,
    pub cusolver: bool,
}

/// Probes each CUDA library without loading any symbol from it.
pub fn libraries() -> &'static Libraries {
    static LIBS: OnceLock<Libraries> = OnceLock::new();
    LIBS.get_or_init(|| {
        let probe =
            |f: unsafe fn() -> bool| std::panic::catch_unwind(|| unsafe { f() }).unwrap_or(false);
        Libraries {
            driver: probe(cudarc::driver::sys::is_culib_present),
            nvrtc: probe(cudarc::nvrtc::sys::is_culib_present),
            cublas: probe(cudarc::cublas::sys::is_culib_present),
            cusparse: probe(cudarc::cusparse::sys::is_culib_present),
            cusolver: probe(cudarc::cusolver::sys::is_culib_present),
        }
    })
}

/// What was found about the GPU in use.
#[derive(Clone, Debug)]
pub struct GpuInfo {
    pub name: String,
    pub ordinal: usize,
    pub compute_capability: (i32, i32),
    pub multiprocessors: i32,
    pub total_memory: u64,
    /// CUDA driver API version, e.g. 13000 for 13.0.
    pub driver_version: i32,
    /// NVRTC (major, minor).
    pub nvrtc_version: (i32, i32),
}

impl GpuInfo {
    /// NVRTC's name for the device's architecture, e.g. "sm_90".
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

/// The GPU hylapack runs on: one shared context for the process.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub info: GpuInfo,
    pub budget: memory::Budget,
    streams: Mutex<Vec<Arc<CudaStream>>>,
    modules: Mutex<HashMap<&'static str, LoadedModule>>,
    functions: Mutex<HashMap<(&'static str, String), CudaFunction>>,
    staging: Mutex<memory::StagingPool>,
}

/// A kernel family loaded into the context, and how its cubin was obtained.
#[derive(Clone)]
pub struct LoadedModule {
    pub module: Arc<CudaModule>,
    pub origin: kernels::Origin,
    pub load_time: std::time::Duration,
}

static GPU: OnceLock<Result<Gpu, DeviceError>> = OnceLock::new();

/// The process that first asked for the GPU (0: none yet). A `fork()` child sees another
/// process id and never touches the GPU: not the parent's context, which CUDA does not carry
/// over, and not the locks (discovery's, the pools') that a parent thread may have held at
/// the fork, which would hang it. Its calls run on the CPU.
static OWNER: AtomicU32 = AtomicU32::new(0);

/// The process's GPU, discovered on first use. Never panics.
pub fn gpu() -> Result<&'static Gpu, DeviceError> {
    let me = std::process::id();
    if let Err(owner) = OWNER.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire) {
        if owner != me {
            return Err(DeviceError::Forked);
        }
    }
    GPU.get_or_init(|| {
        let found = std::panic::catch_unwind(discover)
            .unwrap_or_else(|_| Err(DeviceError::Driver("panic during GPU discovery".into())));
        match &found {
            Ok(g) => log::debug(|| {
                format!(
                    "GPU {} ({}), {} MiB, budget {} MiB",
                    g.info.name,
                    g.info.arch(),
                    g.info.total_memory >> 20,
                    g.budget.limit() >> 20
                )
            }),
            Err(e) => log::debug(|| format!("no GPU: {e}")),
        }
        found
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn discover() -> Result<Gpu, DeviceError> {
    let libs = libraries();
    if !libs.driver {
        return Err(DeviceError::NoDriver);
    }
    let count = CudaContext::device_count().map_err(|e| DeviceError::NoDevice(e.to_string()))?;
    if count < 1 {
        return Err(DeviceError::NoDevice("the driver reports 0 devices".into()));
    }
    if !libs.nvrtc {
        return Err(DeviceError::NoNvrtc);
    }
    let ctx = CudaContext::new(0)?;
    let mut driver_version = 0;
    // SAFETY: the driver library is present (probed above) and initialised by CudaContext::new.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) }
        .result()
        .map_err(|e| DeviceError::Driver(e.to_string()))?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is present (probed above); the call only writes the two integers.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| DeviceError::Compile(format!("{e:?}")))?;
    let multiprocessors = ctx.attribute(
        cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    )?;
    let info = GpuInfo {
        name: ctx.name()?,
        ordinal: 0,
        compute_capability: ctx.compute_capability()?,
        multiprocessors,
        total_memory: ctx.total_mem()? as u64,
        driver_version,
        nvrtc_version: (major, minor),
    };
    let (free, _) = ctx.mem_get_info()?;
    let budget = memory::Budget::new(config::get().gpu_memory_limit, free as u64);
    Ok(Gpu {
        ctx,
        info,
        budget,
        streams: Mutex::new(Vec::new()),
        modules: Mutex::new(HashMap::new()),
        functions: Mutex::new(HashMap::new()),
        staging: Mutex::new(memory::StagingPool::new()),
    })
}

/// A stream borrowed from the pool; it goes back when dropped.
pub struct PooledStream {
    stream: Option<Arc<CudaStream>>,
    gpu: &'static Gpu,
}

impl std::ops::Deref for PooledStream {
    type Target = Arc<CudaStream>;
    fn deref(&self) -> &Arc<CudaStream> {
        self.stream.as_ref().expect("stream present until drop")
    }
}

impl Drop for PooledStream {
    fn drop(&mut self) {
        if let Some(s) = self.stream.take() {
            // A stream with failed work is not reused.
            if s.synchronize().is_ok() {
                lock(&self.gpu.streams).push(s);
            }
        }
    }
}

/// Locks a mutex even if another thread panicked while holding it (the data stays valid:
/// only whole values are pushed and popped).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Gpu {
    /// A stream for the calling thread's work, from the pool or new.
    pub fn stream(&'static self) -> Result<PooledStream, DeviceError> {
        let pooled = lock(&self.streams).pop();
        let stream = match pooled {
            Some(s) => s,
            None => self.ctx.new_stream()?,
        };
        Ok(PooledStream {
            stream: Some(stream),
            gpu: self,
        })
    }

    /// The module of one kernel family, compiled (or read from the cache) on first use.
    pub fn module(
        &self,
        source: &'static kernels::KernelSource,
    ) -> Result<Arc<CudaModule>, DeviceError> {
        Ok(self.loaded_module(source)?.module)
    }

    /// The kernel `name` of a family: its module loaded once, the function looked up once,
    /// both kept for the life of the process.
    pub fn function(
        &self,
        source: &'static kernels::KernelSource,
        name: &str,
    ) -> Result<CudaFunction, DeviceError> {
        let key = (source.name, name.to_string());
        if let Some(f) = lock(&self.functions).get(&key) {
            return Ok(f.clone());
        }
        let f = self.module(source)?.load_function(name)?;
        lock(&self.functions).insert(key, f.clone());
        Ok(f)
    }

    /// Like `module`, with how the cubin was obtained (for `hylapack info`).
    pub fn loaded_module(
        &self,
        source: &'static kernels::KernelSource,
    ) -> Result<LoadedModule, DeviceError> {
        // Held while compiling, so two threads never compile the same family twice.
        let mut modules = lock(&self.modules);
        if let Some(m) = modules.get(source.name) {
            return Ok(m.clone());
        }
        let loaded = kernels::load(self, source)?;
        modules.insert(source.name, loaded.clone());
        Ok(loaded)
    }

    /// The part of a kernel cache key that names the toolchain: driver and NVRTC versions.
    pub fn kernel_tag(&self) -> String {
        let (major, minor) = self.info.nvrtc_version;
        format!("drv{}-nvrtc{major}.{minor}", self.info.driver_version)
    }
}

/// Makes `stream` wait for the work queued so far on `foreign`, a stream of the caller's in the
/// process's primary context (where the CUDA runtime works too).
///
/// # Safety
/// `foreign` is a live stream of that context (or the null stream).
pub unsafe fn wait_for_stream(
    stream: &CudaStream,
    foreign: cudarc::driver::sys::CUstream,
) -> Result<(), DeviceError> {
    use cudarc::driver::sys;
    stream.context().bind_to_thread()?;
    let mut event: sys::CUevent = std::ptr::null_mut();
    // SAFETY: the event is created, recorded on the caller's stream, waited for by ours (the
    // wait is captured at enqueue time) and destroyed; the context is current.
    unsafe {
        sys::cuEventCreate(
            &mut event,
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32,
        )
        .result()?;
        let queued = sys::cuEventRecord(event, foreign)
            .result()
            .and_then(|_| sys::cuStreamWaitEvent(stream.cu_stream(), event, 0).result());
        let _ = sys::cuEventDestroy_v2(event);
        queued?;
    }
    Ok(())
}

/// Whether `ptr` is memory the GPU can address (device, managed or registered host memory),
/// as the driver knows it. False for plain host memory and for unknown addresses.
pub fn is_device_accessible(gpu: &Gpu, ptr: u64) -> bool {
    use cudarc::driver::sys;
    if gpu.ctx.bind_to_thread().is_err() {
        return false;
    }
    let mut kind: u32 = 0;
    // SAFETY: the attribute is a 32-bit memory type written into `kind`; the context is current.
    let r = unsafe {
        sys::cuPointerGetAttribute(
            &mut kind as *mut u32 as *mut std::ffi::c_void,
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            ptr,
        )
    };
    r == sys::CUresult::CUDA_SUCCESS && kind != 0
}
