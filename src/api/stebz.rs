//! `sstebz_gpu` / `dstebz_gpu`: eigenvalues of a symmetric tridiagonal matrix by bisection and
//! multisection, with LAPACK xSTEBZ's contract.

use super::{
    ffi_boundary, fortran_char, input, output, report_illegal_argument, scalar,
    HYLAPACK_INFO_INTERNAL_ERROR,
};
use crate::dispatch::{self, Family};
use crate::lapack::Lapack;
use crate::stebz;
use std::ffi::{c_char, c_int, c_void};
use std::time::Instant;

// The family's INFO for host memory that cannot be allocated is the library's internal error.
const _: () = assert!(stebz::INFO_NO_HOST_MEMORY == HYLAPACK_INFO_INTERNAL_ERROR);

/// What a call does when hylapack's host workspace cannot be allocated.
enum NoMemory {
    /// Run the system LAPACK's xSTEBZ, on the caller's WORK (4N) and IWORK (3N) when given
    /// (the Fortran names), else on a workspace allocated (fallibly) for it.
    Lapack {
        work: *mut c_void,
        iwork: *mut c_int,
    },
    /// Return `None` before anything is written, so that the call is forwarded untouched.
    Forward,
}

/// Checks pointers and arguments in LAPACK's order, runs the routine and logs the call.
#[allow(clippy::too_many_arguments)]
unsafe fn run<T: Lapack>(
    routine: &str,
    no_memory: NoMemory,
    range: u8,
    order: u8,
    n: c_int,
    vl: T,
    vu: T,
    il: c_int,
    iu: c_int,
    abstol: T,
    d: *const T,
    e: *const T,
    m: *mut c_int,
    nsplit: *mut c_int,
    w: *mut T,
    iblock: *mut c_int,
    isplit: *mut c_int,
) -> Option<c_int> {
    let mut info = stebz::check_args(range, order, n, vl, vu, il, iu);
    let len = n.max(0) as usize;
    let d = input(d, len);
    let e = input(e, len.saturating_sub(1));
    let (m, nsplit) = (output(m, 1), output(nsplit, 1));
    let (w, iblock, isplit) = (output(w, len), output(iblock, len), output(isplit, len));
    if info == 0 {
        // A null array is reported as an illegal value of that argument (LAPACK numbering).
        let missing = [
            d.is_none(),
            e.is_none(),
            m.is_none(),
            nsplit.is_none() && len > 0,
            w.is_none(),
            iblock.is_none(),
            isplit.is_none(),
        ];
        if let Some(i) = missing.iter().position(|&x| x) {
            info = -(9 + i as c_int);
        }
    }
    if info != 0 {
        report_illegal_argument(routine, info);
        return Some(info);
    }
    let (d, e, m) = (d.unwrap(), e.unwrap(), m.unwrap());
    let (w, iblock, isplit) = (w.unwrap(), iblock.unwrap(), isplit.unwrap());

    let started = Instant::now();
    let decision = dispatch::decide(Family::Stebz, len);
    let report = match no_memory {
        NoMemory::Lapack { work, iwork } => {
            let work = output(work.cast::<T>(), 4 * len).zip(output(iwork, 3 * len));
            stebz::stebz_or_lapack(
                range,
                order,
                vl,
                vu,
                il,
                iu,
                abstol,
                d,
                e,
                w,
                iblock,
                isplit,
                decision.backend,
                work,
            )
        }
        NoMemory::Forward => {
            let report = stebz::try_stebz(
                range,
                order,
                vl,
                vu,
                il,
                iu,
                abstol,
                d,
                e,
                w,
                iblock,
                isplit,
                decision.backend,
            );
            match report {
                Ok(report) => report,
                Err(why) => {
                    dispatch::debug(|| format!("{routine}: {why}; forwarded to the system LAPACK"));
                    return None;
                }
            }
        }
    };
    if report.info == HYLAPACK_INFO_INTERNAL_ERROR {
        let why = report.note.as_deref().unwrap_or("no host memory");
        eprintln!(
            "hylapack: internal error in {routine}: {why}; returning INFO = {HYLAPACK_INFO_INTERNAL_ERROR}"
        );
    }
    m[0] = report.m;
    if let Some(nsplit) = nsplit.filter(|_| len > 0) {
        // LAPACK returns before setting NSPLIT when N = 0 (and so may be given no NSPLIT).
        nsplit[0] = report.nsplit;
    }
    let note = report.note.or(decision.why_not_gpu);
    dispatch::finish_call(
        routine,
        len,
        report.backend,
        started.elapsed(),
        note.as_deref(),
    );
    Some(report.info)
}

