//! Host memory that cannot be allocated never aborts the host program (issue #23).
//!
//! Each test re-runs this test binary as a child process, on that one test (`--exact`), with
//! `ALLOC_FAILURE_CHILD` set. In the child, the test body builds its inputs and the reference
//! answer of the system LAPACK (with no limit), reads the process's address space (VmSize),
//! lowers `RLIMIT_AS` to that plus a margin, makes the call and prints one `RESULT ...` line.
//! The parent checks that the child exited normally (an abort is SIGABRT, an overflow SIGSEGV)
//! and printed the expected line. The margins are below what the code before the fix
//! allocated for the same call, and above what LAPACK itself needs.

use hylapack::api::interval::{dgemm_rounded_, dgesv_verified, digemm};
use hylapack::api::stebz::{dstebz_gpu, dstebz_gpu_, sstebz_gpu_};
use hylapack::api::stein::dstein_gpu;

use hylapack::lapack::{Dense, Lapack, LapackStein};
use std::ffi::c_int;
use std::process::Command;

const CHILD: &str = "ALLOC_FAILURE_CHILD";
const MIB: u64 = 1 << 20;

/// The CPU path, whatever the host has. These tests are about host memory: on a GPU host the
/// CUDA driver maps tens of MiB of address space when it starts, which the margins below do not
/// leave room for (seen on an H200 host: the C fallback then found no room for LAPACK's 88 MiB).
const CPU_ONLY: [(&str, &str); 1] = [("HYLAPACK_DEVICE", "cpu")];

/// Runs `test` (this file's test function of that name) in a child process on the CPU path
/// and returns its stdout, after checking that it exited normally with status 0.
fn in_child(test: &str) -> String {
    in_child_env(test, &CPU_ONLY).0
}

/// [`in_child`] with extra environment variables; returns the child's stdout and stderr.
fn in_child_env(test: &str, env: &[(&str, &str)]) -> (String, String) {
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        // The tests count the library's warnings; per-call log lines (run.sh on the GPU host
        // sets HYLAPACK_LOG=info) would repeat their text.
        .env_remove("HYLAPACK_LOG")
        .envs(env.iter().copied())
        .output()
        .expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert!(
        out.status.signal().is_none(),
        "{test}: child killed by signal {:?} (abort = 6, segfault = 11)\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status.signal()
    );
    assert!(
        out.status.success(),
        "{test}: child failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    eprintln!("{test}: child stdout:\n{stdout}child stderr:\n{stderr}");
    (stdout, stderr.into_owned())
}

/// How many lines of `stderr` contain `text`.
fn lines_with(stderr: &str, text: &str) -> usize {
    stderr.lines().filter(|l| l.contains(text)).count()
}

fn in_child_process() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// The process's address space in bytes (VmSize).
fn vm_size() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmSize:"))
        .expect("VmSize line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("VmSize value");
    kib * 1024
}

/// Limits the address space to what it is now plus `margin` bytes.
fn limit_address_space(margin: u64) {
    let base = vm_size();
    let limit = base + margin;
    println!("BASE VmSize {} MiB, limit {} MiB", base / MIB, limit / MIB);
    let rl = libc::rlimit {
        rlim_cur: limit,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit with a valid pointer to an initialised rlimit.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &rl) };
    assert_eq!(rc, 0, "setrlimit");
}

/// The line the parent looks for.
fn result_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .unwrap_or_else(|| panic!("no RESULT line in the child's output:\n{stdout}"))
}

// ---- stebz ----

/// N = 2^21 in 2 × 2 blocks: LAPACK bisects each block (fast), while the multisection's
/// workspace (about 250 bytes per row) and the old code's growing per-block arrays (well over
/// 100 MiB) do not fit the margin.
const STEBZ_N: usize = 1 << 21;

fn stebz_matrix<T: Lapack>() -> (Vec<T>, Vec<T>) {
    let seed = 2323;
    println!("seed {seed}");
    let mut rng = hylapack::testmat::Rng::new(seed);
    let d = (0..STEBZ_N)
        .map(|_| T::from_f64(rng.uniform() * 2.0 - 1.0))
        .collect();
    let e = (0..STEBZ_N - 1)
        .map(|j| {
            if j % 2 == 0 {
                T::from_f64(rng.uniform() + 0.5)
            } else {
                T::ZERO
            }
        })
        .collect();
    (d, e)
}

