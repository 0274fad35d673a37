//! Run-time settings: environment variables over an optional TOML file over built-in defaults.
//! A bad value is reported once on stderr and replaced by the default; it never aborts.

use std::path::PathBuf;
use std::sync::OnceLock;

/// Which backend may run a call (`HYLAPACK_DEVICE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceMode {
    /// GPU where the problem is large enough and a GPU exists, else CPU.
    Auto,
    /// GPU at every size (for testing); CPU only when no GPU path is possible.
    Gpu,
    /// Never the GPU.
    Cpu,
}

/// How much the library logs on stderr (`HYLAPACK_LOG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Off,
    /// One line per call: routine, size, backend, time, and why the GPU was not used.
    Info,
    /// Also device discovery, kernel compilation and cache use.
    Debug,
}

/// How `digemm` forms an interval product (`HYLAPACK_DIGEMM_METHOD`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigemmMethod {
    /// Choose per call: midpoint–radius when every bound is finite (it runs on GEMMs and was
    /// faster at every size measured), infimum–supremum otherwise.
    Auto,
    /// Each term's interval product rounded outward: the tighter enclosure of the two.
    InfSup,
    /// Rump's midpoint–radius product on round-to-nearest GEMMs with an a-priori error bound:
    /// the radius is at most 1.5× the exact product's, plus the rounding bound.
    MidRad,
}

impl DigemmMethod {
    pub fn name(self) -> &'static str {
        match self {
            DigemmMethod::Auto => "auto",
            DigemmMethod::InfSup => "infsup",
            DigemmMethod::MidRad => "midrad",
        }
    }
}

/// How the gtsv GPU path moves the caller's host arrays (`HYLAPACK_GTSV_HOST_TRANSFER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GtsvHostTransfer {
    /// Per size: `register` from [`GtsvTransfer::register_min_n`], else `staged` from
    /// [`GtsvTransfer::staged_min_n`], else `pageable`.
    Auto,
    /// Page-lock the caller's arrays for the call (cuMemHostRegister) and move them by DMA;
    /// `staged` where the driver refuses.
    Register,
    /// Host copies into pinned buffers on worker threads, overlapped with the DMA of earlier
    /// pieces.
    Staged,
    /// The caller's pageable memory copied by the calling thread through two pinned buffers
    /// (the path before these settings existed).
    Pageable,
}

impl GtsvHostTransfer {
    pub fn name(self) -> &'static str {
        match self {
            GtsvHostTransfer::Auto => "auto",
            GtsvHostTransfer::Register => "register",
            GtsvHostTransfer::Staged => "staged",
            GtsvHostTransfer::Pageable => "pageable",
        }
    }

    pub fn parse(v: &str) -> Option<Self> {
        match v.to_ascii_lowercase().as_str() {
            "auto" => Some(GtsvHostTransfer::Auto),
            "register" => Some(GtsvHostTransfer::Register),
            "staged" => Some(GtsvHostTransfer::Staged),
            "pageable" => Some(GtsvHostTransfer::Pageable),
            _ => None,
        }
    }
}

/// The gtsv host-transfer settings, resolved once and passed down in the GPU options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GtsvTransfer {
    pub mode: GtsvHostTransfer,
    /// `auto` registers from this order up (`HYLAPACK_GTSV_REGISTER_MIN_N`).
    pub register_min_n: usize,
    /// `auto` stages on worker threads from this order up (`HYLAPACK_GTSV_STAGED_MIN_N`).
    pub staged_min_n: usize,
}

impl Default for GtsvTransfer {
    fn default() -> Self {
        // On an H200 host (docs/bench/2026-11-26-h200-session17.txt), random systems with one
        // right-hand side: staged was the fastest at every order measured, 2^18 to 2^26 (2^23:
        // 19.6 ms against 26.4 pageable and 28.3 registered); registering cost more than it
        // saved from 2^22 up, so `auto` never registers. On an H100 host (session 23's log)
        // page-locking DL, D, DU and B at 2^23 (256 MiB) took 11-15 ms and unlocking 5 ms,
        // serialized in the driver (no faster from 4 or 16 threads), against 5 ms of DMA.
        GtsvTransfer {
            mode: GtsvHostTransfer::Auto,
            register_min_n: usize::MAX,
            staged_min_n: 1 << 18,
        }
    }
}

