//! The interval family against exact rational arithmetic: `dgemm_rounded`, `digemm` (both
//! methods) and `dgesv_verified` on freshly drawn dyadic and integer data, where the exact
//! product, interval hull and solution are cheap to compute exactly. Every bound returned must
//! contain the exact value, and be tight enough that a useless answer (±∞, or a wide interval)
//! fails. Also: singular and ill-conditioned systems, bad arguments (INFO and `xerbla_`).
//!
//! `HYLAPACK_DEVICE=gpu` runs the GPU path; with `HYLAPACK_REQUIRE_GPU=1` a call that did not
//! run there fails. The seed is printed; `HYLAPACK_TEST_SEED` replays one.

mod common;
use common::{gpu_required, reported, seed};

use hylapack::api::interval::{
    dgemm_rounded, dgemm_rounded_, dgesv_verified, dgesv_verified_, digemm,
};
use hylapack::dispatch::{last_backend, Backend};
use hylapack::interval::{self, IntervalOperand, Method, Operand, Trans};
use hylapack::testmat::Rng;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, Zero};
use std::ffi::{c_char, c_int};

fn check_backend(what: &str) {
    if std::env::var("HYLAPACK_DEVICE").as_deref() == Ok("gpu") && gpu_required() {
        assert_eq!(
            last_backend(),
            Some(Backend::Gpu),
            "{what}: HYLAPACK_REQUIRE_GPU=1 but the GPU path did not run"
        );
    }
}

fn q(x: f64) -> BigRational {
    BigRational::from_float(x).expect("finite")
}

/// A dyadic number with up to 31 significant bits over a spread of exponents, so that
/// products and sums round.
fn dyadic(rng: &mut Rng) -> f64 {
    if rng.chance(0.05) {
        return 0.0;
    }
    let m = (rng.next_u64() >> 33) as i64 - (1 << 30);
    m as f64 * 2f64.powi(rng.below(41) as i32 - 50)
}

fn small_int(rng: &mut Rng, r: i64) -> f64 {
    (rng.below((2 * r + 1) as usize) as i64 - r) as f64
}

/// A stored matrix (rows × cols, leading dimension ld ≥ rows), padding filled with NaN so a
/// read outside the matrix shows.
fn matrix(rows: usize, cols: usize, ld: usize, f: &mut impl FnMut() -> f64) -> Vec<f64> {
    let mut a = vec![f64::NAN; (ld * cols).max(1)];
    for j in 0..cols {
        for i in 0..rows {
            a[i + j * ld] = f();
        }
    }
    a
}

fn op_at(a: &[f64], ld: usize, t: Trans, i: usize, l: usize) -> f64 {
    match t {
        Trans::No => a[i + l * ld],
        Trans::Yes => a[l + i * ld],
    }
}

fn trans_char(t: Trans) -> c_char {
    (if t == Trans::No { b'N' } else { b'T' }) as c_char
}

