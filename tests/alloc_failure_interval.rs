//! Host memory that cannot be allocated never aborts the host program (issue #23): the
//! interval family (the harness: `common::child`).

mod common;

use common::child::*;
use hylapack::api::interval::{dgemm_rounded_, dgesv_verified, digemm};
use std::ffi::c_int;

// ---- interval family ----

/// N for the verified solve: A is 128 MB; the CPU engine's three n × n matrices (384 MB, and
/// the old code's LU copy alone, 128 MB) do not fit a 64 MiB margin; its 14 vectors do.
const GESV_N: usize = 4000;

/// DGESV_VERIFIED (C name, CPU engine) under a 64 MiB margin: INFO = -1000, X_inf and X_sup
/// untouched, one line on stderr.
#[test]
fn dgesv_verified_without_memory_returns_minus_1000() {
    if in_child_process() {
        let n = GESV_N;
        let mut rng = hylapack::testmat::Rng::new(2323);
        let a: Vec<f64> = (0..n * n).map(|_| rng.uniform() - 0.5).collect();
        let b: Vec<f64> = (0..n).map(|_| rng.uniform()).collect();
        let (mut lo, mut hi) = (vec![-7.0; n], vec![-7.0; n]);
        limit_address_space(64 * MIB);
        let nn = n as c_int;
        // SAFETY: A is n × n, B and the outputs n × 1, leading dimensions n.
        let info = unsafe {
            dgesv_verified(
                nn,
                1,
                a.as_ptr(),
                nn,
                b.as_ptr(),
                nn,
                lo.as_mut_ptr(),
                hi.as_mut_ptr(),
                nn,
            )
        };
        let untouched = lo.iter().chain(&hi).all(|&v| v == -7.0);
        println!("RESULT info={info} untouched={untouched}");
        return;
    }
    let (out, err) = in_child_env(
        "dgesv_verified_without_memory_returns_minus_1000",
        &CPU_ONLY,
    );
    assert_eq!(
        result_line(&out),
        "RESULT info=-1000 untouched=true",
        "{out}"
    );
    assert_eq!(
        lines_with(&err, "internal error in dgesv_verified: cannot allocate"),
        1,
        "{err}"
    );
}

/// Shape of the products (M = N, K): each bound of A and B is 80 MB. The CPU paths' workspace
/// (packed or split copies of the operands, 80 MB each; the old code's first one alone) does
/// not fit the margin. Each such array is larger than the 64 MiB that glibc reserves for a
/// thread's arena (counted in VmSize already, so it could otherwise be served there).
const GEMM_MN: usize = 1000;
const GEMM_K: usize = 10_000;

/// DIGEMM (C name, CPU, midpoint–radius since every bound is finite) under a 16 MiB margin:
/// INFO = -1000, [C] untouched, one line on stderr.
#[test]
fn digemm_without_memory_returns_minus_1000() {
    if in_child_process() {
        let (n, k) = (GEMM_MN, GEMM_K);
        let mut rng = hylapack::testmat::Rng::new(2324);
        let mut bounds = || -> (Vec<f64>, Vec<f64>) {
            let lo: Vec<f64> = (0..n * k).map(|_| rng.uniform() - 0.5).collect();
            let hi = lo.iter().map(|v| v + 1e-3).collect();
            (lo, hi)
        };
        let ((ai, asup), (bi, bsup)) = (bounds(), bounds());
        let (mut ci, mut cs) = (vec![-7.0; n * n], vec![-7.0; n * n]);
        limit_address_space(16 * MIB);
        let (nn, kk) = (n as c_int, k as c_int);
        // SAFETY: A is n × k (lda n), B k × n (ldb k), C n × n (ldc n).
        let info = unsafe {
            digemm(
                b'N' as _,
                b'N' as _,
                nn,
                nn,
                kk,
                ai.as_ptr(),
                asup.as_ptr(),
                nn,
                bi.as_ptr(),
                bsup.as_ptr(),
                kk,
                ci.as_mut_ptr(),
                cs.as_mut_ptr(),
                nn,
            )
        };
        let untouched = ci.iter().chain(&cs).all(|&v| v == -7.0);
        println!("RESULT info={info} untouched={untouched}");
        return;
    }
    let (out, err) = in_child_env("digemm_without_memory_returns_minus_1000", &CPU_ONLY);
    assert_eq!(
        result_line(&out),
        "RESULT info=-1000 untouched=true",
        "{out}"
    );
    assert_eq!(
        lines_with(&err, "internal error in digemm: cannot allocate"),
        1,
        "{err}"
    );
}

/// DGEMM_ROUNDED_ (the Fortran name: a subroutine without INFO) under a 16 MiB margin: C
/// untouched and one line on stderr, no abort.
#[test]
fn dgemm_rounded_fortran_without_memory_leaves_c() {
    if in_child_process() {
        let (n, k) = (GEMM_MN, GEMM_K);
        let mut rng = hylapack::testmat::Rng::new(2325);
        let a: Vec<f64> = (0..n * k).map(|_| rng.uniform() - 0.5).collect();
        let b: Vec<f64> = (0..n * k).map(|_| rng.uniform() - 0.5).collect();
        let mut c = vec![-7.0; n * n];
        let (nn, kk, one, zero) = (n as c_int, k as c_int, 1.0f64, 0.0f64);
        limit_address_space(16 * MIB);
        // SAFETY: A is n × k (lda n), B k × n (ldb k), C n × n (ldc n); CHARACTER arguments
        // of length 1.
        unsafe {
            dgemm_rounded_(
                b"U".as_ptr().cast(),
                b"N".as_ptr().cast(),
                b"N".as_ptr().cast(),
                &nn,
                &nn,
                &kk,
                &one,
                a.as_ptr(),
                &nn,
                b.as_ptr(),
                &kk,
                &zero,
                c.as_mut_ptr(),
                &nn,
                1,
                1,
                1,
            )
        };
        let untouched = c.iter().all(|&v| v == -7.0);
        println!("RESULT untouched={untouched}");
        return;
    }
    let (out, err) = in_child_env("dgemm_rounded_fortran_without_memory_leaves_c", &CPU_ONLY);
    assert_eq!(result_line(&out), "RESULT untouched=true", "{out}");
    assert_eq!(
        lines_with(&err, "internal error in dgemm_rounded_: cannot allocate"),
        1,
        "{err}"
    );
}
