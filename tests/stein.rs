//! xSTEIN (`hylapack::stein`) against the system LAPACK's, in both precisions, on every test
//! family, N = 1, 2, 3, 10, 200, 1000, for all eigenvalues and for an index subset, each time
//! on the W, IBLOCK, ISPLIT that the system LAPACK's xSTEBZ returns with ORDER = 'B'.
//!
//! What must agree with LAPACK: INFO and IFAIL exactly; orthogonality max|ZᵀZ − I| / (N ulp)
//! and the residual max_j ‖T z_j − w_j z_j‖₁ / (‖T‖₁ N ulp) each at most
//! max(10 × LAPACK's on the same input, 1), and below 50 (the threshold of LAPACK's own SEP
//! tests). Bad arguments: [`check_args`] gives the INFO that LAPACK's xSTEIN gives for the
//! same arguments (this program defines `xerbla_`, so LAPACK reports to it instead of
//! printing). Run with `--nocapture` for the worst ratios per family.
//!
//! Seeds change from run to run and are printed; `HYLAPACK_TEST_SEED` replays one.
//!
//! The comparisons with LAPACK run the backend `HYLAPACK_DEVICE` names: `gpu` runs the GPU
//! path at every size (with `HYLAPACK_REQUIRE_GPU=1` it must really run), anything else the
//! host path. The other tests exercise the host path.

mod common;
use common::{gpu_required, reported, seed, xerbla_count};
use hylapack::dispatch::Backend;

use hylapack::lapack::{Dense, Lapack, LapackStein};
use hylapack::real::Real;
use hylapack::stein::{self, check_args, SteinReal, SteinReport};
use hylapack::testmat::{self, Rng, TridiagFamily};
use std::ffi::c_int;

/// The eigenvalues as the system LAPACK's xSTEBZ returns them with ORDER = 'B'.
struct Eigenvalues<T> {
    w: Vec<T>,
    iblock: Vec<i32>,
    isplit: Vec<i32>,
}

fn stebz_by_block<T: Lapack>(range: u8, il: i32, iu: i32, d: &[T], e: &[T]) -> Eigenvalues<T> {
    let n = d.len();
    let (mut w, mut iblock, mut isplit) = (vec![T::ZERO; n], vec![0; n], vec![0; n]);
    let r = T::stebz(
        range,
        b'B',
        T::ZERO,
        T::ZERO,
        il,
        iu,
        T::ZERO,
        d,
        e,
        &mut w,
        &mut iblock,
        &mut isplit,
    );
    assert_eq!(r.info, 0, "xSTEBZ failed");
    w.truncate(r.m as usize);
    iblock.truncate(r.m as usize);
    Eigenvalues { w, iblock, isplit }
}

/// LAPACK's xSTEIN on the same input: (Z, INFO, IFAIL).
fn lapack_stein<T: LapackStein>(d: &[T], e: &[T], ev: &Eigenvalues<T>) -> (Vec<T>, SteinReport) {
    let (n, m) = (d.len(), ev.w.len());
    let ldz = n.max(1);
    let mut z = vec![T::ZERO; ldz * m.max(1)];
    let mut ifail = vec![0; m.max(1)];
    let info = T::stein(
        n as i32, d, e, m as i32, &ev.w, &ev.iblock, &ev.isplit, &mut z, ldz as i32, &mut ifail,
    );
    ifail.truncate(m);
    (z, SteinReport { info, ifail })
}

/// The backend the comparisons run: the GPU path when `HYLAPACK_DEVICE=gpu`.
fn backend() -> Backend {
    if std::env::var("HYLAPACK_DEVICE").as_deref() == Ok("gpu") {
        Backend::Gpu
    } else {
        Backend::Cpu
    }
}

/// `stein` on [`backend`]; with `HYLAPACK_REQUIRE_GPU=1` the GPU path must have run wherever
/// there was a cluster for it (N ≥ 2 and an eigenvalue in a block of order ≥ 2).
fn run_backend<T: SteinReal>(
    d: &[T],
    e: &[T],
    ev: &Eigenvalues<T>,
    z: &mut [T],
    ctx: &str,
) -> SteinReport {
    let n = d.len();
    let run = stein::stein_with(backend(), d, e, &ev.w, &ev.iblock, &ev.isplit, z, n.max(1))
        .expect("host memory");
    if backend() == Backend::Gpu && gpu_required() && n >= 2 && !ev.w.is_empty() {
        assert_eq!(
            run.backend,
            Backend::Gpu,
            "{ctx}: HYLAPACK_REQUIRE_GPU=1 but the GPU path did not run: {:?}",
            run.note
        );
    }
    run.report
}

/// (orthogonality, residual) ratios of the N x M eigenvector matrix `z`, both in units of
/// N ulp (the residual relative to ‖T‖₁), computed in double precision.
fn quality<T: Real>(d: &[T], e: &[T], w: &[T], z: &[T]) -> (f64, f64) {
    let (n, m) = (d.len(), w.len());
    if m == 0 {
        return (0.0, 0.0);
    }
    let ulp = T::ULP.to_f64();
    let scale = n as f64 * ulp;
    let z64: Vec<f64> = z[..n * m].iter().map(|x| x.to_f64()).collect();
    let mut g = vec![0.0f64; m * m];
    f64::gemm(
        b'T',
        b'N',
        m,
        m,
        n,
        1.0,
        (&z64, n),
        (&z64, n),
        0.0,
        &mut g,
        m,
    );
    let mut orth = 0.0f64;
    for j in 0..m {
        for i in 0..m {
            let target = if i == j { 1.0 } else { 0.0 };
            orth = orth.max((g[i + j * m] - target).abs());
        }
    }
    let (d64, e64): (Vec<f64>, Vec<f64>) = (
        d.iter().map(|x| x.to_f64()).collect(),
        e.iter().map(|x| x.to_f64()).collect(),
    );
    let mut tnorm = 0.0f64;
    for i in 0..n {
        let left = if i > 0 { e64[i - 1].abs() } else { 0.0 };
        let right = if i + 1 < n { e64[i].abs() } else { 0.0 };
        tnorm = tnorm.max(d64[i].abs() + left + right);
    }
    let tnorm = tnorm.max(f64::MIN_POSITIVE);
    let mut resid = 0.0f64;
    for j in 0..m {
        let (zj, lambda) = (&z64[j * n..(j + 1) * n], w[j].to_f64());
        let mut r = 0.0;
        for i in 0..n {
            let mut t = (d64[i] - lambda) * zj[i];
            if i > 0 {
                t += e64[i - 1] * zj[i - 1];
            }
            if i + 1 < n {
                t += e64[i] * zj[i + 1];
            }
            r += t.abs();
        }
        resid = resid.max(r);
    }
    (orth / scale, resid / (tnorm * scale))
}

