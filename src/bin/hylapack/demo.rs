//! `hylapack demo`: every routine that exists, on a realistic example, through the exported
//! C entry points (so dispatch decides the backend as for a user), checked against the system
//! LAPACK. Exit status: the number of failed checks.

use crate::table::{time, Table};
use hylapack::api::gtsv::dgtsv_spike;
use hylapack::api::interval::{dgemm_rounded, dgesv_verified};
use hylapack::api::stebz::{dstebz_gpu, sstebz_gpu};
use hylapack::api::syev::dsyev_ooc;
use hylapack::dispatch;
use hylapack::lapack::Lapack;
use hylapack::testmat::{self, Rng, TridiagFamily};
use std::time::Instant;

/// One xSTEBZ example: hylapack and LAPACK on the same matrix, compared.
struct StebzCase {
    label: &'static str,
    family: TridiagFamily,
    n: usize,
    range: u8,
    /// For RANGE = 'I': the fraction of the spectrum asked for, from its middle.
    fraction: f64,
}

type StebzFn<T> = unsafe extern "C" fn(
    std::ffi::c_char,
    std::ffi::c_char,
    i32,
    T,
    T,
    i32,
    i32,
    T,
    *const T,
    *const T,
    *mut i32,
    *mut i32,
    *mut T,
    *mut i32,
    *mut i32,
) -> i32;

fn run_stebz<T: Lapack>(
    case: &StebzCase,
    routine: &str,
    f: StebzFn<T>,
    rng: &mut Rng,
    table: &mut Table,
) -> bool {
    let n = case.n;
    let (d, e) = testmat::tridiag::<T>(case.family, n, rng);
    let (il, iu) = if case.range == b'I' {
        let k = ((n as f64 * case.fraction) as i32).max(1);
        let il = (n as i32 - k) / 2 + 1;
        (il, il + k - 1)
    } else {
        (1, n as i32)
    };
    let zero = T::ZERO;
    let (mut w, mut iblock, mut isplit) = (vec![zero; n], vec![0; n], vec![0; n]);
    let (mut m, mut nsplit) = (0, 0);
    let started = Instant::now();
    // SAFETY: every array has the n entries dstebz_gpu reads or writes.
    let info = unsafe {
        f(
            case.range as _,
            b'E' as _,
            n as i32,
            zero,
            zero,
            il,
            iu,
            zero,
            d.as_ptr(),
            e.as_ptr(),
            &mut m,
            &mut nsplit,
            w.as_mut_ptr(),
            iblock.as_mut_ptr(),
            isplit.as_mut_ptr(),
        )
    };
    let ours = started.elapsed().as_secs_f64();
    let backend = dispatch::last_backend().map_or("?", |b| b.name());

    let (mut w_ref, mut iblock_ref, mut isplit_ref) = (vec![zero; n], vec![0; n], vec![0; n]);
    let started = Instant::now();
    let r = T::stebz(
        case.range,
        b'E',
        zero,
        zero,
        il,
        iu,
        zero,
        &d,
        &e,
        &mut w_ref,
        &mut iblock_ref,
        &mut isplit_ref,
    );
    let lapack = started.elapsed().as_secs_f64();

    let mm = m.max(0) as usize;
    let same_counts = info == r.info
        && m == r.m
        && nsplit == r.nsplit
        && iblock[..mm] == iblock_ref[..mm]
        && isplit[..nsplit as usize] == isplit_ref[..r.nsplit as usize];
    let norm = d
        .iter()
        .chain(&e)
        .fold(T::ZERO, |a, &x| a.max(x.abs()))
        .to_f64();
    let err = w[..mm]
        .iter()
        .zip(&w_ref[..mm])
        .map(|(a, b)| (a.to_f64() - b.to_f64()).abs())
        .fold(0.0, f64::max);
    // LAPACK's own error bound for ABSTOL <= 0 is about ulp * ||T|| per eigenvalue (both sides).
    let bound = 4.0 * T::ULP.to_f64() * norm.max(T::SAFE_MIN.to_f64());
    let ok = same_counts && err <= bound;
    table.row(vec![
        routine.into(),
        case.label.into(),
        n.to_string(),
        format!("{}", m),
        backend.into(),
        time(ours),
        time(lapack),
        format!("{:.1}x", lapack / ours),
        format!("{err:.1e}"),
        if ok { "ok".into() } else { "FAILED".into() },
    ]);
    ok
}

