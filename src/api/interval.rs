//! `dgemm_rounded`, `digemm`, `dgesv_verified`: guaranteed bounds for matrix products and
//! linear systems. BLAS-style arguments (column-major, leading dimensions); the C names return
//! INFO, the Fortran names of the two products are BLAS subroutines (errors through `xerbla_`
//! only) and `dgesv_verified_` has a trailing INFO as LAPACK's DGESV.

use super::{
    ffi_boundary, fortran_char, input, output, report_illegal_argument, scalar,
    HYLAPACK_INFO_INTERNAL_ERROR,
};
use crate::interval::{self, round::Dir, IntervalOperand, Operand, Trans};
use crate::lapack::span;
use std::ffi::{c_char, c_int};

// The family's INFO for host memory that cannot be allocated is the library's internal error.
const _: () = assert!(interval::INFO_NO_HOST_MEMORY == HYLAPACK_INFO_INTERNAL_ERROR);

/// Host memory a call needs could not be allocated (issue #23): one line on stderr, and the
/// library's internal-error INFO. `outputs` names what the call left unchanged.
fn no_memory(routine: &str, outputs: &str, e: interval::NoMemory) -> c_int {
    eprintln!(
        "hylapack: internal error in {routine}: {e}; {outputs} unchanged, returning INFO = {HYLAPACK_INFO_INTERNAL_ERROR}"
    );
    HYLAPACK_INFO_INTERNAL_ERROR
}

fn trans_of(c: u8) -> Option<Trans> {
    match c.to_ascii_uppercase() {
        b'N' => Some(Trans::No),
        b'T' | b'C' => Some(Trans::Yes),
        _ => None,
    }
}

/// Whether two arrays (start, entries) share memory. Rust may not hold a `&mut` slice that
/// overlaps another slice, so overlapping outputs are refused as illegal arguments.
fn overlap(a: (*const f64, usize), b: (*const f64, usize)) -> bool {
    let (a0, b0) = (a.0 as usize, b.0 as usize);
    let (a1, b1) = (a0 + a.1 * 8, b0 + b.1 * 8);
    a.1 > 0 && b.1 > 0 && a0 < b1 && b0 < a1
}

/// The first failing check, as INFO (negative) or 0.
fn first_failure(checks: &[(bool, c_int)]) -> c_int {
    checks
        .iter()
        .find(|(bad, _)| *bad)
        .map(|(_, i)| -*i)
        .unwrap_or(0)
}

