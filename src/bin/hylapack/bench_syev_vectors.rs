//! `hylapack bench syev --vectors`: dense symmetric eigenvectors (JOBZ = 'V') against cuSOLVER
//! and the host's LAPACK, in one run.
//!
//! Rows per order n (a random symmetric matrix; its lower triangle, or `--uplo U`):
//! - cuSOLVER Dsyevd with JOBZ = V, device-resident (the matrix is on the GPU before the timer
//!   starts, the vectors stay there): the reference spectrum and the column "vs Dsyevd";
//! - hylapack `syev_vectors` on the GPU path (host matrix in, host vectors out), and below it
//!   the stages the driver timed: dense → band, band → tridiagonal keeping Q2, the
//!   tridiagonal's eigenvectors, Q2 applied (GPU or host threads), Q1 applied (cuBLAS by block
//!   columns, or the host), and of these the time spent moving matrices to and from the GPU;
//! - hylapack `syevx_vectors` with RANGE = 'I', the lowest 1% (at least one), its stages in the
//!   note, and cuSOLVER Dsyevdx with the same selection (device-resident);
//! - with `--budget-fraction F`, both hylapack rows again with F times the matrix's bytes as
//!   the GPU budget (out of core);
//! - the host's LAPACK dsyevd (JOBZ = V) and dsyevr (RANGE = I, the same 1%), each only where
//!   its time predicted by n³ stays below `--lapack-limit` (`bench_syev::LapackGate`: from its
//!   last order, or from a timing at n = 1024 where there is none).
//!
//! Accuracy on a sample S of the columns (24 spread over them, or all of fewer): residual
//! max_{j∈S} ‖A z_j − λ_j z_j‖₁ / (n ‖A‖₁ ε) and orthogonality max_{j∈S} ‖Zᵀ z_j − e_j‖₁ / (n ε),
//! by host GEMMs; eigenvalues against the reference spectrum, max |Δλ| / (n ε ‖A‖). Each row is
//! printed as soon as it is measured, the aligned table (and `--csv`) at the end.

use crate::bench_cusolver::{self, Job, Timed};
use crate::bench_syev::{secs, shared_option, LapackGate};
use crate::table::{time, Table};
use hylapack::lapack::{Dense, Orthogonal};
use hylapack::sbr::Path;
use hylapack::syev::{EigReport, StageTimes};
use hylapack::testmat::{self, DenseFamily, Rng};
use std::io::Write;

struct Options {
    sizes: Vec<usize>,
    csv: Option<String>,
    /// Host LAPACK methods run only where their predicted time stays below this.
    lapack_limit_s: f64,
    /// Skip cuSOLVER and the host's LAPACK.
    no_peers: bool,
    uplo: u8,
    /// hylapack's rows again with this fraction of the matrix's bytes as the GPU budget.
    budget_fraction: Option<f64>,
    /// Only hylapack's selected pairs, on a matrix held once ([`crate::bench_syev_large`]).
    large: bool,
    /// With `large`: all pairs (dsyev_ooc) instead of the lowest 1%.
    all: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        sizes: vec![4096, 8192, 16384],
        csv: None,
        lapack_limit_s: 60.0,
        no_peers: false,
        uplo: b'L',
        budget_fraction: None,
        large: false,
        all: false,
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
            "--no-peers" => o.no_peers = true,
            "--large" => o.large = true,
            "--all" => o.all = true,
            "--budget-fraction" => {
                let f = it.next().and_then(|v| v.parse::<f64>().ok());
                o.budget_fraction = match f {
                    Some(f) if f > 0.0 && f <= 1.0 => Some(f),
                    _ => return Err("--budget-fraction takes a number in (0, 1]".into()),
                };
            }
            "--uplo" => {
                o.uplo = match it.next().map(String::as_str) {
                    Some("L" | "l") => b'L',
                    Some("U" | "u") => b'U',
                    v => return Err(format!("bad --uplo {v:?}")),
                };
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if o.sizes.iter().any(|&n| n < 2) {
        return Err("sizes must be at least 2".into());
    }
    if o.all && !o.large {
        return Err("--all goes with --large".into());
    }
    Ok(o)
}

/// `hylapack bench syev --vectors [--sizes 4096,8192,16384] [--csv FILE] [--lapack-limit S]
/// [--no-peers] [--uplo L|U] [--budget-fraction F] [--large [--all]] [--quick]`.
pub fn bench_syev_vectors(args: &[String]) -> i32 {
    match parse(args) {
        Ok(o) => run(&o),
        Err(e) => {
            eprintln!("hylapack bench syev --vectors: {e}");
            eprintln!("usage: hylapack bench syev --vectors [--sizes 4096,8192,16384] [--csv FILE] [--lapack-limit 60] [--no-peers] [--uplo L] [--budget-fraction 0.25] [--large [--all]] [--quick]");
            2
        }
    }
}

/// One measured row: method, seconds, and what to check (eigenvalues, the first of which is
/// the il-th; vectors n x M), note.
struct Row {
    what: String,
    secs: f64,
    w: Option<Vec<f64>>,
    first: usize,
    z: Option<Vec<f64>>,
    note: String,
}

impl Row {
    fn timed(what: &str, secs: f64, note: String) -> Row {
        Row {
            what: what.to_string(),
            secs,
            w: None,
            first: 0,
            z: None,
            note,
        }
    }
}

/// The rows of one order: the matrix, its reference spectrum and the table they go into,
/// printing each row when it is added.
struct Order<'a> {
    n: usize,
    a: &'a [f64],
    anorm1: f64,
    reference: Option<Vec<f64>>,
    /// cuSOLVER Dsyevd's seconds.
    dsyevd: Option<f64>,
    table: &'a mut Table,
    failures: usize,
}