/// The worst ratios seen for one family, ours against LAPACK's on the same input.
#[derive(Clone, Copy, Default, Debug)]
struct Worst {
    orth_ratio: f64,
    resid_ratio: f64,
    orth: f64,
    resid: f64,
    orth_ref: f64,
    resid_ref: f64,
}

/// Whether a ratio of ours (orthogonality or residual) passes against LAPACK's on the same
/// input: below 50 where LAPACK is; where LAPACK itself fails its SEP threshold (single
/// precision, the geometric family's thousand eigenvalues below ORTOL form one cluster), no
/// worse than LAPACK.
fn as_good_as_lapack(ours: f64, theirs: f64) -> bool {
    ours <= (10.0 * theirs).max(1.0) && ours < theirs.max(50.0)
}

/// One comparison; panics with the context on a failure.
fn compare<T: Lapack + LapackStein + Dense + SteinReal>(
    ctx: &str,
    d: &[T],
    e: &[T],
    range: u8,
    il: i32,
    iu: i32,
    worst: &mut Worst,
) {
    let n = d.len();
    let ev = stebz_by_block(range, il, iu, d, e);
    let m = ev.w.len();
    let (z_ref, rep_ref) = lapack_stein(d, e, &ev);
    let mut z = vec![T::ZERO; n.max(1) * m.max(1)];
    let rep = run_backend(d, e, &ev, &mut z, ctx);
    assert_eq!(rep, rep_ref, "{ctx}: INFO/IFAIL differ from LAPACK's");
    let (orth, resid) = quality(d, e, &ev.w, &z);
    let (orth_ref, resid_ref) = quality(d, e, &ev.w, &z_ref);
    let ok = as_good_as_lapack;
    assert!(
        ok(orth, orth_ref) && ok(resid, resid_ref),
        "{ctx} (M = {m}): orthogonality {orth:.3} vs LAPACK {orth_ref:.3}, residual {resid:.3} vs LAPACK {resid_ref:.3}"
    );
    let ratio = |a: f64, b: f64| a / b.max(1.0 / 16.0);
    worst.orth_ratio = worst.orth_ratio.max(ratio(orth, orth_ref));
    worst.resid_ratio = worst.resid_ratio.max(ratio(resid, resid_ref));
    worst.orth = worst.orth.max(orth);
    worst.resid = worst.resid.max(resid);
    worst.orth_ref = worst.orth_ref.max(orth_ref);
    worst.resid_ref = worst.resid_ref.max(resid_ref);
}

const SIZES: [usize; 6] = [1, 2, 3, 10, 200, 1000];

fn families_against_lapack<T: Lapack + LapackStein + Dense + SteinReal>() {
    let seed = seed();
    println!("{}stein families, seed {seed}", T::PREFIX);
    let mut rng = Rng::new(seed);
    for family in TridiagFamily::all() {
        let mut worst = Worst::default();
        for n in SIZES {
            let (d, e) = testmat::tridiag::<T>(family, n, &mut rng);
            let ctx = format!("{}stein {} n={n} seed {seed}", T::PREFIX, family.name());
            compare(&format!("{ctx} RANGE=A"), &d, &e, b'A', 0, 0, &mut worst);
            if n >= 2 {
                let a = 1 + rng.below(n) as i32;
                let b = 1 + rng.below(n) as i32;
                let (il, iu) = (a.min(b), a.max(b));
                let ctx = format!("{ctx} RANGE=I {il}..={iu}");
                compare(&ctx, &d, &e, b'I', il, iu, &mut worst);
            }
        }
        println!(
            "{}stein {:>15}: worst ratio ours/LAPACK: orthogonality {:.2}, residual {:.2}; \
             worst (N ulp): orthogonality ours {:.3} LAPACK {:.3}, residual ours {:.3} LAPACK {:.3}",
            T::PREFIX,
            family.name(),
            worst.orth_ratio,
            worst.resid_ratio,
            worst.orth,
            worst.orth_ref,
            worst.resid,
            worst.resid_ref
        );
    }
}

#[test]
fn dstein_matches_lapack_on_every_family() {
    families_against_lapack::<f64>();
}

#[test]
fn sstein_matches_lapack_on_every_family() {
    families_against_lapack::<f32>();
}