/// `dgtsv_spike` on a large diagonally dominant system against LAPACK dgtsv: the relative
/// residuals of both and the relative difference of the solutions.
fn run_gtsv(n: usize, nrhs: usize, rng: &mut Rng, table: &mut Table) -> bool {
    let a = hylapack::gtsv::matrices::diagonally_dominant(n, rng);
    let b: Vec<f64> = (0..n * nrhs).map(|_| rng.range(-1.0, 1.0)).collect();
    let (mut dl, mut d, mut du, mut x) = (a.dl.clone(), a.d.clone(), a.du.clone(), b.clone());
    let started = Instant::now();
    // SAFETY: dl/du hold n - 1 entries, d holds n, x holds n * nrhs with leading dimension n.
    let info = unsafe {
        dgtsv_spike(
            n as i32,
            nrhs as i32,
            dl.as_mut_ptr(),
            d.as_mut_ptr(),
            du.as_mut_ptr(),
            x.as_mut_ptr(),
            n as i32,
        )
    };
    let ours = started.elapsed().as_secs_f64();
    let backend = dispatch::last_backend().map_or("?", |b| b.name());
    let (mut dl, mut d, mut du, mut x_ref) = (a.dl.clone(), a.d.clone(), a.du.clone(), b.clone());
    let started = Instant::now();
    let info_ref = f64::gtsv(&mut dl, &mut d, &mut du, &mut x_ref, n, nrhs);
    let lapack = started.elapsed().as_secs_f64();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let residual = |x: &[f64]| {
        (0..nrhs)
            .map(|k| {
                let (xk, bk) = (&x[k * n..(k + 1) * n], &b[k * n..(k + 1) * n]);
                let r: Vec<f64> = a.mul(xk).iter().zip(bk).map(|(ax, b)| ax - b).collect();
                norm(&r) / norm(bk)
            })
            .fold(0.0, f64::max)
    };
    let (res, res_ref) = (residual(&x), residual(&x_ref));
    let diff: Vec<f64> = x.iter().zip(&x_ref).map(|(a, b)| a - b).collect();
    let rel_diff = norm(&diff) / norm(&x_ref);
    // A diagonally dominant system is well conditioned: both solutions must be accurate.
    let ok = info == 0
        && info_ref == 0
        && res <= 10.0 * res_ref.max(f64::EPSILON)
        && rel_diff <= 1e3 * f64::EPSILON;
    table.row(vec![
        "dgtsv_spike".into(),
        format!("diag. dominant, {nrhs} rhs"),
        n.to_string(),
        "-".into(),
        backend.into(),
        time(ours),
        time(lapack),
        format!("{:.1}x", lapack / ours),
        format!("{rel_diff:.1e}"),
        if ok { "ok".into() } else { "FAILED".into() },
    ]);
    ok
}

