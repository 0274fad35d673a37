//! Kernels from `kernels/*.cu`: embedded at build time, compiled by NVRTC to a cubin for the
//! device's architecture at first use, and cached on disk keyed by source hash, architecture,
//! driver and NVRTC version. A cache entry that fails its checksum or does not load is rebuilt.

use super::{DeviceError, Gpu, LoadedModule};
use crate::log;
use cudarc::nvrtc::sys as nvrtc;
use std::ffi::{c_char, CStr};
use std::path::{Path, PathBuf};

/// One kernel module: its source (a `.cu` file, or part of one), and the NVRTC options it is
/// compiled with (part of its cache key).
pub struct KernelSource {
    pub name: &'static str,
    /// The files under `kernels/` (without `.cu`), and the lines put before them (`#define`s
    /// that pick one of their modules): `source` is the head and the files, in this order.
    pub files: &'static [&'static str],
    pub head: &'static str,
    pub source: &'static str,
    pub options: &'static [&'static str],
}

/// A module: `kernels/<file>.cu` (or several files, in order) after `head` (`#define`s that
/// pick the module's kernels).
macro_rules! module {
    ($name:literal, $file:literal, $head:literal) => {
        module!($name, [$file], $head)
    };
    ($name:literal, [$($file:literal),+], $head:literal) => {
        KernelSource {
            name: $name,
            files: &[$($file),+],
            head: $head,
            source: concat!($head, $(include_str!(concat!("../../kernels/", $file, ".cu"))),+),
            options: EXACT,
        }
    };
}

// Families whose kernels take NVRTC seconds are split into modules by precision and size, so
// that a call compiles only its own at first use: on an H100 host (NVRTC 13, its own cache
// empty) the tridiagonal solver's one module of all sizes took 54 s at a first dgtsv, its
// double module for M = 8 2.3 s.

/// Sturm counts for the tridiagonal eigenvalue family.
pub static STEBZ: KernelSource = module!("stebz", "stebz", "");

/// SPIKE + diagonal pivoting for the tridiagonal solver family: a module per precision and
/// partition size, for whole levels, then for the slices of a streamed top level
/// (`GTSV_SLICES`, compiled only when a solve first streams).
pub static GTSV: [KernelSource; 12] = [
    module!(
        "gtsv_s_m8",
        ["spike_partition", "gtsv"],
        "#define GTSV_T float\n#define GTSV_SFX s\n#define GTSV_M 8\n"
    ),
    module!(
        "gtsv_s_m16",
        ["spike_partition", "gtsv"],
        "#define GTSV_T float\n#define GTSV_SFX s\n#define GTSV_M 16\n"
    ),
    module!(
        "gtsv_s_m32",
        ["spike_partition", "gtsv"],
        "#define GTSV_T float\n#define GTSV_SFX s\n#define GTSV_M 32\n"
    ),
    module!(
        "gtsv_d_m8",
        ["spike_partition", "gtsv"],
        "#define GTSV_T double\n#define GTSV_SFX d\n#define GTSV_M 8\n"
    ),
    module!(
        "gtsv_d_m16",
        ["spike_partition", "gtsv"],
        "#define GTSV_T double\n#define GTSV_SFX d\n#define GTSV_M 16\n"
    ),
    module!(
        "gtsv_d_m32",
        ["spike_partition", "gtsv"],
        "#define GTSV_T double\n#define GTSV_SFX d\n#define GTSV_M 32\n"
    ),
    module!(
        "gtsv_slice_s_m8",
        ["spike_partition", "gtsv"],
        "#define GTSV_SLICES 1\n#define GTSV_T float\n#define GTSV_SFX s\n#define GTSV_M 8\n"
    ),
    module!(
        "gtsv_slice_s_m16",
        ["spike_partition", "gtsv"],
        "#define GTSV_SLICES 1\n#define GTSV_T float\n#define GTSV_SFX s\n#define GTSV_M 16\n"
    ),
    module!(
        "gtsv_slice_s_m32",
        ["spike_partition", "gtsv"],
        "#define GTSV_SLICES 1\n#define GTSV_T float\n#define GTSV_SFX s\n#define GTSV_M 32\n"
    ),
    module!(
        "gtsv_slice_d_m8",
        ["spike_partition", "gtsv"],
        "#define GTSV_SLICES 1\n#define GTSV_T double\n#define GTSV_SFX d\n#define GTSV_M 8\n"
    ),
    module!(
        "gtsv_slice_d_m16",
        ["spike_partition", "gtsv"],
        "#define GTSV_SLICES 1\n#define GTSV_T double\n#define GTSV_SFX d\n#define GTSV_M 16\n"
    ),
    module!(
        "gtsv_slice_d_m32",
        ["spike_partition", "gtsv"],
        "#define GTSV_SLICES 1\n#define GTSV_T double\n#define GTSV_SFX d\n#define GTSV_M 32\n"
    ),
];

