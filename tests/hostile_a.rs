//! Hostile inputs for the tridiagonal-eigenvalue and band-reduction names (issue #23, part A):
//! sizes at INT_MAX, legal sizes whose workspace formula exceeds 32 bits, NaN and ±Inf, and
//! allocation failure under a memory limit. Each case checks the exact INFO (and `xerbla_`'s
//! name and argument where LAPACK calls it) against the system LAPACK or LAPACK's documented
//! value. This program defines its own `xerbla_`, which must win over the system LAPACK's.
//!
//! Seeds change from run to run and are printed with every failure; set `HYLAPACK_TEST_SEED`
//! to replay one. `HYLAPACK_DEVICE=gpu` runs the bisection's counts on the GPU.

mod common;
use common::{seed, xerbla_count};

use hylapack::api::stebz::{dstebz_gpu, dstebz_gpu_, sstebz_gpu};
use hylapack::api::syev::dsyevx_ooc;
use hylapack::api::syrdb::{dsyrdb_ooc, dsyrdb_ooc_, ssyrdb_ooc, ssyrdb_ooc_};
use hylapack::dispatch::Backend;
use hylapack::lapack::{Dense, Lapack};
use hylapack::real::Real;
use hylapack::sbr::Path;
use hylapack::stebz;
use hylapack::syev::{syev, syevx, syevx_info_from_stebz};
use hylapack::testmat::{self, DenseFamily, Rng, TridiagFamily};
use std::ffi::{c_char, c_int};
use std::ptr::null_mut;

fn backend() -> Backend {
    match std::env::var("HYLAPACK_DEVICE").as_deref() {
        Ok("gpu") => Backend::Gpu,
        _ => Backend::Cpu,
    }
}

const C: fn(u8) -> c_char = |ch| ch as c_char;

/// KD = INT_MAX: KD + 1 must not wrap in the LDAB check (LAPACK's −7), and the band must not
/// be written: it has one row here and the call must not touch it.
#[test]
fn syrdb_kd_int_max_is_an_ldab_error_not_a_write() {
    let (n, kd) = (3, c_int::MAX);
    for uplo in [b'U', b'L'] {
        let mut a = [1.0f64, 2.0, 3.0, 2.0, 4.0, 5.0, 3.0, 5.0, 6.0];
        let mut ab = [-7.0f64; 3];
        let mut tau = [-7.0f64; 3];
        let before = xerbla_count("DSYRDB_OOC", 7);
        // SAFETY: A is 3 x 3, AB 1 x 3, TAU 3: what the call may read before its checks fail.
        let info = unsafe {
            dsyrdb_ooc(
                C(uplo),
                n,
                kd,
                a.as_mut_ptr(),
                3,
                ab.as_mut_ptr(),
                1,
                tau.as_mut_ptr(),
            )
        };
        assert_eq!(info, -7, "UPLO={}", uplo as char);
        assert!(xerbla_count("DSYRDB_OOC", 7) > before);
        assert_eq!((ab, tau), ([-7.0; 3], [-7.0; 3]));

        let mut af = [1.0f32, 2.0, 3.0, 2.0, 4.0, 5.0, 3.0, 5.0, 6.0];
        let (mut abf, mut tauf) = ([-7.0f32; 3], [-7.0f32; 3]);
        // SAFETY: as above.
        let info = unsafe {
            ssyrdb_ooc(
                C(uplo),
                n,
                kd,
                af.as_mut_ptr(),
                3,
                abf.as_mut_ptr(),
                1,
                tauf.as_mut_ptr(),
            )
        };
        assert_eq!(info, -7);
        assert_eq!(abf, [-7.0; 3]);

        // Fortran names, LWORK = 1: LDAB (7th) is illegal before LWORK (10th) is looked at.
        let (mut work, mut info) = ([0.0f64; 1], 0);
        // SAFETY: as above, WORK of 1.
        unsafe {
            dsyrdb_ooc_(
                [uplo].as_ptr() as _,
                &n,
                &kd,
                a.as_mut_ptr(),
                &3,
                ab.as_mut_ptr(),
                &1,
                tau.as_mut_ptr(),
                work.as_mut_ptr(),
                &1,
                &mut info,
                1,
            )
        };
        assert_eq!(info, -7);
        let (mut workf, mut infof) = ([0.0f32; 1], 0);
        // SAFETY: as above.
        unsafe {
            ssyrdb_ooc_(
                [uplo].as_ptr() as _,
                &n,
                &kd,
                af.as_mut_ptr(),
                &3,
                abf.as_mut_ptr(),
                &1,
                tauf.as_mut_ptr(),
                workf.as_mut_ptr(),
                &1,
                &mut infof,
                1,
            )
        };
        assert_eq!(infof, -7);
        assert_eq!((ab, abf), ([-7.0; 3], [-7.0; 3]));
    }
    // The checks themselves, at the extremes, in LAPACK's order.
    use hylapack::sbr::check_args;
    assert_eq!(check_args(b'U', 3, c_int::MAX, 3, c_int::MAX, -1), -7);
    assert_eq!(check_args(b'U', c_int::MAX, 1, c_int::MAX - 1, 2, -1), -5);
    assert_eq!(check_args(b'U', c_int::MAX, 1, c_int::MAX, 2, -1), 0);
    // KD = 0 makes LAPACK divide by zero from N = 2 on: illegal there, legal for N <= 1.
    assert_eq!(check_args(b'U', 2, 0, 2, 1, -1), -3);
    assert_eq!(check_args(b'L', 1, 0, 1, 1, -1), 0);
    assert_eq!(check_args(b'L', 0, c_int::MAX, 1, c_int::MAX, 1), -7);
    assert_eq!(check_args(b'L', 5, 2, 5, 3, c_int::MIN), -10);
}

