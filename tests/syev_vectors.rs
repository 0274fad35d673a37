//! Eigenvectors through the two-stage reduction on the host and the CPU executor: the bulge
//! chasing's Q2 (band → tridiagonal), the dense → band reduction's Q1, and the drivers
//! (`xsyev_ooc` and `xsyevx_ooc` with JOBZ = 'V', both precisions' names). The GPU path's
//! tests are in `syev_vectors_gpu`.
//!
//! For eigenpairs (λ_j, z_j) of the symmetric A (n x n), with ε the precision's ulp:
//! - residual: max_j ‖A z_j − λ_j z_j‖₁ / (‖A‖₁ n ε);
//! - orthogonality: ‖ZᵀZ − I‖₁ / (n ε);
//!
//! both below 20 (LAPACK's test threshold in its SEP tests is 20 for ratios of this kind).
//! Seeds change from run to run and are printed; `HYLAPACK_TEST_SEED` replays one.

mod common;
#[path = "common/syev_vectors.rs"]
mod vectors_common;
use common::reported;
use vectors_common::*;

use hylapack::lapack::Dense;
use hylapack::real::Real;
use hylapack::sbr::{self, sb2st, Path, SbrReal};
use hylapack::testmat::{self, DenseFamily, Rng};

fn band_q2_case<T: Real + Dense>(uplo: u8, n: usize, kd: usize, threads: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let (full, ab) = random_band::<T>(uplo, n, kd, &mut rng);
    let mut q2 = sb2st::Reflectors::new(n, kd).expect("host memory");
    let (d, e) = sb2st::tridiagonalize_keeping(uplo, n, kd, &ab, kd + 1, threads, &mut q2)
        .expect("host memory");
    let (w, mut z) = tridiagonal_vectors(d, e);
    q2.apply_left(n, &mut z, n.max(1), threads);
    let (resid, ortho) = ratios(n, &full, &w, &z, n.max(1));
    let what = format!(
        "{}: uplo {} n {n} kd {kd} threads {threads} seed {seed}: residual {resid:.2}, \
         orthogonality {ortho:.2}",
        T::PREFIX,
        uplo as char
    );
    println!("{what}");
    assert!(resid < THRESHOLD && ortho < THRESHOLD, "{what}");
}

/// Q2 of the bulge chasing turns the tridiagonal's eigenvectors into the band matrix's.
#[test]
fn band_to_tridiagonal_reflectors() {
    let seed = testmat::seed_from_time();
    println!("seed {seed}");
    for uplo in [b'L', b'U'] {
        for (n, kd) in [
            (1, 1),
            (2, 1),
            (3, 1),
            (3, 2),
            (3, 5),
            (5, 1),
            (10, 3),
            (17, 4),
            (40, 7),
            (100, 8),
            (130, 32),
            (257, 16),
        ] {
            for threads in [1, 3] {
                let s = seed ^ (n * 1000 + kd) as u64;
                band_q2_case::<f64>(uplo, n, kd, threads, s);
                band_q2_case::<f32>(uplo, n, kd, threads, s);
            }
        }
    }
}