/// The Fortran convention's body, shared by both precisions.
#[allow(clippy::too_many_arguments)]
unsafe fn fortran<T: Lapack>(
    routine: &str,
    range: *const c_char,
    order: *const c_char,
    n: *const c_int,
    vl: *const T,
    vu: *const T,
    il: *const c_int,
    iu: *const c_int,
    abstol: *const T,
    d: *const T,
    e: *const T,
    m: *mut c_int,
    nsplit: *mut c_int,
    w: *mut T,
    iblock: *mut c_int,
    isplit: *mut c_int,
    work: *mut T,
    iwork: *mut c_int,
    info: *mut c_int,
    range_len: usize,
    order_len: usize,
) {
    let _ = (range_len, order_len); // never read: C callers may omit them
    let work = work.cast::<c_void>();
    let result = ffi_boundary!(routine, HYLAPACK_INFO_INTERNAL_ERROR, {
        let (range, order) = (fortran_char(range), fortran_char(order));
        // A null scalar that LAPACK would read is an illegal value of that argument.
        let n_value = scalar(n).unwrap_or(-1);
        let (il, iu) = (scalar(il).unwrap_or(0), scalar(iu).unwrap_or(-1));
        let (vl_value, vu_value) = (scalar(vl), scalar(vu));
        let placeholder = stebz::check_args(range, order, n_value, T::ZERO, T::ONE, il, iu);
        let by_value = range.eq_ignore_ascii_case(&b'V');
        let null_info = match () {
            _ if placeholder != 0 => 0,
            _ if by_value && vl_value.is_none() => -4,
            _ if by_value && vu_value.is_none() => -5,
            _ if abstol.is_null() => -8,
            _ => 0,
        };
        if null_info != 0 {
            report_illegal_argument(routine, null_info);
            return null_info;
        }
        let (vl, vu) = (vl_value.unwrap_or(T::ZERO), vu_value.unwrap_or(T::ZERO));
        let no_memory = NoMemory::Lapack { work, iwork };
        run::<T>(
            routine, no_memory, range, order, n_value, vl, vu, il, iu, *abstol, d, e, m, nsplit, w,
            iblock, isplit,
        )
        .expect("only NoMemory::Forward gives no INFO")
    });
    if !info.is_null() {
        *info = result;
    }
}

