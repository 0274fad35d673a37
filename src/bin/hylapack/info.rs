//! `hylapack info`: what the library found and how it will dispatch.

use hylapack::config::{self, DeviceMode};
use hylapack::device::{self, kernels};
use hylapack::lapack::symbols;
use std::ffi::{c_char, CStr};

/// OpenBLAS's description of its build (version, threading, core), if the LAPACK in use is
/// OpenBLAS.
fn openblas_config() -> Option<String> {
    let address = symbols::resolve(c"openblas_get_config")?;
    // SAFETY: OpenBLAS's openblas_get_config takes nothing and returns a static C string.
    let f: unsafe extern "C" fn() -> *const c_char = unsafe { std::mem::transmute(address) };
    Some(
        unsafe { CStr::from_ptr(f()) }
            .to_string_lossy()
            .into_owned(),
    )
}

fn yes(found: bool) -> &'static str {
    if found {
        "found"
    } else {
        "missing"
    }
}

pub fn run() -> i32 {
    let cfg = config::get();
    println!("hylapack {}", env!("CARGO_PKG_VERSION"));
    let lapack = symbols::library_of(c"dgemm_").unwrap_or_else(|| "not found".into());
    println!(
        "CPU LAPACK/BLAS:   {lapack}{}; host threads: {}",
        openblas_config()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default(),
        hylapack::host::threads()
    );
    let libs = device::libraries();
    println!(
        "CUDA libraries:    driver {}, nvrtc {}, cublas {}, cusparse {}, cusolver {}",
        yes(libs.driver),
        yes(libs.nvrtc),
        yes(libs.cublas),
        yes(libs.cusparse),
        yes(libs.cusolver)
    );
    let mode = match cfg.device {
        DeviceMode::Auto => "auto",
        DeviceMode::Gpu => "gpu (GPU path at every size)",
        DeviceMode::Cpu => "cpu",
    };
    println!("HYLAPACK_DEVICE:   {mode}");
    let m = &cfg.min_n;
    let from = |n: usize| {
        if n == usize::MAX {
            "never".to_string()
        } else {
            format!("n >= {n}")
        }
    };
    println!(
        "GPU in auto mode:  stebz {}, gtsv {}, syrdb {}, interval {}",
        from(m.stebz),
        from(m.gtsv),
        from(m.syrdb),
        from(m.interval)
    );
    let t = &cfg.gtsv_transfer;
    println!(
        "gtsv host arrays:  {} (auto: register {}, staged {}, else pageable)",
        t.mode.name(),
        from(t.register_min_n),
        from(t.staged_min_n)
    );
    println!("Kernel cache:      {}", cfg.cache_dir.display());
    let mut status = 0;
    match device::gpu() {
        Err(e) => {
            println!("GPU:               none ({e})");
            println!(
                "Running CPU-only: every routine uses hylapack's CPU code or the system LAPACK."
            );
        }
        Ok(gpu) => {
            let i = &gpu.info;
            println!(
                "GPU:               {} (device {}), compute capability {}.{} ({}), {} multiprocessors, {:.1} GiB",
                i.name, i.ordinal, i.compute_capability.0, i.compute_capability.1, i.arch(), i.multiprocessors,
                i.total_memory as f64 / (1u64 << 30) as f64
            );
            println!(
                "CUDA driver:       {}.{}; NVRTC {}.{}",
                i.driver_version / 1000,
                i.driver_version % 1000 / 10,
                i.nvrtc_version.0,
                i.nvrtc_version.1
            );
            let limit = cfg
                .gpu_memory_limit
                .map_or("none".to_string(), |b| format!("{b} bytes"));
            println!(
                "GPU memory budget: {:.2} GiB (HYLAPACK_GPU_MEMORY_LIMIT: {limit})",
                gpu.budget.limit() as f64 / (1u64 << 30) as f64
            );
            for source in kernels::all() {
                match gpu.loaded_module(source) {
                    Ok(m) => println!(
                        "Kernels {:<10} {} for {} in {:.1} ms",
                        format!("{}:", source.name),
                        match m.origin {
                            kernels::Origin::Compiled => "compiled by NVRTC",
                            kernels::Origin::Cache => "loaded from the cache",
                        },
                        i.arch(),
                        m.load_time.as_secs_f64() * 1e3
                    ),
                    Err(e) => {
                        println!("Kernels {}: FAILED: {e}", source.name);
                        status = 1;
                    }
                }
            }
        }
    }
    status
}
