//! `hylapack bench syev`: the dense symmetric eigenvalue path against cuSOLVER and the host's
//! LAPACK, in one run.
//!
//! Rows per order n (a random symmetric matrix):
//! - hylapack dense → band (`syrdb`) on the GPU in core, at the bandwidth the drivers pick for
//!   a resident matrix (or each of `--kd`), and with a GPU budget of a quarter of the matrix's
//!   bytes (out of core, at the drivers' out-of-core bandwidth, beside the same bandwidth in
//!   core for the ratio in its note); GFLOP/s counts 4n³/3 flops. "w/o transfers" subtracts
//!   the time the same in-core run spent uploading the lower triangle and downloading the
//!   result (each timed between synchronisations of the GPU).
//! - band → tridiagonal (the threaded bulge chasing, also with other numbers of sweeps per
//!   group; LAPACK xSYTRD_SB2ST for comparison up to n = 8192), then all eigenvalues by the GPU bisection (what `dsyev_ooc` does on the GPU
//!   path), and xSTERF for comparison;
//! - the whole `dsyev_ooc` path (JOBZ = 'N'): the sum of the three stages as the driver runs them;
//! - cuSOLVER Dsytrd and Dsyevd (eigenvalues only), device-resident: the matrix is on the GPU
//!   before the timer starts;
//! - the host's LAPACK: dsyevd (JOBZ = 'N'), and dsytrd_sy2sb + dsytrd_sb2st + dsterf, run
//!   only where their time predicted by n³ stays below `--lapack-limit` ([`LapackGate`]).
//!
//! Eigenvalues are checked against the first full spectrum computed for that order (cuSOLVER
//! Dsyevd, else LAPACK dsyevd): max |Δλ| / (n ε ‖A‖).

use crate::bench_cusolver::{self, Job, Timed};
use crate::table::{time, Table};
use hylapack::lapack::{Dense, Lapack};
use hylapack::sbr::executor::gpu::GpuExecutor;
use hylapack::sbr::{self, Executor, Path};
use hylapack::testmat::{self, DenseFamily, Rng};
use std::time::Instant;

