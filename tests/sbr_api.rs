//! The exported C and Fortran entry points of the band-reduction family (`dsyrdb_ooc`,
//! `ssyrdb_ooc`, `dsyev_ooc`, `dsyevx_ooc` and their `_` Fortran names): INFO and `xerbla_`
//! for illegal and NULL arguments in LAPACK's numbering, `dsyevx_ooc`'s LDZ and Z with JOBZ = 'V', workspace
//! queries, and a small problem through each entry against the system LAPACK. This program
//! defines its own `xerbla_`, which must win over the system LAPACK's.

mod common;
use common::reported;

use hylapack::api::syev::{dsyev_ooc, dsyev_ooc_, dsyevx_ooc, dsyevx_ooc_};
use hylapack::api::syrdb::{dsyrdb_ooc, dsyrdb_ooc_, ssyrdb_ooc};
use hylapack::lapack::Dense;
use hylapack::testmat::{self, DenseFamily, Rng};
use std::ffi::{c_char, c_int};
use std::ptr::{null, null_mut};

fn c(ch: u8) -> c_char {
    ch as c_char
}

#[test]
fn syrdb_entries_check_arguments_and_reduce() {
    let mut rng = Rng::new(testmat::seed_from_time());
    let (n, kd) = (90usize, 6usize);
    let full = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut rng);
    let (ni, kdi) = (n as c_int, kd as c_int);
    let mut ab = vec![0.0; (kd + 1) * n];
    let mut tau = vec![0.0; n - kd];
    // SAFETY (all calls below): the arrays have the sizes DSYTRD_SY2SB indexes for these
    // arguments, or are NULL where the test says so.
    unsafe {
        let mut a = full.clone();
        let info = dsyrdb_ooc(
            c(b'X'),
            ni,
            kdi,
            a.as_mut_ptr(),
            ni,
            ab.as_mut_ptr(),
            kdi + 1,
            tau.as_mut_ptr(),
        );
        assert_eq!(info, -1);
        assert!(reported("DSYRDB_OOC", 1));
        let info = dsyrdb_ooc(
            c(b'L'),
            ni,
            kdi,
            a.as_mut_ptr(),
            ni,
            ab.as_mut_ptr(),
            kdi,
            tau.as_mut_ptr(),
        );
        assert_eq!(info, -7);
        let info = dsyrdb_ooc(
            c(b'L'),
            ni,
            kdi,
            null_mut(),
            ni,
            ab.as_mut_ptr(),
            kdi + 1,
            tau.as_mut_ptr(),
        );
        assert_eq!(info, -4);
        let info = dsyrdb_ooc(
            c(b'L'),
            ni,
            kdi,
            a.as_mut_ptr(),
            ni,
            ab.as_mut_ptr(),
            kdi + 1,
            null_mut(),
        );
        assert_eq!(info, -8);
        assert!(reported("DSYRDB_OOC", 8));
        let mut af = vec![0.0f32; n * n];
        let info = ssyrdb_ooc(
            c(b'L'),
            ni,
            kdi,
            af.as_mut_ptr(),
            ni - 1,
            null_mut(),
            kdi + 1,
            null_mut(),
        );
        assert_eq!(info, -5);
        assert!(reported("SSYRDB_OOC", 5));

        // Fortran: query, too small a LWORK, NULL N, then a real call.
        let (uplo, mut info, mut work) = (b"U", 7, [0.0f64; 1]);
        let lwmin = hylapack::sbr::lwork_min(n, kd) as c_int;
        dsyrdb_ooc_(
            uplo.as_ptr() as _,
            &ni,
            &kdi,
            null_mut(),
            &ni,
            null_mut(),
            &(kdi + 1),
            null_mut(),
            work.as_mut_ptr(),
            &-1,
            &mut info,
            1,
        );
        assert_eq!((info, work[0] as c_int), (0, lwmin));
        dsyrdb_ooc_(
            uplo.as_ptr() as _,
            &ni,
            &kdi,
            a.as_mut_ptr(),
            &ni,
            ab.as_mut_ptr(),
            &(kdi + 1),
            tau.as_mut_ptr(),
            work.as_mut_ptr(),
            &(lwmin - 1),
            &mut info,
            1,
        );
        assert_eq!(info, -10);
        dsyrdb_ooc_(
            uplo.as_ptr() as _,
            null(),
            &kdi,
            a.as_mut_ptr(),
            &ni,
            ab.as_mut_ptr(),
            &(kdi + 1),
            tau.as_mut_ptr(),
            work.as_mut_ptr(),
            &lwmin,
            &mut info,
            1,
        );
        assert_eq!(info, -2);
        let mut big = vec![0.0; lwmin as usize];
        dsyrdb_ooc_(
            uplo.as_ptr() as _,
            &ni,
            &kdi,
            a.as_mut_ptr(),
            &ni,
            ab.as_mut_ptr(),
            &(kdi + 1),
            tau.as_mut_ptr(),
            big.as_mut_ptr(),
            &lwmin,
            &mut info,
            1,
        );
        assert_eq!(info, 0);
        assert_eq!(big[0] as c_int, lwmin);
    }
    // The band has A's eigenvalues (the reduction itself is tested in tests/sbr.rs).
    let mut dense = vec![0.0; n * n];
    for j in 0..n {
        for i in j.saturating_sub(kd)..=j {
            let x = ab[kd + i - j + j * (kd + 1)];
            dense[i + j * n] = x;
            dense[j + i * n] = x;
        }
    }
    let (mut w1, mut w2) = (vec![0.0; n], vec![0.0; n]);
    let mut a = full.clone();
    assert_eq!(f64::syev_values(b'L', n, &mut a, n, &mut w1), 0);
    assert_eq!(f64::syev_values(b'L', n, &mut dense, n, &mut w2), 0);
    let norm = w1.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    for (x, y) in w1.iter().zip(&w2) {
        assert!((x - y).abs() <= 2.0 * n as f64 * f64::EPSILON * norm);
    }
}

