//! The band reduction xSYRDB (`hylapack::sbr::syrdb`) and the eigenvalue drivers against the
//! system LAPACK, in both precisions, both UPLO, on the dense test families (random,
//! clustered, graded, rank-deficient).
//!
//! A reduction must satisfy, with ε the precision's ulp and ‖A‖ = max |λ(A)|:
//! - the band matrix B has the eigenvalues of A (LAPACK xSYEV on both) within 4 n ε ‖A‖
//!   (each of the two computed spectra within 2 n ε ‖A‖ of the exact one: see `agreement`);
//! - Q = H(1) ⋯ H(n−kd), built from the vectors left in A and TAU as xSYTRD_SY2SB documents
//!   them, is orthogonal (|QᵀQ − I| ≤ n ε entrywise) and |QᵀAQ − B| ≤ n ε ‖A‖ entrywise;
//! - the triangle of A that is not referenced is not written (it holds NaN and must still).
//!
//! The out-of-core tiling runs on the CPU executor with byte budgets that force block columns
//! of 1, 7 and 64 columns as well as the resident mode, so CI exercises it without a GPU.
//!
//! The drivers' eigenvalues must agree with LAPACK xSYEV / xSYEVX within 4 n ε ‖A‖ (plus
//! ABSTOL when it is given), M exactly (RANGE = 'V' bounds are placed in gaps wider than the
//! error bound), including matrices scaled beyond LAPACK's safe range.
//! `HYLAPACK_DEVICE=gpu` adds the GPU path (with a memory limit from
//! `HYLAPACK_GPU_MEMORY_LIMIT`), and with `HYLAPACK_REQUIRE_GPU=1` a run that fell back fails.
//! Seeds change from run to run and are printed with every failure; `HYLAPACK_TEST_SEED`
//! replays one.

use hylapack::dispatch::Backend;
use hylapack::lapack::Dense;
use hylapack::real::Real;
use hylapack::sbr::SbrReal;
use hylapack::sbr::{self, Mode, Path};
use hylapack::testmat::{self, DenseFamily, Rng};

fn seed() -> u64 {
    let seed = testmat::seed_from_time();
    println!("seed {seed} (HYLAPACK_TEST_SEED={seed} repeats it)");
    seed
}

fn gpu_wanted() -> bool {
    std::env::var("HYLAPACK_DEVICE").as_deref() == Ok("gpu")
}

fn require_gpu() -> bool {
    gpu_wanted() && std::env::var("HYLAPACK_REQUIRE_GPU").as_deref() == Ok("1")
}

/// The budget for which `plan` picks block columns of `nb` columns.
fn budget_for<T>(n: usize, kd: usize, nb: usize) -> u64 {
    sbr::streaming_budget(n, kd, nb, std::mem::size_of::<T>())
}

/// The paths every reduction test runs: LAPACK itself (checks the checker), the blocked
/// algorithm streaming block columns of 1, 7, 64 and 150 columns (several tiles of the write-back's
/// diagonal block) and resident, and the GPU when asked.
fn paths<T>(n: usize, kd: usize) -> Vec<Path> {
    let mut p = vec![Path::Lapack];
    for nb in [1, 7, 64, 150] {
        let budget = budget_for::<T>(n, kd, nb);
        // Resident wins once the whole matrix fits in the three block columns' room.
        if n > 3 * nb {
            let plan = sbr::plan(n, kd, std::mem::size_of::<T>(), budget).unwrap();
            assert_eq!(plan, Mode::Streaming { nb });
        }
        p.push(Path::CpuBlocked { budget });
    }
    p.push(Path::CpuBlocked { budget: u64::MAX });
    if gpu_wanted() {
        p.push(Path::Gpu {
            budget: Some(budget_for::<T>(n, kd, 7)),
        });
        p.push(Path::Gpu { budget: None });
    }
    p
}

/// `a` (both triangles set) with the triangle `uplo` does not name replaced by NaN.
fn one_triangle<T: Real>(a: &[T], n: usize, upper: bool) -> Vec<T> {
    let mut out = a.to_vec();
    for j in 0..n {
        for i in 0..n {
            if (upper && i > j) || (!upper && i < j) {
                out[i + j * n] = T::from_f64(f64::NAN);
            }
        }
    }
    out
}

/// How far two computations of the eigenvalues of one matrix may differ: each backward-stable
/// result lies within about 2nε‖A‖ of the exact eigenvalues (Weyl's inequality), so the two lie
/// within twice that of each other. A bound of 2nε‖A‖ between them failed for n = 3 (seed
/// 3273582557156156205, a rank-1 matrix: LAPACK's λ₁ was 3.7 ulps from the exact value, the
/// trace, and this path's 4.1 ulps on the other side, 7.8 apart against a bound of 6).
fn agreement<T: Real>(n: usize, norm: f64) -> f64 {
    2.0 * (2.0 * n as f64 * T::ULP.to_f64() * norm)
}