/// The system LAPACK's answer (no limit yet): (M, NSPLIT, INFO, W, IBLOCK, ISPLIT).
type StebzAnswer<T> = (i32, i32, i32, Vec<T>, Vec<i32>, Vec<i32>);

fn stebz_reference<T: Lapack>(d: &[T], e: &[T]) -> StebzAnswer<T> {
    let n = d.len();
    let (mut w, mut ib, mut is) = (vec![T::ZERO; n], vec![0; n], vec![0; n]);
    let r = T::stebz(
        b'A',
        b'B',
        T::ZERO,
        T::ZERO,
        0,
        0,
        T::ZERO,
        d,
        e,
        &mut w,
        &mut ib,
        &mut is,
    );
    (r.m, r.nsplit, r.info, w, ib, is)
}

/// Whether our answer is the reference, bit for bit.
fn same<T: Lapack>(ours: &StebzAnswer<T>, reference: &StebzAnswer<T>) -> bool {
    let m = reference.0.max(0) as usize;
    let ns = reference.1.max(0) as usize;
    ours.0 == reference.0
        && ours.1 == reference.1
        && ours.2 == reference.2
        && ours.3[..m]
            .iter()
            .zip(&reference.3[..m])
            .all(|(a, b)| a.to_f64().to_bits() == b.to_f64().to_bits())
        && ours.4[..m] == reference.4[..m]
        && ours.5[..ns] == reference.5[..ns]
}

/// The Fortran name with the caller's WORK(4N)/IWORK(3N), under a limit of 64 MiB more than
/// what the process holds once LAPACK's workspace is allocated: the call must be answered.
fn stebz_fortran_child<T: Lapack>(
    f: unsafe extern "C" fn(
        *const i8,
        *const i8,
        *const c_int,
        *const T,
        *const T,
        *const c_int,
        *const c_int,
        *const T,
        *const T,
        *const T,
        *mut c_int,
        *mut c_int,
        *mut T,
        *mut c_int,
        *mut c_int,
        *mut T,
        *mut c_int,
        *mut c_int,
        usize,
        usize,
    ),
) {
    let (d, e) = stebz_matrix::<T>();
    let reference = stebz_reference(&d, &e);
    let n = STEBZ_N;
    let (mut w, mut ib, mut is) = (vec![T::ZERO; n], vec![0; n], vec![0; n]);
    let (mut work, mut iwork) = (vec![T::ZERO; 4 * n], vec![0 as c_int; 3 * n]);
    // Touch what the call will write, so that the limit is relative to all of it.
    let (nn, zero, izero) = (n as c_int, T::ZERO, 0 as c_int);
    let (mut m, mut nsplit, mut info) = (0, 0, 0);
    limit_address_space(64 * MIB);
    // SAFETY: LAPACK xSTEBZ's argument list, every array of the length LAPACK requires.
    unsafe {
        f(
            b"A".as_ptr().cast(),
            b"B".as_ptr().cast(),
            &nn,
            &zero,
            &zero,
            &izero,
            &izero,
            &zero,
            d.as_ptr(),
            e.as_ptr(),
            &mut m,
            &mut nsplit,
            w.as_mut_ptr(),
            ib.as_mut_ptr(),
            is.as_mut_ptr(),
            work.as_mut_ptr(),
            iwork.as_mut_ptr(),
            &mut info,
            1,
            1,
        )
    };
    let ours = (m, nsplit, info, w, ib, is);
    println!(
        "RESULT info={info} m={m} same_as_lapack={}",
        same(&ours, &reference)
    );
}

#[test]
fn dstebz_gpu_fortran_answers_within_lapacks_workspace() {
    if in_child_process() {
        return stebz_fortran_child::<f64>(dstebz_gpu_);
    }
    let out = in_child("dstebz_gpu_fortran_answers_within_lapacks_workspace");
    let n = STEBZ_N;
    assert_eq!(
        result_line(&out),
        format!("RESULT info=0 m={n} same_as_lapack=true"),
        "{out}"
    );
}

#[test]
fn sstebz_gpu_fortran_answers_within_lapacks_workspace() {
    if in_child_process() {
        return stebz_fortran_child::<f32>(sstebz_gpu_);
    }
    let out = in_child("sstebz_gpu_fortran_answers_within_lapacks_workspace");
    let n = STEBZ_N;
    assert_eq!(
        result_line(&out),
        format!("RESULT info=0 m={n} same_as_lapack=true"),
        "{out}"
    );
}