impl Order<'_> {
    fn add(&mut self, row: Row) {
        let n = self.n;
        let eps = f64::EPSILON;
        let err = match (&row.w, &self.reference) {
            (Some(w), Some(r)) => {
                let norm = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                let e = w
                    .iter()
                    .zip(&r[row.first..])
                    .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
                let scaled = e / (n as f64 * eps * norm);
                self.failures += (scaled > 2.0) as usize;
                format!("{scaled:.3}")
            }
            _ => "-".into(),
        };
        let (resid, ortho) = match (&row.w, &row.z) {
            (Some(w), Some(z)) => {
                let (r, o) = sampled_ratios(self.a, n, self.anorm1, w, z);
                self.failures += (!(r < 20.0 && o < 20.0)) as usize;
                (format!("{r:.3}"), format!("{o:.3}"))
            }
            _ => ("-".into(), "-".into()),
        };
        let versus = match self.dsyevd {
            Some(s) if row.z.as_ref().is_some_and(|z| z.len() == n * n) => {
                format!("{:.2}x", s / row.secs)
            }
            _ => "-".into(),
        };
        let cells = vec![
            n.to_string(),
            row.what,
            time(row.secs),
            versus,
            err,
            resid,
            ortho,
            row.note,
        ];
        println!(
            "{:>6}  {:<52} {:>10} {:>8} {:>8} {:>8} {:>8}  {}",
            cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7]
        );
        let _ = std::io::stdout().flush();
        self.table.row(cells.into_iter().collect());
    }
}

/// (residual, orthogonality) of the pairs (w, Z) of the full symmetric n x n `a` (‖A‖₁ =
/// `anorm1`) over a sample of Z's columns (module notes), by host GEMMs.
fn sampled_ratios(a: &[f64], n: usize, anorm1: f64, w: &[f64], z: &[f64]) -> (f64, f64) {
    sampled_ratios_with(n, anorm1, w, z, |zs, k| {
        let mut r = vec![0.0; n * k];
        f64::gemm(b'N', b'N', n, k, n, 1.0, (a, n), zs, 0.0, &mut r, n);
        r
    })
}

/// (residual, orthogonality) as [`sampled_ratios`], with A times the sampled columns (n x k,
/// leading dimension n) from `product(zs, k)`: the sample is 24 of Z's m columns spread over
/// them, or all of fewer.
pub(crate) fn sampled_ratios_with(
    n: usize,
    anorm1: f64,
    w: &[f64],
    z: &[f64],
    product: impl FnOnce((&[f64], usize), usize) -> Vec<f64>,
) -> (f64, f64) {
    let m = z.len() / n;
    let k = m.min(24);
    let cols: Vec<usize> = (0..k).map(|q| q * (m - 1) / (k - 1).max(1)).collect();
    let mut zs = vec![0.0; n * k];
    for (q, &j) in cols.iter().enumerate() {
        zs[q * n..(q + 1) * n].copy_from_slice(&z[j * n..(j + 1) * n]);
    }
    let r = product((&zs, n), k);
    let mut g = vec![0.0; m * k];
    f64::gemm(b'T', b'N', m, k, n, 1.0, (z, n), (&zs, n), 0.0, &mut g, m);
    let (mut resid, mut ortho) = (0.0f64, 0.0f64);
    for (q, &j) in cols.iter().enumerate() {
        let col: f64 = (0..n)
            .map(|i| (r[i + q * n] - w[j] * zs[i + q * n]).abs())
            .sum();
        resid = resid.max(col);
        let dots: f64 = (0..m)
            .map(|i| (g[i + q * m] - if i == j { 1.0 } else { 0.0 }).abs())
            .sum();
        ortho = ortho.max(dots);
    }
    let unit = n as f64 * f64::EPSILON;
    (resid / (unit * anorm1), ortho / unit)
}