struct Options {
    sizes: Vec<usize>,
    csv: Option<String>,
    /// Host LAPACK methods run only where their predicted time stays below this.
    lapack_limit_s: f64,
    /// Out-of-core runs only up to this order (their time grows with n³ / bandwidth).
    ooc_max_n: usize,
    /// Bandwidths of the hylapack rows (empty: the driver's choice).
    kds: Vec<usize>,
    /// Skip cuSOLVER.
    no_peers: bool,
    /// Only the dense → band rows (no bulge chasing, eigenvalues or drivers).
    reduction_only: bool,
    /// Only the driver, on the one copy of the matrix (orders whose matrix fills the host).
    in_place: bool,
    /// The triangle the out-of-core rows (and their in-core reference) read: b'L' or b'U'.
    ooc_uplo: u8,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        sizes: vec![4096, 8192, 16384, 32768],
        csv: None,
        lapack_limit_s: 60.0,
        ooc_max_n: 16384,
        kds: Vec::new(),
        no_peers: false,
        reduction_only: false,
        in_place: false,
        ooc_uplo: b'L',
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            other
                if shared_option(
                    other,
                    &mut it,
                    &mut o.sizes,
                    &mut o.csv,
                    &mut o.lapack_limit_s,
                )? => {}
            "--ooc-max" => {
                let v = it.next().ok_or("--ooc-max needs an order")?;
                o.ooc_max_n = v.parse().map_err(|_| format!("bad order {v}"))?;
            }
            "--kd" => {
                let v = it.next().ok_or("--kd needs a list")?;
                o.kds = v
                    .split(',')
                    .map(|s| s.trim().parse().map_err(|_| format!("bad bandwidth {s}")))
                    .collect::<Result<_, _>>()?;
            }
            "--no-peers" => o.no_peers = true,
            "--reduction-only" => o.reduction_only = true,
            "--in-place" => o.in_place = true,
            "--ooc-uplo" => {
                let v = it.next().ok_or("--ooc-uplo needs L or U")?;
                o.ooc_uplo = match v.as_str() {
                    "L" | "l" => b'L',
                    "U" | "u" => b'U',
                    _ => return Err(format!("bad --ooc-uplo {v}")),
                };
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

/// The options both syev benchmarks take (`--sizes`, `--csv`, `--lapack-limit`, `--quick`),
/// read into `sizes`, `csv` and `limit`: false if `a` is none of them.
pub(crate) fn shared_option(
    a: &str,
    it: &mut std::slice::Iter<'_, String>,
    sizes: &mut Vec<usize>,
    csv: &mut Option<String>,
    limit: &mut f64,
) -> Result<bool, String> {
    match a {
        "--sizes" => {
            let v = it.next().ok_or("--sizes needs a list")?;
            *sizes = v
                .split(',')
                .map(|s| s.trim().parse().map_err(|_| format!("bad size {s}")))
                .collect::<Result<_, _>>()?;
        }
        "--csv" => *csv = Some(it.next().ok_or("--csv needs a file")?.clone()),
        "--lapack-limit" => {
            let v = it.next().ok_or("--lapack-limit needs seconds")?;
            *limit = v.parse().map_err(|_| format!("bad limit {v}"))?;
        }
        "--quick" => {
            *sizes = vec![1024, 2048];
            *limit = 10.0;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `hylapack bench syev [--sizes 4096,8192] [--csv FILE] [--lapack-limit S] [--ooc-max N]
/// [--kd 32,64] [--no-peers] [--reduction-only] [--in-place] [--ooc-uplo L|U]`; with
/// `--vectors`, the eigenvector rows instead (see `bench_syev_vectors`).
pub fn bench_syev(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--vectors") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--vectors").cloned().collect();
        return crate::bench_syev_vectors::bench_syev_vectors(&rest);
    }
    match parse(args) {
        Ok(o) if o.in_place => run_in_place(&o),
        Ok(o) => run(&o),
        Err(e) => {
            eprintln!("hylapack bench syev: {e}");
            eprintln!("usage: hylapack bench syev [--vectors] [--sizes 4096,8192,16384,32768] [--csv FILE] [--lapack-limit 60] [--ooc-max 16384] [--kd 32,64] [--no-peers] [--reduction-only] [--in-place] [--ooc-uplo L] [--quick]");
            2
        }
    }
}

/// `HYLAPACK_SBR_PROFILE`, for the stages this benchmark calls one by one.
fn profile() -> bool {
    hylapack::config::get().sbr.profile
}

pub(crate) fn secs(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

/// Which of the host's LAPACK rows run: those whose time predicted by n³ stays within
/// `--lapack-limit`, from the method's last time at an order of at least min(n, `PROBE_N`);
/// where there is none (the first order, or the last was smaller), the method is timed once
/// at `PROBE_N` on a matrix of its own. Orders up to `PROBE_N` run unpredicted.
pub(crate) struct LapackGate {
    limit_s: f64,
    /// Per method: its last (order, seconds).
    last: Vec<Option<(usize, f64)>>,
}

impl LapackGate {
    pub(crate) const PROBE_N: usize = 1024;

    /// A gate for `methods` methods (numbered from 0); none run if `limit_s` ≤ 0.
    pub(crate) fn new(limit_s: f64, methods: usize) -> Self {
        LapackGate {
            limit_s,
            last: vec![None; methods],
        }
    }

    /// Whether method `k` (`what`) runs at order n, `probe(PROBE_N)` timing it (seconds) where
    /// needed; prints the prediction where it does not.
    pub(crate) fn fits(
        &mut self,
        k: usize,
        what: &str,
        n: usize,
        probe: impl FnOnce(usize) -> f64,
    ) -> bool {
        if self.limit_s <= 0.0 {
            return false;
        }
        if n <= Self::PROBE_N {
            return true;
        }
        let (n0, s0) = match self.last[k] {
            Some((n0, s0)) if n0 >= Self::PROBE_N => (n0, s0),
            _ => {
                let probed = (Self::PROBE_N, probe(Self::PROBE_N));
                self.last[k] = Some(probed);
                probed
            }
        };
        let predicted = s0 * (n as f64 / n0 as f64).powi(3);
        let fits = predicted <= self.limit_s;
        if !fits {
            println!(
                "n={n}: {what} left out: predicted {} (n³ from {} at n={n0}), above --lapack-limit {}",
                time(predicted),
                time(s0),
                time(self.limit_s)
            );
        }
        fits
    }

    /// Method `k` took `secs` at order n.
    pub(crate) fn record(&mut self, k: usize, n: usize, secs: f64) {
        self.last[k] = Some((n, secs));
    }
}

/// cuBLAS DGEMM rate (GFLOP/s) at order m, device-resident, through the executor.
fn dgemm_rate(m: usize) -> Result<f64, String> {
    let mut exec = GpuExecutor::<f64>::new(None).map_err(|e| e.to_string())?;
    let e = |x: sbr::ExecError| x.to_string();
    let a = exec.alloc(m * m).map_err(e)?;
    let b = exec.alloc(m * m).map_err(e)?;
    let mut c = exec.alloc(m * m).map_err(e)?;
    let mut one = [0.0];
    let mut go = |exec: &mut GpuExecutor<f64>, c: &mut _| -> Result<f64, String> {
        let t = Instant::now();
        for _ in 0..3 {
            exec.gemm(
                false,
                false,
                m,
                m,
                m,
                1.0,
                sbr::Op {
                    buf: &a,
                    off: 0,
                    ld: m,
                },
                sbr::Op {
                    buf: &b,
                    off: 0,
                    ld: m,
                },
                0.0,
                sbr::OpMut {
                    buf: c,
                    off: 0,
                    ld: m,
                },
            )
            .map_err(|x| x.to_string())?;
        }
        exec.download(c, 0, 1, &mut |_, p| one[0] = p[0])
            .map_err(|x| x.to_string())?;
        Ok(t.elapsed().as_secs_f64())
    };
    go(&mut exec, &mut c)?;
    let s = go(&mut exec, &mut c)?;
    Ok(3.0 * 2.0 * (m as f64).powi(3) / s / 1e9)
}

/// One row of the table: method, seconds, GFLOP/s, eigenvalues to check, note.
type Row = (String, f64, Option<f64>, Option<Vec<f64>>, String);

fn run(o: &Options) -> i32 {
    let gpu = hylapack::device::gpu();
    match &gpu {
        Ok(g) => println!(
            "GPU: {} ({} MiB), budget {} MiB",
            g.info.name,
            g.info.total_memory >> 20,
            g.budget.limit() >> 20
        ),
        Err(e) => println!("no GPU ({e}): only the host's LAPACK runs"),
    }
    if gpu.is_ok() {
        match dgemm_rate(8192) {
            Ok(r) => println!("cuBLAS DGEMM 8192³: {:.0} GFLOP/s", r),
            Err(e) => println!("cuBLAS DGEMM: {e}"),
        }
        // Loads cuSOLVER and makes the pooled handles once, outside the timed rows (cuSOLVER's
        // own rows take a pooled handle before the timer too).
        let (n, kd) = (512, 32);
        let mut w = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut Rng::new(1));
        let (mut ab, mut tau) = (vec![0.0; (kd + 1) * n], vec![0.0; n - kd]);
        let gpu_path = Path::Gpu { budget: None };
        sbr::syrdb(b'L', n, kd, &mut w, n, &mut ab, kd + 1, &mut tau, gpu_path);
        // And loads the bulge-chasing and bisection kernels.
        match sbr::sb2st::gpu::tridiagonalize(b'L', n, kd, &ab, kd + 1, profile()) {
            Ok((d, e)) => {
                gpu_bisection(&d, &e, &mut vec![0.0; n]);
            }
            Err(e) => println!("GPU bulge chasing: {e}"),
        }
    }
    let mut table = Table::new(&["n", "method", "time", "GFLOP/s", "err/(n eps |A|)", "note"]);
    let mut rng = Rng::new(testmat::seed_from_time());
    let mut failures = 0;
    // The two LAPACK rows: dsyevd, and sy2sb + sb2st + sterf.
    let mut gate = LapackGate::new(o.lapack_limit_s, 2);
    for &n in &o.sizes {
        let a = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut rng);
        let flops = 4.0 * (n as f64).powi(3) / 3.0;
        let mut reference: Option<Vec<f64>> = None;
        let mut rows: Vec<Row> = Vec::new();
        let add =
            |rows: &mut Vec<_>, what: &str, s: f64, gf: bool, w: Option<Vec<f64>>, note: String| {
                rows.push((what.to_string(), s, gf.then(|| flops / s / 1e9), w, note));
            };
        if gpu.is_ok() {
            let kds = if o.kds.is_empty() {
                vec![hylapack::syev::bandwidth(n)]
            } else {
                o.kds.iter().map(|&k| k.clamp(1, n - 1)).collect()
            };
            for (q, &kd) in kds.iter().enumerate() {
                let first = q == 0;
                let (mut ab, mut tau) = (vec![0.0; (kd + 1) * n], vec![0.0; n - kd]);
                let mut work = a.clone();
                let mut report = None;
                let s_band = secs(|| {
                    report = Some(sbr::syrdb(
                        b'L',
                        n,
                        kd,
                        &mut work,
                        n,
                        &mut ab,
                        kd + 1,
                        &mut tau,
                        Path::Gpu { budget: None },
                    ))
                });
                let s = s_band;
                let xfer = report.as_ref().and_then(|r| r.transfer_secs);
                let note = report.and_then(|r| r.note).unwrap_or_default();
                add(
                    &mut rows,
                    &format!("hylapack syrdb in-core, kd={kd}"),
                    s,
                    true,
                    None,
                    note,
                );
                if let Some(x) = xfer {
                    add(
                        &mut rows,
                        "  same, w/o transfers",
                        s - x,
                        true,
                        None,
                        format!("triangle up+down {}, timed in the run", time(x)),
                    );
                }
                if o.reduction_only {
                    continue;
                }
                let (mut d, mut e) = (Vec::new(), Vec::new());
                let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
                let s_tri = secs(|| {
                    (d, e) = sbr::sb2st::tridiagonalize(b'L', n, kd, &ab, kd + 1, 0)
                        .expect("host memory");
                });
                add(
                    &mut rows,
                    "  band→tridiagonal (threaded bulge chasing)",
                    s_tri,
                    false,
                    None,
                    format!("{threads} threads"),
                );
                // The GPU bulge chasing, which the drivers use on the GPU path.
                let mut s_tri = s_tri;
                if kd <= sbr::sb2st::gpu::MAX_BANDWIDTH {
                    let mut gpu = None;
                    let s = secs(|| {
                        gpu = Some(sbr::sb2st::gpu::tridiagonalize(
                            b'L',
                            n,
                            kd,
                            &ab,
                            kd + 1,
                            profile(),
                        ));
                    });
                    match gpu.expect("set above") {
                        Ok(de) => {
                            add(
                                &mut rows,
                                "  band→tridiagonal (GPU bulge chasing)",
                                s,
                                false,
                                None,
                                String::new(),
                            );
                            (d, e) = de;
                            s_tri = s;
                        }
                        Err(err) => println!("n={n}: GPU bulge chasing: {err}"),
                    }
                }
                if first && n <= 16384 {
                    // The same bulge chasing with other numbers of sweeps per thread's group.
                    for group in [1, 4, 16] {
                        let s = secs(|| {
                            sbr::sb2st::tridiagonalize_grouped(b'L', n, kd, &ab, kd + 1, 0, group)
                                .expect("host memory");
                        });
                        add(
                            &mut rows,
                            &format!("  (bulge chasing, {group} sweeps per group)"),
                            s,
                            false,
                            None,
                            format!("default {}", sbr::sb2st::sweep_group(n, kd, threads)),
                        );
                    }
                }
                if n <= 8192 && first {
                    let mut ab2 = ab.clone();
                    let (mut d2, mut e2) = (vec![0.0; n], vec![0.0; n]);
                    let s = secs(|| {
                        f64::sytrd_sb2st(b'L', n, kd, &mut ab2, kd + 1, &mut d2, &mut e2);
                    });
                    add(
                        &mut rows,
                        "  (LAPACK sb2st instead)",
                        s,
                        false,
                        None,
                        String::new(),
                    );
                }
                let mut w = vec![0.0; n];
                let s_values = secs(|| gpu_bisection(&d, &e, &mut w));
                add(
                    &mut rows,
                    "  all eigenvalues by GPU bisection (stebz)",
                    s_values,
                    false,
                    None,
                    String::new(),
                );
                // dsterf is O(n²) on one core: beside the bisection up to n = 16384 only.
                if n <= 16384 && first {
                    let s_sterf = secs(|| {
                        f64::sterf(&mut d, &mut e);
                    });
                    add(
                        &mut rows,
                        "  (dsterf on the host instead)",
                        s_sterf,
                        false,
                        None,
                        String::new(),
                    );
                }
                // The dsyev_ooc driver runs exactly these stages (plus a scaling check).
                add(
                    &mut rows,
                    &format!("hylapack dsyev_ooc path, kd={kd} (sum of the stages)"),
                    s_band + s_tri + s_values,
                    false,
                    Some(w),
                    String::new(),
                );
            }
            // The driver itself, end to end, at the bandwidth it chooses.
            if !o.reduction_only {
                let mut work = a.clone();
                let mut w = vec![0.0; n];
                let mut report = None;
                let s = secs(|| {
                    report = Some(hylapack::syev::syev(
                        b'L',
                        n,
                        &mut work,
                        n,
                        &mut w,
                        Path::Gpu { budget: None },
                    ))
                });
                let report = report.expect("set above");
                let note = report.reduction.and_then(|r| r.note).unwrap_or_default();
                add(
                    &mut rows,
                    "hylapack dsyev_ooc driver (measured)",
                    s,
                    false,
                    (report.info == 0).then_some(w),
                    note,
                );
            }
            if n <= o.ooc_max_n {
                // Out of core as the drivers run it: dense → the wide first band, the band
                // narrowed on the GPU, then the whole driver with the same budget.
                let budget = (n * n * 8 / 4) as u64;
                let path = Path::Gpu {
                    budget: Some(budget),
                };
                let (kd, wide) = hylapack::syev::driver_bandwidths::<f64>(n, path);
                let first = wide.unwrap_or(kd);
                // Dense → band at `first` on `path`: seconds, the report's note, the band.
                let band = |path| {
                    let (mut ab, mut tau) = (vec![0.0; (first + 1) * n], vec![0.0; n - first]);
                    let mut work = a.clone();
                    let mut report = None;
                    let s = secs(|| {
                        report = Some(sbr::syrdb_band(
                            o.ooc_uplo,
                            n,
                            first,
                            &mut work,
                            n,
                            &mut ab,
                            first + 1,
                            &mut tau,
                            path,
                        ))
                    });
                    (s, report.and_then(|r| r.note).unwrap_or_default(), ab)
                };
                // The same reduction in core, the out-of-core row's reference.
                let (s_in, note, _) = band(Path::Gpu { budget: None });
                add(
                    &mut rows,
                    &format!(
                        "hylapack syrdb in-core, kd={first}, band only, {}",
                        o.ooc_uplo as char
                    ),
                    s_in,
                    true,
                    None,
                    note,
                );
                let (s, note, ab) = band(path);
                let note = format!("{:.0}% of in core; {note}", 100.0 * s_in / s);
                add(
                    &mut rows,
                    &format!(
                        "hylapack syrdb OOC, kd={first}, {}, GPU budget n²·8/4",
                        o.ooc_uplo as char
                    ),
                    s,
                    true,
                    None,
                    note,
                );
                if o.reduction_only {
                    // The band's narrowing and the driver are left out.
                } else if let Some(kw) = wide {
                    let mut narrowed = None;
                    let s = secs(|| {
                        narrowed = Some(GpuExecutor::<f64>::new(Some(budget)).and_then(|mut e| {
                            sbr::sbrdb::narrow(
                                &mut e,
                                o.ooc_uplo,
                                n,
                                kw,
                                &ab,
                                kw + 1,
                                kd,
                                profile(),
                            )
                        }))
                    });
                    match narrowed.expect("set above") {
                        Ok(_) => add(
                            &mut rows,
                            &format!("  band {kw}→{kd} (sbrdb on the GPU)"),
                            s,
                            false,
                            None,
                            String::new(),
                        ),
                        Err(e) => println!("n={n}: sbrdb on the GPU: {e}"),
                    }
                }
                if !o.reduction_only {
                    let mut work = a.clone();
                    let mut w = vec![0.0; n];
                    let mut report = None;
                    let s = secs(|| {
                        report = Some(hylapack::syev::syev(
                            o.ooc_uplo, n, &mut work, n, &mut w, path,
                        ))
                    });
                    let report = report.expect("set above");
                    let note = report.reduction.and_then(|r| r.note).unwrap_or_default();
                    add(
                        &mut rows,
                        &format!(
                            "hylapack dsyev_ooc driver, {}, GPU budget n²·8/4",
                            o.ooc_uplo as char
                        ),
                        s,
                        false,
                        (report.info == 0).then_some(w),
                        note,
                    );
                }
            }
            if o.no_peers {
                // cuSOLVER and the host's LAPACK are left out.
            } else {
                match bench_cusolver::run(&a, n, Job::Sytrd) {
                    Ok(Timed { secs: s, .. }) => add(
                        &mut rows,
                        "cuSOLVER Dsytrd (device-resident)",
                        s,
                        true,
                        None,
                        String::new(),
                    ),
                    Err(e) => println!("n={n}: cuSOLVER Dsytrd: {e}"),
                }
                match bench_cusolver::run(&a, n, Job::Syevd { vectors: false }) {
                    Ok(Timed { secs: s, w, .. }) => {
                        let w = Some(w);
                        reference = w.clone();
                        add(
                            &mut rows,
                            "cuSOLVER Dsyevd, values (device-resident)",
                            s,
                            false,
                            w,
                            String::new(),
                        );
                    }
                    Err(e) => println!("n={n}: cuSOLVER Dsyevd: {e}"),
                }
            }
        }
        let random = |n| testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut Rng::new(2));
        let what = "LAPACK dsyevd, values (host)";
        if !o.no_peers && gate.fits(0, what, n, |n0| host_syevd_values(&random(n0), n0).0) {
            let (s, w) = host_syevd_values(&a, n);
            gate.record(0, n, s);
            if reference.is_none() {
                reference = Some(w.clone());
            }
            add(&mut rows, what, s, false, Some(w), String::new());
        }
        let what = "LAPACK sy2sb+sb2st+sterf (host)";
        if !o.no_peers && gate.fits(1, what, n, |n0| host_sbr_values(&random(n0), n0).0) {
            let (s, d) = host_sbr_values(&a, n);
            gate.record(1, n, s);
            add(&mut rows, what, s, false, Some(d), String::new());
        }
        for (what, s, gf, w, note) in rows {
            let err = match (&w, &reference) {
                (Some(w), Some(r)) => {
                    let norm = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                    let e = w
                        .iter()
                        .zip(r)
                        .map(|(x, y)| (x - y).abs())
                        .fold(0.0, f64::max);
                    let scaled = e / (n as f64 * f64::EPSILON * norm);
                    if scaled > 2.0 {
                        failures += 1;
                    }
                    format!("{scaled:.3}")
                }
                _ => "-".into(),
            };
            table.row(vec![
                n.to_string(),
                what,
                time(s),
                gf.map_or("-".into(), |g| format!("{g:.0}")),
                err,
                note,
            ]);
        }
    }
    table.print();
    if let Some(path) = &o.csv {
        if let Err(e) = table.write_csv(path) {
            eprintln!("hylapack bench syev: cannot write {path}: {e}");
        }
    }
    if failures > 0 {
        println!("{failures} eigenvalue results off by more than 2 n ε ‖A‖");
    }
    failures
}

/// The host's LAPACK dsyevd (JOBZ = N) on a copy of the n x n `a` (its lower triangle):
/// seconds, eigenvalues.
fn host_syevd_values(a: &[f64], n: usize) -> (f64, Vec<f64>) {
    let mut work = a.to_vec();
    let mut w = vec![0.0; n];
    let s = secs(|| {
        f64::syevd_values(b'L', n, &mut work, n, &mut w);
    });
    (s, w)
}

/// The host's LAPACK dsytrd_sy2sb + dsytrd_sb2st + dsterf on a copy of the n x n `a` (its
/// lower triangle): seconds, eigenvalues.
fn host_sbr_values(a: &[f64], n: usize) -> (f64, Vec<f64>) {
    let kd = hylapack::syev::bandwidth(n);
    let mut work = a.to_vec();
    let (mut ab, mut tau) = (vec![0.0; (kd + 1) * n], vec![0.0; n - kd]);
    let (mut d, mut e) = (vec![0.0; n], vec![0.0; n]);
    let s = secs(|| {
        sbr::syrdb(
            b'L',
            n,
            kd,
            &mut work,
            n,
            &mut ab,
            kd + 1,
            &mut tau,
            Path::Lapack,
        );
        f64::sytrd_sb2st(b'L', n, kd, &mut ab, kd + 1, &mut d, &mut e);
        f64::sterf(&mut d, &mut e);
    });
    (s, d)
}

/// `--in-place`: for orders whose matrix fills much of the host's memory, only the
/// `dsyev_ooc` driver on the whole GPU, on the one copy of a random matrix (its lower
/// triangle, made on all threads). No reference spectrum exists at these orders; the check is
/// two exact properties, Σλ = tr A and Σλ² = ‖A‖²_F, each difference divided by n ε ‖A‖_F.
fn run_in_place(o: &Options) -> i32 {
    let mut table = Table::new(&["n", "method", "time", "Σλ−trA", "Σλ²−‖A‖²", "note"]);
    let mut failures = 0;
    let seed = testmat::seed_from_time();
    for &n in &o.sizes {
        let mut a = vec![0.0f64; n * n];
        let t = Instant::now();
        let (trace, frob2) = random_lower(&mut a, n, seed);
        let made = t.elapsed().as_secs_f64();
        let mut w = vec![0.0; n];
        let mut report = None;
        let s = secs(|| {
            report = Some(hylapack::syev::syev(
                b'L',
                n,
                &mut a,
                n,
                &mut w,
                Path::Gpu { budget: None },
            ))
        });
        let report = report.expect("set above");
        let unit = n as f64 * f64::EPSILON * frob2.sqrt();
        let sum: f64 = w.iter().sum();
        let sum2: f64 = w.iter().map(|x| x * x).sum();
        let e1 = (sum - trace).abs() / unit;
        let e2 = (sum2 - frob2).abs() / (unit * frob2.sqrt());
        if report.info != 0 || !(e1 <= 2.0 && e2 <= 2.0) {
            failures += 1;
        }
        let note = report.reduction.and_then(|r| r.note).unwrap_or_default();
        table.row(vec![
            n.to_string(),
            "hylapack dsyev_ooc driver (whole GPU)".into(),
            time(s),
            format!("{e1:.3}"),
            format!("{e2:.3}"),
            format!(
                "info {}; {note}; matrix made in {}",
                report.info,
                time(made)
            ),
        ]);
    }
    table.print();
    if failures > 0 {
        println!("{failures} runs failed a check");
    }
    failures
}

/// Fills the lower triangle of the n x n `a` with uniform (−1, 1) entries, columns dealt to
/// all threads, each column from its own stream of `seed`; returns tr A and ‖A‖²_F.
// The benchmark tool, not the library: a thread it cannot start may stop it.
#[allow(clippy::disallowed_methods)]
fn random_lower(a: &mut [f64], n: usize, seed: u64) -> (f64, f64) {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let columns: Vec<&mut [f64]> = a.chunks_mut(n).collect();
    let mut parts: Vec<Vec<(usize, &mut [f64])>> = (0..threads).map(|_| Vec::new()).collect();
    for (j, col) in columns.into_iter().enumerate() {
        parts[j % threads].push((j, col));
    }
    std::thread::scope(|scope| {
        let sums: Vec<_> = parts
            .into_iter()
            .map(|part| {
                scope.spawn(move || {
                    let (mut trace, mut frob2) = (0.0, 0.0);
                    for (j, col) in part {
                        let mut rng =
                            Rng::new(seed ^ (j as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                        for (i, x) in col.iter_mut().enumerate().skip(j) {
                            *x = rng.range(-1.0, 1.0);
                            let w = if i == j { 1.0 } else { 2.0 };
                            frob2 += w * *x * *x;
                            if i == j {
                                trace += *x;
                            }
                        }
                    }
                    (trace, frob2)
                })
            })
            .collect();
        sums.into_iter()
            .map(|h| h.join().expect("generator thread panicked"))
            .fold((0.0, 0.0), |(t, f), (a, b)| (t + a, f + b))
    })
}

/// All eigenvalues of the tridiagonal (d, e) into `w` by the crate's GPU bisection.
fn gpu_bisection(d: &[f64], e: &[f64], w: &mut [f64]) {
    let n = d.len();
    let (mut iblock, mut isplit) = (vec![0; n], vec![0; n]);
    hylapack::stebz::stebz(
        b'A',
        b'E',
        0.0,
        0.0,
        0,
        0,
        0.0,
        d,
        &e[..n - 1],
        w,
        &mut iblock,
        &mut isplit,
        hylapack::dispatch::Backend::Gpu,
    );
}