/// N = 131 072, KD = 8 192 is legal, but LAPACK's LWMIN for it (2³¹ + 2²⁷) exceeds 32 bits:
/// the C name has no LWORK and must not reject it (the old code checked a made-up LWORK of
/// INT_MAX and returned −10, an argument it has not got). With A NULL the call stops at −4,
/// which LAPACK checks after every size, so nothing is allocated or touched.
#[test]
fn syrdb_c_name_accepts_n_131072_kd_8192() {
    let (n, kd) = (131_072, 8_192);
    let before = xerbla_count("DSYRDB_OOC", 4);
    // SAFETY: A is NULL: the call must stop there.
    let info = unsafe {
        dsyrdb_ooc(
            C(b'L'),
            n,
            kd,
            null_mut(),
            n,
            null_mut(),
            kd + 1,
            null_mut(),
        )
    };
    assert_eq!(info, -4);
    assert!(xerbla_count("DSYRDB_OOC", 4) > before);
    // SAFETY: as above.
    let info = unsafe {
        ssyrdb_ooc(
            C(b'U'),
            n,
            kd,
            null_mut(),
            n,
            null_mut(),
            kd + 1,
            null_mut(),
        )
    };
    assert_eq!(info, -4);
    // The Fortran name's query reports the true LWMIN, which no 32-bit LWORK reaches.
    let lwmin = hylapack::sbr::lwork_min(n as usize, kd as usize);
    assert_eq!(lwmin, (1usize << 31) + (1 << 27));
    let (mut work, mut info) = ([0.0f64; 1], 7);
    // SAFETY: a workspace query reads only the scalars and writes WORK(1).
    unsafe {
        dsyrdb_ooc_(
            b"L".as_ptr() as _,
            &n,
            &kd,
            null_mut(),
            &n,
            null_mut(),
            &(kd + 1),
            null_mut(),
            work.as_mut_ptr(),
            &-1,
            &mut info,
            1,
        )
    };
    assert_eq!((info, work[0]), (0, lwmin as f64));
    // Likewise DSYEVX's 8N for N = 300 000 000 (> INT_MAX): the C name reaches A's NULL check.
    let big = 300_000_000;
    let mut m = 0;
    // SAFETY: A is NULL: the call must stop there.
    let info = unsafe {
        dsyevx_ooc(
            C(b'N'),
            C(b'A'),
            C(b'L'),
            big,
            null_mut(),
            big,
            0.0,
            0.0,
            0,
            0,
            0.0,
            &mut m,
            null_mut(),
            null_mut(),
            1,
            null_mut(),
        )
    };
    assert_eq!(info, -5);
}

/// The outputs of one xSTEBZ call.
#[derive(Debug)]
struct StebzRun<T> {
    m: i32,
    nsplit: i32,
    info: i32,
    w: Vec<T>,
    iblock: Vec<i32>,
    isplit: Vec<i32>,
}