/// The answer, Z bit for bit, does not depend on the number of threads.
#[test]
fn threads_do_not_change_the_answer() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    for family in [TridiagFamily::GluedOneTwoOne, TridiagFamily::Split] {
        let (d, e) = testmat::tridiag::<f64>(family, 600, &mut rng);
        let ev = stebz_by_block(b'A', 0, 0, &d, &e);
        let m = ev.w.len();
        let run = |threads| {
            let mut z = vec![0.0f64; 600 * m];
            let r = stein::stein_on(threads, &d, &e, &ev.w, &ev.iblock, &ev.isplit, &mut z, 600)
                .expect("host memory");
            (r, z)
        };
        let (r1, z1) = run(1);
        for threads in [2, 3, 8] {
            let (r, z) = run(threads);
            assert_eq!(r, r1, "{} seed {seed}", family.name());
            assert!(
                z.iter().zip(&z1).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{} seed {seed}: {threads} threads differ from one",
                family.name()
            );
        }
    }
}

/// LDZ > N: rows N.. of Z are left alone, as LAPACK leaves them.
#[test]
fn rows_below_n_are_untouched() {
    let mut rng = Rng::new(seed());
    let (d, e) = testmat::tridiag::<f64>(TridiagFamily::Split, 30, &mut rng);
    let ev = stebz_by_block(b'A', 0, 0, &d, &e);
    let (n, m, ldz) = (30, ev.w.len(), 33);
    let mut z = vec![7.0f64; ldz * m];
    let mut z_ref = z.clone();
    let mut ifail = vec![0; m];
    let info = f64::stein(
        n as i32, &d, &e, m as i32, &ev.w, &ev.iblock, &ev.isplit, &mut z_ref, ldz as i32,
        &mut ifail,
    );
    let rep =
        stein::stein(&d, &e, &ev.w, &ev.iblock, &ev.isplit, &mut z, ldz).expect("host memory");
    assert_eq!((rep.info, rep.ifail), (info, ifail));
    for j in 0..m {
        assert!(z[j * ldz + n..(j + 1) * ldz].iter().all(|&x| x == 7.0));
        assert!(z_ref[j * ldz + n..(j + 1) * ldz].iter().all(|&x| x == 7.0));
    }
}

/// N = 0, N = 1, M = 0; IBLOCK(1) = 0 (LAPACK's block loop never starts: Z untouched); a
/// block number skipped; an eigenvalue repeated in a block of order 1. Z as LAPACK leaves it.
#[test]
fn edge_cases_as_lapack() {
    let check = |d: &[f64], e: &[f64], w: &[f64], iblock: &[i32], isplit: &[i32]| {
        let (n, m) = (d.len(), w.len());
        let ldz = n.max(1);
        let mut z = vec![7.0f64; ldz * m.max(1)];
        let mut z_ref = z.clone();
        let mut ifail = vec![5; m.max(1)];
        let info = f64::stein(
            n as i32, d, e, m as i32, w, iblock, isplit, &mut z_ref, ldz as i32, &mut ifail,
        );
        ifail.truncate(m);
        let rep = stein::stein(d, e, w, iblock, isplit, &mut z, ldz).expect("host memory");
        assert_eq!((rep.info, &rep.ifail), (info, &ifail), "{iblock:?}");
        if w.iter().any(|x| x.abs() > 100.0) {
            assert!(info > 0, "the far shifts were meant to fail");
        }
        for (a, b) in z.iter().zip(&z_ref) {
            assert!((a - b).abs() <= 1e-14, "{iblock:?}: {z:?} vs {z_ref:?}");
        }
    };
    check(&[], &[], &[], &[], &[]);
    check(&[3.0], &[], &[3.0], &[1], &[1]);
    check(&[3.0, 1.0], &[0.5], &[], &[], &[2]);
    let (d, e) = ([2.0, 2.0, 1.0, 4.0], [-1.0, 0.0, 0.5]);
    check(&d, &e, &[1.0, 3.0], &[0, 1], &[2, 4]);
    check(&d, &e, &[1.0, 3.0], &[1, 1], &[2, 4]);
    // Blocks 1 (rows 1-2) and 3 (rows 4-5) of a matrix split three ways; block 2 has none.
    let (d, e) = ([2.0, 2.0, 5.0, 1.0, 3.0], [-1.0, 0.0, 0.0, 0.25]);
    check(&d, &e, &[1.0, 0.9, 3.0], &[1, 3, 3], &[2, 3, 5]);
    // One block of order 1 with its eigenvalue twice, then a block of order 2.
    let (d, e) = ([5.0, 2.0, 2.0], [0.0, -1.0]);
    check(&d, &e, &[5.0, 5.0, 1.0, 3.0], &[1, 1, 2, 2], &[1, 3]);
    // Shifts far outside a small block's spectrum: the iterates never grow past DTPCRT, so
    // those vectors fail (INFO = 2, IFAIL = 2, 3), between ones that converge.
    let (d, e) = ([1.0, 3.0, 1e-3, 2e-3, 1e-3], [1.0, 0.0, 1e-3, 1e-3]);
    let w = [0.5, 3.5, 1.0e3, 2.0e3, 2.0e-3];
    check(&d, &e, &w[..4], &[1, 1, 2, 2], &[2, 5]);
    let w = [0.5, 3.5, -1.0e3, 2.0e-3, 3.0e-3];
    check(&d, &e, &w, &[1, 1, 2, 2, 2], &[2, 5]);
}

