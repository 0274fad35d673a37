//! The exported C and Fortran entry points of the stebz family: argument checks in LAPACK's
//! order, NULL pointers as illegal arguments, `xerbla_` with the routine's name (this test
//! program defines its own `xerbla_`, which must win over the system LAPACK's, as with LAPACK),
//! hidden CHARACTER lengths never read, N = 0.

mod common;
use common::reported;

use hylapack::api::stebz::{dstebz_gpu, dstebz_gpu_, sstebz_gpu};
use std::ffi::c_char;
use std::ptr::{null, null_mut};

/// Calls the Fortran entry on tridiag(-1, 2, -1) of order `n`; `null_*` replace a scalar by NULL.
fn fortran(
    range: &[u8],
    n: i32,
    vl: Option<f64>,
    vu: Option<f64>,
    abstol: Option<f64>,
    lengths: usize,
) -> (i32, i32) {
    let len = n.max(1) as usize;
    let (d, e) = (vec![2.0; len], vec![-1.0; len]);
    let (mut w, mut iblock, mut isplit) = (vec![0.0; len], vec![0; len], vec![0; len]);
    let (mut work, mut iwork) = (vec![0.0; 4 * len], vec![0; 3 * len]);
    let (il, iu) = (1, n.max(1));
    let (mut m, mut nsplit, mut info) = (-7, -7, -7);
    let opt = |v: &Option<f64>| v.as_ref().map_or(null(), |x| x as *const f64);
    // SAFETY: every array has the entries DSTEBZ reads or writes for order n.
    unsafe {
        dstebz_gpu_(
            range.as_ptr() as *const c_char,
            b"E".as_ptr() as *const c_char,
            &n,
            opt(&vl),
            opt(&vu),
            &il,
            &iu,
            opt(&abstol),
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
            lengths,
            lengths,
        )
    };
    (info, m)
}

/// A `fork()` child of a process that took the GPU (or looked for it) never touches it: the
/// parent's CUDA context is not the child's, and a lock a parent thread held at the fork would
/// hang it. The child's call runs on the CPU and gives LAPACK's answer.
#[test]
fn a_forked_child_leaves_the_gpu_to_its_parent() {
    let parent_gpu = hylapack::device::gpu().is_ok();
    assert_eq!(fortran(b"A", 40, None, None, Some(0.0), 1), (0, 40));
    // SAFETY: the child only calls hylapack (no lock of this test harness) and leaves by _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: a hung child ends by SIGALRM instead of hanging the test.
        unsafe { libc::alarm(20) };
        let forked = matches!(
            hylapack::device::gpu(),
            Err(hylapack::device::DeviceError::Forked)
        );
        let answer = fortran(b"A", 40, None, None, Some(0.0), 1);
        let code = if !forked {
            1
        } else if answer != (0, 40) {
            2
        } else {
            0
        };
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child started above.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child status {status:#x} (exit 1: the GPU was offered to it, 2: a wrong answer, \
         signal 14: it hung); parent GPU: {parent_gpu}"
    );
    // The parent keeps its GPU (or its reason for having none).
    assert_eq!(hylapack::device::gpu().is_ok(), parent_gpu);
}

#[test]
fn fortran_entry_solves_and_ignores_hidden_lengths() {
    // Zero hidden lengths (a C caller that omitted them) must not matter.
    for lengths in [1, 0, 7] {
        let (info, m) = fortran(b"A", 50, None, None, Some(0.0), lengths);
        assert_eq!((info, m), (0, 50), "hidden lengths {lengths}");
    }
}