impl GtsvTransfer {
    /// The transfer for a system of order `n` (never `Auto`).
    pub fn for_n(&self, n: usize) -> GtsvHostTransfer {
        match self.mode {
            GtsvHostTransfer::Auto if n >= self.register_min_n => GtsvHostTransfer::Register,
            GtsvHostTransfer::Auto => self.unregistered(n),
            mode => mode,
        }
    }

    /// Where registration is refused: `staged` when it was asked for, else `auto`'s choice
    /// without registration.
    pub fn unregistered(&self, n: usize) -> GtsvHostTransfer {
        match self.mode {
            GtsvHostTransfer::Auto if n < self.staged_min_n => GtsvHostTransfer::Pageable,
            _ => GtsvHostTransfer::Staged,
        }
    }
}

/// Settings of the band reduction (`sbr`), resolved once per call by its driver and passed
/// down to the stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SbrTuning {
    /// `HYLAPACK_SBR_PROFILE=1`: synchronise after each phase and print the phase times.
    pub profile: bool,
    /// `HYLAPACK_SBR_DIRECT` (default 1): the streaming mode page-locks the user's matrix for
    /// the call and moves block columns by DMA, without staging copies. `0` is for a matrix
    /// that page-locking would cost more than it saves (e.g. 80 GB never written: 23 s).
    pub direct: bool,
}

impl Default for SbrTuning {
    fn default() -> Self {
        SbrTuning {
            profile: false,
            direct: true,
        }
    }
}

/// Smallest problem order sent to the GPU in `auto` mode, per routine family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinN {
    pub stebz: usize,
    pub gtsv: usize,
    pub syrdb: usize,
    pub interval: usize,
}

impl Default for MinN {
    fn default() -> Self {
        // Below these sizes the system LAPACK on a host CPU wins (transfer and launch costs).
        // gtsv: the SPIKE GPU path with host pointers (transfers included) beat LAPACK dgtsv
        // from n = 2^16 (0.74 ms vs 1.73 ms random, 0.84 vs 1.45 ms diagonally dominant; 2^23:
        // 19 ms vs 225 ms) and lost at 2^14 with one right-hand side (0.50 vs 0.42 ms); H100
        // host, 2026-11-22, docs/bench/2026-11-22-h100-gtsv.txt.
        MinN {
            stebz: 256,
            gtsv: 1 << 16,
            syrdb: 2048,
            interval: 512,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub device: DeviceMode,
    /// `HYLAPACK_REQUIRE_GPU=1`: tests fail instead of skipping when the GPU path is not taken.
    pub require_gpu: bool,
    pub log: LogLevel,
    /// Upper bound on GPU memory one process uses, in bytes (`HYLAPACK_GPU_MEMORY_LIMIT`).
    pub gpu_memory_limit: Option<u64>,
    pub min_n: MinN,
    pub digemm_method: DigemmMethod,
    /// `HYLAPACK_GTSV_REFINE` (default 2): the most steps of iterative refinement a gtsv call
    /// takes towards LAPACK's residual; 0 keeps SPIKE's first answer wherever it passes the
    /// backward-error acceptance test.
    pub gtsv_refine: usize,
    /// `HYLAPACK_GTSV_WINDOW` (default 6): the halo, in partitions of 8 rows on each side of a
    /// CTA, of the one-pass window solve that gtsv's GPU path tries first on large systems
    /// (it pays on diagonally dominant ones); 0 turns it off.
    pub gtsv_window: usize,
    /// `HYLAPACK_GTSV_HOST_TRANSFER` (auto, register, staged or pageable) and the orders at
    /// which `auto` switches (`HYLAPACK_GTSV_REGISTER_MIN_N`, `HYLAPACK_GTSV_STAGED_MIN_N`).
    pub gtsv_transfer: GtsvTransfer,
    pub sbr: SbrTuning,
    /// Where compiled kernels are cached.
    pub cache_dir: PathBuf,
    /// Problems found while reading the settings, already reported.
    pub warnings: Vec<String>,
}

static CONFIG: OnceLock<Config> = OnceLock::new();

/// The process-wide settings, read once on first use.
pub fn get() -> &'static Config {
    CONFIG.get_or_init(|| {
        let config = load(|k| std::env::var(k).ok());
        for w in &config.warnings {
            eprintln!("hylapack: {w}");
        }
        config
    })
}

/// The largest configuration file read (a settings file is a few hundred bytes).
pub const CONFIG_FILE_LIMIT: u64 = 1 << 20;

/// The text of the configuration file at `path`: only a regular file of at most
/// [`CONFIG_FILE_LIMIT`] bytes. The file is opened without blocking (a FIFO with no writer would
/// otherwise hang the first call forever) and judged by what was opened, not by the name, so a
/// FIFO, a device (`/dev/zero` would be read until memory runs out) or a directory is refused.
pub fn read_config_file(path: &str) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    if meta.len() > CONFIG_FILE_LIMIT {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("larger than {CONFIG_FILE_LIMIT} bytes"),
        ));
    }
    let mut text = String::new();
    // The size may change between the check and the read: never read past the limit.
    f.take(CONFIG_FILE_LIMIT + 1).read_to_string(&mut text)?;
    if text.len() as u64 > CONFIG_FILE_LIMIT {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("larger than {CONFIG_FILE_LIMIT} bytes"),
        ));
    }
    Ok(text)
}