#[test]
fn rounded_gemm_bounds_the_exact_product() {
    let s = seed();
    let mut rng = Rng::new(s);
    let u = f64::EPSILON / 2.0;
    for case in 0..48 {
        let (m, n, k) = (1 + rng.below(20), 1 + rng.below(20), rng.below(24));
        let (ta, tb) = (
            if rng.chance(0.5) {
                Trans::No
            } else {
                Trans::Yes
            },
            if rng.chance(0.5) {
                Trans::No
            } else {
                Trans::Yes
            },
        );
        let (ar, ac) = if ta == Trans::No { (m, k) } else { (k, m) };
        let (br, bc) = if tb == Trans::No { (k, n) } else { (n, k) };
        let (lda, ldb, ldc) = (
            ar.max(1) + rng.below(3),
            br.max(1) + rng.below(3),
            m + rng.below(3),
        );
        let a = matrix(ar, ac, lda, &mut || dyadic(&mut rng));
        let b = matrix(br, bc, ldb, &mut || dyadic(&mut rng));
        let c0 = matrix(m, n, ldc, &mut || dyadic(&mut rng));
        let pick = |rng: &mut Rng| match rng.below(5) {
            0 => 0.0,
            1 => 1.0,
            2 => -1.0,
            _ => dyadic(rng),
        };
        let (alpha, beta) = (pick(&mut rng), pick(&mut rng));
        for rnd in [b'U', b'D'] {
            let mut c = c0.clone();
            let info = unsafe {
                dgemm_rounded(
                    rnd as c_char,
                    trans_char(ta),
                    trans_char(tb),
                    m as c_int,
                    n as c_int,
                    k as c_int,
                    alpha,
                    a.as_ptr(),
                    lda as c_int,
                    b.as_ptr(),
                    ldb as c_int,
                    beta,
                    c.as_mut_ptr(),
                    ldc as c_int,
                )
            };
            assert_eq!(info, 0);
            if alpha != 0.0 && k > 0 {
                check_backend("dgemm_rounded");
            }
            for j in 0..n {
                for i in 0..m {
                    let mut exact = BigRational::zero();
                    let mut size = 0.0f64;
                    if alpha != 0.0 {
                        for l in 0..k {
                            let (x, y) = (op_at(&a, lda, ta, i, l), op_at(&b, ldb, tb, l, j));
                            exact += q(x) * q(y);
                            size += (x * y).abs();
                        }
                        exact *= q(alpha);
                        size *= alpha.abs();
                    }
                    if beta != 0.0 {
                        exact += q(beta) * q(c0[i + j * ldc]);
                        size += (beta * c0[i + j * ldc]).abs();
                    }
                    let got = c[i + j * ldc];
                    assert!(got.is_finite(), "seed {s} case {case}: C({i},{j}) = {got}");
                    let err = q(got) - &exact;
                    let ok_side = if rnd == b'U' {
                        !err.is_negative()
                    } else {
                        !err.is_positive()
                    };
                    assert!(
                        ok_side,
                        "seed {s} case {case} rnd {}: C({i},{j}) = {got} on the wrong side",
                        rnd as char
                    );
                    // Tight: within the worst case of k + 2 directed roundings.
                    let allow = q(2.0 * (k as f64 + 3.0) * u * size * 1.01 + 1e-300);
                    assert!(
                        err.abs() <= allow,
                        "seed {s} case {case}: C({i},{j}) = {got} too far from the exact value"
                    );
                }
            }
            // Padding rows of C untouched.
            for j in 0..n {
                for i in m..ldc {
                    assert!(c[i + j * ldc].is_nan() || c[i + j * ldc] == c0[i + j * ldc]);
                }
            }
        }
    }
}

/// An interval operand's bounds: entries whose width is zero, small or large.
fn interval_matrix(
    rows: usize,
    cols: usize,
    ld: usize,
    rng: &mut Rng,
    point: bool,
) -> (Vec<f64>, Vec<f64>) {
    let mut lo = vec![f64::NAN; (ld * cols).max(1)];
    let mut hi = lo.clone();
    for j in 0..cols {
        for i in 0..rows {
            let (x, y) = (
                dyadic(rng),
                if point || rng.chance(0.2) {
                    0.0
                } else {
                    dyadic(rng).abs() * 0.01
                },
            );
            lo[i + j * ld] = x - y;
            hi[i + j * ld] = x + y;
        }
    }
    (lo, hi)
}

/// The exact interval hull of `Σ_l [a_il]·[b_lj]`.
fn exact_hull(ai: f64, asup: f64, bi: f64, bsup: f64) -> (BigRational, BigRational) {
    let p = [
        q(ai) * q(bi),
        q(ai) * q(bsup),
        q(asup) * q(bi),
        q(asup) * q(bsup),
    ];
    let lo = p.iter().min().unwrap().clone();
    let hi = p.iter().max().unwrap().clone();
    (lo, hi)
}