/// Every illegal argument gives LAPACK's INFO, in LAPACK's order, and LAPACK reports it to
/// `xerbla_` with its name.
#[test]
fn bad_arguments_in_lapack_order() {
    fn expect_lapacks<T: LapackStein>(n: i32, m: i32, ldz: i32, w: &[T], iblock: &[i32]) {
        let (d, e) = (vec![T::ONE; 8], vec![T::HALF; 8]);
        let isplit = [4; 8];
        let mut z = vec![T::ZERO; 64];
        let mut ifail = vec![9; 16];
        let ours = check_args(n, m, w, iblock, ldz);
        let info = T::stein(n, &d, &e, m, w, iblock, &isplit, &mut z, ldz, &mut ifail);
        assert_eq!(
            ours, info,
            "n={n} m={m} ldz={ldz} w={w:?} iblock={iblock:?}"
        );
        assert!(ours < 0, "n={n} m={m} ldz={ldz} is legal");
        let name = format!("{}STEIN", T::PREFIX.to_ascii_uppercase());
        assert!(
            reported(&name, -ours),
            "xerbla_ not called for {name} argument {}",
            -ours
        );
    }
    fn all<T: LapackStein>() {
        let f = |x: f64| T::from_f64(x);
        let w: Vec<T> = [1.0, 2.0, 3.0, 4.0].map(f).to_vec();
        let down: Vec<T> = [1.0, 3.0, 2.0, 4.0].map(f).to_vec();
        let (one, two) = ([1, 1, 1, 1], [1, 2, 1, 1]);
        expect_lapacks::<T>(-1, 0, 1, &w, &one);
        expect_lapacks::<T>(-1, -1, 0, &w, &one);
        expect_lapacks::<T>(4, -1, 4, &w, &one);
        expect_lapacks::<T>(4, 5, 0, &w, &one);
        expect_lapacks::<T>(0, 1, 1, &w, &one);
        expect_lapacks::<T>(4, 4, 3, &w, &one);
        expect_lapacks::<T>(0, 0, 0, &w, &one);
        expect_lapacks::<T>(4, 4, 4, &w, &two); // IBLOCK(3) < IBLOCK(2)
        expect_lapacks::<T>(4, 4, 4, &down, &one); // W(3) < W(2) in one block
        expect_lapacks::<T>(4, 4, 4, &down, &[1, 1, 1, 0]); // -5 at j = 3 comes before -6 at j = 4
        expect_lapacks::<T>(4, 4, 4, &down, &[1, 2, 1, 1]); // -6 at j = 3, W's order there not asked
        expect_lapacks::<T>(4, 4, 4, &[4.0, 3.0, 2.0, 1.0].map(f), &one);
    }
    all::<f64>();
    all::<f32>();
    // Legal: W may decrease across a block boundary.
    let w = [3.0f64, 1.0];
    assert_eq!(check_args(2, 2, &w, &[1, 2], 2), 0);
}

/// Inside a tight cluster the vectors depend on the starting vectors (any orthonormal basis
/// of the cluster's invariant subspace would do); they agree with LAPACK's because the
/// starting vectors are LAPACK's own (xLARNV from ISEED = 1, 1, 1, 1). Up to sign: where two
/// components tie for the largest magnitude (this matrix is symmetric about its centre),
/// rounding decides which one is made positive.
#[test]
fn starting_vectors_are_lapacks() {
    fn run<T: Lapack + LapackStein + SteinReal>(tol: f64) {
        let n = 100;
        let (d, e) = testmat::tridiag::<T>(TridiagFamily::GluedOneTwoOne, n, &mut Rng::new(0));
        let ev = stebz_by_block(b'A', 0, 0, &d, &e);
        let (z_ref, rep_ref) = lapack_stein(&d, &e, &ev);
        let mut z = vec![T::ZERO; z_ref.len()];
        let rep =
            stein::stein(&d, &e, &ev.w, &ev.iblock, &ev.isplit, &mut z, n).expect("host memory");
        assert_eq!(rep, rep_ref);
        let mut worst = 0.0f64;
        for (a, b) in z.chunks(n).zip(z_ref.chunks(n)) {
            let diff = |s: f64| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| (x.to_f64() - s * y.to_f64()).abs())
                    .fold(0.0, f64::max)
            };
            worst = worst.max(diff(1.0).min(diff(-1.0)));
        }
        println!(
            "{}stein glued n={n}: max |z ∓ z_LAPACK| = {worst:.3e}",
            T::PREFIX
        );
        assert!(worst < tol, "{}: {worst}", T::PREFIX);
    }
    run::<f64>(1e-11);
    run::<f32>(1e-4);
}

/// A block that ISPLIT does not place inside 1..=N (where LAPACK would read past its arrays)
/// is not read: its columns are zero and reported failed; the other blocks are computed.
#[test]
fn blocks_outside_t_fail_instead_of_reading_past_d() {
    let (d, e) = ([2.0f64, 2.0, 1.0, 4.0], [-1.0, 0.0, 0.0]);
    let w = [1.0, 3.0, 1.0, 4.0];
    for isplit in [&[2][..], &[2, 9], &[2, 2]] {
        let mut z = vec![7.0f64; 16];
        let rep = stein::stein(&d, &e, &w, &[1, 1, 2, 3], isplit, &mut z, 4).expect("host memory");
        assert_eq!(rep.info, 2, "{isplit:?}");
        assert_eq!(rep.ifail, [3, 4, 0, 0], "{isplit:?}");
        assert!(z[8..].iter().all(|&x| x == 0.0), "{isplit:?}");
        let s = 0.5f64.sqrt();
        assert!((z[0] - s).abs() < 1e-15 && (z[1] - s).abs() < 1e-15 && z[2..4] == [0.0, 0.0]);
    }
}