fn dense_case<T: SbrReal>(uplo: u8, n: usize, kd: usize, path: Path, seed: u64) {
    let mut rng = Rng::new(seed);
    let full = testmat::dense_symmetric::<T>(DenseFamily::Random, n, &mut rng);
    let full64: Vec<f64> = full.iter().map(|x| x.to_f64()).collect();
    let lda = n.max(1);
    let mut a = one_triangle(&full, n, uplo);
    let ldab = kd + 1;
    let mut ab = vec![T::ZERO; ldab * n.max(1)];
    let mut tau = vec![T::ZERO; n.saturating_sub(kd).max(1)];
    let report = sbr::syrdb(uplo, n, kd, &mut a, lda, &mut ab, ldab, &mut tau, path);
    assert_eq!(report.info, 0);
    let mut q2 = sb2st::Reflectors::new(n, kd).expect("host memory");
    let (d, e) =
        sb2st::tridiagonalize_keeping(uplo, n, kd, &ab, ldab, 0, &mut q2).expect("host memory");
    let (w, mut z) = tridiagonal_vectors(d, e);
    q2.apply_left(n, &mut z, lda, 0);
    sbr::apply_q1(uplo, n, kd, &a, lda, &tau, n, &mut z, lda).expect("host memory");
    let (resid, ortho) = ratios(n, &full64, &w, &z, lda);
    let mut reference = full.clone();
    let mut lam = vec![T::ZERO; n];
    assert_eq!(T::syev_values(b'L', n, &mut reference, lda, &mut lam), 0);
    let norm = lam.iter().fold(0.0f64, |m, x| m.max(x.to_f64().abs()));
    let err = w
        .iter()
        .zip(&lam)
        .fold(0.0f64, |m, (x, y)| m.max((x.to_f64() - y.to_f64()).abs()));
    let agree = err / (norm.max(f64::MIN_POSITIVE) * n as f64 * T::ULP.to_f64());
    let what = format!(
        "{}: uplo {} n {n} kd {kd} {path:?} seed {seed}: residual {resid:.2}, orthogonality \
         {ortho:.2}, eigenvalues within {agree:.2} n ε ‖A‖ of xSYEV's",
        T::PREFIX,
        uplo as char
    );
    println!("{what}");
    assert!(
        resid < THRESHOLD && ortho < THRESHOLD && agree < 10.0,
        "{what}"
    );
}

/// Q1 of the dense → band reduction, then Q2, turn the tridiagonal's eigenvectors into A's.
#[test]
fn dense_to_band_reflectors() {
    let seed = testmat::seed_from_time();
    println!("seed {seed}");
    for uplo in [b'L', b'U'] {
        for (n, kd) in [
            (1, 1),
            (2, 1),
            (3, 1),
            (3, 2),
            (4, 3),
            (10, 1),
            (10, 3),
            (33, 8),
            (100, 7),
            (150, 32),
        ] {
            let s = seed ^ (n * 1000 + kd) as u64;
            for path in [Path::Lapack, Path::CpuBlocked { budget: u64::MAX }] {
                dense_case::<f64>(uplo, n, kd, path, s);
                dense_case::<f32>(uplo, n, kd, path, s);
            }
            // Streaming block columns of 7 (the out-of-core tiling on the CPU).
            if n > 21 {
                let budget = sbr::streaming_budget(n, kd, 7, 8);
                dense_case::<f64>(uplo, n, kd, Path::CpuBlocked { budget }, s);
            }
        }
    }
}

/// `syev_vectors` (DSYEV with JOBZ = 'V') on the in-core CPU path, the streaming tiling, the
/// out-of-core fallback to LAPACK, and LAPACK itself.
#[test]
fn driver_eigenvectors() {
    let seed = testmat::seed_from_time();
    println!("seed {seed}");
    for uplo in [b'L', b'U'] {
        for n in [0, 1, 2, 3, 10, 100, 600] {
            let s = seed ^ n as u64;
            let streaming = sbr::streaming_budget(n.max(2), 32.min(n.max(2) - 1), 7, 8);
            for path in [
                Path::CpuBlocked { budget: u64::MAX },
                Path::CpuBlocked { budget: streaming },
                Path::Lapack,
            ] {
                if path == Path::Lapack && n > 100 {
                    continue;
                }
                driver_case(DenseFamily::Random, uplo, n, path, 1.0, s);
            }
        }
        let budget = Path::CpuBlocked { budget: u64::MAX };
        for family in DenseFamily::all() {
            driver_case(family, uplo, 80, budget, 1.0, seed);
        }
        // Scaled into LAPACK's safe range and back: W rescaled, Z as it is.
        for scale in [1e-160, 1e160] {
            driver_case(DenseFamily::Random, uplo, 50, budget, scale, seed);
        }
    }
}