#[test]
fn interval_products_contain_the_exact_hull_both_methods() {
    let s = seed();
    let mut rng = Rng::new(s);
    let u = f64::EPSILON / 2.0;
    for case in 0..40 {
        let (m, n, k) = (1 + rng.below(16), 1 + rng.below(16), rng.below(20));
        let (ta, tb) = (
            if rng.chance(0.5) {
                Trans::No
            } else {
                Trans::Yes
            },
            if rng.chance(0.5) {
                Trans::No
            } else {
                Trans::Yes
            },
        );
        let (ar, ac) = if ta == Trans::No { (m, k) } else { (k, m) };
        let (br, bc) = if tb == Trans::No { (k, n) } else { (n, k) };
        let (lda, ldb, ldc) = (
            ar.max(1) + rng.below(2),
            br.max(1) + rng.below(2),
            m + rng.below(2),
        );
        // Point operands exercise the one-product radius paths.
        let (a_point, b_point) = (rng.chance(0.25), rng.chance(0.25));
        let (a_lo, a_hi) = interval_matrix(ar, ac, lda, &mut rng, a_point);
        let (b_lo, b_hi) = interval_matrix(br, bc, ldb, &mut rng, b_point);
        let a = IntervalOperand {
            inf: Operand {
                data: &a_lo,
                ld: lda,
                trans: ta,
            },
            sup: Operand {
                data: &a_hi,
                ld: lda,
                trans: ta,
            },
        };
        let b = IntervalOperand {
            inf: Operand {
                data: &b_lo,
                ld: ldb,
                trans: tb,
            },
            sup: Operand {
                data: &b_hi,
                ld: ldb,
                trans: tb,
            },
        };
        for method in [Method::InfSup, Method::MidRad] {
            let mut c_lo = vec![f64::NAN; ldc * n];
            let mut c_hi = c_lo.clone();
            let (used, _) =
                interval::igemm(method, true, m, n, k, a, b, &mut c_lo, &mut c_hi, ldc).unwrap();
            assert_eq!(used, method);
            if k > 0 {
                check_backend("digemm");
            }
            for j in 0..n {
                for i in 0..m {
                    let (mut lo, mut hi) = (BigRational::zero(), BigRational::zero());
                    let (mut size, mut width) = (0.0f64, BigRational::zero());
                    for l in 0..k {
                        let (x0, x1) = (op_at(&a_lo, lda, ta, i, l), op_at(&a_hi, lda, ta, i, l));
                        let (y0, y1) = (op_at(&b_lo, ldb, tb, l, j), op_at(&b_hi, ldb, tb, l, j));
                        let (pl, ph) = exact_hull(x0, x1, y0, y1);
                        width += &ph - &pl;
                        lo += pl;
                        hi += ph;
                        size += x0.abs().max(x1.abs()) * y0.abs().max(y1.abs());
                    }
                    let (got_lo, got_hi) = (c_lo[i + j * ldc], c_hi[i + j * ldc]);
                    let ctx = format!(
                        "seed {s} case {case} {method:?} C({i},{j}) = [{got_lo}, {got_hi}]"
                    );
                    assert!(got_lo.is_finite() && got_hi.is_finite(), "{ctx}");
                    assert!(
                        q(got_lo) <= lo && q(got_hi) >= hi,
                        "{ctx} misses the exact hull"
                    );
                    // Tightness: infimum–supremum is the hull widened by rounding; midpoint–radius
                    // may add half the hull's width on each side, plus its rounding bound.
                    let rounding = q(4.0 * (2.0 * k as f64 + 4.0) * u * size * 1.01 + 1e-300);
                    let slack = match method {
                        Method::InfSup => rounding,
                        _ => rounding + width / BigInt::from(2),
                    };
                    assert!(
                        &lo - q(got_lo) <= slack && q(got_hi) - &hi <= slack,
                        "{ctx} too wide"
                    );
                }
            }
        }
    }
}