/// The exported names (C and Fortran conventions): LAPACK's INFO and `xerbla_` report for
/// each illegal argument in turn, a NULL array as an illegal value of its own argument, and
/// on legal input the same Z, INFO and IFAIL as the library function.
#[test]
fn exported_names_check_as_lapack_and_agree_with_the_library() {
    use hylapack::api::stein::{dstein_gpu, dstein_gpu_, sstein_gpu};
    let seed = seed();
    let mut rng = Rng::new(seed);
    let n = 40;
    let (d, e) = testmat::tridiag::<f64>(TridiagFamily::Random, n, &mut rng);
    let ev = stebz_by_block(b'A', 0, 0, &d, &e);
    let m = ev.w.len();
    let (mut z_lib, mut z_c, mut z_f) = (vec![0.0; n * m], vec![0.0; n * m], vec![0.0; n * m]);
    // The library function on the backend the exported names choose (HYLAPACK_DEVICE).
    let want = stein::stein_with(
        backend(),
        &d,
        &e,
        &ev.w,
        &ev.iblock,
        &ev.isplit,
        &mut z_lib,
        n,
    )
    .expect("host memory")
    .report;
    let (mut ifail_c, mut ifail_f) = (vec![7; m], vec![7; m]);
    let (ni, mi) = (n as c_int, m as c_int);
    // SAFETY: every array has the extent DSTEIN reads or writes.
    let info_c = unsafe {
        dstein_gpu(
            ni,
            d.as_ptr(),
            e.as_ptr(),
            mi,
            ev.w.as_ptr(),
            ev.iblock.as_ptr(),
            ev.isplit.as_ptr(),
            z_c.as_mut_ptr(),
            ni,
            ifail_c.as_mut_ptr(),
        )
    };
    let (mut work, mut iwork, mut info_f) = (vec![0.0; 5 * n], vec![0; n], 9);
    // SAFETY: as above, plus LAPACK's WORK (5N) and IWORK (N).
    unsafe {
        dstein_gpu_(
            &ni,
            d.as_ptr(),
            e.as_ptr(),
            &mi,
            ev.w.as_ptr(),
            ev.iblock.as_ptr(),
            ev.isplit.as_ptr(),
            z_f.as_mut_ptr(),
            &ni,
            work.as_mut_ptr(),
            iwork.as_mut_ptr(),
            ifail_f.as_mut_ptr(),
            &mut info_f,
        )
    };
    assert_eq!((info_c, info_f), (want.info, want.info), "seed={seed}");
    assert_eq!(
        (&ifail_c, &ifail_f),
        (&want.ifail, &want.ifail),
        "seed={seed}"
    );
    assert_eq!((&z_c, &z_f), (&z_lib, &z_lib), "seed={seed}");

    let wf: Vec<f32> = ev.w.iter().map(|&x| x as f32).collect();
    let (df, ef): (Vec<f32>, Vec<f32>) = (
        d.iter().map(|&x| x as f32).collect(),
        e.iter().map(|&x| x as f32).collect(),
    );
    let mut zf = vec![0.0f32; n * m];
    let mut ifail = vec![0; m];
    let null = std::ptr::null::<f32>();
    // (N, M, LDZ, D NULL, W NULL, expected INFO)
    for (nn, mm, ldz, d_null, w_null, expect) in [
        (-1, 0, 1, false, false, -1),
        (ni, mi + ni + 1, ni, false, false, -4),
        (ni, -1, 0, false, false, -4),
        (ni, mi, ni - 1, false, false, -9),
        (ni, mi, ni, false, true, -5),
        (ni, mi, ni, true, false, -2),
    ] {
        let before = xerbla_count("SSTEIN_GPU", -expect);
        // SAFETY: arrays of the extents above, or NULL where the case says so.
        let info = unsafe {
            sstein_gpu(
                nn,
                if d_null { null } else { df.as_ptr() },
                ef.as_ptr(),
                mm,
                if w_null { null } else { wf.as_ptr() },
                ev.iblock.as_ptr(),
                ev.isplit.as_ptr(),
                zf.as_mut_ptr(),
                ldz,
                ifail.as_mut_ptr(),
            )
        };
        assert_eq!(info, expect, "N={nn} M={mm} LDZ={ldz}");
        assert_eq!(
            xerbla_count("SSTEIN_GPU", -expect),
            before + 1,
            "xerbla_ for {expect}"
        );
    }
}

// ---- The device-pointer entry (`xstein_gpu_device`) ----

/// The GPU is required here (HYLAPACK_REQUIRE_GPU=1) or the test may skip.
fn have_gpu_or_skip() -> bool {
    let ok = hylapack::device::gpu().is_ok();
    assert!(ok || !gpu_required(), "HYLAPACK_REQUIRE_GPU=1 but no GPU");
    if !ok {
        eprintln!("skipped: no GPU");
    }
    ok
}

type Stream = std::sync::Arc<cudarc::driver::CudaStream>;
type Dev<U> = cudarc::driver::CudaSlice<U>;

/// A device copy of `v` (one element at least: a zero-length allocation has no address).
fn put<U: cudarc::driver::DeviceRepr + Clone + Default>(s: &Stream, v: &[U]) -> Dev<U> {
    let mut h = v.to_vec();
    if h.is_empty() {
        h.push(U::default());
    }
    s.clone_htod(&h).expect("upload")
}

fn addr<U>(s: &Stream, x: &Dev<U>) -> u64 {
    use cudarc::driver::DevicePtr;
    x.device_ptr(s).0
}

/// The inputs of one call on the device, and Z (`ldz` × M).
struct DeviceCall<T: cudarc::driver::DeviceRepr> {
    d: Dev<T>,
    e: Dev<T>,
    w: Dev<T>,
    iblock: Dev<i32>,
    isplit: Dev<i32>,
    z: Dev<T>,
}

impl<T: SteinReal + cudarc::driver::DeviceRepr + Default> DeviceCall<T> {
    /// Uploads on `s`, complete when it returns (a copy from pageable memory may still be
    /// in flight after the call that queued it).
    fn new(s: &Stream, d: &[T], e: &[T], ev: &Eigenvalues<T>, z: &[T]) -> Self {
        let call = DeviceCall {
            d: put(s, d),
            e: put(s, e),
            w: put(s, &ev.w),
            iblock: put(s, &ev.iblock),
            isplit: put(s, &ev.isplit),
            z: put(s, z),
        };
        s.synchronize().expect("sync");
        call
    }

