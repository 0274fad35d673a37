//! Q1, the orthogonal matrix of a dense → band reduction, applied from the reflectors that
//! [`super::syrdb`] leaves in A and TAU (xSYTRD_SY2SB's layout): B = Q1ᵀ A Q1 with
//! Q1 = Q(0) Q(1) ⋯, Q(p) the block reflector of panel p (columns `p kd .. p kd + kd` of the
//! lower view, rows from s = (p + 1) kd). With UPLO = 'L' panel p's vectors lie below the
//! band in A's columns as xGEQRF leaves them (Q(p) = H(1) ⋯ H(k)); with UPLO = 'U' they lie
//! right of the band in A's rows as xGELQF leaves them, whose Q' = H(k) ⋯ H(1) makes Q(p) its
//! transpose. Each Q(p) acts on rows s.. only, so Q1 Z applies them last panel first.

use crate::lapack::Dense;
use crate::real::Real;

/// Z := Q1 Z for the n x m `z` (leading dimension `ldz`), Q1 from the reflectors in the n x n
/// `a` (leading dimension `lda`) and `tau` (n − kd entries) of a reduction of the `uplo`
/// triangle to `kd` off-diagonals, by the system LAPACK's xORMQR (UPLO = 'L') or xORMLQ
/// ('U'), one call per panel. Fails, with why, only if its workspace cannot be allocated
/// (then `z` is untouched).
#[allow(clippy::too_many_arguments)]
pub fn apply_q1<T: Real + Dense>(
    uplo: u8,
    n: usize,
    kd: usize,
    a: &[T],
    lda: usize,
    tau: &[T],
    m: usize,
    z: &mut [T],
    ldz: usize,
) -> Result<(), String> {
    // N ≤ KD + 1: no reflector (a 1 x 1 panel's τ is 0).
    if n <= kd + 1 || m == 0 {
        return Ok(());
    }
    let upper = uplo.eq_ignore_ascii_case(&b'U');
    let apply = |s: usize, i: usize, z: &mut [T], work: &mut [T]| {
        let (pn, pk) = (n - s, (n - s).min(kd));
        let (info, best) = if upper {
            T::ormlq_left(
                b'T',
                pn,
                m,
                pk,
                &a[i + s * lda..],
                lda,
                &tau[i..],
                &mut z[s..],
                ldz,
                work,
            )
        } else {
            T::ormqr_left(
                b'N',
                pn,
                m,
                pk,
                &a[s + i * lda..],
                lda,
                &tau[i..],
                &mut z[s..],
                ldz,
                work,
            )
        };
        assert_eq!(info, 0, "xORMQR/xORMLQ: illegal argument");
        best
    };
    // The first panel is the largest: its optimal workspace serves every panel.
    let best = apply(kd, 0, z, &mut []).max(m);
    let mut work = crate::host::try_zeroed(best)
        .or_else(|| crate::host::try_zeroed(m))
        .ok_or("the workspace of xORMQR")?;
    let mut i = (n - kd - 1) / kd * kd;
    loop {
        apply(i + kd, i, z, &mut work);
        if i == 0 {
            return Ok(());
        }
        i -= kd;
    }
}