#[test]
fn null_scalars_are_illegal_arguments_where_lapack_reads_them() {
    // RANGE = 'V' reads VL and VU; ABSTOL is always read.
    assert_eq!(fortran(b"V", 10, None, Some(1.0), Some(0.0), 1).0, -4);
    assert_eq!(fortran(b"V", 10, Some(0.0), None, Some(0.0), 1).0, -5);
    assert_eq!(fortran(b"A", 10, None, None, None, 1).0, -8);
    assert!(reported("DSTEBZ_GPU", 4) && reported("DSTEBZ_GPU", 5) && reported("DSTEBZ_GPU", 8));
    // RANGE = 'A' reads neither VL nor VU.
    assert_eq!(fortran(b"A", 10, None, None, Some(0.0), 1), (0, 10));
    // LAPACK's own checks come first: a bad RANGE is -1 even with NULL VL.
    assert_eq!(fortran(b"X", 10, None, None, Some(0.0), 1).0, -1);
}

#[test]
fn c_entry_checks_in_lapack_order_and_calls_xerbla() {
    let (d, e) = ([2.0f64; 4], [-1.0f64; 3]);
    let (mut w, mut iblock, mut isplit) = ([0.0f64; 4], [0; 4], [0; 4]);
    let (mut m, mut nsplit) = (0, 0);
    let mut call = |range: u8, order: u8, n: i32, vl: f64, vu: f64, il: i32, iu: i32| unsafe {
        dstebz_gpu(
            range as c_char,
            order as c_char,
            n,
            vl,
            vu,
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
    assert_eq!(call(b'X', b'E', 4, 0.0, 1.0, 1, 4), -1);
    assert_eq!(call(b'A', b'X', 4, 0.0, 1.0, 1, 4), -2);
    assert_eq!(call(b'A', b'E', -1, 0.0, 1.0, 1, 4), -3);
    assert_eq!(call(b'V', b'E', 4, 1.0, 1.0, 1, 4), -5);
    assert_eq!(call(b'I', b'E', 4, 0.0, 0.0, 0, 4), -6);
    assert_eq!(call(b'I', b'E', 4, 0.0, 0.0, 2, 5), -7);
    assert_eq!(
        call(b'a', b'e', 4, 0.0, 0.0, 0, 0),
        0,
        "RANGE and ORDER are case-insensitive"
    );
    assert_eq!(m, 4);
    for arg in [1, 2, 3, 5, 6, 7] {
        assert!(
            reported("DSTEBZ_GPU", arg),
            "xerbla_ not called for argument {arg}"
        );
    }
}

#[test]
fn null_arrays_are_illegal_and_n0_needs_no_arrays() {
    let (mut m, mut nsplit) = (-7, -7);
    // N = 0: nothing is read or written but M (LAPACK leaves NSPLIT alone).
    let info = unsafe {
        sstebz_gpu(
            b'A' as c_char,
            b'E' as c_char,
            0,
            0.0,
            0.0,
            1,
            0,
            0.0,
            null(),
            null(),
            &mut m,
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!((info, m), (0, 0));
    // N = 3 with a NULL D (argument 9) and then a NULL W (argument 13).
    let (d, e) = ([1.0f32; 3], [0.5f32; 2]);
    let (mut w, mut ib, mut is) = ([0.0f32; 3], [0; 3], [0; 3]);
    let info = unsafe {
        sstebz_gpu(
            b'A' as c_char,
            b'E' as c_char,
            3,
            0.0,
            0.0,
            1,
            3,
            0.0,
            null(),
            e.as_ptr(),
            &mut m,
            &mut nsplit,
            w.as_mut_ptr(),
            ib.as_mut_ptr(),
            is.as_mut_ptr(),
        )
    };
    assert_eq!(info, -9);
    let info = unsafe {
        sstebz_gpu(
            b'A' as c_char,
            b'E' as c_char,
            3,
            0.0,
            0.0,
            1,
            3,
            0.0,
            d.as_ptr(),
            e.as_ptr(),
            &mut m,
            &mut nsplit,
            null_mut(),
            ib.as_mut_ptr(),
            is.as_mut_ptr(),
        )
    };
    assert_eq!(info, -13);
    assert!(reported("SSTEBZ_GPU", 9) && reported("SSTEBZ_GPU", 13));
}