/// `dgesv_verified` on a random integer system with a known integer solution x* (b = A x*
/// exactly), against LAPACK's unverified DGETRF + DGETRS: x* must lie in every interval.
fn run_verified(n: usize, rng: &mut Rng, table: &mut Table) -> bool {
    let a: Vec<f64> = (0..n * n)
        .map(|_| (rng.below(201) as i64 - 100) as f64)
        .collect();
    let xs: Vec<f64> = (0..n)
        .map(|_| (rng.below(2001) as i64 - 1000) as f64)
        .collect();
    let b: Vec<f64> = (0..n)
        .map(|i| (0..n).map(|l| a[i + l * n] * xs[l]).sum())
        .collect();
    let (mut lo, mut hi) = (vec![0.0; n], vec![0.0; n]);
    let started = Instant::now();
    // SAFETY: A is n × n, b and the outputs n × 1, leading dimensions n.
    let info = unsafe {
        dgesv_verified(
            n as i32,
            1,
            a.as_ptr(),
            n as i32,
            b.as_ptr(),
            n as i32,
            lo.as_mut_ptr(),
            hi.as_mut_ptr(),
            n as i32,
        )
    };
    let ours = started.elapsed().as_secs_f64();
    let backend = dispatch::last_backend().map_or("?", |b| b.name());
    let (mut lu, mut x, mut ipiv) = (a.clone(), b.clone(), vec![0i32; n]);
    let started = Instant::now();
    let info_ref = hylapack::lapack::dgetrf(n, &mut lu, n, &mut ipiv);
    hylapack::lapack::dgetrs(n, 1, &lu, n, &ipiv, &mut x, n);
    let lapack = started.elapsed().as_secs_f64();
    let inside = (0..n).all(|i| lo[i] <= xs[i] && xs[i] <= hi[i]);
    let width = (0..n)
        .map(|i| (hi[i] - lo[i]) / xs[i].abs().max(1.0))
        .fold(0.0, f64::max);
    let ok = info == 0 && info_ref == 0 && inside && width <= 1e-12;
    table.row(vec![
        "dgesv_verified".into(),
        "random integers, x* known".into(),
        n.to_string(),
        "-".into(),
        backend.into(),
        time(ours),
        time(lapack),
        format!("{:.1}x", lapack / ours),
        format!("width {width:.0e}"),
        if ok { "ok".into() } else { "FAILED".into() },
    ]);
    ok
}

/// `dsyev_ooc` (all eigenvalues through the band reduction) against LAPACK's DSYEV on a random
/// dense symmetric matrix: within 4 n ε ‖A‖ (both results' errors).
fn run_syev(n: usize, rng: &mut Rng, table: &mut Table) -> bool {
    use hylapack::lapack::Dense;
    let a = testmat::dense_symmetric::<f64>(testmat::DenseFamily::Random, n, rng);
    let (mut work, mut w) = (a.clone(), vec![0.0; n]);
    let started = Instant::now();
    // SAFETY: A is n × n with leading dimension n, w holds n entries.
    let info = unsafe {
        dsyev_ooc(
            b'N' as std::ffi::c_char,
            b'L' as std::ffi::c_char,
            n as i32,
            work.as_mut_ptr(),
            n as i32,
            w.as_mut_ptr(),
        )
    };
    let ours = started.elapsed().as_secs_f64();
    let backend = dispatch::last_backend().map_or("?", |b| b.name());
    let (mut work, mut w_ref) = (a, vec![0.0; n]);
    let started = Instant::now();
    let info_ref = f64::syev_values(b'L', n, &mut work, n, &mut w_ref);
    let lapack = started.elapsed().as_secs_f64();
    let norm = w_ref.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let diff = w
        .iter()
        .zip(&w_ref)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    let ok = info == 0 && info_ref == 0 && diff <= 4.0 * n as f64 * f64::EPSILON * norm;
    table.row(vec![
        "dsyev_ooc".into(),
        "all, random dense".into(),
        n.to_string(),
        n.to_string(),
        backend.into(),
        time(ours),
        time(lapack),
        format!("{:.1}x", lapack / ours),
        format!("{:.1e}", diff / norm.max(f64::MIN_POSITIVE)),
        if ok { "ok".into() } else { "FAILED".into() },
    ]);
    ok
}