#[test]
fn unbounded_intervals_and_bad_bounds() {
    // [−∞, 1]·[2, 3] + [0, 0]·[−∞, +∞] = [−∞, 3]: 0·∞ counts as 0, not NaN.
    let (a_lo, a_hi) = ([f64::NEG_INFINITY, 0.0], [1.0, 0.0]);
    let (b_lo, b_hi) = ([2.0, f64::NEG_INFINITY], [3.0, f64::INFINITY]);
    let (mut c_lo, mut c_hi) = ([0.0], [0.0]);
    let n = b'N' as c_char;
    let info = unsafe {
        digemm(
            n,
            n,
            1,
            1,
            2,
            a_lo.as_ptr(),
            a_hi.as_ptr(),
            1,
            b_lo.as_ptr(),
            b_hi.as_ptr(),
            2,
            c_lo.as_mut_ptr(),
            c_hi.as_mut_ptr(),
            1,
        )
    };
    assert_eq!(info, 0);
    assert_eq!((c_lo[0], c_hi[0]), (f64::NEG_INFINITY, 3.0));
    // inf > sup, NaN, a lower bound of +∞: not intervals.
    for (lo, hi) in [(2.0, 1.0), (f64::NAN, 1.0), (f64::INFINITY, f64::INFINITY)] {
        let info = unsafe {
            digemm(
                n,
                n,
                1,
                1,
                1,
                [lo].as_ptr(),
                [hi].as_ptr(),
                1,
                [1.0].as_ptr(),
                [1.0].as_ptr(),
                1,
                c_lo.as_mut_ptr(),
                c_hi.as_mut_ptr(),
                1,
            )
        };
        assert_eq!(info, -7);
        let info = unsafe {
            digemm(
                n,
                n,
                1,
                1,
                1,
                [1.0].as_ptr(),
                [1.0].as_ptr(),
                1,
                [lo].as_ptr(),
                [hi].as_ptr(),
                1,
                c_lo.as_mut_ptr(),
                c_hi.as_mut_ptr(),
                1,
            )
        };
        assert_eq!(info, -10);
    }
    assert!(reported("DIGEMM", 7) && reported("DIGEMM", 10));
}

/// The exact solution of `A X = B` for the stored (f64) data, or None if A is singular.
// Gauss–Jordan on rows of rationals: the row and column indices are the algorithm.
#[allow(clippy::needless_range_loop)]
fn exact_solve(
    n: usize,
    a: &[f64],
    lda: usize,
    b: &[f64],
    ldb: usize,
    nrhs: usize,
) -> Option<Vec<BigRational>> {
    let w = n + nrhs;
    let mut m: Vec<Vec<BigRational>> = (0..n)
        .map(|i| {
            (0..w)
                .map(|j| {
                    if j < n {
                        q(a[i + j * lda])
                    } else {
                        q(b[i + (j - n) * ldb])
                    }
                })
                .collect()
        })
        .collect();
    for col in 0..n {
        let piv = (col..n).find(|&r| !m[r][col].is_zero())?;
        m.swap(col, piv);
        let p = m[col][col].clone();
        for j in col..w {
            m[col][j] = &m[col][j] / &p;
        }
        for r in 0..n {
            if r != col && !m[r][col].is_zero() {
                let f = m[r][col].clone();
                for j in col..w {
                    let t = &f * &m[col][j];
                    m[r][j] -= t;
                }
            }
        }
    }
    Some(
        (0..nrhs)
            .flat_map(|c| (0..n).map(|i| m[i][n + c].clone()).collect::<Vec<_>>())
            .collect(),
    )
}

struct Verified {
    info: i32,
    lo: Vec<f64>,
    hi: Vec<f64>,
}

fn verified_solve(
    n: usize,
    nrhs: usize,
    a: &[f64],
    lda: usize,
    b: &[f64],
    ldb: usize,
    ldx: usize,
) -> Verified {
    let (a0, b0) = (a.to_vec(), b.to_vec());
    let mut lo = vec![f64::NAN; (ldx * nrhs).max(1)];
    let mut hi = lo.clone();
    let info = unsafe {
        dgesv_verified(
            n as c_int,
            nrhs as c_int,
            a.as_ptr(),
            lda as c_int,
            b.as_ptr(),
            ldb as c_int,
            lo.as_mut_ptr(),
            hi.as_mut_ptr(),
            ldx as c_int,
        )
    };
    // Inputs are never changed (compared bitwise: NaN padding included).
    assert!(a.iter().zip(&a0).all(|(x, y)| x.to_bits() == y.to_bits()));
    assert!(b.iter().zip(&b0).all(|(x, y)| x.to_bits() == y.to_bits()));
    if n > 0 && nrhs > 0 && info >= 0 {
        check_backend("dgesv_verified");
    }
    Verified { info, lo, hi }
}