fn lapack_stebz<T: Lapack>(
    range: u8,
    vl: T,
    vu: T,
    il: i32,
    iu: i32,
    d: &[T],
    e: &[T],
) -> StebzRun<T> {
    let n = d.len();
    let (mut w, mut iblock, mut isplit) = (vec![T::ZERO; n], vec![0; n], vec![0; n]);
    let r = T::stebz(
        range,
        b'E',
        vl,
        vu,
        il,
        iu,
        T::ZERO,
        d,
        e,
        &mut w,
        &mut iblock,
        &mut isplit,
    );
    StebzRun {
        m: r.m,
        nsplit: r.nsplit,
        info: r.info,
        w,
        iblock,
        isplit,
    }
}

fn our_stebz<T: Real>(range: u8, vl: T, vu: T, il: i32, iu: i32, d: &[T], e: &[T]) -> StebzRun<T> {
    let n = d.len();
    let (mut w, mut iblock, mut isplit) = (vec![T::ZERO; n], vec![0; n], vec![0; n]);
    let r = stebz::stebz(
        range,
        b'E',
        vl,
        vu,
        il,
        iu,
        T::ZERO,
        d,
        e,
        &mut w,
        &mut iblock,
        &mut isplit,
        backend(),
    );
    StebzRun {
        m: r.m,
        nsplit: r.nsplit,
        info: r.info,
        w,
        iblock,
        isplit,
    }
}

/// Whether LAPACK's answer for this input depends on MAX/MIN with a NaN operand (the cases
/// hylapack answers with M = 0 and INFO = 1, or 4 for RANGE = 'I'), recomputed here from the
/// definition: a NaN in D, E, VL, VU, or an ∞ − ∞ Gerschgorin term in a block of two or more
/// rows (or, for RANGE = 'I', over the whole matrix).
fn nan_reaches_max<T: Real>(
    range: u8,
    vl: T,
    vu: T,
    d: &[T],
    e: &[T],
    isplit: &[i32],
    nsplit: i32,
) -> bool {
    let n = d.len();
    if d.iter().chain(e).any(|x| x.is_nan()) || (range == b'V' && (vl.is_nan() || vu.is_nan())) {
        return true;
    }
    let terms = |lo: usize, hi: usize, off: &dyn Fn(usize) -> T| {
        (lo..hi).any(|j| {
            let p = if j > lo { off(j - 1) } else { T::ZERO };
            let q = if j + 1 < hi { off(j) } else { T::ZERO };
            (d[j] + p + q).is_nan() || (d[j] - p - q).is_nan()
        })
    };
    let split = |j: usize| isplit[..nsplit as usize].contains(&(j as i32 + 1));
    if range == b'I'
        && terms(0, n, &|j| {
            if split(j) {
                T::ZERO
            } else {
                (e[j] * e[j]).sqrt()
            }
        })
    {
        return true;
    }
    let mut lo = 0;
    isplit[..nsplit as usize].iter().any(|&end| {
        let hi = end as usize;
        let bad = hi - lo > 1 && terms(lo, hi, &|j| e[j].abs());
        lo = hi;
        bad
    })
}

