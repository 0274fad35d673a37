//! `hylapack bench stein`: tridiagonal eigenvectors. hylapack's xSTEIN on the GPU and on the
//! host, LAPACK dstebz + dstein, dstemr and dstedc (all vectors) on the host, on the test
//! families; all vectors for n in --sizes, and 1% of the vectors (by index, from the middle of
//! the spectrum) at --index-n. hylapack and LAPACK dstein get W, IBLOCK, ISPLIT from LAPACK's
//! dstebz (ORDER = 'B') where LAPACK's dstein runs, else from hylapack's; the dstein column
//! includes that dstebz, and its ratio is taken against hylapack's GPU stebz (timed alone,
//! "stebz gpu") plus its GPU stein. Quality of the GPU result: orthogonality max|ZᵀZ − I| /
//! (n ε) over up to 256 sampled columns against all, residual
//! max_j ‖T z_j − λ_j z_j‖₁ / (‖T‖₁ n ε).
//!
//! Each row is printed (and flushed) as soon as it is measured, the CSV (`--csv FILE`) at the
//! end. The slow references are skipped above their bounds: hylapack's host path above
//! `--cpu-max-n`, LAPACK dstein (all vectors) above `--dstein-max-n`, dstemr and dstedc above
//! `--mrrr-max-n`.

use crate::table::{time, Table};
use hylapack::dispatch::Backend;
use hylapack::lapack::symbols::Symbol;
use hylapack::lapack::{Dense, Lapack, LapackStein};
use hylapack::stein;
use hylapack::testmat::{self, Rng, TridiagFamily};
use std::ffi::{c_char, c_int};
use std::time::Instant;

struct Options {
    sizes: Vec<usize>,
    families: Vec<TridiagFamily>,
    index_n: usize,
    csv: Option<String>,
    /// Largest n for hylapack's host path, LAPACK dstein, and dstemr/dstedc.
    cpu_max_n: usize,
    dstein_max_n: usize,
    mrrr_max_n: usize,
}

