//! Eigenvectors through the two-stage reduction on the GPU path (`HYLAPACK_DEVICE=gpu`; with
//! `HYLAPACK_REQUIRE_GPU=1` the GPU stages must really run): the GPU chase keeping Q2 and Q2's
//! GPU stage against the host's, and the drivers in core and out of core. Units and
//! thresholds as in `syev_vectors`. Seeds change from run to run and are printed;
//! `HYLAPACK_TEST_SEED` replays one.

mod common;
#[path = "common/syev_vectors.rs"]
mod vectors_common;
use common::{gpu_required, gpu_test};
use vectors_common::*;

use hylapack::sbr::sb2st::apply_gpu::Q2At;
use hylapack::sbr::{self, sb2st, Path, SbrReal};
use hylapack::syev::EigReport;
use hylapack::testmat::{DenseFamily, Rng};

/// A GPU budget that streams the reduction of order n in block columns of 16 at kd = 32 (too
/// small for a wide first band) and leaves Q1 several block columns (of blocks of kd
/// reflectors: blocks of 256 do not fit).
fn small_gpu_budget(n: usize) -> u64 {
    sbr::streaming_budget(n, 32.min(n - 1), 16, 8)
}

/// `syev_vectors` and `syevx_vectors` on the GPU path, in core and with a budget small enough
/// that the reduction streams and Q1 goes by block columns, both UPLO: the ratio tests, and Q1
/// on the GPU when HYLAPACK_REQUIRE_GPU=1. With `HYLAPACK_DEVICE=gpu`.
#[test]
fn gpu_driver_eigenvectors() {
    if !gpu_test() {
        return;
    }
    let seed = common::seed();
    let check = |report: &EigReport, n: usize, small: bool, what: &str| {
        let Some(stages) = report.stages else {
            assert!(n < 2, "{what}: no stage times ({:?})", report.reduction);
            return;
        };
        println!("{what}: {stages:?}");
        if gpu_required() && n > 33 {
            assert!(stages.q1_on_gpu, "{what}: Q1 on the host");
            // The small budget takes Z by block columns and Q2 in pieces.
            assert!(stages.q2_on_gpu, "{what}: Q2 on the host");
            // From n = 700 the small budget holds fewer columns than n (a selection may
            // fit).
            assert!(
                !small || n < 700 || report.m < n as i32 || stages.q1_block_columns > 1,
                "{what}: M {}: {stages:?}",
                report.m
            );
        }
    };
    for uplo in [b'L', b'U'] {
        for n in [2, 3, 10, 100, 700, 1500] {
            let s = seed ^ n as u64;
            for small in [false, true] {
                let budget = small.then(|| small_gpu_budget(n.max(2)));
                let path = Path::Gpu { budget };
                let report = driver_case(DenseFamily::Random, uplo, n, path, 1.0, s);
                check(&report, n, small, &format!("syev n {n} {path:?}"));
                if n <= 700 {
                    for report in syevx_case(DenseFamily::Random, uplo, n, path, s) {
                        check(&report, n, small, &format!("syevx n {n} {path:?}"));
                    }
                }
            }
        }
    }
    // Out of core where the eigenvalue path would take a wide first band.
    let n = 1500;
    let path = wide_band_budget(n, |budget| Path::Gpu {
        budget: Some(budget),
    });
    let report = driver_case(DenseFamily::Random, b'U', n, path, 1.0, seed);
    check(&report, n, true, &format!("syev n {n} {path:?}"));
    // Every family at an order where T's vectors come from the GPU's inverse iteration (or,
    // where its check refuses them, xSTEDC), and xSYEVX's shortcut for all of the vectors.
    let n = hylapack::syev::INVERSE_ITERATION_FROM + 300;
    let path = Path::Gpu { budget: None };
    for (k, family) in DenseFamily::all().into_iter().enumerate() {
        let uplo = if k % 2 == 0 { b'L' } else { b'U' };
        let report = driver_case(family, uplo, n, path, 1.0, seed ^ k as u64);
        let what = format!("syev n {n} {}", family.name());
        check(&report, n, false, &what);
        let stages = report.stages.expect("stage times");
        assert!(
            !gpu_required() || family != DenseFamily::Random || stages.inverse_iteration,
            "{what}: xSTEDC instead of the GPU's inverse iteration"
        );
    }
    for report in syevx_case(DenseFamily::Random, b'U', n, path, seed) {
        check(&report, n, false, &format!("syevx n {n}"));
    }
}