/// `dgemm_rounded` up and down bracket LAPACK's DGEMM result.
fn run_rounded(n: usize, rng: &mut Rng, table: &mut Table) -> bool {
    let (a, b): (Vec<f64>, Vec<f64>) = (0..n * n)
        .map(|_| (rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)))
        .unzip();
    let (mut up, mut down, mut c) = (vec![0.0; n * n], vec![0.0; n * n], vec![0.0; n * n]);
    let started = Instant::now();
    let mut info = 0;
    for (rnd, out) in [(b'U', &mut up), (b'D', &mut down)] {
        // SAFETY: all matrices are n × n with leading dimension n.
        info |= unsafe {
            dgemm_rounded(
                rnd as std::ffi::c_char,
                b'N' as std::ffi::c_char,
                b'N' as std::ffi::c_char,
                n as i32,
                n as i32,
                n as i32,
                1.0,
                a.as_ptr(),
                n as i32,
                b.as_ptr(),
                n as i32,
                0.0,
                out.as_mut_ptr(),
                n as i32,
            )
        };
    }
    let ours = started.elapsed().as_secs_f64() / 2.0;
    let backend = dispatch::last_backend().map_or("?", |b| b.name());
    let started = Instant::now();
    <f64 as hylapack::lapack::Dense>::gemm(
        b'N',
        b'N',
        n,
        n,
        n,
        1.0,
        (&a, n),
        (&b, n),
        0.0,
        &mut c,
        n,
    );
    let lapack = started.elapsed().as_secs_f64();
    // |entries| ≤ 1, so Σ|a||b| ≤ n and each bound is within 2(n+1)·u·n of the exact value;
    // LAPACK's nearest-rounded product lies within (n+1)·u·n of it.
    let u = f64::EPSILON / 2.0;
    let (nf, slack) = (n as f64, (n as f64 + 1.0) * u * n as f64);
    let gap = (0..n * n).map(|k| up[k] - down[k]).fold(0.0, f64::max);
    let ordered =
        (0..n * n).all(|k| down[k] <= up[k] && down[k] - slack <= c[k] && c[k] <= up[k] + slack);
    let ok = info == 0 && ordered && gap <= 4.0 * (nf + 1.0) * u * nf;
    table.row(vec![
        "dgemm_rounded".into(),
        "U and D, uniform [-1,1]".into(),
        n.to_string(),
        "-".into(),
        backend.into(),
        time(ours),
        time(lapack),
        format!("{:.1}x", lapack / ours),
        format!("U-D {gap:.0e}"),
        if ok { "ok".into() } else { "FAILED".into() },
    ]);
    ok
}

pub fn run() -> i32 {
    let seed = testmat::seed_from_time();
    let mut rng = Rng::new(seed);
    println!(
        "hylapack demo (seed {seed}); GPU: {}",
        match hylapack::device::gpu() {
            Ok(g) => g.info.name.clone(),
            Err(e) => format!("none ({e}), CPU path"),
        }
    );
    let mut table = Table::new(&[
        "routine", "problem", "n", "m", "backend", "hylapack", "LAPACK", "speedup", "max diff",
        "check",
    ]);
    let cases = [
        StebzCase {
            label: "all, glued (-1,2,-1)",
            family: TridiagFamily::GluedOneTwoOne,
            n: 3000,
            range: b'A',
            fraction: 1.0,
        },
        StebzCase {
            label: "all, random",
            family: TridiagFamily::Random,
            n: 3000,
            range: b'A',
            fraction: 1.0,
        },
        StebzCase {
            label: "1% by index, random",
            family: TridiagFamily::Random,
            n: 30000,
            range: b'I',
            fraction: 0.01,
        },
    ];
    let mut results: Vec<bool> = cases
        .iter()
        .map(|c| run_stebz::<f64>(c, "dstebz_gpu", dstebz_gpu, &mut rng, &mut table))
        .collect();
    results.push(run_stebz::<f32>(
        &cases[0],
        "sstebz_gpu",
        sstebz_gpu,
        &mut rng,
        &mut table,
    ));
    results.push(run_gtsv(1 << 20, 1, &mut rng, &mut table));
    // The CPU emulates directed rounding (slow): a smaller product there.
    let rounded_n = if hylapack::device::gpu().is_ok() {
        2048
    } else {
        256
    };
    results.push(run_rounded(rounded_n, &mut rng, &mut table));
    results.push(run_verified(1000, &mut rng, &mut table));
    results.push(run_syev(
        if hylapack::device::gpu().is_ok() {
            4096
        } else {
            1000
        },
        &mut rng,
        &mut table,
    ));
    table.print();
    let passed = results.iter().filter(|&&ok| ok).count();
    println!(
        "{passed} of {} checks passed (stebz: M, NSPLIT, IBLOCK, ISPLIT equal to LAPACK's, eigenvalues within 4 ulp * max|T|; gtsv: residual within 10x of LAPACK's, solutions within 1e3 eps; dgemm_rounded: D <= U, gap within the rounding bound; dgesv_verified: verified, x* inside, width <= 1e-12; dsyev_ooc: within 4 n eps |A| of LAPACK dsyev)",
        results.len()
    );
    (results.len() - passed) as i32
}