fn family(name: &str) -> Option<TridiagFamily> {
    TridiagFamily::all()
        .into_iter()
        .find(|f| f.name() == name || format!("{f:?}").eq_ignore_ascii_case(name))
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        sizes: vec![1000, 2000, 4000, 8000, 16000, 32000],
        families: vec![
            TridiagFamily::Random,
            TridiagFamily::OneTwoOne,
            TridiagFamily::GluedOneTwoOne,
            TridiagFamily::Uniform,
            TridiagFamily::Geometric,
            TridiagFamily::WilkinsonPlus,
            TridiagFamily::Clustered,
            TridiagFamily::Split,
        ],
        index_n: 100_000,
        csv: None,
        cpu_max_n: 8000,
        dstein_max_n: 4000,
        mrrr_max_n: 16000,
    };
    let mut it = args.iter();
    let num = |v: Option<&String>, what: &str| -> Result<usize, String> {
        v.ok_or(format!("{what} needs a number"))?
            .parse()
            .map_err(|_| format!("bad {what}"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sizes" => {
                let v = it.next().ok_or("--sizes needs a list")?;
                o.sizes = v
                    .split(',')
                    .map(|s| s.trim().parse().map_err(|_| format!("bad size {s}")))
                    .collect::<Result<_, _>>()?;
            }
            "--families" => {
                let v = it.next().ok_or("--families needs a list")?;
                o.families = v
                    .split(',')
                    .map(|s| family(s.trim()).ok_or(format!("unknown family {s}")))
                    .collect::<Result<_, _>>()?;
            }
            "--index-n" => o.index_n = num(it.next(), "--index-n")?,
            "--cpu-max-n" => o.cpu_max_n = num(it.next(), "--cpu-max-n")?,
            "--dstein-max-n" => o.dstein_max_n = num(it.next(), "--dstein-max-n")?,
            "--mrrr-max-n" => o.mrrr_max_n = num(it.next(), "--mrrr-max-n")?,
            "--csv" => o.csv = Some(it.next().ok_or("--csv needs a file")?.clone()),
            "--quick" => {
                o.sizes = vec![500, 2000];
                o.index_n = 20_000;
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

pub fn bench_stein(args: &[String]) -> i32 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("hylapack bench stein: {e}");
            return 2;
        }
    };
    let mut table = Table::new(&[
        "family",
        "n",
        "vectors",
        "gpu",
        "stebz gpu",
        "host",
        "dstebz+dstein",
        "dstemr",
        "dstedc",
        "dstemr/gpu",
        "dstein/(stebz+gpu)",
        "orth gpu",
        "resid gpu",
        "orth dstein",
        "resid dstein",
        "gpu ran",
    ])
    // Rows print as they are measured (a run cut short by a time limit keeps them).
    .live(8);
    let mut rng = Rng::new(20261201);
    // Warm-up: kernel compilation (or the cache), the cuBLAS handle, pinned buffers.
    {
        let (d, e) = testmat::tridiag::<f64>(TridiagFamily::Random, 2000, &mut rng);
        let (w, iblock, isplit) = stebz(b'A', 1, 2000, &d, &e);
        let mut z = vec![0.0f64; 2000 * w.len()];
        stein::stein_with(Backend::Gpu, &d, &e, &w, &iblock, &isplit, &mut z, 2000)
            .expect("host memory");
    }
    let mut cases: Vec<(TridiagFamily, usize, bool)> = Vec::new();
    for &f in &o.families {
        for &n in &o.sizes {
            cases.push((f, n, false));
        }
    }
    for &f in &o.families {
        if o.index_n > 0 {
            cases.push((f, o.index_n, true));
        }
    }
    for (fam, n, subset) in cases {
        let (d, e) = testmat::tridiag::<f64>(fam, n, &mut rng);
        let (il, iu) = if subset {
            let k = (n / 100).max(1);
            let lo = (n - k) / 2 + 1;
            (lo as i32, (lo + k - 1) as i32)
        } else {
            (1, n as i32)
        };
        let range = if subset { b'I' } else { b'A' };
        // LAPACK's dstebz gives W where LAPACK's dstein runs on it (its time is that column's);
        // elsewhere hylapack's bisection does (at n = 16000, all eigenvalues, dstebz alone took
        // longer than everything else in a row but dstemr).
        let dstein_runs = n <= o.dstein_max_n || subset;
        let progress = Instant::now();
        let say = |what: &str| {
            eprintln!(
                "{} n={n}: {what} at {:.1} s",
                fam.name(),
                progress.elapsed().as_secs_f64()
            )
        };
        let (stebz_gpu_s, ours) = hylapack_stebz(range, il, iu, &d, &e);
        let t0 = Instant::now();
        let (w, iblock, isplit) = if dstein_runs {
            stebz(range, il, iu, &d, &e)
        } else {
            ours
        };
        let stebz_s = t0.elapsed().as_secs_f64();
        say("eigenvalues");
        let m = w.len();
        let mut z = vec![0.0f64; n * m];
        let t0 = Instant::now();
        let run = stein::stein_with(Backend::Gpu, &d, &e, &w, &iblock, &isplit, &mut z, n)
            .expect("host memory");
        let gpu_s = t0.elapsed().as_secs_f64();
        let ran = if run.backend == Backend::Gpu {
            "yes".to_string()
        } else {
            format!("no: {}", run.note.unwrap_or_default())
        };
        say("gpu stein");
        let (orth, resid) = quality(&d, &e, &w, &z);
        drop(z);
        say("its quality");
        let cell = |t: Option<f64>| t.map_or("-".to_string(), time);
        let host = (n <= o.cpu_max_n).then(|| {
            let mut z = vec![0.0f64; n * m];
            let t0 = Instant::now();
            stein::stein_with(Backend::Cpu, &d, &e, &w, &iblock, &isplit, &mut z, n)
                .expect("host memory");
            t0.elapsed().as_secs_f64()
        });
        let mut lapack_quality = (None, None);
        let dstein = (n <= o.dstein_max_n || subset).then(|| {
            let mut z = vec![0.0f64; n * m];
            let mut ifail = vec![0; m];
            let t0 = Instant::now();
            f64::stein(
                n as i32, &d, &e, m as i32, &w, &iblock, &isplit, &mut z, n as i32, &mut ifail,
            );
            let s = t0.elapsed().as_secs_f64() + stebz_s;
            let (a, b) = quality(&d, &e, &w, &z);
            lapack_quality = (Some(a), Some(b));
            say("LAPACK dstein");
            s
        });
        let (stemr, stedc) = if !subset && n <= o.mrrr_max_n {
            let stemr = dstemr(&d, &e);
            say("dstemr");
            (Some(stemr), Some(dstedc(&d, &e)))
        } else {
            (None, None)
        };
        // Against LAPACK's pair, hylapack's own bisection is counted with its inverse iteration.
        let ratio =
            |t: Option<f64>, ours: f64| t.map_or("-".to_string(), |t| format!("{:.1}x", t / ours));
        let q = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
        table.row(vec![
            fam.name().to_string(),
            n.to_string(),
            if subset {
                format!("{m} ({il}..={iu})")
            } else {
                format!("{m}")
            },
            time(gpu_s),
            time(stebz_gpu_s),
            cell(host),
            cell(dstein),
            cell(stemr),
            cell(stedc),
            ratio(stemr, gpu_s),
            ratio(dstein, gpu_s + stebz_gpu_s),
            format!("{orth:.3}"),
            format!("{resid:.3}"),
            q(lapack_quality.0),
            q(lapack_quality.1),
            ran,
        ]);
    }
    if let Some(path) = &o.csv {
        if let Err(e) = table.write_csv(path) {
            eprintln!("hylapack bench stein: cannot write {path}: {e}");
            return 1;
        }
    }
    0
}