/// A band of order n and bandwidth kd chased on the GPU keeping Q2 there, Q2 downloaded, and
/// Q2 applied on the GPU (both sweep groups) to the tridiagonal's eigenvectors, from the host's
/// copy and from the GPU's: the ratio tests, and the same Z as the host's application of that
/// Q2 within 100 n ε. With `HYLAPACK_DEVICE=gpu`.
fn gpu_band_q2_case<T: SbrReal>(uplo: u8, n: usize, kd: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let (full, ab) = random_band::<T>(uplo, n, kd, &mut rng);
    let mut q2 = sb2st::Reflectors::new(n, kd).expect("host memory");
    let chased = sb2st::gpu::tridiagonalize_keeping_on_gpu(uplo, n, kd, &ab, kd + 1)
        .and_then(|(de, device)| device.download(&mut q2).map(|()| (de, device)));
    let ((d, e), device) = match chased {
        Ok(done) => done,
        Err(e) if !gpu_required() => {
            println!("no GPU chase: {e}");
            return;
        }
        Err(e) => panic!("GPU chase n {n} kd {kd}: {e}"),
    };
    let (w, z0) = tridiagonal_vectors(d, e);
    let mut host = z0.clone();
    q2.apply_left(n, &mut host, n.max(1), 0);
    // A leading dimension past n: rows n .. ldz are not written.
    let ldz = n + 3;
    let elem = std::mem::size_of::<T>() as u64;
    let (q2_bytes, col) = (q2.bytes(), ldz as u64 * elem);
    // From the host's Q2: all of Z beside Q2; block columns of 200 beside it; half of Q2 and
    // a group of sweeps beside 150 columns, so that Q2 comes in pieces for each block column.
    // From the GPU's Q2 (which counts against the call's limit): all of Z; block columns of 200.
    let (host_q2, gpu_q2) = (Q2At::Host(&q2), Q2At::Gpu(&device));
    let runs = [
        (host_q2, None),
        (host_q2, Some(q2_bytes + 200 * col)),
        (
            host_q2,
            Some(q2_bytes / 2 + 150 * col + 32 * (n as u64 - 1) * elem),
        ),
        (gpu_q2, None),
        (gpu_q2, Some(device.bytes() + 200 * col)),
    ];
    for (k, (q, budget)) in runs.into_iter().enumerate() {
        let mut z = vec![T::from_f64(7.0); ldz * n];
        for j in 0..n {
            z[j * ldz..j * ldz + n].copy_from_slice(&z0[j * n..(j + 1) * n]);
        }
        let on_gpu = sb2st::apply_gpu::apply_left(q, n, &mut z, ldz, budget);
        let run = match on_gpu {
            Ok(run) => run,
            Err(e) => {
                assert!(!gpu_required() || !sb2st::apply_gpu::supports(kd), "{e:?}");
                println!("no GPU Q2: {e:?}");
                return;
            }
        };
        // From n = 700 the budgets are short of Z, and the second of Q2 too.
        if n >= 700 && budget.is_some() {
            assert!(run.block_columns > 1, "{run:?}");
            assert_eq!(run.pieces > 1, k == 2, "{run:?}");
        }
        let (resid, ortho) = ratios(n, &full, &w, &z, ldz);
        let mut diff = 0.0f64;
        for j in 0..n {
            for i in 0..n {
                diff = diff.max((z[i + j * ldz].to_f64() - host[i + j * n].to_f64()).abs());
            }
            assert!(z[j * ldz + n..(j + 1) * ldz]
                .iter()
                .all(|x| x.to_f64() == 7.0));
        }
        let diff = diff / (n as f64 * T::ULP.to_f64());
        let what = format!(
            "{}: uplo {} n {n} kd {kd} Q2 on the {} budget {budget:?} seed {seed}: residual \
             {resid:.2}, orthogonality {ortho:.2}, from the host's Q2 Z by {diff:.2} n ε",
            T::PREFIX,
            uplo as char,
            if k < 3 { "host" } else { "GPU" }
        );
        println!("{what}");
        assert!(
            resid < THRESHOLD && ortho < THRESHOLD && diff < 100.0,
            "{what}"
        );
    }
}

/// The GPU chase keeping Q2 and the GPU's Q2 application, both precisions, both UPLO, the
/// bandwidths the kernel takes and one it does not. With `HYLAPACK_DEVICE=gpu`.
#[test]
fn gpu_band_to_tridiagonal_reflectors() {
    if !gpu_test() {
        return;
    }
    let seed = common::seed();
    for uplo in [b'L', b'U'] {
        for (n, kd) in [
            (3, 2),
            (40, 7),
            (33, 32),
            (100, 32),
            (130, 64),
            (257, 32),
            (700, 64),
            (1000, 32),
        ] {
            let s = seed ^ (n * 1000 + kd) as u64;
            gpu_band_q2_case::<f64>(uplo, n, kd, s);
            gpu_band_q2_case::<f32>(uplo, n, kd, s);
        }
    }
}