/// Where a stage ran.
fn where_(on_gpu: bool) -> &'static str {
    if on_gpu {
        "GPU"
    } else {
        "host threads"
    }
}

/// The stages of a driver's `report` as rows below it (`syev_vectors`), or as one note.
fn stage_rows(stages: &StageTimes) -> Vec<(String, f64, String)> {
    let q2 = if stages.q2_on_gpu {
        format!(
            "GPU, {} block column(s), Q2 in {} piece(s)",
            stages.q2_block_columns, stages.q2_pieces
        )
    } else {
        "host threads".into()
    };
    let q1 = if stages.q1_on_gpu {
        format!("cuBLAS in {} block column(s)", stages.q1_block_columns)
    } else {
        "host xORMQR/xORMLQ".into()
    };
    vec![
        ("  dense → band".into(), stages.reduction, String::new()),
        (
            "  band → tridiagonal keeping Q2".into(),
            stages.chase,
            where_(stages.chase_on_gpu).into(),
        ),
        (
            "  tridiagonal eigenvectors".into(),
            stages.tridiagonal_vectors,
            if stages.inverse_iteration {
                "GPU bisection + inverse iteration"
            } else {
                "xSTEDC"
            }
            .into(),
        ),
        ("  Q2 applied".into(), stages.q2, q2),
        ("  Q1 applied".into(), stages.q1, q1),
        (
            "  of which host↔GPU transfers".into(),
            stages.transfers,
            String::new(),
        ),
    ]
}

pub(crate) fn stage_note(report: &EigReport) -> String {
    let note = report.reduction.as_ref().and_then(|r| r.note.clone());
    let stages = report.stages.as_ref().map(|s| {
        stage_rows(s)
            .iter()
            .map(|(what, t, _)| format!("{} {}", what.trim(), time(*t)))
            .collect::<Vec<_>>()
            .join(" / ")
    });
    [Some(format!("info {}", report.info)), stages, note]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; ")
}

/// Loads the kernels, the CUDA libraries and the handles the timed rows use, outside them
/// (at the order from which T's vectors come from the GPU's inverse iteration).
fn warm_up(uplo: u8, peers: bool) {
    let n = hylapack::syev::INVERSE_ITERATION_FROM;
    let a = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut Rng::new(1));
    if peers && hylapack::device::gpu().is_ok() {
        let _ = bench_cusolver::run(&a, n, Job::Syevd { vectors: true });
        let _ = bench_cusolver::run(&a, n, Job::SyevdxIndex { il: 1, iu: 5 });
    }
    let (mut a, mut w) = (a, vec![0.0; n]);
    hylapack::syev::syev_vectors(uplo, n, &mut a, n, &mut w, Path::Gpu { budget: None });
}