/// The small systems of a strided batch, one warp per system (SPIKE with a partition per lane,
/// else xGTSV's partial pivoting): a module per precision.
pub static GTSV_BATCH: [KernelSource; 2] = [
    module!(
        "gtsv_batch_s",
        ["spike_partition", "gtsv_batch"],
        "#define GTSV_BATCH_T float\n#define GTSV_BATCH_SFX s\n"
    ),
    module!(
        "gtsv_batch_d",
        ["spike_partition", "gtsv_batch"],
        "#define GTSV_BATCH_T double\n#define GTSV_BATCH_SFX d\n"
    ),
];

/// Directed-rounding and interval products, and the verified solver's kernels.
pub static INTERVAL: KernelSource = module!("interval", "interval", "");

/// Band → tridiagonal bulge chasing for the dense eigenvalue path: a module per precision and
/// bandwidth, named as its kernel.
pub static SB2ST: [KernelSource; 4] = [
    module!(
        "sb2st_chase_s32",
        "sb2st",
        "#define SB2ST_T float\n#define SB2ST_PRE s\n#define SB2ST_R 32\n"
    ),
    module!(
        "sb2st_chase_d32",
        "sb2st",
        "#define SB2ST_T double\n#define SB2ST_PRE d\n#define SB2ST_R 32\n"
    ),
    module!(
        "sb2st_chase_s64",
        "sb2st",
        "#define SB2ST_T float\n#define SB2ST_PRE s\n#define SB2ST_R 64\n"
    ),
    module!(
        "sb2st_chase_d64",
        "sb2st",
        "#define SB2ST_T double\n#define SB2ST_PRE d\n#define SB2ST_R 64\n"
    ),
];

/// The bulge chasing's reflectors applied to eigenvectors (Q2 of the dense eigenvector path):
/// a module per precision and bandwidth, named as its kernel.
pub static SB2ST_Q2: [KernelSource; 4] = [
    module!(
        "sb2st_q2_s32",
        "sb2st_q2",
        "#define Q2_T float\n#define Q2_PRE s\n#define Q2_B 32\n"
    ),
    module!(
        "sb2st_q2_d32",
        "sb2st_q2",
        "#define Q2_T double\n#define Q2_PRE d\n#define Q2_B 32\n"
    ),
    module!(
        "sb2st_q2_s64",
        "sb2st_q2",
        "#define Q2_T float\n#define Q2_PRE s\n#define Q2_B 64\n"
    ),
    module!(
        "sb2st_q2_d64",
        "sb2st_q2",
        "#define Q2_T double\n#define Q2_PRE d\n#define Q2_B 64\n"
    ),
];

/// Inverse iteration for tridiagonal eigenvectors: a module per precision.
pub static STEIN: [KernelSource; 2] = [
    module!(
        "stein_s",
        "stein",
        "#define STEIN_T float\n#define STEIN_PRE s\n"
    ),
    module!(
        "stein_d",
        "stein",
        "#define STEIN_T double\n#define STEIN_PRE d\n"
    ),
];

/// The module of `family` named `name`, or why there is none (a size without kernels).
pub fn module_named(
    family: &'static [KernelSource],
    name: &str,
) -> Result<&'static KernelSource, DeviceError> {
    family
        .iter()
        .find(|k| k.name == name)
        .ok_or_else(|| DeviceError::Unsupported(format!("no kernel module {name}")))
}

/// Every kernel module (the compile test and `hylapack info` walk them).
pub fn all() -> impl Iterator<Item = &'static KernelSource> {
    let single = [&STEBZ, &INTERVAL];
    let families: [&'static [KernelSource]; 5] = [&GTSV, &GTSV_BATCH, &SB2ST, &SB2ST_Q2, &STEIN];
    single.into_iter().chain(families.into_iter().flatten())
}