fn stebz(range: u8, il: i32, iu: i32, d: &[f64], e: &[f64]) -> Eigenvalues {
    let n = d.len();
    let (mut w, mut iblock, mut isplit) = (vec![0.0; n], vec![0; n], vec![0; n]);
    let r = f64::stebz(
        range,
        b'B',
        0.0,
        0.0,
        il,
        iu,
        0.0,
        d,
        e,
        &mut w,
        &mut iblock,
        &mut isplit,
    );
    w.truncate(r.m as usize);
    iblock.truncate(r.m as usize);
    (w, iblock, isplit)
}

/// Seconds hylapack's bisection takes on the GPU for the same eigenvalues (ORDER = 'B'), and
/// its W, IBLOCK, ISPLIT.
type Eigenvalues = (Vec<f64>, Vec<i32>, Vec<i32>);
fn hylapack_stebz(range: u8, il: i32, iu: i32, d: &[f64], e: &[f64]) -> (f64, Eigenvalues) {
    let n = d.len();
    let (mut w, mut iblock, mut isplit) = (vec![0.0; n], vec![0; n], vec![0; n]);
    let t0 = Instant::now();
    let r = hylapack::stebz::stebz(
        range,
        b'B',
        0.0,
        0.0,
        il,
        iu,
        0.0,
        d,
        e,
        &mut w,
        &mut iblock,
        &mut isplit,
        Backend::Gpu,
    );
    let s = t0.elapsed().as_secs_f64();
    assert_eq!(r.info, 0, "hylapack stebz: INFO = {}", r.info);
    w.truncate(r.m as usize);
    iblock.truncate(r.m as usize);
    (s, (w, iblock, isplit))
}

/// (orthogonality over up to 256 sampled columns, residual over all), in n ε units.
fn quality(d: &[f64], e: &[f64], w: &[f64], z: &[f64]) -> (f64, f64) {
    let (n, m) = (d.len(), w.len());
    if m == 0 {
        return (0.0, 0.0);
    }
    let scale = n as f64 * f64::EPSILON;
    let step = m.div_ceil(256);
    let picks: Vec<usize> = (0..m).step_by(step).collect();
    let mut sample = vec![0.0; n * picks.len()];
    for (k, &j) in picks.iter().enumerate() {
        sample[k * n..(k + 1) * n].copy_from_slice(&z[j * n..(j + 1) * n]);
    }
    let mut g = vec![0.0; m * picks.len()];
    f64::gemm(
        b'T',
        b'N',
        m,
        picks.len(),
        n,
        1.0,
        (z, n),
        (&sample, n),
        0.0,
        &mut g,
        m,
    );
    let mut orth = 0.0f64;
    for (k, &j) in picks.iter().enumerate() {
        for i in 0..m {
            let target = if i == j { 1.0 } else { 0.0 };
            orth = orth.max((g[i + k * m] - target).abs());
        }
    }
    let mut tnorm = 0.0f64;
    for i in 0..n {
        let left = if i > 0 { e[i - 1].abs() } else { 0.0 };
        let right = if i + 1 < n { e[i].abs() } else { 0.0 };
        tnorm = tnorm.max(d[i].abs() + left + right);
    }
    let mut resid = 0.0f64;
    for j in 0..m {
        let zj = &z[j * n..(j + 1) * n];
        let mut r = 0.0;
        for i in 0..n {
            let mut t = (d[i] - w[j]) * zj[i];
            if i > 0 {
                t += e[i - 1] * zj[i - 1];
            }
            if i + 1 < n {
                t += e[i] * zj[i + 1];
            }
            r += t.abs();
        }
        resid = resid.max(r);
    }
    (orth / scale, resid / (tnorm.max(f64::MIN_POSITIVE) * scale))
}

