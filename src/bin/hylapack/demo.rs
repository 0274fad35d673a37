//! `hylapack demo`: every routine that exists, on a realistic example, through the exported
//! C entry points (so dispatch decides the backend as for a user), checked against the system
//! LAPACK. Exit status: the number of failed checks.

use crate::table::{time, Table};
use hylapack::api::gtsv::dgtsv_spike;
use hylapack::api::stebz::{dstebz_gpu, sstebz_gpu};
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
    table.print();
    let passed = results.iter().filter(|&&ok| ok).count();
    println!(
        "{passed} of {} checks passed (stebz: M, NSPLIT, IBLOCK, ISPLIT equal to LAPACK's, eigenvalues within 4 ulp * max|T|; gtsv: residual within 10x of LAPACK's, solutions within 1e3 eps)",
        results.len()
    );
    (results.len() - passed) as i32
}