/// Out of core where the eigenvalue drivers take a wide first band: with vectors the matrix
/// streams straight to the final band (the narrowing keeps no reflectors), and the call is
/// not sent to LAPACK (xSYEVX shares the workspace that decides it); both UPLO, on the CPU
/// executor.
#[test]
fn driver_eigenvectors_out_of_core() {
    let seed = testmat::seed_from_time();
    println!("seed {seed}");
    let n = 1500;
    let path = wide_band_budget(n, |budget| Path::CpuBlocked { budget });
    for (k, uplo) in [b'L', b'U'].into_iter().enumerate() {
        let s = seed ^ k as u64;
        let report = driver_case(DenseFamily::Random, uplo, n, path, 1.0, s);
        let note = report.reduction.as_ref().and_then(|r| r.note.clone());
        assert!(report.stages.is_some(), "sent to LAPACK: {note:?}");
        let note = note.unwrap_or_default();
        assert!(note.contains("streaming"), "{note}");
    }
}

/// The exported names: JOBZ = 'V' through the C and the Fortran convention, a workspace
/// query, illegal arguments reported through `xerbla_` in LAPACK's numbering.
#[test]
fn exported_names_with_vectors() {
    use hylapack::api::syev::{dsyev_ooc, dsyev_ooc_};
    let c = |x: u8| x as std::ffi::c_char;
    let seed = testmat::seed_from_time();
    println!("seed {seed}");
    let n = 40;
    let ni = n as i32;
    let full = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut Rng::new(seed));
    let mut reference = vec![0.0; n];
    let mut r = full.clone();
    assert_eq!(f64::syev_values(b'L', n, &mut r, n, &mut reference), 0);
    let check = |a: &[f64], w: &[f64], what: &str| {
        let (resid, ortho) = ratios::<f64>(n, &full, w, a, n);
        let norm = reference.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let close = w
            .iter()
            .zip(&reference)
            .all(|(x, y)| (x - y).abs() <= 10.0 * n as f64 * f64::EPSILON * norm);
        println!("{what}: residual {resid:.2}, orthogonality {ortho:.2}");
        assert!(
            close && resid < THRESHOLD && ortho < THRESHOLD,
            "{what} seed {seed}"
        );
    };
    let mut w = vec![0.0; n];
    // SAFETY (all calls): arrays sized as DSYEV indexes them for order n.
    unsafe {
        let mut a = full.clone();
        assert_eq!(
            dsyev_ooc(c(b'V'), c(b'L'), ni, a.as_mut_ptr(), ni, w.as_mut_ptr()),
            0
        );
        check(&a, &w, "dsyev_ooc");
        assert_eq!(
            dsyev_ooc(c(b'Y'), c(b'L'), ni, a.as_mut_ptr(), ni, w.as_mut_ptr()),
            -1
        );
        assert!(reported("DSYEV_OOC", 1));
        assert_eq!(
            dsyev_ooc(c(b'V'), c(b'L'), ni, a.as_mut_ptr(), ni - 1, w.as_mut_ptr()),
            -5
        );
        assert!(reported("DSYEV_OOC", 5));
        assert_eq!(
            dsyev_ooc(
                c(b'V'),
                c(b'L'),
                ni,
                std::ptr::null_mut(),
                ni,
                w.as_mut_ptr()
            ),
            -4
        );

        let (jobz, uplo) = (b"V", b"U");
        let mut a = full.clone();
        let mut info = 7;
        let mut work = vec![0.0; 3 * n - 1];
        let lwork = -1;
        dsyev_ooc_(
            jobz.as_ptr() as _,
            uplo.as_ptr() as _,
            &ni,
            a.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            work.as_mut_ptr(),
            &lwork,
            &mut info,
            1,
            1,
        );
        assert_eq!(info, 0);
        assert_eq!(work[0] as usize, 34 * n, "DSYEV's optimal LWORK (NB + 2) N");
        let lwork = 3 * ni - 2;
        dsyev_ooc_(
            jobz.as_ptr() as _,
            uplo.as_ptr() as _,
            &ni,
            a.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            work.as_mut_ptr(),
            &lwork,
            &mut info,
            1,
            1,
        );
        assert_eq!(info, -8);
        assert!(reported("DSYEV_OOC", 8));
        let lwork = 3 * ni - 1;
        dsyev_ooc_(
            jobz.as_ptr() as _,
            uplo.as_ptr() as _,
            &ni,
            a.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            work.as_mut_ptr(),
            &lwork,
            &mut info,
            1,
            1,
        );
        assert_eq!(info, 0);
        check(&a, &w, "dsyev_ooc_");
    }
}