/// Reads the settings from `env` (a lookup, so tests need not touch the process environment)
/// and the TOML file that `HYLAPACK_CONFIG` names.
pub fn load(env: impl Fn(&str) -> Option<String>) -> Config {
    let mut warnings = Vec::new();
    let mut file = toml::Table::new();
    if let Some(path) = env("HYLAPACK_CONFIG").filter(|p| !p.is_empty()) {
        match read_config_file(&path) {
            Ok(text) => match text.parse::<toml::Table>() {
                Ok(t) => file = t,
                Err(e) => warnings.push(format!(
                    "HYLAPACK_CONFIG {path}: not valid TOML ({e}); using defaults"
                )),
            },
            Err(e) => warnings.push(format!(
                "HYLAPACK_CONFIG {path}: cannot read ({e}); using defaults"
            )),
        }
    }
    let mut s = Settings {
        env: &env,
        file: &file,
        warnings: &mut warnings,
    };

    let device = s
        .lookup(
            "HYLAPACK_DEVICE",
            "device",
            |v| match v.to_ascii_lowercase().as_str() {
                "auto" => Some(DeviceMode::Auto),
                "gpu" => Some(DeviceMode::Gpu),
                "cpu" => Some(DeviceMode::Cpu),
                _ => None,
            },
            "auto, gpu or cpu",
        )
        .unwrap_or(DeviceMode::Auto);
    let require_gpu = s
        .lookup("HYLAPACK_REQUIRE_GPU", "require_gpu", parse_bool, "0 or 1")
        .unwrap_or(false);
    let log = s
        .lookup(
            "HYLAPACK_LOG",
            "log",
            |v| match v.to_ascii_lowercase().as_str() {
                "off" | "0" | "" => Some(LogLevel::Off),
                "info" | "1" => Some(LogLevel::Info),
                "debug" | "2" => Some(LogLevel::Debug),
                _ => None,
            },
            "off, info or debug",
        )
        .unwrap_or(LogLevel::Off);
    let gpu_memory_limit = s.lookup(
        "HYLAPACK_GPU_MEMORY_LIMIT",
        "gpu_memory_limit",
        parse_bytes,
        "a byte count such as 4G or 512M",
    );
    let defaults = MinN::default();
    let mut min_n = |family: &str, default: usize| {
        let key = format!("min_n.{family}");
        let var = format!("HYLAPACK_MIN_N_{}", family.to_ascii_uppercase());
        s.lookup(
            &var,
            &key,
            |v| v.parse::<usize>().ok(),
            "a non-negative integer",
        )
        .unwrap_or(default)
    };
    let min_n = MinN {
        stebz: min_n("stebz", defaults.stebz),
        gtsv: min_n("gtsv", defaults.gtsv),
        syrdb: min_n("syrdb", defaults.syrdb),
        interval: min_n("interval", defaults.interval),
    };
    let digemm_method = s
        .lookup(
            "HYLAPACK_DIGEMM_METHOD",
            "digemm_method",
            |v| match v.to_ascii_lowercase().as_str() {
                "auto" => Some(DigemmMethod::Auto),
                "infsup" => Some(DigemmMethod::InfSup),
                "midrad" => Some(DigemmMethod::MidRad),
                _ => None,
            },
            "auto, infsup or midrad",
        )
        .unwrap_or(DigemmMethod::Auto);
    let gtsv_refine = s
        .lookup(
            "HYLAPACK_GTSV_REFINE",
            "gtsv_refine",
            |v| v.parse::<usize>().ok().filter(|&k| k <= 2),
            "0, 1 or 2",
        )
        .unwrap_or(2);
    let gtsv_window = s
        .lookup(
            "HYLAPACK_GTSV_WINDOW",
            "gtsv_window",
            |v| v.parse::<usize>().ok().filter(|&h| h <= 32),
            "an integer from 0 to 32",
        )
        .unwrap_or(6);
    let transfer_default = GtsvTransfer::default();
    let gtsv_transfer = GtsvTransfer {
        mode: s
            .lookup(
                "HYLAPACK_GTSV_HOST_TRANSFER",
                "gtsv_host_transfer",
                GtsvHostTransfer::parse,
                "auto, register, staged or pageable",
            )
            .unwrap_or(transfer_default.mode),
        register_min_n: s
            .lookup(
                "HYLAPACK_GTSV_REGISTER_MIN_N",
                "gtsv_register_min_n",
                |v| v.parse::<usize>().ok(),
                "a non-negative integer",
            )
            .unwrap_or(transfer_default.register_min_n),
        staged_min_n: s
            .lookup(
                "HYLAPACK_GTSV_STAGED_MIN_N",
                "gtsv_staged_min_n",
                |v| v.parse::<usize>().ok(),
                "a non-negative integer",
            )
            .unwrap_or(transfer_default.staged_min_n),
    };
    let sbr = SbrTuning {
        profile: s
            .lookup("HYLAPACK_SBR_PROFILE", "sbr.profile", parse_bool, "0 or 1")
            .unwrap_or(SbrTuning::default().profile),
        direct: s
            .lookup("HYLAPACK_SBR_DIRECT", "sbr.direct", parse_bool, "0 or 1")
            .unwrap_or(SbrTuning::default().direct),
    };
    let cache_dir = s
        .lookup(
            "HYLAPACK_CACHE_DIR",
            "cache_dir",
            |v| (!v.is_empty()).then(|| PathBuf::from(v)),
            "a path",
        )
        .unwrap_or_else(|| default_cache_dir(&env));
    Config {
        device,
        require_gpu,
        log,
        gpu_memory_limit,
        min_n,
        digemm_method,
        gtsv_refine,
        gtsv_window,
        gtsv_transfer,
        sbr,
        cache_dir,
        warnings,
    }
}