/// IEEE division and square root, no flush-to-zero and no contraction into FMA: for kernels
/// whose correctness argument needs each operation rounded as written — Sturm counts that must
/// match the CPU's bit for bit, directed rounding, and the tridiagonal solver's exact products
/// (its compensated residual) and its tail kernel, which must agree bit for bit with the level
/// kernels. Every module uses them today; the bulge chasing (`sb2st`, explicit `fma` where it
/// matters) could allow contraction, once a GPU measurement shows what that is worth.
pub const EXACT: &[&str] = &[
    "--fmad=false",
    "--ftz=false",
    "--prec-div=true",
    "--prec-sqrt=true",
    "--std=c++17",
];

/// Where a cubin came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Compiled,
    Cache,
}

/// Compiles `source` to a cubin for `arch` ("sm_90"). Needs NVRTC, not a GPU.
pub fn compile(source: &KernelSource, arch: &str) -> Result<Vec<u8>, DeviceError> {
    if !super::libraries().nvrtc {
        return Err(DeviceError::NoNvrtc);
    }
    std::panic::catch_unwind(|| compile_unchecked(source, arch))
        .unwrap_or_else(|_| Err(DeviceError::Compile("panic inside NVRTC".into())))
}

fn compile_unchecked(source: &KernelSource, arch: &str) -> Result<Vec<u8>, DeviceError> {
    let err = |what: &str, e: cudarc::nvrtc::result::NvrtcError| {
        DeviceError::Compile(format!("{}: {what}: {e:?}", source.name))
    };
    let src = std::ffi::CString::new(source.source)
        .map_err(|_| DeviceError::Compile("NUL in kernel source".into()))?;
    let name = std::ffi::CString::new(format!("{}.cu", source.name)).expect("no NUL in name");
    let prog =
        cudarc::nvrtc::result::create_program(&src, Some(&name)).map_err(|e| err("create", e))?;
    let mut options: Vec<String> = source.options.iter().map(|s| s.to_string()).collect();
    options.push(format!("--gpu-architecture={arch}"));
    // SAFETY: prog is a live program; the options outlive the call.
    let compiled = unsafe { cudarc::nvrtc::result::compile_program(prog, &options) };
    let result = match compiled {
        Err(e) => {
            // SAFETY: prog is live; the log is a NUL-terminated buffer NVRTC filled.
            let log = unsafe { cudarc::nvrtc::result::get_program_log(prog) }
                .map(|l| {
                    unsafe { CStr::from_ptr(l.as_ptr()) }
                        .to_string_lossy()
                        .into_owned()
                })
                .unwrap_or_default();
            Err(DeviceError::Compile(format!(
                "{} for {arch}: {e:?}\n{log}",
                source.name
            )))
        }
        Ok(()) => get_cubin(prog).map_err(|e| err("get cubin", e)),
    };
    // SAFETY: prog is live and destroyed once.
    unsafe { cudarc::nvrtc::result::destroy_program(prog) }.ok();
    result
}

fn get_cubin(prog: nvrtc::nvrtcProgram) -> Result<Vec<u8>, cudarc::nvrtc::result::NvrtcError> {
    let mut size = 0usize;
    // SAFETY: prog compiled successfully for a real architecture, so a cubin of `size` bytes exists.
    unsafe { nvrtc::nvrtcGetCUBINSize(prog, &mut size).result()? };
    let mut cubin = vec![0u8; size];
    unsafe { nvrtc::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut c_char).result()? };
    Ok(cubin)
}

/// 64-bit FNV-1a: stable across Rust versions, enough to key a cache and catch corruption.
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h ^= 0xff; // separates the parts
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

const MAGIC: &[u8; 8] = b"HYLKCUB1";

/// The cache file of `source` for `arch` under `tag` (driver and NVRTC versions).
pub fn cache_path(dir: &Path, source: &KernelSource, arch: &str, tag: &str) -> PathBuf {
    let key = fnv1a(&[
        source.source.as_bytes(),
        source.options.join(" ").as_bytes(),
        arch.as_bytes(),
        tag.as_bytes(),
    ]);
    dir.join(format!("{}-{arch}-{tag}-{key:016x}.cubin", source.name))
}