    /// `xstein_gpu_device` with the caller's `stream` (`None`: NULL, the legacy default
    /// stream); returns INFO and IFAIL.
    fn call(
        &self,
        s: &Stream,
        n: usize,
        m: usize,
        ldz: usize,
        stream: Option<&Stream>,
    ) -> (i32, Vec<i32>) {
        use hylapack::api::stein::{dstein_gpu_device, sstein_gpu_device};
        let mut ifail = vec![-7; m.max(1)];
        let raw = stream.map_or(std::ptr::null_mut(), |t| {
            t.cu_stream() as *mut std::ffi::c_void
        });
        let (d, e, w, z) = (
            addr(s, &self.d),
            addr(s, &self.e),
            addr(s, &self.w),
            addr(s, &self.z),
        );
        let (ib, is) = (
            addr(s, &self.iblock) as *const c_int,
            addr(s, &self.isplit) as *const c_int,
        );
        let (ni, mi, li, f) = (n as c_int, m as c_int, ldz as c_int, ifail.as_mut_ptr());
        // SAFETY: device arrays of the extents xSTEIN reads and writes, IFAIL on the host.
        let info = unsafe {
            if T::PREFIX == 'd' {
                let p = |a: u64| a as *const f64;
                dstein_gpu_device(ni, p(d), p(e), mi, p(w), ib, is, z as *mut f64, li, f, raw)
            } else {
                let p = |a: u64| a as *const f32;
                sstein_gpu_device(ni, p(d), p(e), mi, p(w), ib, is, z as *mut f32, li, f, raw)
            }
        };
        ifail.truncate(m);
        (info, ifail)
    }
}

/// The device entry on `d`, `e`, `ev` with Z (ldz = N + 2) starting as 777: INFO and IFAIL
/// as LAPACK's and as the host entry's GPU path, quality as good as LAPACK's, rows N.. and
/// the inputs untouched; `stream` as for [`DeviceCall::call`]. Returns Z (N × M).
fn check_device<T>(
    ctx: &str,
    d: &[T],
    e: &[T],
    ev: &Eigenvalues<T>,
    stream: Option<&Stream>,
) -> Vec<T>
where
    T: Lapack + LapackStein + Dense + SteinReal + cudarc::driver::DeviceRepr + Default,
{
    let s = hylapack::device::gpu().expect("GPU").ctx.default_stream();
    let (n, m) = (d.len(), ev.w.len());
    let ldz = n + 2;
    let sentinel = T::from_f64(777.0);
    let dev = DeviceCall::new(&s, d, e, ev, &vec![sentinel; ldz * m.max(1)]);
    let (info, ifail) = dev.call(&s, n, m, ldz, stream);
    let got = s.clone_dtoh(&dev.z).expect("download");
    let (z_ref, rep_ref) = lapack_stein(d, e, ev);
    assert_eq!(
        SteinReport {
            info,
            ifail: ifail.clone()
        },
        rep_ref,
        "{ctx}: INFO/IFAIL differ from LAPACK's"
    );
    let mut z_host = vec![T::ZERO; n.max(1) * m.max(1)];
    let host = stein::stein_with(
        Backend::Gpu,
        d,
        e,
        &ev.w,
        &ev.iblock,
        &ev.isplit,
        &mut z_host,
        n.max(1),
    )
    .expect("host memory");
    assert_eq!(host.report, rep_ref, "{ctx}: the host entry's INFO/IFAIL");
    let mut z = vec![T::ZERO; n * m];
    for j in 0..m {
        z[j * n..(j + 1) * n].copy_from_slice(&got[j * ldz..j * ldz + n]);
        assert!(
            got[j * ldz + n..(j + 1) * ldz]
                .iter()
                .all(|&x| x == sentinel),
            "{ctx}: rows N.. of column {j} written"
        );
    }
    let (orth, resid) = quality(d, e, &ev.w, &z);
    let (orth_ref, resid_ref) = quality(d, e, &ev.w, &z_ref);
    assert!(
        as_good_as_lapack(orth, orth_ref) && as_good_as_lapack(resid, resid_ref),
        "{ctx} (M = {m}): orthogonality {orth:.3} vs LAPACK {orth_ref:.3}, residual {resid:.3} vs LAPACK {resid_ref:.3}"
    );
    let same =
        |x: &Dev<T>, v: &[T]| v.is_empty() || s.clone_dtoh(x).expect("download")[..v.len()] == *v;
    let same_int = |x: &Dev<i32>, v: &[i32]| {
        v.is_empty() || s.clone_dtoh(x).expect("download")[..v.len()] == *v
    };
    assert!(
        same(&dev.d, d)
            && same(&dev.e, e)
            && same(&dev.w, &ev.w)
            && same_int(&dev.iblock, &ev.iblock)
            && same_int(&dev.isplit, &ev.isplit),
        "{ctx}: an input on the device was modified"
    );
    z
}