/// The C name, which has no workspace argument: with room for LAPACK's 7N workspace plus
/// 64 MiB it is answered (by the system LAPACK); with 16 MiB it returns -1000 with the outputs
/// untouched. Never an abort.
fn stebz_c_child(margin: u64) {
    let (d, e) = stebz_matrix::<f64>();
    let reference = stebz_reference(&d, &e);
    let n = STEBZ_N;
    let sentinel = -7.0;
    let (mut w, mut ib, mut is) = (vec![sentinel; n], vec![-7; n], vec![-7; n]);
    let (mut m, mut nsplit) = (-7, -7);
    limit_address_space(margin);
    // SAFETY: every array holds N entries, E holds N - 1.
    let info = unsafe {
        dstebz_gpu(
            b'A' as _,
            b'B' as _,
            n as c_int,
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
            ib.as_mut_ptr(),
            is.as_mut_ptr(),
        )
    };
    let untouched = w.iter().all(|&v| v == sentinel)
        && ib.iter().all(|&v| v == -7)
        && is.iter().all(|&v| v == -7);
    let ours = (m, nsplit, info, w, ib, is);
    println!(
        "RESULT info={info} m={m} same_as_lapack={} untouched={untouched}",
        same(&ours, &reference)
    );
}

#[test]
fn dstebz_gpu_c_falls_back_to_lapack() {
    if in_child_process() {
        let lapack = (STEBZ_N * (4 * 8 + 3 * 4)) as u64;
        return stebz_c_child(lapack + 64 * MIB);
    }
    let out = in_child("dstebz_gpu_c_falls_back_to_lapack");
    let n = STEBZ_N;
    assert_eq!(
        result_line(&out),
        format!("RESULT info=0 m={n} same_as_lapack=true untouched=false"),
        "{out}"
    );
}

#[test]
fn dstebz_gpu_c_without_memory_returns_minus_1000() {
    if in_child_process() {
        return stebz_c_child(16 * MIB);
    }
    let out = in_child("dstebz_gpu_c_without_memory_returns_minus_1000");
    assert_eq!(
        result_line(&out),
        "RESULT info=-1000 m=0 same_as_lapack=false untouched=true",
        "{out}"
    );
}

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

// ---- gtsv ----

/// N = 2^22: the matrix and B are 128 MB; the CPU SPIKE path's workspace (X, the spikes and
/// the block factors, about 25 bytes per row and more; the old code's X alone, 32 MB) does not
/// fit a 16 MiB margin, while LAPACK xGTSV needs no workspace.
const GTSV_N: usize = 1 << 22;

/// SPIKE on the CPU (the Rust API with `cpu_min_n = 2`: the exported names never run SPIKE on
/// the CPU) under a 16 MiB margin: its workspace cannot be allocated, so LAPACK xGTSV runs on
/// the caller's arrays and the answer is LAPACK's, bit for bit.
#[test]
fn dgtsv_spike_cpu_without_memory_falls_back_to_lapack() {
    use hylapack::gtsv::{gtsv_with, Options, Solver};
    use hylapack::lapack::Lapack;
    if in_child_process() {
        let n = GTSV_N;
        let mut rng = hylapack::testmat::Rng::new(2326);
        let t = hylapack::gtsv::matrices::diagonally_dominant(n, &mut rng);
        let b: Vec<f64> = (0..n).map(|_| rng.uniform() - 0.5).collect();
        let (mut rdl, mut rd, mut rdu, mut rb) =
            (t.dl.clone(), t.d.clone(), t.du.clone(), b.clone());
        let rinfo = f64::gtsv(&mut rdl, &mut rd, &mut rdu, &mut rb, n, 1);
        let (mut dl, mut d, mut du, mut x) = (t.dl, t.d, t.du, b);
        drop((rdl, rd, rdu));
        let opts = Options {
            cpu_min_n: 2,
            ..Options::default()
        };
        limit_address_space(16 * MIB);
        let report = gtsv_with(
            &opts,
            &mut dl,
            &mut d,
            &mut du,
            &mut x,
            n,
            1,
            hylapack::dispatch::Backend::Cpu,
        );
        let same =
            rinfo == report.info && x.iter().zip(&rb).all(|(p, q)| p.to_bits() == q.to_bits());
        println!(
            "RESULT info={} lapack={} same_as_lapack={same}",
            report.info,
            report.solver == Solver::Lapack
        );
        println!("NOTE {}", report.note.unwrap_or_default());
        return;
    }
    let out = in_child("dgtsv_spike_cpu_without_memory_falls_back_to_lapack");
    assert_eq!(
        result_line(&out),
        "RESULT info=0 lapack=true same_as_lapack=true",
        "{out}"
    );
    assert!(
        out.contains("cannot allocate") && out.contains("LAPACK xGTSV ran instead"),
        "{out}"
    );
}

