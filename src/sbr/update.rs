//! Step 2, the two-sided update of the trailing matrix with `Q = I − V T Vᵀ`, `Z = V T`:
//! `X = A₂ Z` (by block columns: [`symm_block`]), `X −= ½ V (Zᵀ X)` ([`finish_x`]), then
//! `A₂ −= V Xᵀ + X Vᵀ` (SYR2K, issued by the modes); and the one-sided `B := Qᵀ B`
//! ([`apply_qt`]) of the sub-panels and of [`super::sbrdb`].

use crate::real::Real;
use crate::sbr::executor::{op, op_mut, ExecError, Executor, Op};

/// `X −= ½ V (Zᵀ X)`.
#[allow(clippy::too_many_arguments)]
pub(super) fn finish_x<T: Real, E: Executor<T>>(
    exec: &mut E,
    pn: usize,
    pk: usize,
    vbuf: &E::Buf,
    zbuf: &E::Buf,
    xbuf: &mut E::Buf,
    sbuf: &mut E::Buf,
) -> Result<(), ExecError> {
    exec.gemm(
        true,
        false,
        pk,
        pk,
        pn,
        T::ONE,
        op(zbuf, 0, pn),
        op(xbuf, 0, pn),
        T::ZERO,
        op_mut(sbuf, 0, pk),
    )?;
    exec.gemm(
        false,
        false,
        pn,
        pk,
        pk,
        -T::HALF,
        op(vbuf, 0, pn),
        op(sbuf, 0, pk),
        T::ONE,
        op_mut(xbuf, 0, pn),
    )
}

/// `B := Qᵀ B = B − V (Zᵀ B)` for `Q = I − V T Vᵀ` with `Z = V T` (`v`, `z`: m x k), B the m x
/// c block of `b` at `off` (leading dimension `ld`); `w` takes the k x c product `Zᵀ B`.
#[allow(clippy::too_many_arguments)]
pub(super) fn apply_qt<T: Real, E: Executor<T>>(
    exec: &mut E,
    m: usize,
    k: usize,
    c: usize,
    v: Op<E::Buf>,
    z: Op<E::Buf>,
    b: &mut E::Buf,
    off: usize,
    ld: usize,
    w: &mut E::Buf,
) -> Result<(), ExecError> {
    let (zb, wk) = (op(b, off, ld), op_mut(w, 0, k));
    exec.gemm(true, false, k, c, m, T::ONE, z, zb, T::ZERO, wk)?;
    let (wk, bm) = (op(w, 0, k), op_mut(b, off, ld));
    exec.gemm(false, false, m, c, k, -T::ONE, v, wk, T::ONE, bm)
}

/// Block column `(c, w)` of `A₂` (order pn) in `d` (its rows c.., the first at `off`, leading
/// dimension `ld`) applied to `X = A₂ Z`: `X[c..c+w] += A₂[c.., c..c+w]ᵀ Z[c..]`,
/// `X[c+w..] += A₂[c+w.., c..c+w] Z[c..c+w]`. The first block column spans every row of X, so
/// it sets X instead of adding to it.
#[allow(clippy::too_many_arguments)]
pub(super) fn symm_block<T: Real, E: Executor<T>>(
    exec: &mut E,
    (d, off, ld): (&E::Buf, usize, usize),
    (c, w): (usize, usize),
    pn: usize,
    pk: usize,
    zbuf: &E::Buf,
    xbuf: &mut E::Buf,
) -> Result<(), ExecError> {
    let h = pn - c;
    let beta = if c == 0 { T::ZERO } else { T::ONE };
    let (z, x) = (op(zbuf, c, pn), op_mut(xbuf, c, pn));
    exec.symm(w, pk, T::ONE, op(d, off, ld), z, beta, x)?;
    if h > w {
        let below = op(d, off + w, ld);
        let (z, x) = (op(zbuf, c + w, pn), op_mut(xbuf, c, pn));
        exec.gemm(true, false, w, pk, h - w, T::ONE, below, z, T::ONE, x)?;
        let below = op(d, off + w, ld);
        let (z, x) = (op(zbuf, c, pn), op_mut(xbuf, c + w, pn));
        exec.gemm(false, false, h - w, pk, w, T::ONE, below, z, beta, x)?;
    }
    Ok(())
}