/// NaN and ±Inf in D, E, VL and VU, N ≥ 2: where LAPACK's arithmetic is defined (no NaN reaches
/// its MAX/MIN) the answer is LAPACK's exactly (M, INFO, NSPLIT, ISPLIT, W to the bit with NaN
/// equal to NaN, IBLOCK); where it is the compiler's, never a silent INFO = 0: M = 0 and INFO = 1
/// (4 for RANGE = 'I' on a proper subset), with LAPACK's NSPLIT and ISPLIT.
#[test]
fn stebz_nan_and_inf_never_a_silent_success() {
    fn check<T: Lapack>(seed: u64) {
        let mut rng = Rng::new(seed);
        let (nan, inf) = (T::from_f64(f64::NAN), T::from_f64(f64::INFINITY));
        let mut cases: Vec<(String, Vec<T>, Vec<T>)> = Vec::new();
        for n in [2usize, 3, 5, 17] {
            for (name, bad) in [("nan", nan), ("+inf", inf), ("-inf", T::ZERO - inf)] {
                for what in 0..5 {
                    let (mut d, mut e) = testmat::tridiag::<T>(TridiagFamily::Random, n, &mut rng);
                    e.truncate(n - 1);
                    let at = rng.below(n);
                    match what {
                        0 => d[at] = bad,
                        1 => e[at.min(n - 2)] = bad,
                        2 => {
                            d.iter_mut().for_each(|x| *x = bad);
                            e.iter_mut().for_each(|x| *x = bad);
                        }
                        3 => {
                            d[at] = bad;
                            e[at.min(n - 2)] = bad;
                        }
                        _ => {
                            d[at] = if at.is_multiple_of(2) {
                                bad
                            } else {
                                T::ZERO - bad
                            }
                        }
                    }
                    cases.push((format!("{name} what={what} at={at}"), d, e));
                }
            }
        }
        let finite = testmat::tridiag::<T>(TridiagFamily::Random, 6, &mut rng);
        let finite = (finite.0, finite.1[..5].to_vec());
        cases.push(("finite".into(), finite.0, finite.1));
        let mut undefined_seen = 0;
        for (what, d, e) in &cases {
            let n = d.len() as i32;
            let last = cases.len() - 1;
            let ranges: Vec<(u8, T, T, i32, i32)> = vec![
                (b'A', T::ZERO, T::ZERO, 0, 0),
                (b'V', T::from_f64(-0.5), T::from_f64(0.5), 0, 0),
                (b'V', T::ZERO - inf, inf, 0, 0),
                (b'V', nan, T::ONE, 0, 0),
                (b'V', T::ZERO, nan, 0, 0),
                (b'I', T::ZERO, T::ZERO, 1, (n / 2).max(1)),
                (b'I', T::ZERO, T::ZERO, 1, n),
            ];
            for (ri, &(range, vl, vu, il, iu)) in ranges.iter().enumerate() {
                if what == "finite" && ri < 3 {
                    continue;
                }
                let _ = last;
                let ctx = format!(
                    "seed={seed} {} {what} RANGE={} VL={vl:?} VU={vu:?} IL={il} IU={iu} d={d:?} e={e:?}",
                    T::PREFIX,
                    range as char
                );
                let reference = lapack_stebz(range, vl, vu, il, iu, d, e);
                let ours = our_stebz(range, vl, vu, il, iu, d, e);
                assert_eq!(
                    (ours.nsplit, &ours.isplit[..ours.nsplit as usize]),
                    (
                        reference.nsplit,
                        &reference.isplit[..reference.nsplit as usize]
                    ),
                    "{ctx}: NSPLIT, ISPLIT"
                );
                let subset = range == b'I' && !(il == 1 && iu == n);
                if nan_reaches_max(range, vl, vu, d, e, &reference.isplit, reference.nsplit) {
                    undefined_seen += 1;
                    let want = if subset { 4 } else { 1 };
                    assert_eq!(
                        (ours.m, ours.info),
                        (0, want),
                        "{ctx}: (M, INFO); LAPACK {reference:?}"
                    );
                    assert_ne!(reference.info, -1, "{ctx}");
                } else {
                    assert_eq!(
                        (ours.m, ours.info),
                        (reference.m, reference.info),
                        "{ctx}: (M, INFO)"
                    );
                    let m = ours.m as usize;
                    for j in 0..m {
                        let (x, y) = (ours.w[j], reference.w[j]);
                        assert!(
                            x.to_f64().to_bits() == y.to_f64().to_bits()
                                || (x.is_nan() && y.is_nan()),
                            "{ctx}: W({}) = {x:?}, LAPACK {y:?}",
                            j + 1
                        );
                    }
                    assert_eq!(&ours.iblock[..m], &reference.iblock[..m], "{ctx}: IBLOCK");
                }
            }
        }
        assert!(
            undefined_seen > 50,
            "seed={seed}: only {undefined_seen} NaN cases"
        );
    }
    let seed = seed();
    check::<f64>(seed);
    check::<f32>(seed);
}