/// Eigenvalues (ascending) of the symmetric `a` by LAPACK DSYEV on its entries in double
/// precision: for single-precision input, a reference far closer to the exact eigenvalues
/// than the error bounds of the tests (and LAPACK's SSYEV itself failed to converge, INFO =
/// 249, on a clustered matrix of order 250 on an H200 host).
fn eigenvalues<T: Real>(a: &[T], n: usize, uplo: u8) -> Vec<f64> {
    let mut a: Vec<f64> = a.iter().map(|x| x.to_f64()).collect();
    let mut w = vec![0.0; n];
    assert_eq!(f64::syev_values(uplo, n, &mut a, n.max(1), &mut w), 0);
    w
}

/// The dense symmetric matrix (f64, both triangles) of a band in LAPACK band storage.
fn band_to_dense<T: Real>(ab: &[T], ldab: usize, kd: usize, n: usize, upper: bool) -> Vec<f64> {
    let mut b = vec![0.0; n * n];
    for j in 0..n {
        for i in j..n.min(j + kd + 1) {
            let x = if upper {
                ab[kd + j - i + i * ldab]
            } else {
                ab[i - j + j * ldab]
            };
            b[i + j * n] = x.to_f64();
            b[j + i * n] = x.to_f64();
        }
    }
    b
}

/// Q = H(1) ⋯ H(n−kd) from the reflectors xSYTRD_SY2SB leaves in A and TAU.
// j indexes TAU and the reflectors' rows alike.
#[allow(clippy::needless_range_loop)]
fn build_q<T: Real>(a: &[T], n: usize, kd: usize, tau: &[T], upper: bool) -> Vec<f64> {
    let l = |r: usize, c: usize| if upper { a[c + r * n] } else { a[r + c * n] }.to_f64();
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        q[i + i * n] = 1.0;
    }
    for j in 0..n.saturating_sub(kd) {
        let t = tau[j].to_f64();
        let first = j + kd;
        if first >= n {
            break;
        }
        let mut v = vec![0.0; n];
        v[first] = 1.0;
        for (r, x) in v.iter_mut().enumerate().skip(first + 1) {
            *x = l(r, j);
        }
        // Q := Q H = Q − τ (Q v) vᵀ
        let qv: Vec<f64> = (0..n)
            .map(|i| (first..n).map(|r| q[i + r * n] * v[r]).sum())
            .collect();
        for r in first..n {
            for i in 0..n {
                q[i + r * n] -= t * qv[i] * v[r];
            }
        }
    }
    q
}

/// max |eig(x) − eig(y)| for two ascending lists.
fn max_diff(x: &[f64], y: &[f64]) -> f64 {
    assert_eq!(x.len(), y.len());
    x.iter()
        .zip(y)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}

/// Runs one reduction on `path` and checks it (panics with `what` on a failure); returns the
/// report's note.
fn check_reduction<T: SbrReal>(
    full: &[T],
    n: usize,
    kd: usize,
    uplo: u8,
    path: Path,
    what: &str,
) -> String {
    let upper = uplo == b'U';
    let ldab = kd + 2; // one spare row: LDAB > KD + 1 must work too
    let mut a = one_triangle(full, n, upper);
    let mut ab = vec![T::from_f64(f64::NAN); ldab * n.max(1)];
    let mut tau = vec![T::ZERO; n.saturating_sub(kd).max(1)];
    let report = sbr::syrdb(uplo, n, kd, &mut a, n.max(1), &mut ab, ldab, &mut tau, path);
    // N ≤ KD + 1 is already a band: nothing runs on any device.
    if matches!(path, Path::Gpu { .. }) && require_gpu() && n > kd + 1 {
        assert_eq!(report.backend, Backend::Gpu, "{what}: {:?}", report.note);
    }
    let eps = T::ULP.to_f64();
    let nf = n as f64;
    let lam = eigenvalues(full, n, b'L');
    let norm = lam.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let b = band_to_dense(&ab, ldab, kd, n, upper);
    assert!(
        b.iter().all(|x| x.is_finite()),
        "{what}: AB not fully written"
    );
    let bt: Vec<T> = b.iter().map(|&x| T::from_f64(x)).collect();
    let mu = eigenvalues(&bt, n, b'L');
    let err = max_diff(&lam, &mu);
    assert!(
        err <= agreement::<T>(n, norm),
        "{what}: eigenvalues of the band differ by {err:e} (n ε ‖A‖ = {:e}) [{}]",
        nf * eps * norm,
        report.note.as_deref().unwrap_or("")
    );
    for j in 0..n {
        for i in 0..n {
            if (upper && i > j) || (!upper && i < j) {
                assert!(
                    a[i + j * n].is_nan(),
                    "{what}: A({i},{j}) of the other triangle was written"
                );
            }
        }
    }
    let note = report.note.unwrap_or_default();
    if n > 400 {
        return note; // Q costs O(n³) in the checker; the eigenvalue test covers larger n
    }
    let q = build_q(&a, n, kd, &tau, upper);
    let af: Vec<f64> = full.iter().map(|x| x.to_f64()).collect();
    let mut qtq = vec![0.0; n * n];
    <f64 as Dense>::gemm(b'T', b'N', n, n, n, 1.0, (&q, n), (&q, n), 0.0, &mut qtq, n);
    for j in 0..n {
        for i in 0..n {
            let want = if i == j { 1.0 } else { 0.0 };
            let d = (qtq[i + j * n] - want).abs();
            assert!(d <= nf * eps, "{what}: QᵀQ({i},{j}) off by {d:e}");
        }
    }
    let mut aq = vec![0.0; n * n];
    <f64 as Dense>::gemm(b'N', b'N', n, n, n, 1.0, (&af, n), (&q, n), 0.0, &mut aq, n);
    let mut qaq = vec![0.0; n * n];
    <f64 as Dense>::gemm(
        b'T',
        b'N',
        n,
        n,
        n,
        1.0,
        (&q, n),
        (&aq, n),
        0.0,
        &mut qaq,
        n,
    );
    for j in 0..n {
        for i in 0..n {
            let d = (qaq[i + j * n] - b[i + j * n]).abs();
            assert!(
                d <= nf * eps * norm.max(f64::MIN_POSITIVE),
                "{what}: (QᵀAQ − B)({i},{j}) = {d:e}, n ε ‖A‖ = {:e}",
                nf * eps * norm
            );
        }
    }
    note
}