fn run(o: &Options) -> i32 {
    let gpu = hylapack::device::gpu();
    match &gpu {
        Ok(g) => println!(
            "GPU: {} ({} MiB), budget {} MiB",
            g.info.name,
            g.info.total_memory >> 20,
            g.budget.limit() >> 20
        ),
        Err(e) => println!("no GPU ({e}): hylapack's GPU path falls back to the CPU"),
    }
    warm_up(o.uplo, !o.no_peers && !o.large);
    if o.large {
        let seed = testmat::seed_from_time();
        let mut failures = 0;
        for &n in &o.sizes {
            let budget = o.budget_fraction.map(|f| (f * (n * n * 8) as f64) as u64);
            failures += crate::bench_syev_large::large_order(n, o.uplo, seed, budget, o.all);
        }
        return failures.min(255) as i32;
    }
    let header = [
        "n",
        "method",
        "time",
        "vs Dsyevd",
        "λ err/(nε|A|)",
        "resid",
        "ortho",
        "note",
    ];
    println!("{}", header.join(" | "));
    let mut table = Table::new(&header);
    let mut rng = Rng::new(testmat::seed_from_time());
    let mut failures = 0;
    // The two LAPACK rows: dsyevd and dsyevr.
    let mut gate = LapackGate::new(o.lapack_limit_s, 2);
    for &n in &o.sizes {
        let a = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut rng);
        let anorm1 = (0..n)
            .map(|j| a[j * n..(j + 1) * n].iter().map(|x| x.abs()).sum::<f64>())
            .fold(0.0, f64::max);
        let mut order = Order {
            n,
            a: &a,
            anorm1,
            reference: None,
            dsyevd: None,
            table: &mut table,
            failures: 0,
        };
        let (il, iu) = (1, (n / 100).max(1) as i32);
        if gpu.is_ok() && !o.no_peers {
            match bench_cusolver::run(&a, n, Job::Syevd { vectors: true }) {
                Ok(Timed { secs: s, w, z }) => {
                    order.reference = Some(w.clone());
                    order.dsyevd = Some(s);
                    let note = "device-resident".to_string();
                    order.add(Row {
                        w: Some(w),
                        z: Some(z),
                        ..Row::timed("cuSOLVER Dsyevd JOBZ=V", s, note)
                    });
                }
                Err(e) => println!("n={n}: cuSOLVER Dsyevd: {e}"),
            }
        }
        hylapack_rows(&mut order, o.uplo, (il, iu), None);
        if let Some(f) = o.budget_fraction {
            let budget = (f * (n * n * 8) as f64) as u64;
            hylapack_rows(&mut order, o.uplo, (il, iu), Some(budget));
        }
        if gpu.is_ok() && !o.no_peers {
            match bench_cusolver::run(&a, n, Job::SyevdxIndex { il, iu }) {
                Ok(Timed { secs: s, w, z }) => order.add(Row {
                    w: Some(w),
                    z: Some(z),
                    ..Row::timed(
                        &format!("cuSOLVER Dsyevdx JOBZ=V RANGE=I {il}..{iu}"),
                        s,
                        "device-resident".into(),
                    )
                }),
                Err(e) => println!("n={n}: cuSOLVER Dsyevdx: {e}"),
            }
        }
        if !o.no_peers {
            lapack_rows(&mut order, o, (il, iu), &mut gate);
        }
        failures += order.failures;
    }
    println!();
    table.print();
    if let Some(path) = &o.csv {
        if let Err(e) = table.write_csv(path) {
            eprintln!("hylapack bench syev --vectors: cannot write {path}: {e}");
        }
    }
    if failures > 0 {
        println!("{failures} results off: eigenvalues by more than 2 n ε ‖A‖, or a ratio ≥ 20");
    }
    failures.min(255) as i32
}

/// hylapack's `syev_vectors` (with its stages) and `syevx_vectors` for the il-th to iu-th
/// pairs, on the GPU path within `budget` bytes (None: the GPU's).
fn hylapack_rows(order: &mut Order<'_>, uplo: u8, (il, iu): (i32, i32), budget: Option<u64>) {
    let n = order.n;
    let path = Path::Gpu { budget };
    let within = budget.map_or(String::new(), |b| format!(", budget {} MiB", b >> 20));
    let mut work = order.a.to_vec();
    let mut w = vec![0.0; n];
    let mut report = None;
    let s = secs(|| {
        report = Some(hylapack::syev::syev_vectors(
            uplo, n, &mut work, n, &mut w, path,
        ));
    });
    let report = report.expect("set above");
    let note = report.reduction.as_ref().and_then(|r| r.note.clone());
    let ok = report.info == 0;
    if order.reference.is_none() && ok {
        order.reference = Some(w.clone());
    }
    order.add(Row {
        w: ok.then_some(w),
        z: ok.then_some(work),
        ..Row::timed(
            &format!("hylapack dsyev_ooc JOBZ=V UPLO={}{within}", uplo as char),
            s,
            format!("info {}; {}", report.info, note.unwrap_or_default()),
        )
    });
    for (what, t, note) in report.stages.as_ref().map(stage_rows).unwrap_or_default() {
        order.add(Row::timed(&what, t, note));
    }
    let mut work = order.a.to_vec();
    let cols = (iu - il + 1) as usize;
    let (mut w, mut z, mut ifail) = (vec![0.0; n], vec![0.0; n * cols], vec![0; n]);
    let mut report = None;
    let s = secs(|| {
        report = Some(hylapack::syev::syevx_vectors(
            b'I', uplo, n, &mut work, n, 0.0, 0.0, il, iu, 0.0, &mut w, &mut z, n, &mut ifail, path,
        ));
    });
    let report = report.expect("set above");
    let m = report.m.max(0) as usize;
    let ok = report.info == 0;
    w.truncate(m);
    z.truncate(n * m);
    order.add(Row {
        w: ok.then_some(w),
        first: il as usize - 1,
        z: ok.then_some(z),
        ..Row::timed(
            &format!(
                "hylapack dsyevx_ooc JOBZ=V RANGE=I {il}..{iu} UPLO={}{within}",
                uplo as char
            ),
            s,
            stage_note(&report),
        )
    });
}