/// The single-precision names with vectors: `ssyev_ooc` and `ssyevx_ooc` in both conventions
/// (a workspace query, an illegal argument, RANGE = 'I'), the ratios in single precision's
/// units.
#[test]
fn single_precision_names_with_vectors() {
    use hylapack::api::syev::{ssyev_ooc, ssyev_ooc_, ssyevx_ooc, ssyevx_ooc_};
    let c = |x: u8| x as std::ffi::c_char;
    let seed = testmat::seed_from_time();
    println!("seed {seed}");
    let n = 60;
    let ni = n as i32;
    let full = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut Rng::new(seed));
    let single: Vec<f32> = full.iter().map(|&x| x as f32).collect();
    // The matrix the routines see, rounded to single precision.
    let rounded: Vec<f64> = single.iter().map(|&x| x as f64).collect();
    let check = |m: usize, w: &[f32], z: &[f32], ldz: usize, what: &str| {
        let (resid, ortho) = ratios_of::<f32>(n, m, &rounded, w, z, ldz);
        println!("{what}: M {m}, residual {resid:.2}, orthogonality {ortho:.2}");
        assert!(
            resid < THRESHOLD && ortho < THRESHOLD && w.windows(2).all(|p| p[0] <= p[1]),
            "{what} seed {seed}"
        );
    };
    let mut w = vec![0.0f32; n];
    // SAFETY (all calls): arrays sized as SSYEV / SSYEVX index them for order n.
    unsafe {
        let mut a = single.clone();
        assert_eq!(
            ssyev_ooc(c(b'V'), c(b'U'), ni, a.as_mut_ptr(), ni, w.as_mut_ptr()),
            0
        );
        check(n, &w, &a, n, "ssyev_ooc");
        assert_eq!(
            ssyev_ooc(c(b'Y'), c(b'U'), ni, a.as_mut_ptr(), ni, w.as_mut_ptr()),
            -1
        );
        assert!(reported("SSYEV_OOC", 1));

        let (jobz, uplo) = (b"V", b"L");
        let mut a = single.clone();
        let mut work = vec![0.0f32; 34 * n];
        let (mut info, query) = (7, -1);
        let f = |a: &mut [f32], w: &mut [f32], work: &mut [f32], lwork: i32, info: &mut i32| {
            ssyev_ooc_(
                jobz.as_ptr() as _,
                uplo.as_ptr() as _,
                &ni,
                a.as_mut_ptr(),
                &ni,
                w.as_mut_ptr(),
                work.as_mut_ptr(),
                &lwork,
                info,
                1,
                1,
            )
        };
        f(&mut a, &mut w, &mut work, query, &mut info);
        assert_eq!(
            (info, work[0] as usize),
            (0, 34 * n),
            "SSYEV's optimal LWORK"
        );
        f(&mut a, &mut w, &mut work, 34 * ni, &mut info);
        assert_eq!(info, 0);
        check(n, &w, &a, n, "ssyev_ooc_");

        let (il, iu) = (3, 17);
        let ldz = n + 2;
        let (mut z, mut ifail, mut m) = (vec![0.0f32; ldz * n], vec![0; n], 0);
        let mut a = single.clone();
        let mut info = ssyevx_ooc(
            c(b'V'),
            c(b'I'),
            c(b'L'),
            ni,
            a.as_mut_ptr(),
            ni,
            0.0,
            0.0,
            il,
            iu,
            0.0,
            &mut m,
            w.as_mut_ptr(),
            z.as_mut_ptr(),
            ldz as i32,
            ifail.as_mut_ptr(),
        );
        assert_eq!((info, m), (0, iu - il + 1));
        check(
            m as usize,
            &w[..m as usize],
            &z,
            ldz,
            "ssyevx_ooc RANGE = I",
        );
        info = ssyevx_ooc(
            c(b'V'),
            c(b'X'),
            c(b'L'),
            ni,
            a.as_mut_ptr(),
            ni,
            0.0,
            0.0,
            il,
            iu,
            0.0,
            &mut m,
            w.as_mut_ptr(),
            z.as_mut_ptr(),
            ldz as i32,
            ifail.as_mut_ptr(),
        );
        assert_eq!(info, -2);
        assert!(reported("SSYEVX_OOC", 2));

        let (jobz, range, uplo) = (b"V", b"A", b"U");
        let mut a = single.clone();
        let mut iwork = vec![0; 5 * n];
        let (zero, lwork) = (0.0f32, 8 * ni);
        ssyevx_ooc_(
            jobz.as_ptr() as _,
            range.as_ptr() as _,
            uplo.as_ptr() as _,
            &ni,
            a.as_mut_ptr(),
            &ni,
            &zero,
            &zero,
            &1,
            &ni,
            &zero,
            &mut m,
            w.as_mut_ptr(),
            z.as_mut_ptr(),
            &(ldz as i32),
            work.as_mut_ptr(),
            &lwork,
            iwork.as_mut_ptr(),
            ifail.as_mut_ptr(),
            &mut info,
            1,
            1,
            1,
        );
        assert_eq!((info, m), (0, ni));
        check(n, &w, &z, ldz, "ssyevx_ooc_ RANGE = A");
    }
}