/// Asserts that every verified entry contains the exact solution and that unverified results
/// are [−∞, +∞]; returns the largest width relative to its column's largest magnitude (the
/// width itself for a zero column: b = 0 gives x = 0 and an interval of a few subnormals).
fn check_enclosure(
    ctx: &str,
    n: usize,
    nrhs: usize,
    ldx: usize,
    r: &Verified,
    exact: Option<&[BigRational]>,
) -> f64 {
    let mut worst = 0.0f64;
    for c in 0..nrhs {
        let scale = (0..n).fold(0.0f64, |m, i| {
            m.max(r.lo[i + c * ldx].abs()).max(r.hi[i + c * ldx].abs())
        });
        for i in 0..n {
            let (lo, hi) = (r.lo[i + c * ldx], r.hi[i + c * ldx]);
            if r.info != 0 && lo == f64::NEG_INFINITY && hi == f64::INFINITY {
                continue;
            }
            assert_eq!(
                r.info, 0,
                "{ctx}: INFO {} but a finite interval in column {c}",
                r.info
            );
            let x =
                &exact.unwrap_or_else(|| panic!("{ctx}: verified a singular matrix"))[i + c * n];
            assert!(
                q(lo) <= *x && *x <= q(hi),
                "{ctx}: x({i},{c}) not in [{lo}, {hi}]"
            );
            worst = worst.max(if scale > 1e-280 {
                (hi - lo) / scale
            } else {
                hi - lo
            });
        }
    }
    worst
}

#[test]
fn verified_solutions_of_random_integer_systems_contain_the_exact_solution() {
    let s = seed();
    let mut rng = Rng::new(s);
    let mut widths = Vec::new();
    for case in 0..30 {
        let n = 1 + rng.below(24);
        let nrhs = 1 + rng.below(3);
        let (lda, ldb, ldx) = (n + rng.below(3), n + rng.below(3), n + rng.below(3));
        let a = matrix(n, n, lda, &mut || small_int(&mut rng, 20));
        let b = matrix(n, nrhs, ldb, &mut || small_int(&mut rng, 50));
        let exact = exact_solve(n, &a, lda, &b, ldb, nrhs);
        let r = verified_solve(n, nrhs, &a, lda, &b, ldb, ldx);
        let ctx = format!("seed {s} case {case} n {n}");
        let w = check_enclosure(&ctx, n, nrhs, ldx, &r, exact.as_deref());
        if exact.is_some() {
            // Random integer matrices of this size are well conditioned: must verify, tightly.
            assert_eq!(r.info, 0, "{ctx}: not verified");
            assert!(w <= 1e-13, "{ctx}: relative width {w:e}");
            widths.push(w);
        } else {
            assert_ne!(r.info, 0, "{ctx}: singular matrix reported verified");
        }
    }
    println!(
        "largest relative width: {:e}",
        widths.iter().fold(0.0f64, |a, b| a.max(*b))
    );
}

#[test]
fn dyadic_systems_and_hilbert_matrices_are_verified_or_refused() {
    let s = seed();
    let mut rng = Rng::new(s);
    // Dyadic entries with many significant bits: the exact solution is not a float.
    for case in 0..10 {
        let n = 2 + rng.below(12);
        let a = matrix(n, n, n, &mut || dyadic(&mut rng));
        let b = matrix(n, 1, n, &mut || dyadic(&mut rng));
        let r = verified_solve(n, 1, &a, n, &b, n, n);
        check_enclosure(
            &format!("seed {s} dyadic case {case}"),
            n,
            1,
            n,
            &r,
            exact_solve(n, &a, n, &b, n, 1).as_deref(),
        );
    }
    // Hilbert matrices as stored in double precision: verified up to some n, then refused.
    let mut verified_up_to = 0;
    for n in 2..=14 {
        let a: Vec<f64> = (0..n * n)
            .map(|k| 1.0 / ((k % n + k / n + 1) as f64))
            .collect();
        let b = vec![1.0; n];
        let r = verified_solve(n, 1, &a, n, &b, n, n);
        let exact = exact_solve(n, &a, n, &b, n, 1);
        check_enclosure(&format!("Hilbert n {n}"), n, 1, n, &r, exact.as_deref());
        if r.info == 0 {
            verified_up_to = n;
        }
    }
    println!("Hilbert matrices verified up to n = {verified_up_to}");
    assert!(verified_up_to >= 8, "Hilbert(8), cond ~1e10, must verify");
}