// ---- stein ----

/// DSTEIN_GPU (C name) for one eigenvector of a matrix of order 2^21 under a 16 MiB margin:
/// the inverse iteration's scratch (6 N reals, 96 MiB) does not fit, so INFO = -1000, Z
/// untouched (the C name has no WORK to hand to the system LAPACK), one line on stderr.
#[test]
fn dstein_gpu_without_memory_returns_minus_1000() {
    if in_child_process() {
        let n = 1usize << 21;
        let (d, e) = (vec![2.0f64; n], vec![-1.0f64; n - 1]);
        let (w, iblock, isplit) = ([1.0f64], [1 as c_int], vec![n as c_int]);
        let mut z = vec![7.0f64; n];
        let mut ifail = [5 as c_int];
        limit_address_space(16 * MIB);
        // SAFETY: arrays of DSTEIN's extents (D N, E N-1, W/IBLOCK M = 1, ISPLIT N, Z N x 1).
        let info = unsafe {
            dstein_gpu(
                n as c_int,
                d.as_ptr(),
                e.as_ptr(),
                1,
                w.as_ptr(),
                iblock.as_ptr(),
                isplit.as_ptr(),
                z.as_mut_ptr(),
                n as c_int,
                ifail.as_mut_ptr(),
            )
        };
        let untouched = z.iter().all(|&v| v == 7.0);
        println!(
            "RESULT info={info} ifail={} untouched={untouched}",
            ifail[0]
        );
        return;
    }
    let (out, err) = in_child_env("dstein_gpu_without_memory_returns_minus_1000", &CPU_ONLY);
    assert_eq!(
        result_line(&out),
        "RESULT info=-1000 ifail=0 untouched=true",
        "{out}"
    );
    assert_eq!(lines_with(&err, "cannot allocate"), 1, "{err}");
}

/// DSTEIN_GPU_ (Fortran name) in the setting of the test above: the caller's WORK (5N) and
/// IWORK (N) have LAPACK's size, so the system LAPACK's DSTEIN runs in them: INFO = 0 and Z
/// equal to LAPACK's, bit for bit, where the C name returns -1000.
#[test]
fn dstein_gpu_fortran_answers_in_the_callers_work() {
    use hylapack::api::stein::dstein_gpu_;
    if in_child_process() {
        let n = 1usize << 21;
        let (d, e) = (vec![2.0f64; n], vec![-1.0f64; n - 1]);
        let (w, iblock, isplit) = ([1.0f64], [1 as c_int], vec![n as c_int]);
        let mut z_ref = vec![0.0f64; n];
        let mut ifail_ref = [5 as c_int];
        let info_ref = f64::stein(
            n as i32,
            &d,
            &e,
            1,
            &w,
            &iblock,
            &isplit,
            &mut z_ref,
            n as i32,
            &mut ifail_ref,
        );
        let mut z = vec![7.0f64; n];
        let mut ifail = [5 as c_int];
        let mut work = vec![0.0f64; 5 * n];
        let mut iwork = vec![0 as c_int; n];
        let (nn, one) = (n as c_int, 1 as c_int);
        let mut info = -7;
        limit_address_space(16 * MIB);
        // SAFETY: arrays of DSTEIN's extents (D N, E N-1, W/IBLOCK M = 1, ISPLIT N, Z N x 1,
        // WORK 5N, IWORK N, IFAIL M).
        unsafe {
            dstein_gpu_(
                &nn,
                d.as_ptr(),
                e.as_ptr(),
                &one,
                w.as_ptr(),
                iblock.as_ptr(),
                isplit.as_ptr(),
                z.as_mut_ptr(),
                &nn,
                work.as_mut_ptr(),
                iwork.as_mut_ptr(),
                ifail.as_mut_ptr(),
                &mut info,
            )
        };
        let same = z
            .iter()
            .zip(&z_ref)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        println!(
            "RESULT info={info} ifail={} as_lapack={}",
            ifail[0],
            same && info == info_ref && ifail == ifail_ref
        );
        return;
    }
    let env = [CPU_ONLY.as_slice(), &[("MALLOC_MMAP_THRESHOLD_", "65536")]].concat();
    let (out, err) = in_child_env("dstein_gpu_fortran_answers_in_the_callers_work", &env);
    assert_eq!(
        result_line(&out),
        "RESULT info=0 ifail=0 as_lapack=true",
        "{out}"
    );
    assert_eq!(lines_with(&err, "ran in the caller's WORK"), 1, "{err}");
}