struct Settings<'a, E> {
    env: &'a E,
    file: &'a toml::Table,
    warnings: &'a mut Vec<String>,
}

impl<E: Fn(&str) -> Option<String>> Settings<'_, E> {
    /// The value of environment variable `var`, else of the file's `key` ("a.b" for tables).
    fn lookup<V>(
        &mut self,
        var: &str,
        key: &str,
        parse: impl Fn(&str) -> Option<V>,
        expected: &str,
    ) -> Option<V> {
        if let Some(raw) = (self.env)(var) {
            match parse(raw.trim()) {
                Some(v) => return Some(v),
                None => self
                    .warnings
                    .push(format!("{var}='{raw}' is not {expected}; ignored")),
            }
        }
        let mut value = None;
        let mut table = self.file;
        let parts: Vec<&str> = key.split('.').collect();
        for (i, part) in parts.iter().enumerate() {
            match table.get(*part) {
                Some(toml::Value::Table(t)) if i + 1 < parts.len() => table = t,
                Some(v) if i + 1 == parts.len() => value = Some(v),
                _ => break,
            }
        }
        let value = value?;
        let text = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => other.to_string(),
        };
        let parsed = parse(text.trim());
        if parsed.is_none() {
            self.warnings.push(format!(
                "config key {key} = {value} is not {expected}; ignored"
            ));
        }
        parsed
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