#[test]
fn singular_matrices_are_never_verified() {
    let s = seed();
    let mut rng = Rng::new(s);
    for case in 0..20 {
        let n = 2 + rng.below(16);
        let mut a = matrix(n, n, n, &mut || small_int(&mut rng, 9));
        // Make column j0 a combination of two others, exactly (small integers).
        let (j0, j1, j2) = (rng.below(n), rng.below(n), rng.below(n));
        let (c1, c2) = (small_int(&mut rng, 3), small_int(&mut rng, 3));
        for i in 0..n {
            a[i + j0 * n] = if j1 == j0 { 0.0 } else { c1 * a[i + j1 * n] }
                + if j2 == j0 || j2 == j1 {
                    0.0
                } else {
                    c2 * a[i + j2 * n]
                };
        }
        let b = matrix(n, 2, n, &mut || small_int(&mut rng, 9));
        assert!(exact_solve(n, &a, n, &b, n, 2).is_none());
        let r = verified_solve(n, 2, &a, n, &b, n, n);
        assert!(
            r.info > 0,
            "seed {s} case {case}: singular matrix, INFO {}",
            r.info
        );
        assert!(
            r.lo.iter().all(|v| *v == f64::NEG_INFINITY)
                && r.hi.iter().all(|v| *v == f64::INFINITY)
        );
    }
    // Exactly zero matrix: a zero pivot at 1.
    let r = verified_solve(3, 1, &[0.0; 9], 3, &[1.0; 3], 3, 3);
    assert_eq!(r.info, 1);
}

#[test]
fn bad_arguments_give_info_and_xerbla() {
    let (a, b) = ([1.0f64; 16], [1.0f64; 16]);
    let (mut lo, mut hi) = ([0.0f64; 16], [0.0f64; 16]);
    let call = |n: i32, nrhs: i32, lda: i32, ldb: i32, ldx: i32, lo: &mut [f64], hi: &mut [f64]| unsafe {
        dgesv_verified(
            n,
            nrhs,
            a.as_ptr(),
            lda,
            b.as_ptr(),
            ldb,
            lo.as_mut_ptr(),
            hi.as_mut_ptr(),
            ldx,
        )
    };
    assert_eq!(call(-1, 1, 1, 1, 1, &mut lo, &mut hi), -1);
    assert_eq!(call(2, -1, 2, 2, 2, &mut lo, &mut hi), -2);
    assert_eq!(call(2, 1, 1, 2, 2, &mut lo, &mut hi), -4);
    assert_eq!(call(2, 1, 2, 1, 2, &mut lo, &mut hi), -6);
    assert_eq!(call(2, 1, 2, 2, 1, &mut lo, &mut hi), -9);
    assert_eq!(call(0, 0, 1, 1, 1, &mut lo, &mut hi), 0);
    for arg in [1, 2, 4, 6, 9] {
        assert!(
            reported("DGESV_VERIFIED", arg),
            "xerbla_ not called for argument {arg}"
        );
    }
    // Outputs that overlap each other or an input.
    let info = unsafe {
        dgesv_verified(
            2,
            1,
            a.as_ptr(),
            2,
            b.as_ptr(),
            2,
            lo.as_mut_ptr(),
            lo.as_mut_ptr(),
            2,
        )
    };
    assert_eq!(info, -8);
    let info = unsafe {
        dgesv_verified(
            2,
            1,
            a.as_ptr(),
            2,
            b.as_ptr(),
            2,
            a.as_ptr() as *mut f64,
            hi.as_mut_ptr(),
            2,
        )
    };
    assert_eq!(info, -7);
    // Fortran name: INFO through the last argument.
    let (n, one, two, mut info) = (2, 1, 2, 99);
    unsafe {
        dgesv_verified_(
            &n,
            &one,
            a.as_ptr(),
            &one,
            b.as_ptr(),
            &two,
            lo.as_mut_ptr(),
            hi.as_mut_ptr(),
            &two,
            &mut info,
        )
    };
    assert_eq!(info, -4);

    let mut c = [0.0f64; 4];
    let g = |rnd: u8, ta: u8, m: i32, k: i32, lda: i32, ldc: i32, c: &mut [f64]| unsafe {
        dgemm_rounded(
            rnd as c_char,
            ta as c_char,
            b'N' as c_char,
            m,
            2,
            k,
            1.0,
            a.as_ptr(),
            lda,
            b.as_ptr(),
            2,
            0.0,
            c.as_mut_ptr(),
            ldc,
        )
    };
    assert_eq!(g(b'X', b'N', 2, 2, 2, 2, &mut c), -1);
    assert_eq!(g(b'U', b'Q', 2, 2, 2, 2, &mut c), -2);
    assert_eq!(g(b'U', b'N', -1, 2, 2, 2, &mut c), -4);
    assert_eq!(g(b'U', b'N', 2, -1, 2, 2, &mut c), -6);
    assert_eq!(g(b'U', b'T', 2, 3, 2, 2, &mut c), -9);
    assert_eq!(g(b'u', b'n', 2, 2, 2, 1, &mut c), -14);
    for arg in [1, 2, 4, 6, 9, 14] {
        assert!(
            reported("DGEMM_ROUNDED", arg),
            "xerbla_ not called for argument {arg}"
        );
    }
    // Lower-case characters are accepted; the Fortran name reads only the first character.
    assert_eq!(g(b'd', b't', 2, 2, 2, 2, &mut c), 0);
    let (m, k, ld, alpha, beta) = (2, 2, 2, 1.0, 0.0);
    unsafe {
        dgemm_rounded_(
            b"UP".as_ptr() as *const c_char,
            b"N".as_ptr() as *const c_char,
            b"N".as_ptr() as *const c_char,
            &m,
            &m,
            &k,
            &alpha,
            a.as_ptr(),
            &ld,
            b.as_ptr(),
            &ld,
            &beta,
            c.as_mut_ptr(),
            &ld,
            2,
            1,
            1,
        )
    };
    assert_eq!(c, [2.0; 4]);
}