// ---- dense → band and the eigenvalue drivers ----

/// N for the dense names on the CPU path (the system LAPACK on the caller's A): LAPACK's
/// workspace, allocated by hylapack for the C names (xSYEV 34N reals, 5.4 MB; xSYEVX 8N reals,
/// 1.3 MB, and 6N integers; xSYTRD_SY2SB at KD = 64, 20 MB), does not fit a 512 KiB margin.
/// A (3.2 GB) is calloc'ed and never written, so it costs address space, not memory: on this
/// path nothing reads it before the workspace.
const DENSE_N: usize = 20_000;
/// KD for DSYRDB_OOC.
const DENSE_KD: usize = 64;

/// The CPU path, with one malloc arena: the test thread's own arena (64 MiB of address space
/// reserved when the thread started, so counted in VmSize already) would otherwise serve
/// these workspaces, all well below 64 MiB, whatever the limit. And no cache of thread
/// stacks: glibc keeps the stacks of joined threads mapped (up to 40 MiB), so on a many-core
/// host the library's scan threads, started and joined under the limit, would keep the margin
/// that the fallback's OpenBLAS then needs (it exits when its malloc fails).
const ONE_ARENA: [(&str, &str); 3] = [
    ("HYLAPACK_DEVICE", "cpu"),
    ("MALLOC_ARENA_MAX", "1"),
    ("GLIBC_TUNABLES", "glibc.pthread.stack_cache_size=0"),
];

/// A zero n x n matrix that is never written (its pages stay the shared zero page).
fn untouched_zeros(n: usize) -> Vec<f64> {
    vec![0.0; n * n]
}

/// DSYEV_OOC (C name, CPU path) under a 512 KiB margin: LAPACK's workspace cannot be
/// allocated, so INFO = -1000 with A and W untouched and one line on stderr; never an abort.
#[test]
fn dsyev_ooc_without_memory_returns_minus_1000() {
    use hylapack::api::syev::dsyev_ooc;
    if in_child_process() {
        let n = DENSE_N;
        let mut a = untouched_zeros(n);
        let mut w = vec![-7.0; n];
        limit_address_space(512 << 10);
        // SAFETY: A is n x n (lda n), W holds n entries.
        let info = unsafe {
            dsyev_ooc(
                b'N' as _,
                b'L' as _,
                n as c_int,
                a.as_mut_ptr(),
                n as c_int,
                w.as_mut_ptr(),
            )
        };
        let untouched = w.iter().all(|&v| v == -7.0) && a.iter().all(|&v| v == 0.0);
        println!("RESULT info={info} untouched={untouched}");
        return;
    }
    let (out, err) = in_child_env("dsyev_ooc_without_memory_returns_minus_1000", &ONE_ARENA);
    assert_eq!(
        result_line(&out),
        "RESULT info=-1000 untouched=true",
        "{out}"
    );
    assert_eq!(
        lines_with(&err, "cannot allocate host memory (xSYEV's workspace)"),
        1,
        "{err}"
    );
}