/// N <= KD + 1: LAPACK's quick return (A's triangle copied into AB, nothing else written),
/// which the C name takes without asking for a device.
#[test]
fn syrdb_c_name_quick_return_is_lapacks() {
    let n = 5usize;
    let a0 = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut Rng::new(5));
    for (uplo, kd) in [(b'L', n - 1), (b'U', n - 1), (b'L', n + 3)] {
        let (mut a, mut ab) = (a0.clone(), vec![-7.0; (kd + 1) * n]);
        let (mut ra, mut rab) = (a0.clone(), ab.clone());
        // TAU: N − KD entries (one at KD = N − 1), untouched by the quick return.
        let (mut tau, mut rtau) = ([-7.0], [-7.0]);
        // LAPACK before 3.12 checks LWORK against the general formula even here.
        let mut work = vec![0.0; 2 * n * kd.max(32) + 2 * kd * kd];
        let rinfo = f64::sytrd_sy2sb(
            uplo,
            n,
            kd,
            &mut ra,
            n,
            &mut rab,
            kd + 1,
            &mut rtau,
            &mut work,
            false,
        );
        // SAFETY: A is n x n (lda n), AB (kd + 1) x n, TAU max(N − KD, 0) <= 1 entries.
        let info = unsafe {
            dsyrdb_ooc(
                c(uplo),
                n as c_int,
                kd as c_int,
                a.as_mut_ptr(),
                n as c_int,
                ab.as_mut_ptr(),
                kd as c_int + 1,
                tau.as_mut_ptr(),
            )
        };
        assert_eq!((info, rinfo), (0, 0), "uplo {} kd {kd}", uplo as char);
        assert!(
            a == ra && ab == rab && tau == rtau,
            "uplo {} kd {kd}",
            uplo as char
        );
        let backend = hylapack::dispatch::last_backend();
        assert_eq!(backend, Some(hylapack::dispatch::Backend::Cpu));
    }
}