/// The cubin of `source` for `arch`, from the cache in `dir` when a valid entry exists, else
/// compiled and stored. Cache trouble (unwritable directory, corrupt file) is logged, never fatal.
pub fn cubin(
    source: &KernelSource,
    arch: &str,
    dir: &Path,
    tag: &str,
) -> Result<(Vec<u8>, Origin), DeviceError> {
    let path = cache_path(dir, source, arch, tag);
    if let Some(bytes) = read_entry(&path) {
        return Ok((bytes, Origin::Cache));
    }
    let cubin = compile(source, arch)?;
    if let Err(e) = write_entry(&path, &cubin) {
        log::debug(|| format!("kernel cache {}: not written ({e})", path.display()));
    }
    Ok((cubin, Origin::Compiled))
}

fn read_entry(path: &Path) -> Option<Vec<u8>> {
    let data = std::fs::read(path).ok()?;
    let valid = data.len() > 16
        && &data[..8] == MAGIC
        && data[8..16] == fnv1a(&[&data[16..]]).to_le_bytes();
    if !valid {
        log::debug(|| format!("kernel cache {}: corrupt entry, rebuilding", path.display()));
        return None;
    }
    Some(data[16..].to_vec())
}

fn write_entry(path: &Path, cubin: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("cache entries live in a directory");
    std::fs::create_dir_all(dir)?;
    // Write to a unique temporary name and rename, so readers never see half a file.
    let tmp = dir.join(format!(
        ".tmp-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let mut data = Vec::with_capacity(cubin.len() + 16);
    data.extend_from_slice(MAGIC);
    data.extend_from_slice(&fnv1a(&[cubin]).to_le_bytes());
    data.extend_from_slice(cubin);
    std::fs::write(&tmp, &data)?;
    std::fs::rename(&tmp, path)
}

/// For kernel development on a GPU host without a Rust toolchain: with
/// `HYLAPACK_KERNEL_DIR` set, the module's files read from `<dir>/<file>.cu` (after its head)
/// replace its built-in source where all of them are there (compiled and cached like the
/// built-in one, under its own hash). They are read once per module load and kept for the
/// life of the process.
fn replacement(source: &KernelSource) -> Option<KernelSource> {
    let dir = std::env::var_os("HYLAPACK_KERNEL_DIR")?;
    let mut text = source.head.to_string();
    for file in source.files {
        let path = Path::new(&dir).join(format!("{file}.cu"));
        text.push_str(&std::fs::read_to_string(&path).ok()?);
    }
    log::debug(|| {
        format!(
            "kernels {}: source from {}",
            source.name,
            Path::new(&dir).display()
        )
    });
    Some(KernelSource {
        source: Box::leak(text.into_boxed_str()),
        ..*source
    })
}

/// Loads `source` into the GPU's context, going through the cache.
pub(super) fn load(gpu: &Gpu, source: &KernelSource) -> Result<LoadedModule, DeviceError> {
    let replaced = replacement(source);
    let source = replaced.as_ref().unwrap_or(source);
    let arch = gpu.info.arch();
    let tag = gpu.kernel_tag();
    let dir = &crate::config::get().cache_dir;
    let started = std::time::Instant::now();
    let (bytes, origin) = cubin(source, &arch, dir, &tag)?;
    let loaded = gpu.ctx.load_module(cudarc::nvrtc::Ptx::from_binary(bytes));
    let module = match (loaded, origin) {
        (Ok(m), _) => m,
        (Err(e), Origin::Cache) => {
            // A valid-looking entry the driver rejects: rebuild it once.
            log::debug(|| {
                format!(
                    "kernel cache entry for {} rejected by the driver ({e}); recompiling",
                    source.name
                )
            });
            let cubin = compile(source, &arch)?;
            write_entry(&cache_path(dir, source, &arch, &tag), &cubin).ok();
            gpu.ctx
                .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))?
        }
        (Err(e), Origin::Compiled) => return Err(e.into()),
    };
    let load_time = started.elapsed();
    log::debug(|| {
        format!(
            "kernels {} for {arch}: {origin:?} in {:.1} ms",
            source.name,
            load_time.as_secs_f64() * 1e3
        )
    });
    Ok(LoadedModule {
        module,
        origin,
        load_time,
    })
}