fn reduction_suite<T: SbrReal>() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    for family in DenseFamily::all() {
        for &(n, kd) in &[
            (0, 3),
            (1, 2),
            (5, 4),
            (6, 4),
            (40, 1),
            (97, 8),
            (150, 17),
            (260, 32),
            // Streaming panels of three sub-panels (64, 64, 22 columns), then a wide one.
            (420, 150),
            // Resident panels by sub-panels (64 and 16 columns), the look-ahead's too; small
            // enough for the checker's Q.
            (400, 80),
        ] {
            let full = testmat::dense_symmetric::<T>(family, n, &mut rng);
            for uplo in [b'L', b'U'] {
                for path in paths::<T>(n, kd) {
                    let what = format!(
                        "{}syrdb {} n={n} kd={kd} uplo={} {path:?} seed={seed}",
                        T::PREFIX,
                        family.name(),
                        uplo as char
                    );
                    let note = check_reduction(&full, n, kd, uplo, path, &what);
                    // The resident paths (the CPU's runs the GPU's panel algorithm):
                    // CholeskyQR2 must take the random matrices' panels (all but a last square
                    // or wide one).
                    let resident = path == Path::CpuBlocked { budget: u64::MAX }
                        || (path == Path::Gpu { budget: None } && require_gpu());
                    if resident && family == DenseFamily::Random && n > 2 * kd + 1 {
                        assert!(
                            note.contains("CholeskyQR2") && !note.contains(": 0 CholeskyQR2"),
                            "{what}: {note}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn dsyrdb_matches_lapack_properties() {
    reduction_suite::<f64>();
}

#[test]
fn ssyrdb_matches_lapack_properties() {
    reduction_suite::<f32>();
}

/// A larger matrix, checked by its eigenvalues only, with several block columns per pass.
#[test]
fn dsyrdb_eigenvalues_n1500() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let (n, kd) = (1500, 48);
    let full = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut rng);
    for uplo in [b'L', b'U'] {
        let mut paths = vec![Path::CpuBlocked {
            budget: budget_for::<f64>(n, kd, 200),
        }];
        if gpu_wanted() {
            paths.push(Path::Gpu {
                budget: Some(budget_for::<f64>(n, kd, 200)),
            });
            paths.push(Path::Gpu { budget: None });
        }
        for path in paths {
            let what = format!(
                "dsyrdb n={n} kd={kd} uplo={} {path:?} seed={seed}",
                uplo as char
            );
            check_reduction(&full, n, kd, uplo, path, &what);
        }
    }
}

/// For N > KD + 1. (For N ≤ KD + 1 we return 1 as Reference-LAPACK has since 3.12; the
/// older LAPACK inside OpenBLAS 0.3.21 returns the general formula there.)
#[test]
fn workspace_query_matches_lapack() {
    for &(n, kd) in &[(2, 0), (6, 4), (100, 1), (100, 16), (1000, 64), (300, 200)] {
        let mut work = [0.0f64];
        let info = f64::sytrd_sy2sb(
            b'L',
            n,
            kd,
            &mut [],
            n.max(1),
            &mut [],
            kd + 1,
            &mut [],
            &mut work,
            true,
        );
        assert_eq!(info, 0);
        assert_eq!(work[0] as usize, sbr::lwork_min(n, kd), "n={n} kd={kd}");
    }
}

#[test]
fn illegal_arguments_in_lapack_order() {
    // (uplo, n, kd, lda, ldab, lwork) → INFO
    type Case = ((u8, i32, i32, i32, i32, i32), i32);
    let cases: &[Case] = &[
        ((b'X', 10, 2, 10, 3, 1000), -1),
        ((b'L', -1, 2, 10, 3, 1000), -2),
        ((b'u', 10, -1, 10, 3, 1000), -3),
        ((b'L', 10, 2, 9, 3, 1000), -5),
        ((b'L', 10, 2, 10, 2, 1000), -7),
        ((b'L', 10, 2, 10, 3, 10), -10),
        ((b'L', 10, 2, 10, 3, -1), 0),
        ((b'L', 3, 2, 3, 3, 1), 0),
        ((b'X', -1, -1, 0, 0, 0), -1),
        ((b'L', 10, -1, 9, 3, 1000), -3),
    ];
    for &((uplo, n, kd, lda, ldab, lwork), want) in cases {
        assert_eq!(
            sbr::check_args(uplo, n, kd, lda, ldab, lwork),
            want,
            "{:?}",
            (uplo as char, n, kd, lda, ldab, lwork)
        );
    }
}

/// The paths the driver tests run: the blocked reduction streaming 7-column blocks and
/// resident, and the GPU when asked.
fn driver_paths<T>(n: usize) -> Vec<Path> {
    let kd = hylapack::syev::bandwidth(n);
    let mut p = vec![
        Path::CpuBlocked {
            budget: budget_for::<T>(n, kd, 7),
        },
        Path::CpuBlocked { budget: u64::MAX },
    ];
    if gpu_wanted() {
        p.push(Path::Gpu {
            budget: Some(budget_for::<T>(n, kd, 7)),
        });
        p.push(Path::Gpu { budget: None });
    }
    p
}

/// ‖A‖ = max |λ| from LAPACK's eigenvalues (at least the smallest normal number).
fn norm_of(lam: &[f64]) -> f64 {
    lam.iter().fold(f64::MIN_POSITIVE, |m, x| m.max(x.abs()))
}

fn syev_suite<T: SbrReal>() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    for family in DenseFamily::all() {
        for &n in &[1, 2, 3, 34, 130, 333] {
            for scale in [1.0f64, 1e-30, 1e30] {
                // Beyond LAPACK's safe range [rmin, rmax] (≈ 1e∓146 in f64, 3e∓16 in f32).
                let scale = if T::PREFIX == 's' {
                    scale.powf(0.6)
                } else {
                    scale.powi(5)
                };
                let full: Vec<T> = testmat::dense_symmetric::<T>(family, n, &mut rng)
                    .into_iter()
                    .map(|x| T::from_f64(x.to_f64() * scale))
                    .collect();
                for uplo in [b'L', b'U'] {
                    let upper = uplo == b'U';
                    let mut a = one_triangle(&full, n, upper);
                    let mut w_ref = vec![T::ZERO; n];
                    let info =
                        hylapack::syev::syev(uplo, n, &mut a, n.max(1), &mut w_ref, Path::Lapack);
                    assert_eq!(info.info, 0);
                    let lam: Vec<f64> = w_ref.iter().map(|x| x.to_f64()).collect();
                    let tol = agreement::<T>(n, norm_of(&lam));
                    for path in driver_paths::<T>(n) {
                        let what = format!(
                            "{}syev {} n={n} scale={scale:e} uplo={} {path:?} seed={seed}",
                            T::PREFIX,
                            family.name(),
                            uplo as char
                        );
                        let mut a = one_triangle(&full, n, upper);
                        let mut w = vec![T::from_f64(f64::NAN); n];
                        let r = hylapack::syev::syev(uplo, n, &mut a, n.max(1), &mut w, path);
                        assert_eq!(r.info, 0, "{what}");
                        if matches!(path, Path::Gpu { .. })
                            && require_gpu()
                            && n > hylapack::syev::bandwidth(n) + 1
                        {
                            assert_eq!(r.backend(), Backend::Gpu, "{what}: {:?}", r.reduction);
                        }
                        let got: Vec<f64> = w.iter().map(|x| x.to_f64()).collect();
                        let err = max_diff(&got, &lam);
                        assert!(
                            err <= tol,
                            "{what}: eigenvalues off by {err:e} > 4 n ε ‖A‖ = {tol:e}"
                        );
                        for j in 0..n {
                            for i in 0..n {
                                if (upper && i > j) || (!upper && i < j) {
                                    assert!(
                                        a[i + j * n].is_nan(),
                                        "{what}: other triangle written"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn dsyev_matches_lapack() {
    syev_suite::<f64>();
}

#[test]
fn ssyev_matches_lapack() {
    syev_suite::<f32>();
}

/// A few thousand: the blocked reduction with many block columns, against LAPACK's xSYEV.
#[test]
fn dsyev_matches_lapack_n2500() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let n = 2500;
    let full = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut rng);
    let lam = eigenvalues(&full, n, b'L');
    let tol = 2.0 * n as f64 * f64::EPSILON * norm_of(&lam);
    let kd = hylapack::syev::bandwidth(n);
    let mut paths = vec![Path::CpuBlocked {
        budget: budget_for::<f64>(n, kd, 300),
    }];
    if gpu_wanted() {
        paths.push(Path::Gpu {
            budget: Some(budget_for::<f64>(n, kd, 300)),
        });
        paths.push(Path::Gpu { budget: None });
    }
    for path in paths {
        let mut a = full.clone();
        let mut w = vec![0.0; n];
        let r = hylapack::syev::syev(b'U', n, &mut a, n, &mut w, path);
        assert_eq!(r.info, 0);
        let err = max_diff(&w, &lam);
        assert!(
            err <= tol,
            "dsyev n={n} {path:?} seed={seed}: off by {err:e} > {tol:e}"
        );
    }
}

/// Out of core through a wide first band: with a budget that fits a streaming run at 4kd
/// twice over (less than the matrix), the drivers reduce to 4kd off-diagonals, narrow that
/// band to kd (sbrdb), then chase; every family, both triangles, against LAPACK's xSYEV.
fn syev_wide_band_suite<T: SbrReal>() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let n = 1500;
    let elem = std::mem::size_of::<T>();
    let kd = hylapack::syev::bandwidth(n);
    let budget = 2 * sbr::streaming_budget(n, 4 * kd, 0, elem);
    assert!(budget < (n * n * elem) as u64);
    let mut paths = vec![Path::CpuBlocked { budget }];
    if gpu_wanted() {
        paths.push(Path::Gpu {
            budget: Some(budget),
        });
    }
    for &path in &paths {
        assert_eq!(
            hylapack::syev::driver_bandwidths::<T>(n, path),
            (kd, Some(4 * kd)),
            "{path:?}"
        );
    }
    for family in DenseFamily::all() {
        let full = testmat::dense_symmetric::<T>(family, n, &mut rng);
        let lam = eigenvalues(&full, n, b'L');
        let tol = agreement::<T>(n, norm_of(&lam));
        for uplo in [b'L', b'U'] {
            for &path in &paths {
                let what = format!(
                    "{}syev {} n={n} uplo={} {path:?} seed={seed}",
                    T::PREFIX,
                    family.name(),
                    uplo as char
                );
                let mut a = one_triangle(&full, n, uplo == b'U');
                let mut w = vec![T::ZERO; n];
                let r = hylapack::syev::syev(uplo, n, &mut a, n, &mut w, path);
                assert_eq!(r.info, 0, "{what}");
                let note = r.reduction.as_ref().and_then(|r| r.note.clone());
                let narrowed = format!("band {} → {kd}", 4 * kd);
                assert!(
                    note.as_deref().is_some_and(|s| s.contains(&narrowed)),
                    "{what}: {note:?}"
                );
                if matches!(path, Path::Gpu { .. }) && require_gpu() {
                    assert!(
                        note.as_deref().is_some_and(|s| s.contains("on the GPU")),
                        "{what}"
                    );
                }
                let got: Vec<f64> = w.iter().map(|x| x.to_f64()).collect();
                let err = max_diff(&got, &lam);
                assert!(err <= tol, "{what}: eigenvalues off by {err:e} > {tol:e}");
            }
        }
    }
}

#[test]
fn dsyev_out_of_core_through_a_wide_band() {
    syev_wide_band_suite::<f64>();
}

#[test]
fn ssyev_out_of_core_through_a_wide_band() {
    syev_wide_band_suite::<f32>();
}

fn syevx_suite<T: SbrReal>() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    for family in DenseFamily::all() {
        for &n in &[1, 2, 5, 77, 250] {
            let full = testmat::dense_symmetric::<T>(family, n, &mut rng);
            let lam = eigenvalues(&full, n, b'L');
            let norm = norm_of(&lam);
            let ntol = agreement::<T>(n, norm);
            // VL, VU in the middle of gaps wider than the error bound, so M is well defined.
            let gaps: Vec<f64> = (1..n)
                .filter(|&i| lam[i] - lam[i - 1] > 8.0 * ntol)
                .map(|i| 0.5 * (lam[i] + lam[i - 1]))
                .collect();
            let below = lam.first().map_or(-1.0, |x| x - 1.0 - norm);
            let above = lam.last().map_or(1.0, |x| x + 1.0 + norm);
            let pick = |rng: &mut Rng| {
                if gaps.is_empty() || rng.chance(0.2) {
                    if rng.chance(0.5) {
                        below
                    } else {
                        above
                    }
                } else {
                    gaps[rng.below(gaps.len())]
                }
            };
            let mut cases: Vec<(u8, f64, f64, i32, i32, f64)> = vec![(b'A', 0.0, 0.0, 0, 0, 0.0)];
            for _ in 0..4 {
                let (x, y) = (pick(&mut rng), pick(&mut rng));
                if x != y {
                    cases.push((b'V', x.min(y), x.max(y), 0, 0, 0.0));
                }
                let il = 1 + rng.below(n.max(1)) as i32;
                let iu = il + rng.below(n - il as usize + 1) as i32;
                cases.push((b'I', 0.0, 0.0, il.min(n as i32), iu.min(n as i32), 0.0));
            }
            cases.push((b'A', 0.0, 0.0, 0, 0, 1e-3 * norm));
            cases.push((b'I', 0.0, 0.0, 1, n as i32, 0.0));
            for uplo in [b'L', b'U'] {
                for &(range, vl, vu, il, iu, abstol) in &cases {
                    if range == b'I' && n == 0 {
                        continue;
                    }
                    let (vl, vu, abstol) = (T::from_f64(vl), T::from_f64(vu), T::from_f64(abstol));
                    // The reference is xSYEV's spectrum, selected as RANGE asks: the system
                    // LAPACK's xSYEVX itself picked eigenvalues from the wrong one of two
                    // clusters 0.45 apart in f32 (seed 6526195402481357862, clustered, n = 250,
                    // RANGE = 'I', IL = 163), where xSYEV, DSYEV on the same matrix and every
                    // path here agreed.
                    let want: Vec<f64> = match range {
                        b'V' => lam
                            .iter()
                            .copied()
                            .filter(|&x| x > vl.to_f64() && x <= vu.to_f64())
                            .collect(),
                        b'I' => lam[il as usize - 1..iu as usize].to_vec(),
                        _ => lam.clone(),
                    };
                    for path in driver_paths::<T>(n) {
                        let what = format!(
                            "{}syevx {} n={n} uplo={} range={} vl={vl} vu={vu} il={il} iu={iu} abstol={abstol} {path:?} seed={seed}",
                            T::PREFIX,
                            family.name(),
                            uplo as char,
                            range as char
                        );
                        let mut a = one_triangle(&full, n, uplo == b'U');
                        let mut w = vec![T::from_f64(f64::NAN); n];
                        let got = hylapack::syev::syevx(
                            range,
                            uplo,
                            n,
                            &mut a,
                            n.max(1),
                            vl,
                            vu,
                            il,
                            iu,
                            abstol,
                            &mut w,
                            path,
                        );
                        assert_eq!((got.info, got.m as usize), (0, want.len()), "{what}");
                        let x: Vec<f64> = w[..want.len()].iter().map(|v| v.to_f64()).collect();
                        let err = max_diff(&x, &want);
                        let tol = ntol + abstol.to_f64();
                        assert!(err <= tol, "{what}: off by {err:e} > {tol:e}");
                    }
                }
            }
        }
    }
}

#[test]
fn dsyevx_matches_lapack() {
    syevx_suite::<f64>();
}

#[test]
fn ssyevx_matches_lapack() {
    syevx_suite::<f32>();
}

/// RANGE = 'V' with a NaN bound passes LAPACK's checks and makes its count meaningless (M may
/// even be negative): every path gives the system LAPACK's M, INFO and W, bit for bit.
#[test]
fn dsyevx_with_a_nan_bound_is_lapacks() {
    let seed = seed();
    let n = 40;
    let full = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut Rng::new(seed));
    for uplo in [b'L', b'U'] {
        for (vl, vu) in [(f64::NAN, 0.5), (-0.5, f64::NAN), (f64::NAN, f64::NAN)] {
            let mut a = one_triangle(&full, n, uplo == b'U');
            let mut w_ref = vec![0.0; n];
            let (m_ref, info_ref) =
                f64::syevx_values(b'V', uplo, n, &mut a, n, vl, vu, 0, 0, 0.0, &mut w_ref);
            let shown = m_ref.clamp(0, n as i32) as usize;
            for path in driver_paths::<f64>(n) {
                let what = format!("uplo={} vl={vl} vu={vu} {path:?} seed={seed}", uplo as char);
                let mut a = one_triangle(&full, n, uplo == b'U');
                let mut w = vec![0.0; n];
                let got = hylapack::syev::syevx(
                    b'V', uplo, n, &mut a, n, vl, vu, 0, 0, 0.0, &mut w, path,
                );
                assert_eq!((got.m, got.info), (m_ref, info_ref), "{what}");
                let same =
                    |x: &[f64], y: &[f64]| x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
                assert!(same(&w[..shown], &w_ref[..shown]), "{what}: W");
            }
        }
    }
}

#[test]
fn driver_argument_checks_in_lapack_order() {
    use hylapack::syev::{syev_check, syevx_check};
    assert_eq!(syev_check(b'N', b'L', 5, 5, 14), 0);
    assert_eq!(syev_check(b'V', b'L', 5, 5, 14), 0);
    assert_eq!(syev_check(b'v', b'u', 5, 5, 14), 0);
    assert_eq!(syev_check(b'V', b'L', 5, 5, 13), -8);
    assert_eq!(syev_check(b'X', b'Q', -1, 0, 0), -1);
    assert_eq!(syev_check(b'n', b'Q', 5, 5, 14), -2);
    assert_eq!(syev_check(b'N', b'u', -1, 5, 14), -3);
    assert_eq!(syev_check(b'N', b'U', 5, 4, 14), -5);
    assert_eq!(syev_check(b'N', b'U', 5, 5, 13), -8);
    assert_eq!(syev_check(b'N', b'U', 5, 5, -1), 0);
    assert_eq!(syev_check(b'N', b'U', 0, 1, 1), 0);
    let c = |jobz, range, uplo, n, lda, vl: f64, vu: f64, il, iu, ldz, lwork| {
        syevx_check(jobz, range, uplo, n, lda, vl, vu, il, iu, ldz, lwork)
    };
    assert_eq!(c(b'N', b'A', b'L', 5, 5, 0.0, 0.0, 0, 0, 1, 40), 0);
    assert_eq!(c(b'V', b'A', b'L', 5, 5, 0.0, 0.0, 0, 0, 5, 40), 0);
    assert_eq!(c(b'v', b'A', b'L', 5, 5, 0.0, 0.0, 0, 0, 4, 40), -15);
    assert_eq!(c(b'V', b'A', b'L', 0, 1, 0.0, 0.0, 0, 0, 1, 1), 0);
    assert_eq!(c(b'Y', b'A', b'L', 5, 5, 0.0, 0.0, 0, 0, 5, 40), -1);
    assert_eq!(c(b'N', b'X', b'L', 5, 5, 0.0, 0.0, 0, 0, 1, 40), -2);
    assert_eq!(c(b'N', b'A', b'X', 5, 5, 0.0, 0.0, 0, 0, 1, 40), -3);
    assert_eq!(c(b'N', b'A', b'L', -1, 5, 0.0, 0.0, 0, 0, 1, 40), -4);
    assert_eq!(c(b'N', b'A', b'L', 5, 4, 0.0, 0.0, 0, 0, 1, 40), -6);
    assert_eq!(c(b'N', b'V', b'L', 5, 5, 1.0, 1.0, 0, 0, 1, 40), -8);
    assert_eq!(c(b'N', b'V', b'L', 0, 1, 1.0, 1.0, 0, 0, 1, 1), 0);
    assert_eq!(c(b'N', b'I', b'L', 5, 5, 0.0, 0.0, 0, 3, 1, 40), -9);
    assert_eq!(c(b'N', b'I', b'L', 5, 5, 0.0, 0.0, 3, 2, 1, 40), -10);
    assert_eq!(c(b'N', b'I', b'L', 5, 5, 0.0, 0.0, 3, 6, 1, 40), -10);
    assert_eq!(c(b'N', b'I', b'L', 0, 1, 0.0, 0.0, 1, 0, 1, 1), 0);
    assert_eq!(c(b'N', b'A', b'L', 5, 5, 0.0, 0.0, 0, 0, 0, 40), -15);
    assert_eq!(c(b'N', b'A', b'L', 5, 5, 0.0, 0.0, 0, 0, 1, 39), -17);
    assert_eq!(c(b'N', b'A', b'L', 5, 5, 0.0, 0.0, 0, 0, 1, -1), 0);
}

/// A random band matrix of bandwidth kd in lower and upper band storage (leading dimension
/// kd + 3, the spare rows NaN), with its eigenvalues from LAPACK xSYTRD_SB2ST + xSTERF and the
/// agreement allowed against them.
struct RandomBand<T> {
    ldab: usize,
    lower: Vec<T>,
    upper: Vec<T>,
    eigenvalues: Vec<f64>,
    tol: f64,
}

fn random_band<T: Real + Dense>(rng: &mut Rng, n: usize, kd: usize) -> RandomBand<T> {
    let ldab = kd + 3;
    let mut ab = vec![T::from_f64(f64::NAN); ldab * n];
    for j in 0..n {
        for d in 0..=kd.min(n - 1 - j) {
            let x = T::from_f64(rng.range(-1.0, 1.0));
            ab[d + j * ldab] = x; // lower
        }
    }
    // The same matrix in upper storage: AB(kd + i − j, j) = B(i, j), i ≤ j.
    let mut ab_upper = vec![T::from_f64(f64::NAN); ldab * n];
    for j in 0..n {
        for d in 0..=kd.min(n - 1 - j) {
            ab_upper[kd - d + (j + d) * ldab] = ab[d + j * ldab];
        }
    }
    let (mut d_ref, mut e_ref) = (vec![T::ZERO; n], vec![T::ZERO; n]);
    let mut work = ab.clone();
    assert_eq!(
        T::sytrd_sb2st(b'L', n, kd, &mut work, ldab, &mut d_ref, &mut e_ref),
        0
    );
    assert_eq!(T::sterf(&mut d_ref, &mut e_ref), 0);
    let lam: Vec<f64> = d_ref.iter().map(|x| x.to_f64()).collect();
    let tol = agreement::<T>(n, norm_of(&lam));
    RandomBand {
        ldab,
        lower: ab,
        upper: ab_upper,
        eigenvalues: lam,
        tol,
    }
}

/// Checks a tridiagonal (d, e) against the band's eigenvalues.
fn check_tridiagonal<T: Real + Dense>(
    band: &RandomBand<T>,
    mut d: Vec<T>,
    mut e: Vec<T>,
    what: impl Fn() -> String,
) {
    let n = band.eigenvalues.len();
    assert_eq!(d.len(), n, "{}", what());
    assert_eq!(e.len(), n.saturating_sub(1), "{}", what());
    assert_eq!(T::sterf(&mut d, &mut e), 0, "{}", what());
    let got: Vec<f64> = d.iter().map(|x| x.to_f64()).collect();
    let err = max_diff(&got, &band.eigenvalues);
    assert!(
        err <= band.tol,
        "{}: off by {err:e} > {:e}",
        what(),
        band.tol
    );
}

/// The threaded bulge chasing (`sbr::sb2st`) against LAPACK xSYTRD_SB2ST: the tridiagonal
/// matrices have the same eigenvalues (xSTERF on both) within 4 n ε ‖B‖, for both UPLO and
/// 1, 3 and 8 threads running 1, 3, 8 or 50 sweeps per group (the pipeline's waits run even
/// on a machine with fewer cores).
fn sb2st_suite<T: Real + Dense>() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    for &(n, kd) in &[
        (1, 1),
        (2, 1),
        (3, 2),
        (10, 3),
        (65, 1),
        (65, 8),
        (200, 31),
        (301, 64),
        (90, 120),
    ] {
        let band = random_band::<T>(&mut rng, n, kd);
        for (uplo, ab) in [(b'L', &band.lower), (b'U', &band.upper)] {
            for (threads, group) in [
                (1, 1),
                (3, 1),
                (8, 1),
                (1, 8),
                (3, 3),
                (8, 8),
                (3, 50),
                (8, 0),
            ] {
                let (d, e) =
                    sbr::sb2st::tridiagonalize_grouped(uplo, n, kd, ab, band.ldab, threads, group)
                        .expect("host memory");
                check_tridiagonal(&band, d, e, || {
                    format!(
                        "{}sb2st n={n} kd={kd} uplo={} threads={threads} group={group} seed={seed}",
                        T::PREFIX,
                        uplo as char
                    )
                });
            }
        }
    }
}

/// The GPU bulge chasing (`sbr::sb2st::gpu`, 32- and 64-row blocks) against LAPACK xSYTRD_SB2ST, as [`sb2st_suite`]; skipped without a GPU unless
/// HYLAPACK_REQUIRE_GPU=1.
fn sb2st_gpu_suite<T: Real + Dense>() {
    if let Err(e) = hylapack::device::gpu() {
        assert!(!require_gpu(), "HYLAPACK_REQUIRE_GPU=1 but no GPU: {e}");
        return;
    }
    let seed = seed();
    let mut rng = Rng::new(seed);
    for &(n, kd) in &[
        (1, 1),
        (3, 2),
        (4, 3),
        (10, 3),
        (33, 32),
        (65, 1),
        (65, 8),
        (200, 31),
        (200, 32),
        (300, 33),
        (301, 64),
        (90, 63),
        (1000, 32),
        (1500, 64),
    ] {
        let band = random_band::<T>(&mut rng, n, kd);
        for (uplo, ab) in [(b'L', &band.lower), (b'U', &band.upper)] {
            let what = || {
                format!(
                    "{}sb2st GPU n={n} kd={kd} uplo={} seed={seed}",
                    T::PREFIX,
                    uplo as char
                )
            };
            let (d, e) = sbr::sb2st::gpu::tridiagonalize(uplo, n, kd, ab, band.ldab, false)
                .unwrap_or_else(|err| panic!("{}: {err}", what()));
            check_tridiagonal(&band, d, e, what);
        }
    }
    // Bands scaled by powers of two so large or small that the kernel's reflectors sum their
    // squares scaled by the largest entry (the scaling is exact, so are the eigenvalues').
    let huge = if T::PREFIX == 'd' { 600 } else { 60 };
    for (n, kd) in [(200, 32), (301, 64)] {
        for power in [huge, -huge] {
            let mut band = random_band::<T>(&mut rng, n, kd);
            let scale = 2f64.powi(power);
            for x in band.lower.iter_mut().chain(band.upper.iter_mut()) {
                *x = T::from_f64(x.to_f64() * scale);
            }
            for l in &mut band.eigenvalues {
                *l *= scale;
            }
            band.tol *= scale;
            let what = || {
                format!(
                    "{}sb2st GPU n={n} kd={kd} scaled 2^{power} seed={seed}",
                    T::PREFIX
                )
            };
            let (d, e) =
                sbr::sb2st::gpu::tridiagonalize(b'L', n, kd, &band.lower, band.ldab, false)
                    .unwrap_or_else(|err| panic!("{}: {err}", what()));
            check_tridiagonal(&band, d, e, what);
        }
    }
}

/// The pipelined bulge chasing runs the same arithmetic in every step whatever the schedule, so
/// any run must match one sweep after another bit for bit; a step that ran before the previous
/// sweep had left its entries would not. On the CPU's threads and, with a GPU, twice at each
/// block size (the GPU's sums are ordered differently from the CPU's but the same each run).
#[test]
fn pipelined_chase_is_reproducible() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let (n, kd) = (3000, 16);
    let band = random_band::<f64>(&mut rng, n, kd);
    let serial = sbr::sb2st::tridiagonalize_grouped(b'L', n, kd, &band.lower, band.ldab, 1, 1)
        .expect("host memory");
    for (threads, group) in [(8, 1), (16, 1), (4, 2)] {
        let run =
            sbr::sb2st::tridiagonalize_grouped(b'L', n, kd, &band.lower, band.ldab, threads, group)
                .expect("host memory");
        assert!(
            run == serial,
            "threads={threads} group={group} seed={seed}: differs from the serial chase"
        );
    }
    if hylapack::device::gpu().is_err() {
        assert!(!require_gpu(), "HYLAPACK_REQUIRE_GPU=1 but no GPU");
        return;
    }
    for (n, kd) in [(6000, 32), (6000, 64)] {
        let band = random_band::<f64>(&mut rng, n, kd);
        let run = || {
            sbr::sb2st::gpu::tridiagonalize(b'L', n, kd, &band.lower, band.ldab, false)
                .unwrap_or_else(|err| panic!("n={n} kd={kd}: {err}"))
        };
        let first = run();
        assert!(
            run() == first,
            "GPU n={n} kd={kd} seed={seed}: two runs differ"
        );
        check_tridiagonal(&band, first.0, first.1, || {
            format!("GPU n={n} kd={kd} seed={seed}")
        });
    }
}

#[test]
fn dsb2st_gpu_matches_lapack() {
    sb2st_gpu_suite::<f64>();
}

#[test]
fn ssb2st_gpu_matches_lapack() {
    sb2st_gpu_suite::<f32>();
}

#[test]
fn dsb2st_matches_lapack() {
    sb2st_suite::<f64>();
}

#[test]
fn ssb2st_matches_lapack() {
    sb2st_suite::<f32>();
}