/// "4G", "512M", "64K", "4GiB", "1000" (bytes) → bytes.
pub fn parse_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let split = v
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let num: f64 = num.parse().ok()?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    let bytes = num * scale as f64;
    (bytes.is_finite() && bytes >= 0.0).then_some(bytes as u64)
}

fn default_cache_dir(env: &impl Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(xdg) = env("XDG_CACHE_HOME").filter(|p| !p.is_empty()) {
        return PathBuf::from(xdg).join("hylapack");
    }
    if let Some(home) = env("HOME").filter(|p| !p.is_empty()) {
        return PathBuf::from(home).join(".cache").join("hylapack");
    }
    // A shared temporary directory: one folder per user, so users never load each other's cubins.
    // SAFETY: getuid has no preconditions and cannot fail.
    std::env::temp_dir().join(format!("hylapack-cache-{}", unsafe { libc::getuid() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load_from(vars: &[(&str, &str)]) -> Config {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        load(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_without_settings() {
        let c = load_from(&[("HOME", "/home/u")]);
        assert_eq!(c.device, DeviceMode::Auto);
        assert_eq!(c.log, LogLevel::Off);
        assert_eq!(c.gpu_memory_limit, None);
        assert_eq!(c.min_n, MinN::default());
        assert_eq!(c.gtsv_refine, 2);
        assert_eq!(c.cache_dir, PathBuf::from("/home/u/.cache/hylapack"));
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn bad_values_warn_and_fall_back() {
        let c = load_from(&[
            ("HYLAPACK_DEVICE", "tpu"),
            ("HYLAPACK_GPU_MEMORY_LIMIT", "lots"),
            ("HYLAPACK_LOG", "loud"),
            ("HYLAPACK_GTSV_REFINE", "3"),
        ]);
        assert_eq!(c.device, DeviceMode::Auto);
        assert_eq!(c.gpu_memory_limit, None);
        assert_eq!(c.log, LogLevel::Off);
        assert_eq!(c.gtsv_refine, 2);
        assert_eq!(c.warnings.len(), 4, "{:?}", c.warnings);
        assert_eq!(load_from(&[("HYLAPACK_GTSV_REFINE", "0")]).gtsv_refine, 0);
        assert_eq!(c.gtsv_window, 6);
        assert_eq!(load_from(&[("HYLAPACK_GTSV_WINDOW", "0")]).gtsv_window, 0);
        assert_eq!(load_from(&[("HYLAPACK_GTSV_WINDOW", "99")]).gtsv_window, 6);
    }

    #[test]
    fn gtsv_host_transfer_per_size() {
        let c = load_from(&[]);
        assert_eq!(c.gtsv_transfer, GtsvTransfer::default());
        assert_eq!(c.gtsv_transfer.for_n(1 << 17), GtsvHostTransfer::Pageable);
        assert_eq!(c.gtsv_transfer.for_n(1 << 26), GtsvHostTransfer::Staged);
        let c = load_from(&[
            ("HYLAPACK_GTSV_REGISTER_MIN_N", "1000"),
            ("HYLAPACK_GTSV_STAGED_MIN_N", "100"),
        ]);
        let t = c.gtsv_transfer;
        assert_eq!(t.for_n(99), GtsvHostTransfer::Pageable);
        assert_eq!(t.for_n(100), GtsvHostTransfer::Staged);
        assert_eq!(t.for_n(1000), GtsvHostTransfer::Register);
        assert_eq!(t.unregistered(1000), GtsvHostTransfer::Staged);
        assert_eq!(t.unregistered(99), GtsvHostTransfer::Pageable);
        let c = load_from(&[("HYLAPACK_GTSV_HOST_TRANSFER", "Register")]);
        assert_eq!(c.gtsv_transfer.for_n(2), GtsvHostTransfer::Register);
        assert_eq!(c.gtsv_transfer.unregistered(2), GtsvHostTransfer::Staged);
        let c = load_from(&[("HYLAPACK_GTSV_HOST_TRANSFER", "pinned")]);
        assert_eq!(c.gtsv_transfer.mode, GtsvHostTransfer::Auto);
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    }

    #[test]
    fn toml_file_and_env_precedence() {
        let dir = std::env::temp_dir().join(format!("hylapack-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        std::fs::write(&path, "device = \"cpu\"\ngpu_memory_limit = \"4G\"\nlog = \"info\"\n[min_n]\nstebz = 10\ngtsv = \"x\"\n").unwrap();
        let p = path.to_str().unwrap();
        let c = load_from(&[("HYLAPACK_CONFIG", p), ("HYLAPACK_LOG", "debug")]);
        assert_eq!(c.device, DeviceMode::Cpu);
        assert_eq!(c.gpu_memory_limit, Some(4 << 30));
        assert_eq!(c.log, LogLevel::Debug, "environment wins over the file");
        assert_eq!(c.min_n.stebz, 10);
        assert_eq!(c.min_n.gtsv, MinN::default().gtsv);
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        std::fs::write(&path, "device = [").unwrap();
        let c = load_from(&[("HYLAPACK_CONFIG", p)]);
        assert_eq!(c.device, DeviceMode::Auto);
        assert_eq!(c.warnings.len(), 1);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A FIFO with no writer used to block the first call forever, `/dev/zero` to be read until
    /// memory ran out: both are refused at once with one warning, and the defaults are used.
    #[test]
    #[allow(clippy::disallowed_methods)] // a test's thread: a refusal may fail the test
    fn config_naming_a_fifo_dev_zero_or_a_huge_file_warns_and_uses_defaults() {
        let dir = std::env::temp_dir().join(format!("hylapack-config-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let big = dir.join("big.toml");
        let mut text = "device = \"cpu\"\n".to_string();
        text.push_str(&"# padding\n".repeat((CONFIG_FILE_LIMIT as usize) / 10 + 1));
        std::fs::write(&big, text).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let paths = [
            fifo.to_str().unwrap().to_string(),
            "/dev/zero".to_string(),
            dir.to_str().unwrap().to_string(),
            big.to_str().unwrap().to_string(),
        ];
        std::thread::spawn(move || {
            for p in paths {
                let c = load_from(&[("HYLAPACK_CONFIG", &p)]);
                tx.send((p, c)).unwrap();
            }
        });
        for _ in 0..4 {
            let (p, c) = rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .expect("loading the configuration hung");
            assert_eq!(c.device, DeviceMode::Auto, "{p}");
            assert_eq!(c.warnings.len(), 1, "{p}: {:?}", c.warnings);
            assert!(
                c.warnings[0].contains("cannot read"),
                "{p}: {:?}",
                c.warnings
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("1024"), Some(1024));
        assert_eq!(parse_bytes("4G"), Some(4 << 30));
        assert_eq!(parse_bytes("512 MiB"), Some(512 << 20));
        assert_eq!(parse_bytes("1.5k"), Some(1536));
        assert_eq!(parse_bytes("-3"), None);
        assert_eq!(parse_bytes("4X"), None);
    }
}
