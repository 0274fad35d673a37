//! Host memory that cannot be allocated never aborts the host program (issue #23): the dense
//! → band reduction and the eigenvalue drivers built on it (the harness: `common::child`; the
//! other families: `alloc_failure_tridiagonal.rs`, `alloc_failure_interval.rs`).

mod common;

use common::child::*;
use hylapack::lapack::{Dense, Lapack};
use hylapack::sbr::SbrReal;
use std::ffi::{c_char, c_int, CStr};

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

/// [`ONE_ARENA`] for a margin of tens of KiB: OpenBLAS on one thread (its threaded GEMM driver
/// mallocs per call, which such a margin does not leave it), and a fixed mmap threshold, which
/// makes every workspace of 64 KiB or more new address space (else the heap could serve it
/// from what the reference computation freed).
const TIGHT_ONE_ARENA: [(&str, &str); 5] = [
    ONE_ARENA[0],
    ONE_ARENA[1],
    ONE_ARENA[2],
    ("OPENBLAS_NUM_THREADS", "1"),
    ("MALLOC_MMAP_THRESHOLD_", "65536"),
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
    let (out, err) = in_child_env(
        "fortran_syev_names_answer_in_the_callers_work",
        &TIGHT_ONE_ARENA,
    );
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

/// xSYRDB_OOC_ in the Fortran convention, LAPACK xSYTRD_SY2SB's argument list.
type SyrdbFortran<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_int,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *const c_int,
    *mut T,
    *mut T,
    *const c_int,
    *mut c_int,
    usize,
);

/// (A, AB, TAU, WORK(1), INFO) after a call.
type Sy2sbAnswer<T> = (Vec<T>, Vec<T>, Vec<T>, T, c_int);

/// One call of a Fortran name, its arrays made before the limit, with LWORK as its own
/// workspace query gives it, and the system LAPACK's xSYTRD_SY2SB on the same input with
/// that LWORK.
struct SyrdbCall<T> {
    f: SyrdbFortran<T>,
    uplo: &'static CStr,
    n: usize,
    kd: usize,
    lwork: c_int,
    ours: Sy2sbAnswer<T>,
    work: Vec<T>,
    lapack: Sy2sbAnswer<T>,
}

impl<T: SbrReal> SyrdbCall<T> {
    fn new(f: SyrdbFortran<T>, uplo: &'static CStr, n: usize, kd: usize, a0: &[f64]) -> Self {
        let a: Vec<T> = a0.iter().map(|&x| T::from_f64(x)).collect();
        let (ab, tau) = (vec![T::ZERO; (kd + 1) * n], vec![T::ZERO; n - kd]);
        let mut call = SyrdbCall {
            f,
            uplo,
            n,
            kd,
            lwork: -1,
            ours: (a.clone(), ab.clone(), tau.clone(), T::ZERO, -7),
            work: vec![T::ZERO],
            lapack: (a, ab, tau, T::ZERO, -7),
        };
        call.call();
        assert_eq!(call.ours.4, 0, "workspace query");
        call.lwork = call.work[0].to_f64() as c_int;
        call.work = vec![T::ZERO; call.lwork as usize];
        let mut work = call.work.clone();
        let (a, ab, tau, work1, info) = &mut call.lapack;
        *info = T::sytrd_sy2sb(
            uplo.to_bytes()[0],
            n,
            kd,
            a,
            n,
            ab,
            kd + 1,
            tau,
            &mut work,
            false,
        );
        *work1 = work[0];
        call
    }

    /// The call (a workspace query while `lwork` is -1).
    fn call(&mut self) {
        let (n, kd, ldab) = (self.n as c_int, self.kd as c_int, self.kd as c_int + 1);
        let (a, ab, tau, work1, info) = &mut self.ours;
        // SAFETY: A is n x n (lda n), AB (kd + 1) x n (ldab kd + 1), TAU n - kd entries,
        // WORK max(1, LWORK).
        unsafe {
            (self.f)(
                self.uplo.as_ptr(),
                &n,
                &kd,
                a.as_mut_ptr(),
                &n,
                ab.as_mut_ptr(),
                &ldab,
                tau.as_mut_ptr(),
                self.work.as_mut_ptr(),
                &self.lwork,
                info,
                1,
            )
        };
        *work1 = self.work[0];
    }

    /// Whether INFO, A, AB, TAU and WORK(1) are LAPACK's, bit for bit.
    fn as_lapack(&self) -> bool {
        let bits = |x: &[T], y: &[T]| {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| p.to_f64().to_bits() == q.to_f64().to_bits())
        };
        let (o, l) = (&self.ours, &self.lapack);
        o.4 == l.4
            && bits(&o.0, &l.0)
            && bits(&o.1, &l.1)
            && bits(&o.2, &l.2)
            && bits(&[o.3], &[l.3])
    }
}

/// The Fortran names under a 64 KiB margin, where xSYTRD_SY2SB's workspace (N·KD +
/// N·max(KD, 32) + 2·KD² reals: 221 KB in double, 111 KB in single at N = 400, KD = 32) cannot
/// be allocated (the C names return -1000 there): the caller's WORK passed LAPACK's LWORK
/// check and A is untouched, so LAPACK answers in it, as a program calling xSYTRD_SY2SB would
/// get: INFO, A's reflectors, AB, TAU and WORK(1) of the system LAPACK's call, bit for bit.
#[test]
fn fortran_syrdb_names_answer_in_the_callers_work() {
    use hylapack::api::syrdb::{dsyrdb_ooc_, ssyrdb_ooc_};
    if in_child_process() {
        let (n, kd) = (400, 32);
        let a0 = dense_random(n, 2329);
        let mut d = SyrdbCall::<f64>::new(dsyrdb_ooc_, c"L", n, kd, &a0);
        let mut s = SyrdbCall::<f32>::new(ssyrdb_ooc_, c"U", n, kd, &a0);
        drop(a0);
        limit_address_space(64 << 10);
        d.call();
        s.call();
        println!(
            "RESULT info=[{}, {}] as_lapack=[{}, {}]",
            d.ours.4,
            s.ours.4,
            d.as_lapack(),
            s.as_lapack()
        );
        return;
    }
    let (out, err) = in_child_env(
        "fortran_syrdb_names_answer_in_the_callers_work",
        &TIGHT_ONE_ARENA,
    );
    assert_eq!(
        result_line(&out),
        "RESULT info=[0, 0] as_lapack=[true, true]",
        "{out}"
    );
    // Each call found no room for LAPACK's own workspace first: the path under test ran.
    assert_eq!(
        lines_with(&err, "xSYTRD_SY2SB's workspace: cannot allocate"),
        2,
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