/// Eigenvalues of the symmetric tridiagonal matrix with diagonal `d[0..n]` and off-diagonal
/// `e[0..n-1]` by bisection/multisection, in double precision (C convention, LAPACKE shape).
///
/// Same contract as LAPACK DSTEBZ: `range` 'A' (all), 'V' (those in (vl, vu]) or 'I' (the
/// il-th through iu-th); `order` 'B' (by block) or 'E' (ascending over the whole matrix);
/// `abstol` <= 0 selects LAPACK's default tolerance. On return `*m` eigenvalues are in `w`, their
/// block numbers in `iblock` (negated if not converged) and the block ends in
/// `isplit[0..*nsplit]`. `w`, `iblock` and `isplit` need `n` entries.
///
/// Returns INFO: 0 on success; -i if the i-th argument (LAPACK numbering) had an illegal value
/// or was NULL, reported through `xerbla_`; 1, 2, 3 or 4 with LAPACK DSTEBZ's meanings (some
/// intervals did not converge; the IL:IU eigenvalues could not be told apart; both; the
/// Gerschgorin interval was too small); -1000 for an internal error (printed on stderr).
///
/// Non-finite input, where LAPACK's own answer depends on how its compiler evaluates MAX and
/// MIN of a NaN: a NaN in D or E (N ≥ 2), a NaN VL or VU with RANGE = 'V', ±Inf entries whose
/// Gerschgorin terms give ∞ − ∞, or, for RANGE = 'I' with IL > 1, entries so close to the
/// overflow threshold that LAPACK's widened Gerschgorin interval overflows: no eigenvalues
/// (M = 0) and INFO = 1 (4 for RANGE = 'I' where the index search fails), on every backend.
///
/// Host memory: the workspace this routine needs (about 200 bytes per row, plus up to 64 MiB
/// for the multisection's points; see
/// `hylapack::stebz::scratch_bytes`) is allocated after the quick returns (N = 0, N = 1) and
/// before anything is computed. When it cannot be, the call runs the system LAPACK's DSTEBZ on
/// a workspace of 4N reals and 3N integers allocated for it (same contract, same outputs); when
/// that cannot be allocated either, it returns -1000 with M = 0, `w`, `iblock` and `isplit`
/// untouched, and one message on stderr. It never aborts the program.
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dstebz_gpu(
    range: c_char,
    order: c_char,
    n: c_int,
    vl: f64,
    vu: f64,
    il: c_int,
    iu: c_int,
    abstol: f64,
    d: *const f64,
    e: *const f64,
    m: *mut c_int,
    nsplit: *mut c_int,
    w: *mut f64,
    iblock: *mut c_int,
    isplit: *mut c_int,
) -> c_int {
    ffi_boundary!("DSTEBZ_GPU", HYLAPACK_INFO_INTERNAL_ERROR, {
        let no_memory = NoMemory::Lapack {
            work: std::ptr::null_mut(),
            iwork: std::ptr::null_mut(),
        };
        run(
            "DSTEBZ_GPU",
            no_memory,
            range as u8,
            order as u8,
            n,
            vl,
            vu,
            il,
            iu,
            abstol,
            d,
            e,
            m,
            nsplit,
            w,
            iblock,
            isplit,
        )
        .expect("only NoMemory::Forward gives no INFO")
    })
}

/// Single-precision `dstebz_gpu` (LAPACK SSTEBZ's contract; host memory as `dstebz_gpu`, falling
/// back to the system LAPACK's SSTEBZ).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn sstebz_gpu(
    range: c_char,
    order: c_char,
    n: c_int,
    vl: f32,
    vu: f32,
    il: c_int,
    iu: c_int,
    abstol: f32,
    d: *const f32,
    e: *const f32,
    m: *mut c_int,
    nsplit: *mut c_int,
    w: *mut f32,
    iblock: *mut c_int,
    isplit: *mut c_int,
) -> c_int {
    ffi_boundary!("SSTEBZ_GPU", HYLAPACK_INFO_INTERNAL_ERROR, {
        let no_memory = NoMemory::Lapack {
            work: std::ptr::null_mut(),
            iwork: std::ptr::null_mut(),
        };
        run(
            "SSTEBZ_GPU",
            no_memory,
            range as u8,
            order as u8,
            n,
            vl,
            vu,
            il,
            iu,
            abstol,
            d,
            e,
            m,
            nsplit,
            w,
            iblock,
            isplit,
        )
        .expect("only NoMemory::Forward gives no INFO")
    })
}