/// Shapes of a BLAS product's operands: stored (rows) of op(A) (m × k) and op(B) (k × n).
fn stored_rows(t: Trans, rows_op: usize, cols_op: usize) -> (usize, usize) {
    match t {
        Trans::No => (rows_op, cols_op),
        Trans::Yes => (cols_op, rows_op),
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn gemm_rounded_run(
    routine: &str,
    rnd: u8,
    transa: u8,
    transb: u8,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: f64,
    a: *const f64,
    lda: c_int,
    b: *const f64,
    ldb: c_int,
    beta: f64,
    c: *mut f64,
    ldc: c_int,
) -> c_int {
    let dir = match rnd.to_ascii_uppercase() {
        b'U' => Some(Dir::Up),
        b'D' => Some(Dir::Down),
        _ => None,
    };
    let (ta, tb) = (trans_of(transa), trans_of(transb));
    let (mu, nu, ku) = (m.max(0) as usize, n.max(0) as usize, k.max(0) as usize);
    let (ar, ac) = stored_rows(ta.unwrap_or(Trans::No), mu, ku);
    let (br, bc) = stored_rows(tb.unwrap_or(Trans::No), ku, nu);
    let mut info = first_failure(&[
        (dir.is_none(), 1),
        (ta.is_none(), 2),
        (tb.is_none(), 3),
        (m < 0, 4),
        (n < 0, 5),
        (k < 0, 6),
        ((lda as i64) < ar.max(1) as i64, 9),
        ((ldb as i64) < br.max(1) as i64, 11),
        ((ldc as i64) < mu.max(1) as i64, 14),
    ]);
    let (dir, ta, tb) = match (dir, ta, tb) {
        (Some(d), Some(x), Some(y)) if info == 0 => (d, x, y),
        _ => return info,
    };
    let (lda, ldb, ldc) = (lda as usize, ldb as usize, ldc as usize);
    let uses_product = alpha != 0.0 && ku > 0;
    let (alen, blen, clen) = if uses_product {
        (span(ar, ac, lda), span(br, bc, ldb), span(mu, nu, ldc))
    } else {
        (0, 0, span(mu, nu, ldc))
    };
    info = first_failure(&[
        (alen > 0 && a.is_null(), 8),
        (blen > 0 && b.is_null(), 10),
        (clen > 0 && c.is_null(), 13),
        (
            overlap((c, clen), (a, alen)) || overlap((c, clen), (b, blen)),
            13,
        ),
    ]);
    if info != 0 {
        return info;
    }
    // BLAS's quick return: nothing to add and C scaled by one.
    if mu == 0 || nu == 0 || (!uses_product && beta == 1.0) {
        return 0;
    }
    let (Some(a), Some(b), Some(c)) = (input(a, alen), input(b, blen), output(c, clen)) else {
        return HYLAPACK_INFO_INTERNAL_ERROR;
    };
    let a = Operand {
        data: a,
        ld: lda,
        trans: ta,
    };
    let b = Operand {
        data: b,
        ld: ldb,
        trans: tb,
    };
    match interval::gemm_rounded(
        dir,
        mu,
        nu,
        if uses_product { ku } else { 0 },
        alpha,
        a,
        b,
        beta,
        c,
        ldc,
    ) {
        Ok(_) => 0,
        Err(e) => no_memory(routine, "C", e),
    }
}

/// `C := alpha·op(A)·op(B) + beta·C` with every operation rounded toward +∞ (`rnd` = 'U') or
/// −∞ ('D'): C is then an upper (lower) bound of the exact result, for any signs of alpha,
/// beta and the entries (with alpha < 0 the products are accumulated in the opposite
/// direction). `transa`/`transb`: 'N', 'T' or 'C'. `beta` = 0: C need not be set on entry.
/// A, B and C must not overlap. As DGEMM: M = 0 or N = 0, or (alpha = 0 or K = 0) with
/// beta = 1, return at once; otherwise alpha = 0 or K = 0 gives C := beta·C rounded `rnd`
/// (alpha is then not multiplied; beta = 0 sets C to zero without reading it).
///
/// The GPU fuses each multiply–add into one directed-rounding FMA; the CPU rounds each product
/// and each sum separately (emulated with error-free transformations). Both results are
/// guaranteed bounds; they may differ from each other in the last bits.
///
/// Returns 0, or −i if argument i is illegal (reported through `xerbla_` as DGEMM_ROUNDED:
/// 1 rnd, 2 transa, 3 transb, 4 m, 5 n, 6 k, 8 A null, 9 lda, 10 B null, 11 ldb,
/// 13 C null or overlapping A or B, 14 ldc), or −1000 (`HYLAPACK_INFO_INTERNAL_ERROR`) with
/// one line on stderr and C unchanged when host memory the call needs (the CPU path packs
/// op(A) and op(B): (m + n)·k reals) cannot be allocated; never an abort.
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dgemm_rounded(
    rnd: c_char,
    transa: c_char,
    transb: c_char,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: f64,
    a: *const f64,
    lda: c_int,
    b: *const f64,
    ldb: c_int,
    beta: f64,
    c: *mut f64,
    ldc: c_int,
) -> c_int {
    ffi_boundary!("dgemm_rounded", HYLAPACK_INFO_INTERNAL_ERROR, {
        let info = gemm_rounded_run(
            "dgemm_rounded",
            rnd as u8,
            transa as u8,
            transb as u8,
            m,
            n,
            k,
            alpha,
            a,
            lda,
            b,
            ldb,
            beta,
            c,
            ldc,
        );
        if info < 0 && info != HYLAPACK_INFO_INTERNAL_ERROR {
            report_illegal_argument("DGEMM_ROUNDED", info);
        }
        info
    })
}

/// Fortran `DGEMM_ROUNDED(RND, TRANSA, TRANSB, M, N, K, ALPHA, A, LDA, B, LDB, BETA, C, LDC)`:
/// as [`dgemm_rounded`], a BLAS-style subroutine (illegal arguments go to `xerbla_`). It has
/// no INFO: when host memory the call needs cannot be allocated, C is left unchanged and one
/// line on stderr says so (never an abort).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dgemm_rounded_(
    rnd: *const c_char,
    transa: *const c_char,
    transb: *const c_char,
    m: *const c_int,
    n: *const c_int,
    k: *const c_int,
    alpha: *const f64,
    a: *const f64,
    lda: *const c_int,
    b: *const f64,
    ldb: *const c_int,
    beta: *const f64,
    c: *mut f64,
    ldc: *const c_int,
    _rnd_len: usize,
    _transa_len: usize,
    _transb_len: usize,
) {
    ffi_boundary!("dgemm_rounded_", (), {
        // A null scalar reads as an illegal value of that argument.
        let int = |p: *const c_int| scalar(p).unwrap_or(-1);
        let real = |p: *const f64| scalar(p);
        let (alpha_v, beta_v) = (real(alpha), real(beta));
        let info = match (alpha_v, beta_v) {
            (Some(al), Some(be)) => gemm_rounded_run(
                "dgemm_rounded_",
                fortran_char(rnd),
                fortran_char(transa),
                fortran_char(transb),
                int(m),
                int(n),
                int(k),
                al,
                a,
                int(lda),
                b,
                int(ldb),
                be,
                c,
                int(ldc),
            ),
            (None, _) => -7,
            _ => -12,
        };
        if info < 0 && info != HYLAPACK_INFO_INTERNAL_ERROR {
            report_illegal_argument("DGEMM_ROUNDED", info);
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn igemm_run(
    routine: &str,
    transa: u8,
    transb: u8,
    m: c_int,
    n: c_int,
    k: c_int,
    a_inf: *const f64,
    a_sup: *const f64,
    lda: c_int,
    b_inf: *const f64,
    b_sup: *const f64,
    ldb: c_int,
    c_inf: *mut f64,
    c_sup: *mut f64,
    ldc: c_int,
) -> c_int {
    let (ta, tb) = (trans_of(transa), trans_of(transb));
    let (mu, nu, ku) = (m.max(0) as usize, n.max(0) as usize, k.max(0) as usize);
    let (ar, ac) = stored_rows(ta.unwrap_or(Trans::No), mu, ku);
    let (br, bc) = stored_rows(tb.unwrap_or(Trans::No), ku, nu);
    let info = first_failure(&[
        (ta.is_none(), 1),
        (tb.is_none(), 2),
        (m < 0, 3),
        (n < 0, 4),
        (k < 0, 5),
        ((lda as i64) < ar.max(1) as i64, 8),
        ((ldb as i64) < br.max(1) as i64, 11),
        ((ldc as i64) < mu.max(1) as i64, 14),
    ]);
    let (ta, tb) = match (ta, tb) {
        (Some(x), Some(y)) if info == 0 => (x, y),
        _ => return info,
    };
    let (lda, ldb, ldc) = (lda as usize, ldb as usize, ldc as usize);
    let (alen, blen, clen) = (span(ar, ac, lda), span(br, bc, ldb), span(mu, nu, ldc));
    let outs_overlap_ins = |c: *const f64| {
        [a_inf, a_sup, b_inf, b_sup].iter().any(|&x| {
            let len = if x == a_inf || x == a_sup { alen } else { blen };
            overlap((c, clen), (x, len))
        })
    };
    let info = first_failure(&[
        (alen > 0 && a_inf.is_null(), 6),
        (alen > 0 && a_sup.is_null(), 7),
        (blen > 0 && b_inf.is_null(), 9),
        (blen > 0 && b_sup.is_null(), 10),
        (clen > 0 && c_inf.is_null(), 12),
        (outs_overlap_ins(c_inf), 12),
        (clen > 0 && c_sup.is_null(), 13),
        (
            outs_overlap_ins(c_sup) || overlap((c_inf, clen), (c_sup, clen)),
            13,
        ),
    ]);
    if info != 0 {
        return info;
    }
    let (Some(ai), Some(asup), Some(bi), Some(bsup), Some(ci), Some(cs)) = (
        input(a_inf, alen),
        input(a_sup, alen),
        input(b_inf, blen),
        input(b_sup, blen),
        output(c_inf, clen),
        output(c_sup, clen),
    ) else {
        return HYLAPACK_INFO_INTERNAL_ERROR;
    };
    let op = |data, ld, trans| Operand { data, ld, trans };
    let a = IntervalOperand {
        inf: op(ai, lda, ta),
        sup: op(asup, lda, ta),
    };
    let b = IntervalOperand {
        inf: op(bi, ldb, tb),
        sup: op(bsup, ldb, tb),
    };
    let a_finite = match interval::check_interval(&a, ar, ac) {
        Ok(f) => f,
        Err(_) => return -7,
    };
    let b_finite = match interval::check_interval(&b, br, bc) {
        Ok(f) => f,
        Err(_) => return -10,
    };
    let method = crate::config::get().digemm_method;
    match interval::igemm(method, a_finite && b_finite, mu, nu, ku, a, b, ci, cs, ldc) {
        Ok(_) => 0,
        Err(e) => no_memory(routine, "C_inf and C_sup", e),
    }
}

/// Interval matrix product `[C] := [A]·[B]` with `[C] ⊇ {op(A)·op(B) : A ∈ [A], B ∈ [B]}`.
/// `[A]` is given by its bounds `A_inf ≤ A_sup` (entrywise; ±∞ allowed as a bound, NaN not),
/// stored alike (same lda and transposition); likewise `[B]` and the outputs `[C]`.
///
/// Two methods (`HYLAPACK_DIGEMM_METHOD` = auto | infsup | midrad, default auto):
/// - infimum–supremum: each term's interval product and each sum rounded outward, the tighter
///   enclosure (the exact interval product widened only by rounding, about k·ulp);
/// - midpoint–radius (Rump): round-to-nearest GEMMs (cuBLAS or the system BLAS) on midpoints
///   and radii with an a-priori bound γ_k on their rounding error. Its radius is at most 1.5×
///   the exact product's radius plus γ_k·(|mid A|·|mid B|)-sized rounding terms. Needs finite
///   bounds; `auto` takes it whenever every bound is finite, infimum–supremum otherwise.
///
/// M = 0 or N = 0: nothing is written; K = 0: `[C] = [0, 0]` (an empty sum).
///
/// Returns 0, or −i for an illegal argument i (through `xerbla_` as DIGEMM): 1 transa,
/// 2 transb, 3 m, 4 n, 5 k, 6/7 A_inf/A_sup null, 7 some entry of [A] is not an interval
/// (inf > sup or NaN), 8 lda, 9/10 B_inf/B_sup null, 10 [B] not an interval, 11 ldb,
/// 12/13 C_inf/C_sup null or overlapping an input or each other, 14 ldc. Returns −1000
/// (`HYLAPACK_INFO_INTERNAL_ERROR`) with one line on stderr and `[C]` unchanged when host
/// memory the call needs cannot be allocated (the CPU path holds about 2(m + n)·k + 2·m·n
/// reals: packed or split operands and the products); never an abort.
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn digemm(
    transa: c_char,
    transb: c_char,
    m: c_int,
    n: c_int,
    k: c_int,
    a_inf: *const f64,
    a_sup: *const f64,
    lda: c_int,
    b_inf: *const f64,
    b_sup: *const f64,
    ldb: c_int,
    c_inf: *mut f64,
    c_sup: *mut f64,
    ldc: c_int,
) -> c_int {
    ffi_boundary!("digemm", HYLAPACK_INFO_INTERNAL_ERROR, {
        let info = igemm_run(
            "digemm",
            transa as u8,
            transb as u8,
            m,
            n,
            k,
            a_inf,
            a_sup,
            lda,
            b_inf,
            b_sup,
            ldb,
            c_inf,
            c_sup,
            ldc,
        );
        if info < 0 && info != HYLAPACK_INFO_INTERNAL_ERROR {
            report_illegal_argument("DIGEMM", info);
        }
        info
    })
}

/// Fortran `DIGEMM(TRANSA, TRANSB, M, N, K, AINF, ASUP, LDA, BINF, BSUP, LDB, CINF, CSUP,
/// LDC)`: as [`digemm`], a BLAS-style subroutine (illegal arguments go to `xerbla_`). It has
/// no INFO: when host memory the call needs cannot be allocated, CINF and CSUP are left
/// unchanged and one line on stderr says so (never an abort).
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn digemm_(
    transa: *const c_char,
    transb: *const c_char,
    m: *const c_int,
    n: *const c_int,
    k: *const c_int,
    a_inf: *const f64,
    a_sup: *const f64,
    lda: *const c_int,
    b_inf: *const f64,
    b_sup: *const f64,
    ldb: *const c_int,
    c_inf: *mut f64,
    c_sup: *mut f64,
    ldc: *const c_int,
    _transa_len: usize,
    _transb_len: usize,
) {
    ffi_boundary!("digemm_", (), {
        let int = |p: *const c_int| scalar(p).unwrap_or(-1);
        let info = igemm_run(
            "digemm_",
            fortran_char(transa),
            fortran_char(transb),
            int(m),
            int(n),
            int(k),
            a_inf,
            a_sup,
            int(lda),
            b_inf,
            b_sup,
            int(ldb),
            c_inf,
            c_sup,
            int(ldc),
        );
        if info < 0 && info != HYLAPACK_INFO_INTERNAL_ERROR {
            report_illegal_argument("DIGEMM", info);
        }
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn gesv_verified_run(
    routine: &str,
    n: c_int,
    nrhs: c_int,
    a: *const f64,
    lda: c_int,
    b: *const f64,
    ldb: c_int,
    x_inf: *mut f64,
    x_sup: *mut f64,
    ldx: c_int,
) -> c_int {
    let (nu, ku) = (n.max(0) as usize, nrhs.max(0) as usize);
    let info = first_failure(&[
        (n < 0, 1),
        (nrhs < 0, 2),
        ((lda as i64) < nu.max(1) as i64, 4),
        ((ldb as i64) < nu.max(1) as i64, 6),
        ((ldx as i64) < nu.max(1) as i64, 9),
    ]);
    if info != 0 {
        return info;
    }
    let (lda, ldb, ldx) = (lda as usize, ldb as usize, ldx as usize);
    let (alen, blen, xlen) = (span(nu, nu, lda), span(nu, ku, ldb), span(nu, ku, ldx));
    let ins_overlap =
        |x: *const f64| overlap((x, xlen), (a, alen)) || overlap((x, xlen), (b, blen));
    let info = first_failure(&[
        (alen > 0 && a.is_null(), 3),
        (blen > 0 && b.is_null(), 5),
        (xlen > 0 && x_inf.is_null(), 7),
        (ins_overlap(x_inf), 7),
        (xlen > 0 && x_sup.is_null(), 8),
        (
            ins_overlap(x_sup) || overlap((x_inf, xlen), (x_sup, xlen)),
            8,
        ),
    ]);
    if info != 0 {
        return info;
    }
    if nu == 0 || ku == 0 {
        return 0;
    }
    let (Some(a), Some(b), Some(xi), Some(xs)) = (
        input(a, alen),
        input(b, blen),
        output(x_inf, xlen),
        output(x_sup, xlen),
    ) else {
        return HYLAPACK_INFO_INTERNAL_ERROR;
    };
    match interval::gesv_verified(nu, ku, a, lda, b, ldb, xi, xs, ldx) {
        Ok((outcome, _)) => outcome.info,
        Err(e) => no_memory(routine, "X_inf and X_sup", e),
    }
}

/// Verified enclosure of the solution of `A X = B` (A n×n, B n×nrhs; neither is changed):
/// on return `X_inf ≤ A⁻¹B ≤ X_sup` entrywise for the exact solution of the stored data.
///
/// Algorithm (Hammer et al., as in Dallmann et al.): R ≈ A⁻¹ from LU; x̃ = R·B refined by
/// residual iteration with residuals in twofold precision (Dot2); enclosures of I − R·A and of
/// R·(B − A·x̃); then Rump's verification iteration with ε-inflation. A verified column is a
/// mathematical proof that A is nonsingular and the solution lies in the interval.
///
/// Returns INFO: 0 every column verified; −i argument i illegal (1 n, 2 nrhs, 3 A null,
/// 4 lda, 5 B null, 6 ldb, 7/8 X_inf/X_sup null or overlapping A, B or each other, 9 ldx;
/// through `xerbla_` as DGESV_VERIFIED); i in 1..n: U(i,i) of the LU factorization is exactly
/// zero (singular to working precision); n+1: some column could not be verified (A singular or
/// too ill-conditioned, or A has a NaN or ±∞ entry: that is decided before any factorization,
/// so the GPU and the CPU give n+1 alike); −1000 (`HYLAPACK_INFO_INTERNAL_ERROR`): host
/// memory the call needs could not be allocated (14·n·nrhs reals, and on the CPU three n × n
/// matrices), X_inf and X_sup are unchanged and one line on stderr says so (never an abort).
/// N = 0 or NRHS = 0: a quick return with INFO = 0. A column that is not verified is returned
/// as [−∞, +∞]; an unverified interval is never returned as verified.
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dgesv_verified(
    n: c_int,
    nrhs: c_int,
    a: *const f64,
    lda: c_int,
    b: *const f64,
    ldb: c_int,
    x_inf: *mut f64,
    x_sup: *mut f64,
    ldx: c_int,
) -> c_int {
    ffi_boundary!("dgesv_verified", HYLAPACK_INFO_INTERNAL_ERROR, {
        let info = gesv_verified_run("dgesv_verified", n, nrhs, a, lda, b, ldb, x_inf, x_sup, ldx);
        if info < 0 && info != HYLAPACK_INFO_INTERNAL_ERROR {
            report_illegal_argument("DGESV_VERIFIED", info);
        }
        info
    })
}

/// Fortran `DGESV_VERIFIED(N, NRHS, A, LDA, B, LDB, XINF, XSUP, LDX, INFO)`: as
/// [`dgesv_verified`].
///
/// # Safety
/// Each array pointer is NULL (reported as an illegal argument where the routine would read
/// it) or valid for the entries LAPACK's routine of the same contract reads or writes through
/// it, for the sizes and leading dimensions given; scalars passed by reference are readable.
#[no_mangle]
pub unsafe extern "C" fn dgesv_verified_(
    n: *const c_int,
    nrhs: *const c_int,
    a: *const f64,
    lda: *const c_int,
    b: *const f64,
    ldb: *const c_int,
    x_inf: *mut f64,
    x_sup: *mut f64,
    ldx: *const c_int,
    info: *mut c_int,
) {
    let result = ffi_boundary!("dgesv_verified_", HYLAPACK_INFO_INTERNAL_ERROR, {
        let int = |p: *const c_int| scalar(p).unwrap_or(-1);
        let result = gesv_verified_run(
            "dgesv_verified_",
            int(n),
            int(nrhs),
            a,
            int(lda),
            b,
            int(ldb),
            x_inf,
            x_sup,
            int(ldx),
        );
        if result < 0 && result != HYLAPACK_INFO_INTERNAL_ERROR {
            report_illegal_argument("DGESV_VERIFIED", result);
        }
        result
    });
    if !info.is_null() {
        *info = result;
    }
}
