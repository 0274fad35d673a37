//! Q1 of the dense → band reduction applied through an executor (`sbr::apply_q1_on`: block
//! columns of Z, the panels' compact WY form, three GEMMs a panel) against the host's
//! xORMQR/xORMLQ per panel (`sbr::apply_q1`), on the CPU executor (the GPU's tiling on the
//! host's BLAS) and, with `HYLAPACK_DEVICE=gpu`, through cuBLAS (a run without a GPU then fails
//! if `HYLAPACK_REQUIRE_GPU=1` and skips otherwise). Seeds change from run to run and are
//! printed; `HYLAPACK_TEST_SEED` replays one.

mod common;
use common::gpu_test;

use hylapack::sbr::executor::{cpu::CpuExecutor, gpu::GpuExecutor};
use hylapack::sbr::{self, Executor, Path};
use hylapack::testmat::{self, DenseFamily, Rng};

/// Q1 through `exec` ([`sbr::apply_q1_on`]) against the host's xORMQR/xORMLQ
/// ([`sbr::apply_q1`]) on an n x m Z, the reflectors from LAPACK's xSYTRD_SY2SB: equal within
/// 100 n ε max|Z|; with `direct`, Z moves by the executor's direct transfers (as when the
/// driver page-locked it). Returns how the executor ran.
fn q1_case<E: Executor<f64>>(
    exec: &mut E,
    uplo: u8,
    (n, kd, m): (usize, usize, usize),
    seed: u64,
    direct: bool,
) -> sbr::Q1Run {
    let mut rng = Rng::new(seed);
    let mut a = testmat::dense_symmetric::<f64>(DenseFamily::Random, n, &mut rng);
    let (mut ab, mut tau) = (
        vec![0.0; (kd + 1) * n],
        vec![0.0; n.saturating_sub(kd).max(1)],
    );
    let report = sbr::syrdb(
        uplo,
        n,
        kd,
        &mut a,
        n,
        &mut ab,
        kd + 1,
        &mut tau,
        Path::Lapack,
    );
    assert_eq!(report.info, 0);
    let ldz = n + 1;
    let z0: Vec<f64> = (0..ldz * m).map(|_| rng.range(-1.0, 1.0)).collect();
    let mut want = z0.clone();
    sbr::apply_q1(uplo, n, kd, &a, n, &tau, m, &mut want, ldz).expect("host memory");
    let mut got = z0.clone();
    let what = format!(
        "uplo {} n {n} kd {kd} m {m} direct {direct} seed {seed}",
        uplo as char
    );
    let run = sbr::apply_q1_on(exec, uplo, n, kd, &a, n, &tau, m, &mut got, ldz, direct)
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
    let norm = want.iter().fold(0.0f64, |x, y| x.max(y.abs()));
    let mut diff = 0.0f64;
    for j in 0..m {
        for i in 0..ldz {
            let (x, y) = (got[i + j * ldz], want[i + j * ldz]);
            if i >= n {
                // Row n, inside LDZ, is not Z's: untouched.
                assert_eq!(
                    x.to_bits(),
                    z0[i + j * ldz].to_bits(),
                    "{what}: row {i} written"
                );
            }
            diff = diff.max((x - y).abs());
        }
    }
    let ratio = diff / (n as f64 * f64::EPSILON * norm);
    println!("Q1 {what}: {run:?}, max difference {ratio:.3} n ε max|Z|");
    assert!(ratio <= 100.0, "{what}: {ratio}");
    run
}

/// Q1 by block columns on the CPU executor (the GPU's tiling on the host's BLAS): in core, by
/// block columns with the blocks of V resident, and one block at a time, both UPLO, Z moved
/// through staging buffers and directly.
#[test]
fn q1_by_block_columns() {
    let seed = common::seed();
    let mut seen = [false; 2];
    for uplo in [b'L', b'U'] {
        for (n, kd, m) in [
            (3, 1, 3),
            (4, 2, 4),
            (10, 3, 10),
            (40, 7, 13),
            (150, 32, 150),
            (301, 16, 40),
            // Several blocks of 256 reflectors, and blocks of kd > 256.
            (600, 32, 50),
            (700, 300, 20),
        ] {
            let s = seed ^ (n * 1000 + kd) as u64;
            for direct in [false, true] {
                let run = q1_case(&mut CpuExecutor::new(u64::MAX), uplo, (n, kd, m), s, direct);
                assert!(run.block_columns <= 1 && run.v_resident, "{run:?}");
            }
            // The rooms for V resident beside block columns of 3 (V goes one block at a
            // time if that makes them more than twice as wide), then for one block's V.
            for resident in [true, false] {
                let budget = sbr::q1_bytes(n, kd, 3, resident, false, 8);
                let run = q1_case(&mut CpuExecutor::new(budget), uplo, (n, kd, m), s, resident);
                assert!(resident || run.width <= 3, "{run:?}");
                assert_eq!(run.block_columns, m.div_ceil(run.width), "{run:?}");
                seen[run.v_resident as usize] |= run.block_columns > 1;
            }
            // No room for blocks of 256 reflectors: blocks of kd.
            let narrow = sbr::q1_bytes(n, kd, 3, false, true, 8);
            let run = q1_case(&mut CpuExecutor::new(narrow), uplo, (n, kd, m), s, true);
            assert_eq!(run.block_columns, m.div_ceil(run.width), "{run:?}");
            let wide = sbr::q1_bytes(n, kd, 1, false, false, 8);
            assert!(
                narrow >= wide || run.reflectors == kd.min(n - kd),
                "{run:?}"
            );
        }
    }
    assert_eq!(seen, [true, true], "block columns with V resident and not");
}

/// Q1 through cuBLAS ([`sbr::apply_q1_on`] on the GPU executor) equals the host's, in core and
/// by block columns (V resident or not), both UPLO, Z moved through staging buffers and
/// directly. With `HYLAPACK_DEVICE=gpu`.
#[test]
fn gpu_q1_matches_host() {
    if !gpu_test() {
        return;
    }
    let seed = common::seed();
    for uplo in [b'L', b'U'] {
        for (n, kd, m) in [
            (10, 3, 10),
            (300, 32, 300),
            (1000, 64, 1000),
            (1500, 32, 15),
        ] {
            let s = seed ^ (n * 1000 + kd) as u64;
            for direct in [false, true] {
                let mut exec = GpuExecutor::<f64>::new(None).expect("GPU executor");
                let run = q1_case(&mut exec, uplo, (n, kd, m), s, direct);
                assert_eq!(run.block_columns, 1, "{run:?}");
            }
            for resident in [true, false] {
                let budget = sbr::q1_bytes(n, kd, m.div_ceil(4).max(1), resident, false, 8);
                let mut exec = GpuExecutor::<f64>::new(Some(budget)).expect("GPU executor");
                let run = q1_case(&mut exec, uplo, (n, kd, m), s, resident);
                // With room for V, it may still go one block at a time in wider block columns.
                assert_eq!(run.block_columns, m.div_ceil(run.width), "{run:?}");
                assert!(resident || run.block_columns >= 4.min(m), "{run:?}");
            }
        }
    }
}