/// LAPACK's own answer for D and E all infinite, RANGE = 'A': M = 0, INFO = 1 (hylapack used to
/// return M = 1, W = [NaN], IBLOCK = [−1]), through both C names and the Fortran name.
#[test]
fn stebz_all_infinite_matrix_is_lapacks_info_1_m_0() {
    let n = 4;
    let (d, e) = ([f64::INFINITY; 4], [f64::INFINITY; 3]);
    let reference = lapack_stebz(b'A', 0.0, 0.0, 0, 0, &d, &e);
    assert_eq!((reference.m, reference.info), (0, 1), "the system LAPACK");
    let (mut m, mut nsplit, mut w, mut iblock, mut isplit) = (-1, -1, [7.0; 4], [7; 4], [7; 4]);
    // SAFETY: arrays of N entries.
    let info = unsafe {
        dstebz_gpu(
            C(b'A'),
            C(b'E'),
            n,
            0.0,
            0.0,
            0,
            0,
            0.0,
            d.as_ptr(),
            e.as_ptr(),
            &mut m,
            &mut nsplit,
            w.as_mut_ptr(),
            iblock.as_mut_ptr(),
            isplit.as_mut_ptr(),
        )
    };
    assert_eq!((info, m, nsplit), (1, 0, reference.nsplit));
    let (df, ef) = ([f32::INFINITY; 4], [f32::INFINITY; 3]);
    let (mut wf, mut m) = ([7.0f32; 4], -1);
    // SAFETY: as above.
    let info = unsafe {
        sstebz_gpu(
            C(b'A'),
            C(b'B'),
            n,
            0.0,
            0.0,
            0,
            0,
            0.0,
            df.as_ptr(),
            ef.as_ptr(),
            &mut m,
            &mut nsplit,
            wf.as_mut_ptr(),
            iblock.as_mut_ptr(),
            isplit.as_mut_ptr(),
        )
    };
    assert_eq!((info, m), (1, 0));
    let (mut work, mut iwork, mut info) = ([0.0; 16], [0; 12], 7);
    // SAFETY: as above, WORK 4N and IWORK 3N.
    unsafe {
        dstebz_gpu_(
            b"A".as_ptr() as _,
            b"E".as_ptr() as _,
            &n,
            &0.0,
            &0.0,
            &0,
            &0,
            &0.0,
            d.as_ptr(),
            e.as_ptr(),
            &mut m,
            &mut nsplit,
            w.as_mut_ptr(),
            iblock.as_mut_ptr(),
            isplit.as_mut_ptr(),
            work.as_mut_ptr(),
            iwork.as_mut_ptr(),
            &mut info,
            1,
            1,
        )
    };
    assert_eq!((info, m), (1, 0));
    // NaN VL with RANGE = 'V': LAPACK reports INFO = 1 here; so do we, with no eigenvalues.
    let d = [1.0, 2.0, 3.0, 4.0];
    let e = [0.5; 3];
    let reference = lapack_stebz(b'V', f64::NAN, 3.0, 0, 0, &d, &e);
    // SAFETY: as above.
    let info = unsafe {
        dstebz_gpu(
            C(b'V'),
            C(b'B'),
            n,
            f64::NAN,
            3.0,
            0,
            0,
            0.0,
            d.as_ptr(),
            e.as_ptr(),
            &mut m,
            &mut nsplit,
            w.as_mut_ptr(),
            iblock.as_mut_ptr(),
            isplit.as_mut_ptr(),
        )
    };
    assert_eq!((info, m), (reference.info, 0));
}

/// xSYEVX passes xSTEBZ's INFO through unchanged, on every path: never N + i.
#[test]
fn syevx_info_is_stebz_info_not_n_plus_info() {
    for info in [-7, -5, 0, 1, 2, 3, 4] {
        assert_eq!(syevx_info_from_stebz(info), info);
    }
}

/// The out-of-core path (on the CPU's BLAS here, the same driver code as the GPU's) with
/// ±Inf or NaN in A answers as the system LAPACK: DSYEVX with RANGE = 'V' returns −5 through
/// `xerbla_("DSTEBZ", 5)` (scaling by σ = 0 makes VL = VU), DSYEV returns its INFO, M and
/// NaN-ness of W are LAPACK's.
#[test]
fn syev_and_syevx_with_inf_or_nan_in_a_are_lapacks() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let path = Path::CpuBlocked { budget: 1 << 20 };
    for n in [5usize, 40] {
        for bad in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            for (i, j) in [(0, 0), (n - 1, n - 1), (n / 2, 0)] {
                let mut a0 = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut rng);
                a0[i + j * n] = bad;
                a0[j + i * n] = bad;
                let ctx = format!("seed={seed} n={n} bad={bad} at ({i}, {j})");
                let (mut a, mut b) = (a0.clone(), a0.clone());
                let (mut w1, mut w2) = (vec![0.0; n], vec![0.0; n]);
                let want = f64::syev_values(b'L', n, &mut a, n, &mut w1);
                let got = syev(b'L', n, &mut b, n, &mut w2, path);
                assert_eq!(got.info, want, "{ctx}: DSYEV INFO");
                let nans = |w: &[f64]| w.iter().map(|x| x.is_nan()).collect::<Vec<_>>();
                assert_eq!(nans(&w2), nans(&w1), "{ctx}: NaNs in W");
                for (range, vl, vu, il, iu) in [
                    (b'A', 0.0, 0.0, 0, 0),
                    (b'V', -1.0, 1.0, 0, 0),
                    (b'I', 0.0, 0.0, 1, 2),
                ] {
                    let (mut a, mut b) = (a0.clone(), a0.clone());
                    let (mut w1, mut w2) = (vec![0.0; n], vec![0.0; n]);
                    let (m, info) =
                        f64::syevx_values(range, b'L', n, &mut a, n, vl, vu, il, iu, 0.0, &mut w1);
                    let got = syevx(
                        range, b'L', n, &mut b, n, vl, vu, il, iu, 0.0, &mut w2, path,
                    );
                    let ctx = format!("{ctx} RANGE={}", range as char);
                    assert_eq!((got.info, got.m), (info, m), "{ctx}: DSYEVX (INFO, M)");
                    if bad.is_infinite() && range == b'V' {
                        assert_eq!(info, -5, "{ctx}: the system LAPACK");
                    }
                    assert_eq!(
                        got.stebz_illegal, None,
                        "{ctx}: the system LAPACK reported it"
                    );
                }
            }
        }
    }
}

