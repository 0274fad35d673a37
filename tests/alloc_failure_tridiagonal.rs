//! Host memory that cannot be allocated never aborts the host program (issue #23): the
//! tridiagonal families, xSTEBZ, xGTSV and xSTEIN (the harness: `common::child`).

mod common;

use common::child::*;
use hylapack::api::stebz::{dstebz_gpu, dstebz_gpu_, sstebz_gpu_};
use hylapack::api::stein::dstein_gpu;
use hylapack::lapack::{Lapack, LapackStein};
use std::ffi::c_int;

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