fn device_families<T>(stream: Option<&Stream>)
where
    T: Lapack + LapackStein + Dense + SteinReal + cudarc::driver::DeviceRepr + Default,
{
    let seed = seed();
    let mut rng = Rng::new(seed);
    for family in TridiagFamily::all() {
        for n in SIZES {
            let (d, e) = testmat::tridiag::<T>(family, n, &mut rng);
            let ctx = format!(
                "{}stein_gpu_device {} n={n} seed {seed}",
                T::PREFIX,
                family.name()
            );
            let ev = stebz_by_block(b'A', 0, 0, &d, &e);
            let z = check_device(&format!("{ctx} RANGE=A"), &d, &e, &ev, stream);
            // Well separated eigenvalues: the host entry's vectors up to rounding.
            if family == TridiagFamily::Random && T::PREFIX == 'd' && n > 0 {
                let mut z_host = vec![T::ZERO; n * ev.w.len()];
                stein::stein_with(
                    Backend::Gpu,
                    &d,
                    &e,
                    &ev.w,
                    &ev.iblock,
                    &ev.isplit,
                    &mut z_host,
                    n,
                )
                .expect("host memory");
                let diff = z
                    .iter()
                    .zip(&z_host)
                    .map(|(a, b)| (a.to_f64() - b.to_f64()).abs())
                    .fold(0.0, f64::max);
                assert!(diff < 1e-7, "{ctx}: max |Z - Z_host| = {diff:e}");
            }
            if n >= 2 {
                let a = 1 + rng.below(n) as i32;
                let b = 1 + rng.below(n) as i32;
                let (il, iu) = (a.min(b), a.max(b));
                let ev = stebz_by_block(b'I', il, iu, &d, &e);
                check_device(&format!("{ctx} RANGE=I {il}..={iu}"), &d, &e, &ev, stream);
            }
        }
    }
}

#[test]
fn dstein_gpu_device_matches_lapack_and_the_host_entry() {
    if have_gpu_or_skip() {
        device_families::<f64>(None);
    }
}

#[test]
fn sstein_gpu_device_matches_lapack_and_the_host_entry() {
    if have_gpu_or_skip() {
        let gpu = hylapack::device::gpu().expect("GPU");
        let stream = gpu.ctx.new_stream().expect("stream");
        device_families::<f32>(Some(&stream));
    }
}

/// N = 1, blocks of order 1, IBLOCK(1) = 0, a skipped block, blocks ISPLIT places outside T,
/// shifts that fail: Z (all LDZ rows, untouched columns included), INFO and IFAIL as the host
/// path leaves them.
#[test]
fn device_entry_edge_cases_as_the_host_path() {
    if !have_gpu_or_skip() {
        return;
    }
    let s = hylapack::device::gpu().expect("GPU").ctx.default_stream();
    let check = |d: &[f64], e: &[f64], w: &[f64], iblock: &[i32], isplit: &[i32]| {
        let (n, m) = (d.len(), w.len());
        let ldz = n + 1;
        let mut z_host = vec![7.0f64; ldz * m.max(1)];
        let want = stein::stein(d, e, w, iblock, isplit, &mut z_host, ldz).expect("host memory");
        let ev = Eigenvalues {
            w: w.to_vec(),
            iblock: iblock.to_vec(),
            isplit: isplit.to_vec(),
        };
        let dev = DeviceCall::new(&s, d, e, &ev, &vec![7.0f64; ldz * m.max(1)]);
        let (info, ifail) = dev.call(&s, n, m, ldz, None);
        if m > n {
            // The host path's inner function takes such M; the entry checks as LAPACK does.
            assert_eq!(info, -4, "M = {m} > N = {n}");
            return;
        }
        assert_eq!(
            (info, &ifail),
            (want.info, &want.ifail),
            "{iblock:?} {isplit:?}"
        );
        let z = s.clone_dtoh(&dev.z).expect("download");
        for (a, b) in z.iter().zip(&z_host) {
            assert!(
                (a - b).abs() <= 1e-13,
                "{iblock:?} {isplit:?}: {z:?} vs {z_host:?}"
            );
        }
    };
    check(&[3.0], &[], &[3.0], &[1], &[1]);
    check(&[3.0], &[], &[3.0], &[0], &[1]);
    let (d, e) = ([2.0, 2.0, 1.0, 4.0], [-1.0, 0.0, 0.5]);
    check(&d, &e, &[1.0, 3.0], &[0, 1], &[2, 4]);
    check(&d, &e, &[1.0, 3.0], &[1, 1], &[2, 4]);
    let (d, e) = ([2.0, 2.0, 5.0, 1.0, 3.0], [-1.0, 0.0, 0.0, 0.25]);
    check(&d, &e, &[1.0, 0.9, 3.0], &[1, 3, 3], &[2, 3, 5]);
    let (d, e) = ([5.0, 2.0, 2.0], [0.0, -1.0]);
    check(&d, &e, &[5.0, 5.0, 1.0, 3.0], &[1, 1, 2, 2], &[1, 3]);
    let (d, e) = ([1.0, 3.0, 1e-3, 2e-3, 1e-3], [1.0, 0.0, 1e-3, 1e-3]);
    check(
        &d,
        &e,
        &[0.5, 3.5, -1.0e3, 2.0e-3, 3.0e-3],
        &[1, 1, 2, 2, 2],
        &[2, 5],
    );
    // A diagonal matrix: blocks of order 1 only, no cluster for the GPU.
    let d: Vec<f64> = (0..50).map(|i| i as f64).collect();
    let isplit: Vec<i32> = (1..=50).collect();
    check(&d, &[0.0; 49], &d, &isplit, &isplit);
    let (d, e) = ([2.0f64, 2.0, 1.0, 4.0], [-1.0, 0.0, 0.0]);
    for isplit in [&[2][..], &[2, 9], &[2, 2]] {
        let mut padded = isplit.to_vec();
        padded.resize(4, 0);
        check(&d, &e, &[1.0, 3.0, 1.0, 4.0], &[1, 1, 2, 3], &padded);
    }
}