static DSTEMR: Symbol = Symbol::new("dstemr_\0");
static DSTEDC: Symbol = Symbol::new("dstedc_\0");

type Dstemr = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *mut f64,
    *mut f64,
    *const f64,
    *const f64,
    *const c_int,
    *const c_int,
    *mut c_int,
    *mut f64,
    *mut f64,
    *const c_int,
    *const c_int,
    *mut c_int,
    *mut c_int,
    *mut f64,
    *const c_int,
    *mut c_int,
    *const c_int,
    *mut c_int,
    usize,
    usize,
);

type Dstedc = unsafe extern "C" fn(
    *const c_char,
    *const c_int,
    *mut f64,
    *mut f64,
    *mut f64,
    *const c_int,
    *mut f64,
    *const c_int,
    *mut c_int,
    *const c_int,
    *mut c_int,
    usize,
);

/// Seconds of LAPACK dstemr (JOBZ = 'V', RANGE = 'A') on the host.
fn dstemr(d: &[f64], e: &[f64]) -> f64 {
    let n = d.len();
    // SAFETY: DSTEMR's signature (with the hidden CHARACTER lengths).
    let f: Dstemr = unsafe { std::mem::transmute::<usize, Dstemr>(DSTEMR.address()) };
    let (mut dd, mut ee) = (d.to_vec(), e.to_vec());
    ee.push(0.0);
    let mut w = vec![0.0; n];
    let mut z = vec![0.0; n * n];
    let mut isuppz = vec![0; 2 * n];
    let (ni, nzc, lwork, liwork) = (n as c_int, n as c_int, (18 * n) as c_int, (10 * n) as c_int);
    let mut work = vec![0.0; 18 * n];
    let mut iwork = vec![0; 10 * n];
    let (mut m, mut tryrac, mut info) = (0, 1, 0);
    let zero = 0.0;
    let izero = 0;
    let t0 = Instant::now();
    // SAFETY: every array has the extent DSTEMR documents for JOBZ = 'V', RANGE = 'A'.
    unsafe {
        f(
            b"V".as_ptr().cast(),
            b"A".as_ptr().cast(),
            &ni,
            dd.as_mut_ptr(),
            ee.as_mut_ptr(),
            &zero,
            &zero,
            &izero,
            &izero,
            &mut m,
            w.as_mut_ptr(),
            z.as_mut_ptr(),
            &ni,
            &nzc,
            isuppz.as_mut_ptr(),
            &mut tryrac,
            work.as_mut_ptr(),
            &lwork,
            iwork.as_mut_ptr(),
            &liwork,
            &mut info,
            1,
            1,
        )
    };
    t0.elapsed().as_secs_f64()
}

/// Seconds of LAPACK dstedc (COMPZ = 'I') on the host.
fn dstedc(d: &[f64], e: &[f64]) -> f64 {
    let n = d.len();
    // SAFETY: DSTEDC's signature (with the hidden CHARACTER length).
    let f: Dstedc = unsafe { std::mem::transmute::<usize, Dstedc>(DSTEDC.address()) };
    let (mut dd, mut ee) = (d.to_vec(), e.to_vec());
    ee.push(0.0);
    let mut z = vec![0.0; n * n];
    let ni = n as c_int;
    let lwork = 1 + 4 * n + n * n;
    let liwork = 3 + 5 * n;
    let mut work = vec![0.0; lwork];
    let mut iwork = vec![0; liwork];
    let (lw, liw) = (lwork as c_int, liwork as c_int);
    let mut info = 0;
    let t0 = Instant::now();
    // SAFETY: the arrays have the extents DSTEDC documents for COMPZ = 'I'.
    unsafe {
        f(
            b"I".as_ptr().cast(),
            &ni,
            dd.as_mut_ptr(),
            ee.as_mut_ptr(),
            z.as_mut_ptr(),
            &ni,
            work.as_mut_ptr(),
            &lw,
            iwork.as_mut_ptr(),
            &liw,
            &mut info,
            1,
        )
    };
    t0.elapsed().as_secs_f64()
}