/// The host's LAPACK dsyevd (JOBZ = V) and dsyevr (RANGE = I, il..iu), each where `gate`
/// predicts it within the limit.
fn lapack_rows(order: &mut Order<'_>, o: &Options, (il, iu): (i32, i32), gate: &mut LapackGate) {
    let n = order.n;
    let random = |n| testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut Rng::new(2));
    let what = "LAPACK dsyevd JOBZ=V (host)";
    if gate.fits(0, what, n, |n0| host_syevd(o.uplo, &random(n0), n0).0) {
        let (s, info, w, z) = host_syevd(o.uplo, order.a, n);
        gate.record(0, n, s);
        if order.reference.is_none() && info == 0 {
            order.reference = Some(w.clone());
        }
        order.add(Row {
            w: (info == 0).then_some(w),
            z: (info == 0).then_some(z),
            ..Row::timed(what, s, format!("info {info}"))
        });
    }
    let what = format!("LAPACK dsyevr JOBZ=V RANGE=I {il}..{iu} (host)");
    let probe = |n0: usize| {
        let top = (n0 / 100).max(1) as i32;
        host_syevr(o.uplo, &random(n0), n0, (1, top)).0
    };
    if gate.fits(1, &what, n, probe) {
        let (s, info, w, z) = host_syevr(o.uplo, order.a, n, (il, iu));
        gate.record(1, n, s);
        order.add(Row {
            w: (info == 0).then_some(w),
            first: il as usize - 1,
            z: (info == 0).then_some(z),
            ..Row::timed(&what, s, format!("info {info}"))
        });
    }
}

/// The host's LAPACK dsyevd with JOBZ = V on a copy of the n x n `a`: seconds, info, the
/// eigenvalues and the eigenvectors.
fn host_syevd(uplo: u8, a: &[f64], n: usize) -> (f64, i32, Vec<f64>, Vec<f64>) {
    let mut z = a.to_vec();
    let mut w = vec![0.0; n];
    let mut info = 0;
    let s = secs(|| info = f64::syevd(b'V', uplo, n, &mut z, n, &mut w));
    (s, info, w, z)
}

/// The host's LAPACK dsyevr with JOBZ = V, RANGE = I (the il-th to iu-th pairs) on a copy of
/// the n x n `a`: seconds, info, the eigenvalues and the eigenvectors found.
fn host_syevr(
    uplo: u8,
    a: &[f64],
    n: usize,
    (il, iu): (i32, i32),
) -> (f64, i32, Vec<f64>, Vec<f64>) {
    let cols = (iu - il + 1) as usize;
    let mut work = a.to_vec();
    let (mut w, mut z, mut isuppz) = (vec![0.0; n], vec![0.0; n * cols], vec![0; 2 * cols]);
    let (lw, liw) = f64::syevr_sizes(n);
    let (mut wk, mut iwk) = (vec![0.0; lw], vec![0; liw]);
    let mut got = (0, 0);
    let s = secs(|| {
        got = f64::syevr_index_in(
            uplo,
            n,
            &mut work,
            n,
            (il, iu),
            &mut w,
            (&mut z, n),
            &mut isuppz,
            &mut wk,
            &mut iwk,
        )
    });
    let (m, info) = (got.0.max(0) as usize, got.1);
    w.truncate(m);
    z.truncate(n * m);
    (s, info, w, z)
}