/// `dstebz_gpu` in the Fortran convention: LAPACK DSTEBZ's argument list, all by reference,
/// with the hidden CHARACTER lengths of RANGE and ORDER last (as gfortran passes them).
///
/// WORK (4N) and IWORK (3N) are LAPACK's workspace: the multisection allocates its own host
/// workspace (after the quick returns, before anything is computed), and when that cannot be
/// allocated the call runs the system LAPACK's DSTEBZ on WORK and IWORK, so that a call LAPACK
/// can answer in the memory it was given is answered. Only if WORK or IWORK is NULL as well
/// (and a workspace of their size cannot be allocated) does INFO = -1000 come back (M = 0,
/// outputs untouched, one message on stderr).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dstebz_gpu_(
    range: *const c_char,
    order: *const c_char,
    n: *const c_int,
    vl: *const f64,
    vu: *const f64,
    il: *const c_int,
    iu: *const c_int,
    abstol: *const f64,
    d: *const f64,
    e: *const f64,
    m: *mut c_int,
    nsplit: *mut c_int,
    w: *mut f64,
    iblock: *mut c_int,
    isplit: *mut c_int,
    work: *mut f64,
    iwork: *mut c_int,
    info: *mut c_int,
    range_len: usize,
    order_len: usize,
) {
    fortran(
        "DSTEBZ_GPU",
        range,
        order,
        n,
        vl,
        vu,
        il,
        iu,
        abstol,
        d,
        e,
        m,
        nsplit,
        w,
        iblock,
        isplit,
        work,
        iwork,
        info,
        range_len,
        order_len,
    )
}

/// `sstebz_gpu` in the Fortran convention (LAPACK SSTEBZ's argument list; WORK and IWORK as in
/// `dstebz_gpu_`).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn sstebz_gpu_(
    range: *const c_char,
    order: *const c_char,
    n: *const c_int,
    vl: *const f32,
    vu: *const f32,
    il: *const c_int,
    iu: *const c_int,
    abstol: *const f32,
    d: *const f32,
    e: *const f32,
    m: *mut c_int,
    nsplit: *mut c_int,
    w: *mut f32,
    iblock: *mut c_int,
    isplit: *mut c_int,
    work: *mut f32,
    iwork: *mut c_int,
    info: *mut c_int,
    range_len: usize,
    order_len: usize,
) {
    fortran(
        "SSTEBZ_GPU",
        range,
        order,
        n,
        vl,
        vu,
        il,
        iu,
        abstol,
        d,
        e,
        m,
        nsplit,
        w,
        iblock,
        isplit,
        work,
        iwork,
        info,
        range_len,
        order_len,
    )
}

/// The standard name `dstebz_`/`sstebz_` as `libhylapack_preload.so` interposes it: runs
/// hylapack's path on a call LAPACK would accept and returns `Some(INFO)`, or returns `None`
/// when the call must be forwarded untouched to the next definition (an illegal argument, which
/// the system LAPACK then reports under its own name, or host workspace that cannot be
/// allocated: the system LAPACK then runs on the caller's WORK and IWORK). Reads only the first
/// character of the
/// CHARACTER arguments, never their hidden lengths (C callers may omit them).
///
/// # Safety
/// The arguments are those of LAPACK xSTEBZ, valid as LAPACK requires.
#[allow(clippy::too_many_arguments)]
pub unsafe fn interposed<T: Lapack>(
    routine: &str,
    range: *const c_char,
    order: *const c_char,
    n: *const c_int,
    vl: *const T,
    vu: *const T,
    il: *const c_int,
    iu: *const c_int,
    abstol: *const T,
    d: *const T,
    e: *const T,
    m: *mut c_int,
    nsplit: *mut c_int,
    w: *mut T,
    iblock: *mut c_int,
    isplit: *mut c_int,
) -> Option<c_int> {
    ffi_boundary!(routine, None, {
        let args = (
            scalar(range),
            scalar(order),
            scalar(n),
            scalar(vl),
            scalar(vu),
            scalar(il),
            scalar(iu),
            scalar(abstol),
        );
        let (
            Some(range),
            Some(order),
            Some(n),
            Some(vl),
            Some(vu),
            Some(il),
            Some(iu),
            Some(abstol),
        ) = args
        else {
            return None;
        };
        let (range, order) = (range as u8, order as u8);
        if stebz::check_args(range, order, n, vl, vu, il, iu) != 0 {
            dispatch::debug(|| {
                format!("{routine}: illegal argument, forwarded to the system LAPACK")
            });
            return None;
        }
        run::<T>(
            routine,
            NoMemory::Forward,
            range,
            order,
            n,
            vl,
            vu,
            il,
            iu,
            abstol,
            d,
            e,
            m,
            nsplit,
            w,
            iblock,
            isplit,
        )
    })
}