#[test]
fn syev_entries_check_arguments_and_agree_with_lapack() {
    let mut rng = Rng::new(testmat::seed_from_time());
    let n = 70usize;
    let ni = n as c_int;
    let full = testmat::dense_symmetric::<f64>(DenseFamily::Clustered, n, &mut rng);
    let mut reference = vec![0.0; n];
    let mut a = full.clone();
    assert_eq!(f64::syev_values(b'U', n, &mut a, n, &mut reference), 0);
    let norm = reference.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let close = |w: &[f64]| {
        w.iter()
            .zip(&reference)
            .all(|(x, y)| (x - y).abs() <= 2.0 * n as f64 * f64::EPSILON * norm)
    };
    let mut w = vec![0.0; n];
    // SAFETY (all calls below): arrays sized as DSYEV/DSYEVX index them for order n.
    unsafe {
        let mut a = full.clone();
        assert_eq!(
            dsyev_ooc(c(b'X'), c(b'U'), ni, a.as_mut_ptr(), ni, w.as_mut_ptr()),
            -1
        );
        assert!(reported("DSYEV_OOC", 1));
        assert_eq!(
            dsyev_ooc(c(b'N'), c(b'U'), ni, a.as_mut_ptr(), ni, null_mut()),
            -6
        );
        assert_eq!(
            dsyev_ooc(c(b'N'), c(b'U'), ni, a.as_mut_ptr(), ni, w.as_mut_ptr()),
            0
        );
        assert!(close(&w));

        let (jobz, uplo, mut info) = (b"N", b"U", 7);
        let mut work = vec![0.0; 3 * n];
        dsyev_ooc_(
            jobz.as_ptr() as _,
            uplo.as_ptr() as _,
            &ni,
            a.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            work.as_mut_ptr(),
            &-1,
            &mut info,
            1,
            1,
        );
        assert_eq!((info, work[0] as usize), (0, 34 * n));
        dsyev_ooc_(
            jobz.as_ptr() as _,
            uplo.as_ptr() as _,
            &ni,
            a.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            work.as_mut_ptr(),
            &(3 * ni - 2),
            &mut info,
            1,
            1,
        );
        assert_eq!(info, -8);
        let mut a = full.clone();
        w.fill(0.0);
        dsyev_ooc_(
            jobz.as_ptr() as _,
            uplo.as_ptr() as _,
            &ni,
            a.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            work.as_mut_ptr(),
            &(3 * ni - 1),
            &mut info,
            1,
            1,
        );
        assert_eq!(info, 0);
        assert!(close(&w));

        // DSYEVX: RANGE = 'I' through both conventions.
        let (il, iu) = (5, 40);
        let mut m = -1;
        let mut a = full.clone();
        w.fill(0.0);
        let info = dsyevx_ooc(
            c(b'N'),
            c(b'I'),
            c(b'U'),
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
            null_mut(),
            1,
            null_mut(),
        );
        assert_eq!((info, m), (0, iu - il + 1));
        let want = &reference[il as usize - 1..iu as usize];
        assert!(w[..m as usize]
            .iter()
            .zip(want)
            .all(|(x, y)| (x - y).abs() <= 2.0 * n as f64 * f64::EPSILON * norm));
        let info = dsyevx_ooc(
            c(b'V'),
            c(b'I'),
            c(b'U'),
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
            null_mut(),
            ni - 1,
            null_mut(),
        );
        assert_eq!(info, -15, "JOBZ = 'V' needs LDZ >= N");
        assert!(reported("DSYEVX_OOC", 15));
        let info = dsyevx_ooc(
            c(b'V'),
            c(b'I'),
            c(b'U'),
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
            null_mut(),
            ni,
            null_mut(),
        );
        assert_eq!(info, -14, "JOBZ = 'V' writes Z");
        assert!(reported("DSYEVX_OOC", 14));
        let mut info = dsyevx_ooc(
            c(b'N'),
            c(b'I'),
            c(b'U'),
            ni,
            a.as_mut_ptr(),
            ni,
            0.0,
            0.0,
            il,
            ni + 1,
            0.0,
            &mut m,
            w.as_mut_ptr(),
            null_mut(),
            1,
            null_mut(),
        );
        assert_eq!(info, -10);

        let (range, mut iwork, mut ifail) = (b"I", vec![0; 5 * n], vec![0; n]);
        let mut work = vec![0.0; 8 * n];
        let mut a = full.clone();
        let abstol = 0.0;
        dsyevx_ooc_(
            jobz.as_ptr() as _,
            range.as_ptr() as _,
            uplo.as_ptr() as _,
            &ni,
            a.as_mut_ptr(),
            &ni,
            null(),
            null(),
            &il,
            &iu,
            &abstol,
            &mut m,
            w.as_mut_ptr(),
            null_mut(),
            &1,
            work.as_mut_ptr(),
            &(8 * ni),
            iwork.as_mut_ptr(),
            ifail.as_mut_ptr(),
            &mut info,
            1,
            1,
            1,
        );
        assert_eq!((info, m), (0, iu - il + 1));
        let rv = b"V";
        dsyevx_ooc_(
            jobz.as_ptr() as _,
            rv.as_ptr() as _,
            uplo.as_ptr() as _,
            &ni,
            a.as_mut_ptr(),
            &ni,
            null(),
            &1.0,
            &il,
            &iu,
            &abstol,
            &mut m,
            w.as_mut_ptr(),
            null_mut(),
            &1,
            work.as_mut_ptr(),
            &(8 * ni),
            iwork.as_mut_ptr(),
            ifail.as_mut_ptr(),
            &mut info,
            1,
            1,
            1,
        );
        assert_eq!(info, -7);
        dsyevx_ooc_(
            jobz.as_ptr() as _,
            range.as_ptr() as _,
            uplo.as_ptr() as _,
            &ni,
            a.as_mut_ptr(),
            &ni,
            null(),
            null(),
            &il,
            &iu,
            null(),
            &mut m,
            w.as_mut_ptr(),
            null_mut(),
            &1,
            work.as_mut_ptr(),
            &(8 * ni),
            iwork.as_mut_ptr(),
            ifail.as_mut_ptr(),
            &mut info,
            1,
            1,
            1,
        );
        assert_eq!(info, -11);
        dsyevx_ooc_(
            jobz.as_ptr() as _,
            range.as_ptr() as _,
            uplo.as_ptr() as _,
            &ni,
            a.as_mut_ptr(),
            &ni,
            null(),
            null(),
            &il,
            &iu,
            &abstol,
            &mut m,
            w.as_mut_ptr(),
            null_mut(),
            &1,
            work.as_mut_ptr(),
            &-1,
            iwork.as_mut_ptr(),
            ifail.as_mut_ptr(),
            &mut info,
            1,
            1,
            1,
        );
        assert_eq!((info, work[0] as usize), (0, 35 * n));
    }
}