/// NULL for the stream is CUDA's legacy default stream: D written there just before the call
/// (behind a long queue of memsets) must be waited for, though our streams do not block on it.
#[test]
fn device_entry_waits_for_the_null_stream() {
    if !have_gpu_or_skip() {
        return;
    }
    let null = hylapack::device::gpu().expect("GPU").ctx.default_stream();
    let mut rng = Rng::new(seed());
    let n = 2000;
    let (d, e) = testmat::tridiag::<f64>(TridiagFamily::Random, n, &mut rng);
    let ev = stebz_by_block(b'A', 0, 0, &d, &e);
    let m = ev.w.len();
    let mut dev = DeviceCall::new(&null, &d, &e, &ev, &vec![0.0; n * m]);
    // A first call loads the kernels and creates our streams (cudarc synchronizes the whole
    // context when it creates a process's first stream, which would hide the race).
    assert_eq!(dev.call(&null, n, m, n, None).0, 0);
    let right = put(&null, &d);
    null.memset_zeros(&mut dev.d).expect("memset");
    let mut delay = null.alloc_zeros::<u8>(1 << 30).expect("alloc");
    null.synchronize().expect("sync");
    for _ in 0..16 {
        null.memset_zeros(&mut delay).expect("memset");
    }
    null.memcpy_dtod(&right, &mut dev.d).expect("copy");
    let (info, _) = dev.call(&null, n, m, n, None);
    assert_eq!(info, 0);
    let z = null.clone_dtoh(&dev.z).expect("download");
    let (orth, resid) = quality(&d, &e, &ev.w, &z);
    assert!(
        orth < 50.0 && resid < 50.0,
        "orthogonality {orth}, residual {resid}: D was read before it was written"
    );
}

/// Illegal arguments in LAPACK's numbering (reported as DSTEIN_GPU_DEVICE), checked before the
/// GPU is touched; host memory where device memory is needed: −1001 without a GPU, an illegal
/// W with one. IFAIL is untouched by every refused call.
#[test]
fn device_entry_bad_arguments_and_no_gpu() {
    use hylapack::api::stein::{dstein_gpu_device, sstein_gpu_device};
    use hylapack::api::HYLAPACK_INFO_NO_GPU;
    use std::ptr::{null, null_mut};
    let (d, e, w) = (
        vec![2.0f64; 4],
        vec![-1.0f64; 3],
        vec![1.0f64, 2.0, 3.0, 4.0],
    );
    let (iblock, isplit) = (vec![1; 4], vec![4; 4]);
    let mut z = vec![5.0f64; 16];
    let mut ifail = vec![9; 4];
    let (pd, pe, pw, pib, pis) = (
        d.as_ptr(),
        e.as_ptr(),
        w.as_ptr(),
        iblock.as_ptr(),
        isplit.as_ptr(),
    );
    let (pz, pf, none) = (z.as_mut_ptr(), ifail.as_mut_ptr(), null_mut());
    // One byte past an element boundary.
    let skew = |p: *const f64| (p as *const u8).wrapping_add(1) as *const f64;
    let name = "DSTEIN_GPU_DEVICE";
    // SAFETY: the host arrays are never touched by a refused call.
    let cases = unsafe {
        [
            (
                dstein_gpu_device(-1, pd, pe, 0, pw, pib, pis, pz, 1, pf, none),
                -1,
            ),
            (
                dstein_gpu_device(4, pd, pe, -1, pw, pib, pis, pz, 4, pf, none),
                -4,
            ),
            (
                dstein_gpu_device(4, pd, pe, 5, pw, pib, pis, pz, 4, pf, none),
                -4,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, pw, pib, pis, pz, 3, pf, none),
                -9,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, null(), pib, pis, pz, 4, pf, none),
                -5,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, skew(pw), pib, pis, pz, 4, pf, none),
                -5,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, pw, null(), pis, pz, 4, pf, none),
                -6,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, pw, pib, pis, pz, 4, null_mut(), none),
                -12,
            ),
            (
                dstein_gpu_device(4, null(), pe, 4, pw, pib, pis, pz, 4, pf, none),
                -2,
            ),
            (
                dstein_gpu_device(4, skew(pd), pe, 4, pw, pib, pis, pz, 4, pf, none),
                -2,
            ),
            (
                dstein_gpu_device(4, pd, null(), 4, pw, pib, pis, pz, 4, pf, none),
                -3,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, pw, pib, null(), pz, 4, pf, none),
                -7,
            ),
            (
                dstein_gpu_device(4, pd, pe, 4, pw, pib, pis, null_mut(), 4, pf, none),
                -8,
            ),
        ]
    };
    for (i, &(info, want)) in cases.iter().enumerate() {
        assert_eq!(info, want, "case {i}");
        assert!(
            reported(name, -want),
            "xerbla_ not called for {name} argument {}",
            -want
        );
    }
    // SAFETY: as above; nothing is referenced when M = 0, and E is not when N = 1.
    unsafe {
        assert_eq!(
            sstein_gpu_device(
                0,
                null(),
                null(),
                0,
                null(),
                null(),
                null(),
                null_mut(),
                1,
                null_mut(),
                none
            ),
            0
        );
        assert_eq!(
            sstein_gpu_device(
                3,
                null(),
                null(),
                0,
                null(),
                null(),
                null(),
                null_mut(),
                3,
                null_mut(),
                none
            ),
            0
        );
        assert_eq!(
            sstein_gpu_device(
                2,
                null(),
                null(),
                0,
                null(),
                null(),
                null(),
                null_mut(),
                1,
                null_mut(),
                none
            ),
            -9
        );
        let gpu = hylapack::device::gpu().is_ok();
        let want = if gpu { -5 } else { HYLAPACK_INFO_NO_GPU };
        assert_eq!(
            dstein_gpu_device(1, pd, null(), 1, pw, pib, pis, pz, 1, pf, none),
            want
        );
        assert_eq!(
            dstein_gpu_device(4, pd, pe, 4, pw, pib, pis, pz, 4, pf, none),
            want
        );
    }
    assert!(
        ifail.iter().all(|&x| x == 9) && z.iter().all(|&x| x == 5.0),
        "a refused call wrote IFAIL or Z"
    );
}