/// A dyadic `m·2^e` with |m| < 2^20 and e in [−10, 10]: `x·2^10` is an integer, so sums of
/// products are exact in i128 after scaling by 2^20.
fn dyadic_small(rng: &mut Rng) -> f64 {
    let m = rng.below(1 << 21) as i64 - (1 << 20);
    m as f64 * 2f64.powi(rng.below(21) as i32 - 10)
}

fn scaled(x: f64) -> i128 {
    let v = x * 1024.0;
    assert_eq!(v.fract(), 0.0);
    v as i128
}

fn exact_over_2_20(x: i128) -> BigRational {
    BigRational::new(BigInt::from(x), BigInt::from(1i64 << 20))
}

#[test]
fn multi_tile_products_bound_the_exact_result() {
    // Several 128 × 128 (directed GEMM) and 64 × 64 (interval) tiles with ragged edges.
    let s = seed();
    let mut rng = Rng::new(s);
    let (m, n, k) = (
        200 + rng.below(80),
        130 + rng.below(140),
        40 + rng.below(60),
    );
    for (ta, tb) in [
        (Trans::No, Trans::No),
        (Trans::Yes, Trans::Yes),
        (Trans::No, Trans::Yes),
    ] {
        let (ar, ac) = if ta == Trans::No { (m, k) } else { (k, m) };
        let (br, bc) = if tb == Trans::No { (k, n) } else { (n, k) };
        let a = matrix(ar, ac, ar + 1, &mut || dyadic_small(&mut rng));
        let b = matrix(br, bc, br, &mut || dyadic_small(&mut rng));
        let a_rad = matrix(ar, ac, ar + 1, &mut || {
            if rng.chance(0.5) {
                0.0
            } else {
                dyadic_small(&mut rng).abs()
            }
        });
        let (a_lo, a_hi): (Vec<f64>, Vec<f64>) =
            a.iter().zip(&a_rad).map(|(x, r)| (x - r, x + r)).unzip();
        let exact = |i: usize, j: usize| -> i128 {
            (0..k)
                .map(|l| scaled(op_at(&a, ar + 1, ta, i, l)) * scaled(op_at(&b, br, tb, l, j)))
                .sum()
        };
        for rnd in [b'U', b'D'] {
            let mut c = vec![0.0; m * n];
            let info = unsafe {
                dgemm_rounded(
                    rnd as c_char,
                    trans_char(ta),
                    trans_char(tb),
                    m as c_int,
                    n as c_int,
                    k as c_int,
                    1.0,
                    a.as_ptr(),
                    (ar + 1) as c_int,
                    b.as_ptr(),
                    br as c_int,
                    0.0,
                    c.as_mut_ptr(),
                    m as c_int,
                )
            };
            assert_eq!(info, 0);
            check_backend("dgemm_rounded");
            for j in 0..n {
                for i in 0..m {
                    let (got, x) = (q(c[i + j * m]), exact_over_2_20(exact(i, j)));
                    let ok = if rnd == b'U' { got >= x } else { got <= x };
                    assert!(
                        ok,
                        "seed {s} {ta:?}{tb:?} rnd {}: C({i},{j}) on the wrong side",
                        rnd as char
                    );
                }
            }
        }
        // Interval product with [A] = a ± a_rad and the point matrix B: exact hull per entry.
        let a_iv = IntervalOperand {
            inf: Operand {
                data: &a_lo,
                ld: ar + 1,
                trans: ta,
            },
            sup: Operand {
                data: &a_hi,
                ld: ar + 1,
                trans: ta,
            },
        };
        let b_iv = IntervalOperand {
            inf: Operand {
                data: &b,
                ld: br,
                trans: tb,
            },
            sup: Operand {
                data: &b,
                ld: br,
                trans: tb,
            },
        };
        for method in [Method::InfSup, Method::MidRad] {
            let (mut c_lo, mut c_hi) = (vec![0.0; m * n], vec![0.0; m * n]);
            interval::igemm(method, true, m, n, k, a_iv, b_iv, &mut c_lo, &mut c_hi, m).unwrap();
            check_backend("digemm");
            for j in 0..n {
                for i in 0..m {
                    let (mut lo, mut hi) = (0i128, 0i128);
                    for l in 0..k {
                        let y = scaled(op_at(&b, br, tb, l, j));
                        let (x0, x1) = (
                            scaled(op_at(&a_lo, ar + 1, ta, i, l)),
                            scaled(op_at(&a_hi, ar + 1, ta, i, l)),
                        );
                        lo += (x0 * y).min(x1 * y);
                        hi += (x0 * y).max(x1 * y);
                    }
                    assert!(
                        q(c_lo[i + j * m]) <= exact_over_2_20(lo)
                            && q(c_hi[i + j * m]) >= exact_over_2_20(hi),
                        "seed {s} {method:?} {ta:?}{tb:?}: C({i},{j}) misses the exact hull"
                    );
                }
            }
        }
    }
}