/// A finite matrix whose scaling makes VL = VU (entries near overflow, VL and VU below the
/// underflow threshold once scaled): LAPACK's DSYEVX returns −5 from DSTEBZ; so does the
/// out-of-core driver (the CPU's BLAS here, the same code as the GPU's), not N − 5, and it
/// asks its caller to report DSTEBZ's argument 5.
#[test]
fn syevx_scaled_vl_equal_vu_is_minus_5_not_n_minus_5() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let n = 12;
    let mut a0 = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut rng);
    a0.iter_mut().for_each(|x| *x *= 1e300);
    let (vl, vu) = (1e-200, 2e-200);
    let (mut a, mut b) = (a0.clone(), a0.clone());
    let (mut w1, mut w2) = (vec![0.0; n], vec![0.0; n]);
    let before = xerbla_count("DSTEBZ", 5);
    let (m, info) = f64::syevx_values(b'V', b'L', n, &mut a, n, vl, vu, 0, 0, 0.0, &mut w1);
    assert_eq!((info, m), (-5, 0), "seed={seed}: the system LAPACK");
    assert!(
        xerbla_count("DSTEBZ", 5) > before,
        "the system LAPACK's xerbla_ call"
    );
    let path = Path::CpuBlocked { budget: 1 << 20 };
    let got = syevx(b'V', b'L', n, &mut b, n, vl, vu, 0, 0, 0.0, &mut w2, path);
    assert_eq!(
        (got.info, got.m, got.stebz_illegal),
        (-5, 0, Some(-5)),
        "seed={seed}"
    );
}

/// RANGE = 'I' with IL > 1 on a matrix with an entry near the overflow threshold: LAPACK's
/// widened Gerschgorin interval overflows, its index search meets ∞ − ∞ and it returns NaN with
/// INFO = 1. hylapack reports the same failure (M = 0, INFO = 1) instead of a silent answer
/// with eigenvalues missing; below the threshold, and with IL = 1, both answer alike.
#[test]
fn stebz_range_i_near_overflow_is_lapacks_info_1() {
    let e = [0.5; 4];
    for (big, il, iu) in [
        (1e308, 2, 4),
        (-1e308, 2, 2),
        (1e308, 5, 5),
        (1e308, 1, 4),
        (8e307, 2, 4),
    ] {
        let d = [1.0, 2.0, big, 4.0, 5.0];
        let reference = lapack_stebz(b'I', 0.0, 0.0, il, iu, &d, &e);
        let (mut m, mut nsplit, mut w, mut iblock, mut isplit) = (-1, -1, [7.0; 5], [7; 5], [7; 5]);
        // SAFETY: arrays of N entries.
        let info = unsafe {
            dstebz_gpu(
                C(b'I'),
                C(b'E'),
                5,
                0.0,
                0.0,
                il,
                iu,
                0.0,
                d.as_ptr(),
                e.as_ptr(),
                &mut m,
                &mut nsplit,
                w.as_mut_ptr(),
                iblock.as_mut_ptr(),
                isplit.as_mut_ptr(),
            )
        };
        let ctx = format!("D(3) = {big:e}, IL = {il}, IU = {iu}");
        assert_eq!(info, reference.info, "{ctx}: INFO");
        if reference.info == 0 {
            assert_eq!(m, reference.m, "{ctx}: M");
            assert_eq!(&w[..m as usize], &reference.w[..m as usize], "{ctx}: W");
        } else {
            assert_eq!(m, 0, "{ctx}: M");
        }
    }
}