/// The Fortran names under a 64 KiB margin, where neither the drivers' workspace nor the
/// system LAPACK's own can be allocated (the C names return -1000 there): the caller's WORK
/// (and IWORK) has LAPACK's size, so LAPACK answers in it, as a program calling DSYEV would
/// get: eigenvalues (and vectors) as LAPACK's, INFO = 0.
#[test]
fn fortran_syev_names_answer_in_the_callers_work() {
    use hylapack::api::syev::{dsyev_ooc_, dsyevx_ooc_};
    if in_child_process() {
        let n = 400;
        let full = dense_random(n, 400);
        let mut w_ref = vec![0.0; n];
        assert_eq!(
            f64::syev_values(b'L', n, &mut full.clone(), n, &mut w_ref),
            0
        );
        let (mut a_n, mut a_v, mut a_x) = (full.clone(), full.clone(), full);
        let (mut w_n, mut w_v, mut w_x) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        let mut work = vec![0.0; 8 * n];
        let mut iwork = vec![0 as c_int; 5 * n];
        let mut ifail = vec![0 as c_int; n];
        let mut z = [0.0];
        let (nn, lwork_syev, lwork_syevx) = (n as c_int, (3 * n - 1) as c_int, (8 * n) as c_int);
        let (il, iu, zero, one) = (3 as c_int, 40 as c_int, 0.0f64, 1 as c_int);
        let (mut m, mut info) = ([-1 as c_int; 3], [-1 as c_int; 3]);
        limit_address_space(64 << 10);
        // SAFETY: A is n x n (lda n), W n entries, WORK 8n, IWORK 5n, IFAIL n; Z is not
        // referenced for JOBZ = 'N'.
        unsafe {
            dsyev_ooc_(
                c"N".as_ptr(),
                c"L".as_ptr(),
                &nn,
                a_n.as_mut_ptr(),
                &nn,
                w_n.as_mut_ptr(),
                work.as_mut_ptr(),
                &lwork_syev,
                &mut info[0],
                1,
                1,
            );
            dsyev_ooc_(
                c"V".as_ptr(),
                c"L".as_ptr(),
                &nn,
                a_v.as_mut_ptr(),
                &nn,
                w_v.as_mut_ptr(),
                work.as_mut_ptr(),
                &lwork_syev,
                &mut info[1],
                1,
                1,
            );
            dsyevx_ooc_(
                c"N".as_ptr(),
                c"I".as_ptr(),
                c"L".as_ptr(),
                &nn,
                a_x.as_mut_ptr(),
                &nn,
                &zero,
                &zero,
                &il,
                &iu,
                &zero,
                &mut m[2],
                w_x.as_mut_ptr(),
                z.as_mut_ptr(),
                &one,
                work.as_mut_ptr(),
                &lwork_syevx,
                iwork.as_mut_ptr(),
                ifail.as_mut_ptr(),
                &mut info[2],
                1,
                1,
                1,
            );
        }
        m[0] = n as c_int;
        m[1] = n as c_int;
        let scale = w_ref.iter().fold(0.0f64, |s, x| s.max(x.abs()));
        let close = |w: &[f64], first: usize| {
            w.iter()
                .zip(&w_ref[first..])
                .all(|(x, y)| (x - y).abs() <= 1e-12 * scale)
        };
        let ok = close(&w_n, 0)
            && close(&w_v, 0)
            && m[2] == iu - il + 1
            && close(&w_x[..m[2] as usize], il as usize - 1);
        println!("RESULT info={info:?} m={} close_to_lapack={ok}", m[2]);
        return;
    }
    // OpenBLAS's threaded GEMM driver mallocs per call, which this margin does not leave it;
    // a fixed mmap threshold makes every workspace of 64 KiB or more new address space (else
    // the heap could serve it from what the reference computation freed).
    let env = [
        ONE_ARENA.as_slice(),
        &[
            ("OPENBLAS_NUM_THREADS", "1"),
            ("MALLOC_MMAP_THRESHOLD_", "65536"),
        ],
    ]
    .concat();
    let (out, err) = in_child_env("fortran_syev_names_answer_in_the_callers_work", &env);
    assert_eq!(
        result_line(&out),
        "RESULT info=[0, 0, 0] m=38 close_to_lapack=true",
        "{out}"
    );
    // Each call found no room for LAPACK's own workspace first: the path under test ran.
    assert_eq!(
        lines_with(&err, "cannot allocate host memory (xSYEV"),
        3,
        "{err}"
    );
}