#[test]
// k indexes the bounds and the exact solution alike.
#[allow(clippy::needless_range_loop)]
fn larger_systems_with_a_known_integer_solution_are_verified() {
    // b = A·x* exactly (small integers), so x* is the exact solution.
    let s = seed();
    let mut rng = Rng::new(s);
    for n in [150, 257 + rng.below(40)] {
        let nrhs = 2;
        let a = matrix(n, n, n, &mut || small_int(&mut rng, 100));
        let xs = matrix(n, nrhs, n, &mut || small_int(&mut rng, 1000));
        let mut b = vec![0.0; n * nrhs];
        for c in 0..nrhs {
            for i in 0..n {
                b[i + c * n] = (0..n).map(|l| a[i + l * n] * xs[l + c * n]).sum();
            }
        }
        let r = verified_solve(n, nrhs, &a, n, &b, n, n);
        assert_eq!(r.info, 0, "seed {s} n {n}: not verified");
        let mut worst = 0.0f64;
        for k in 0..n * nrhs {
            assert!(
                r.lo[k] <= xs[k] && xs[k] <= r.hi[k],
                "seed {s} n {n}: x*[{k}] = {} not in [{}, {}]",
                xs[k],
                r.lo[k],
                r.hi[k]
            );
            worst = worst.max((r.hi[k] - r.lo[k]) / xs[k].abs().max(1.0));
        }
        println!("n {n}: largest relative width {worst:e}");
        assert!(worst <= 1e-13, "seed {s} n {n}: width {worst:e}");
    }
}