/// `syevx_vectors` on the in-core CPU path, the streaming tiling, and LAPACK itself, for
/// RANGE 'A', 'I' and 'V', both UPLO.
#[test]
fn driver_selected_eigenvectors() {
    let seed = testmat::seed_from_time();
    println!("seed {seed}");
    for uplo in [b'L', b'U'] {
        for n in [1, 2, 3, 10, 100, 400] {
            let s = seed ^ n as u64;
            let streaming = sbr::streaming_budget(n.max(2), 32.min(n.max(2) - 1), 7, 8);
            for path in [
                Path::CpuBlocked { budget: u64::MAX },
                Path::CpuBlocked { budget: streaming },
                Path::Lapack,
            ] {
                if path == Path::Lapack && n > 100 {
                    continue;
                }
                syevx_case(DenseFamily::Random, uplo, n, path, s);
            }
        }
        for family in DenseFamily::all() {
            syevx_case(
                family,
                uplo,
                80,
                Path::CpuBlocked { budget: u64::MAX },
                seed,
            );
        }
    }
}

/// `dsyevx_ooc` / `dsyevx_ooc_` with JOBZ = 'V': RANGE = 'I' through the C name, 'V' through
/// the Fortran name (with its workspace query), against DSYEVX; a bad LDZ (< N) reported as
/// the 15th argument through `xerbla_`.
#[test]
fn exported_selected_eigenvectors() {
    use hylapack::api::syev::{dsyevx_ooc, dsyevx_ooc_};
    let c = |x: u8| x as std::ffi::c_char;
    let seed = testmat::seed_from_time();
    println!("seed {seed}");
    let n = 40;
    let ni = n as i32;
    let full = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut Rng::new(seed));
    let mut lam = vec![0.0; n];
    let mut r = full.clone();
    assert_eq!(f64::syev_values(b'L', n, &mut r, n, &mut lam), 0);
    let norm = lam.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let check = |m: i32, w: &[f64], z: &[f64], want: &[f64], what: &str| {
        let m = m as usize;
        assert_eq!(m, want.len(), "{what} seed {seed}");
        let (resid, ortho) = ratios_of::<f64>(n, m, &full, w, z, n);
        let close = w[..m]
            .iter()
            .zip(want)
            .all(|(x, y)| (x - y).abs() <= 10.0 * n as f64 * f64::EPSILON * norm);
        println!("{what}: M {m}, residual {resid:.2}, orthogonality {ortho:.2}");
        assert!(
            close && resid < THRESHOLD && ortho < THRESHOLD,
            "{what} seed {seed}"
        );
    };
    let (il, iu) = (3, 17);
    let (mut w, mut z, mut ifail) = (vec![0.0; n], vec![0.0; n * n], vec![-1; n]);
    let mut m = -1;
    // SAFETY (all calls): arrays sized as DSYEVX indexes them for order n.
    unsafe {
        let mut a = full.clone();
        let info = dsyevx_ooc(
            c(b'V'),
            c(b'I'),
            c(b'L'),
            ni,
            a.as_mut_ptr(),
            ni,
            0.0,
            0.0,
            il,
            iu,
            0.0,
            &mut m,
            w.as_mut_ptr(),
            z.as_mut_ptr(),
            ni,
            ifail.as_mut_ptr(),
        );
        assert_eq!(info, 0);
        check(m, &w, &z, &lam[il as usize - 1..iu as usize], "dsyevx_ooc");
        assert!(ifail[..m as usize].iter().all(|&i| i == 0));
        let info = dsyevx_ooc(
            c(b'V'),
            c(b'I'),
            c(b'L'),
            ni,
            a.as_mut_ptr(),
            ni,
            0.0,
            0.0,
            il,
            iu,
            0.0,
            &mut m,
            w.as_mut_ptr(),
            z.as_mut_ptr(),
            ni - 1,
            ifail.as_mut_ptr(),
        );
        assert_eq!(info, -15);
        assert!(reported("DSYEVX_OOC", 15));

        let (jobz, range, uplo) = (b"V", b"V", b"U");
        let (vl, vu) = (0.5 * (lam[4] + lam[5]), 0.5 * (lam[30] + lam[31]));
        let abstol = 0.0;
        let mut work = vec![0.0; 8 * n];
        let mut iwork = vec![0; 5 * n];
        let mut info = 7;
        let mut a = full.clone();
        let call = |a: &mut [f64],
                    m: &mut i32,
                    w: &mut [f64],
                    z: &mut [f64],
                    ldz: i32,
                    work: &mut [f64],
                    lwork: i32,
                    iwork: &mut [i32],
                    ifail: &mut [i32],
                    info: &mut i32| {
            dsyevx_ooc_(
                jobz.as_ptr() as _,
                range.as_ptr() as _,
                uplo.as_ptr() as _,
                &ni,
                a.as_mut_ptr(),
                &ni,
                &vl,
                &vu,
                &0,
                &0,
                &abstol,
                m,
                w.as_mut_ptr(),
                z.as_mut_ptr(),
                &ldz,
                work.as_mut_ptr(),
                &lwork,
                iwork.as_mut_ptr(),
                ifail.as_mut_ptr(),
                info,
                1,
                1,
                1,
            )
        };
        call(
            &mut a, &mut m, &mut w, &mut z, ni, &mut work, -1, &mut iwork, &mut ifail, &mut info,
        );
        assert_eq!(info, 0);
        assert_eq!(
            work[0] as usize,
            35 * n,
            "DSYEVX's optimal LWORK (NB + 3) N"
        );
        call(
            &mut a,
            &mut m,
            &mut w,
            &mut z,
            ni,
            &mut work,
            8 * ni - 1,
            &mut iwork,
            &mut ifail,
            &mut info,
        );
        assert_eq!(info, -17);
        assert!(reported("DSYEVX_OOC", 17));
        call(
            &mut a,
            &mut m,
            &mut w,
            &mut z,
            ni - 1,
            &mut work,
            8 * ni,
            &mut iwork,
            &mut ifail,
            &mut info,
        );
        assert_eq!(info, -15);
        assert!(reported("DSYEVX_OOC", 15));
        call(
            &mut a,
            &mut m,
            &mut w,
            &mut z,
            ni,
            &mut work,
            8 * ni,
            &mut iwork,
            &mut ifail,
            &mut info,
        );
        assert_eq!(info, 0);
        check(m, &w, &z, &lam[5..31], "dsyevx_ooc_");
        assert!(ifail[..m as usize].iter().all(|&i| i == 0));
    }
}