/// DSYEVX_OOC (C name, CPU path, RANGE = 'I') under a 512 KiB margin: INFO = -1000, M = 0,
/// A and W untouched, one line on stderr.
#[test]
fn dsyevx_ooc_without_memory_returns_minus_1000() {
    use hylapack::api::syev::dsyevx_ooc;
    if in_child_process() {
        let n = DENSE_N;
        let mut a = untouched_zeros(n);
        let mut w = vec![-7.0; n];
        let mut m: c_int = -7;
        limit_address_space(512 << 10);
        // SAFETY: A is n x n (lda n), W holds n entries; Z and IFAIL are not referenced for
        // JOBZ = 'N' (LDZ = 1).
        let info = unsafe {
            dsyevx_ooc(
                b'N' as _,
                b'I' as _,
                b'U' as _,
                n as c_int,
                a.as_mut_ptr(),
                n as c_int,
                0.0,
                0.0,
                1,
                10,
                0.0,
                &mut m,
                w.as_mut_ptr(),
                std::ptr::null_mut(),
                1,
                std::ptr::null_mut(),
            )
        };
        let untouched = w.iter().all(|&v| v == -7.0) && a.iter().all(|&v| v == 0.0);
        println!("RESULT info={info} m={m} untouched={untouched}");
        return;
    }
    let (out, err) = in_child_env("dsyevx_ooc_without_memory_returns_minus_1000", &ONE_ARENA);
    assert_eq!(
        result_line(&out),
        "RESULT info=-1000 m=0 untouched=true",
        "{out}"
    );
    assert_eq!(
        lines_with(&err, "cannot allocate host memory (xSYEVX's workspace)"),
        1,
        "{err}"
    );
}

/// DSYRDB_OOC (C name, CPU path) under a 512 KiB margin: xSYTRD_SY2SB's workspace cannot be
/// allocated, so INFO = -1000 with A, AB and TAU untouched, one line on stderr.
#[test]
fn dsyrdb_ooc_without_memory_returns_minus_1000() {
    use hylapack::api::syrdb::dsyrdb_ooc;
    if in_child_process() {
        let (n, kd) = (DENSE_N, DENSE_KD);
        let mut a = untouched_zeros(n);
        let (mut ab, mut tau) = (vec![-7.0; (kd + 1) * n], vec![-7.0; n - kd]);
        limit_address_space(512 << 10);
        // SAFETY: A is n x n (lda n), AB (kd + 1) x n (ldab kd + 1), TAU n - kd entries.
        let info = unsafe {
            dsyrdb_ooc(
                b'L' as _,
                n as c_int,
                kd as c_int,
                a.as_mut_ptr(),
                n as c_int,
                ab.as_mut_ptr(),
                (kd + 1) as c_int,
                tau.as_mut_ptr(),
            )
        };
        let untouched = ab.iter().chain(&tau).all(|&v| v == -7.0) && a.iter().all(|&v| v == 0.0);
        println!("RESULT info={info} untouched={untouched}");
        return;
    }
    let (out, err) = in_child_env("dsyrdb_ooc_without_memory_returns_minus_1000", &ONE_ARENA);
    assert_eq!(
        result_line(&out),
        "RESULT info=-1000 untouched=true",
        "{out}"
    );
    assert_eq!(
        lines_with(&err, "xSYTRD_SY2SB's workspace: cannot allocate"),
        1,
        "{err}"
    );
}

/// N for the blocked band reduction on the CPU executor (the Rust API's
/// `Path::CpuBlocked`, the GPU path's tiling without a GPU): A is 32 MB; the executor's
/// resident copy of it (32 MB, the old code's first abort) does not fit a 16 MiB margin, while
/// LAPACK's workspaces (about 1 MB) and the drivers' band (0.5 MB) do.
const BLOCKED_N: usize = 2000;

/// A random symmetric matrix of order n (both triangles).
fn dense_random(n: usize, seed: u64) -> Vec<f64> {
    println!("seed {seed}");
    hylapack::testmat::dense_symmetric(
        hylapack::testmat::DenseFamily::Random,
        n,
        &mut hylapack::testmat::Rng::new(seed),
    )
}

/// The blocked reduction (`sbr::syrdb` on the CPU executor, in-core plan) under a 16 MiB
/// margin: the executor's copy of A cannot be allocated, so the system LAPACK's xSYTRD_SY2SB
/// runs on the untouched A: its answer, bit for bit.
#[test]
fn syrdb_blocked_without_memory_falls_back_to_lapack() {
    use hylapack::sbr::{syrdb, Path};
    if in_child_process() {
        let (n, kd) = (BLOCKED_N, 32);
        let a0 = dense_random(n, 2327);
        let (mut ra, mut rab, mut rtau) = (a0.clone(), vec![0.0; (kd + 1) * n], vec![0.0; n - kd]);
        let mut work = vec![0.0; n * kd + n * kd.max(32) + 2 * kd * kd];
        let rinfo = f64::sytrd_sy2sb(
            b'L',
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
        drop(work);
        let (mut a, mut ab, mut tau) = (a0, vec![0.0; (kd + 1) * n], vec![0.0; n - kd]);
        limit_address_space(16 * MIB);
        let path = Path::CpuBlocked { budget: u64::MAX };
        let r = syrdb(b'L', n, kd, &mut a, n, &mut ab, kd + 1, &mut tau, path);
        let same = rinfo == 0 && a == ra && ab == rab && tau == rtau;
        println!("RESULT info={} same_as_lapack={same}", r.info);
        println!("NOTE {}", r.note.unwrap_or_default());
        return;
    }
    let (out, _) = in_child_env(
        "syrdb_blocked_without_memory_falls_back_to_lapack",
        &ONE_ARENA,
    );
    assert_eq!(
        result_line(&out),
        "RESULT info=0 same_as_lapack=true",
        "{out}"
    );
    assert!(
        out.contains("cannot allocate") && out.contains("system LAPACK"),
        "{out}"
    );
}

/// The largest |x − y| over the eigenvalues, over n ε ‖A‖ (‖A‖ the largest |λ|).
fn scaled_error(got: &[f64], want: &[f64]) -> f64 {
    let norm = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let err = got
        .iter()
        .zip(want)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    err / (got.len() as f64 * f64::EPSILON * norm)
}

/// The eigenvalue drivers on the blocked reduction (CPU executor) under a 16 MiB margin: the
/// band fits, the executor's copy of A does not, so the reduction falls back to the system
/// LAPACK's xSYTRD_SY2SB and the driver goes on (bulge chasing, xSTERF or bisection): INFO = 0
/// and the eigenvalues of xSYEV / xSYEVX to a small multiple of n ε ‖A‖.
#[test]
fn syev_blocked_without_memory_falls_back_to_lapack() {
    use hylapack::sbr::Path;
    if in_child_process() {
        let n = BLOCKED_N;
        let a0 = dense_random(n, 2328);
        let mut w_ref = vec![0.0; n];
        let rinfo = f64::syev_values(b'U', n, &mut a0.clone(), n, &mut w_ref);
        // The routines the fallback calls, found (and LAPACK opened) before the limit.
        let (mut t, mut ab, mut tau, mut work) = ([1.0; 9], [0.0; 6], [0.0; 2], [0.0; 100]);
        f64::sytrd_sy2sb(
            b'L', 3, 1, &mut t, 3, &mut ab, 2, &mut tau, &mut work, false,
        );
        f64::sterf(&mut [1.0, 2.0], &mut [0.5]);
        let (il, iu) = (3, 40);
        let (mut a, mut ax) = (a0.clone(), a0);
        let (mut w, mut wx) = (vec![0.0; n], vec![0.0; n]);
        limit_address_space(16 * MIB);
        let path = Path::CpuBlocked { budget: u64::MAX };
        let r = hylapack::syev::syev(b'U', n, &mut a, n, &mut w, path);
        let rx = hylapack::syev::syevx(
            b'I', b'L', n, &mut ax, n, 0.0, 0.0, il, iu, 0.0, &mut wx, path,
        );
        let m = rx.m as usize;
        let ok = rinfo == 0
            && scaled_error(&w, &w_ref) < 10.0
            && m == (iu - il + 1) as usize
            && scaled_error(&wx[..m], &w_ref[il as usize - 1..iu as usize]) < 10.0;
        println!(
            "RESULT info={} infox={} m={m} close_to_lapack={ok}",
            r.info, rx.info
        );
        for note in [r, rx]
            .iter()
            .filter_map(|r| r.reduction.as_ref()?.note.clone())
        {
            println!("NOTE {note}");
        }
        return;
    }
    let (out, _) = in_child_env(
        "syev_blocked_without_memory_falls_back_to_lapack",
        &ONE_ARENA,
    );
    assert_eq!(
        result_line(&out),
        "RESULT info=0 infox=0 m=38 close_to_lapack=true",
        "{out}"
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("NOTE") && l.contains("cannot allocate"))
            .count(),
        2,
        "{out}"
    );
}
