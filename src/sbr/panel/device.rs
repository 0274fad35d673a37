//! Panel QR on the executor: whole ([`panel_on_executor`]: CholeskyQR2, else xGEQRF with `T`
//! from the Gram matrix on the host), or by sub-panels ([`blocked_panel`]).

use crate::lapack::Dense;
use crate::real::Real;
use crate::sbr::executor::{host_zeros, op, op_mut, ExecError, Executor, Op, OpMut};
use crate::sbr::panel::{cholqr, upload_panels, PanelSet, SubPanels};
use crate::sbr::plan::SUB_PANEL;
use crate::sbr::update::apply_qt;

/// Panel QR on the executor: the m x k `panel` (the resident mode's `L[s.., i..i+kd]`, or a
/// block of [`sbrdb`]'s) is factored in place (xGEQRF's layout, R kept until
/// [`band_from_panels`]), `tau[tau_at..]` set; `V` (m x min(m, k), unit diagonal, zeros above
/// it) goes to `&mut bufs.v` and `Z = V T` to `&mut bufs.z`, both of leading dimension m. By CholeskyQR2 (see
/// [`cholqr`]) where it can be trusted, else by xGEQRF: then T follows
/// xLARFT's recurrence `T(0..j, j) = −τ_j T(0..j, 0..j) (VᵀV)(0..j, j)` on the host from the
/// Gram matrix `VᵀV` (its rows below the panel's top block formed on the executor): one
/// round trip of k² entries per panel instead of the panel itself. Returns 0 (CholeskyQR2) or
/// 1 (xGEQRF). `profile`: time CholeskyQR2's steps.
#[allow(clippy::too_many_arguments)]
pub(in crate::sbr) fn panel_on_executor<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    panel: OpMut<E::Buf>,
    taubuf: &mut E::Buf,
    bufs: &mut PanelSet<E::Buf>,
    pn: usize,
    kd: usize,
    tau_at: usize,
    profile: bool,
) -> Result<usize, ExecError> {
    let pk = pn.min(kd);
    let (at, ld) = (panel.off, panel.ld);
    let chol = op_mut(panel.buf, at, ld);
    if cholqr::factor(exec, chol, taubuf, bufs, pn, kd, tau_at, profile)? {
        return Ok(0);
    }
    exec.geqrf(pn, kd, op_mut(panel.buf, at, ld), op_mut(taubuf, tau_at, 1))?;
    exec.copy(pn, pk, op(panel.buf, at, ld), op_mut(&mut bufs.v, 0, pn))?;
    exec.copy(pk, pk, op(&bufs.v, 0, pn), op_mut(&mut bufs.t, 0, pk))?;
    let mut gram = host_zeros(pk * pk)?;
    if pn > pk {
        gram_matrix(
            exec,
            pn - pk,
            pk,
            op(&bufs.v, pk, pn),
            op_mut(&mut bufs.s, 0, pk),
        )?;
        exec.download(&bufs.s, 0, pk * pk, &mut |start, piece| {
            gram[start..start + piece.len()].copy_from_slice(piece)
        })?;
    }
    let mut top = host_zeros(pk * pk)?;
    exec.download(&bufs.t, 0, pk * pk, &mut |start, piece| {
        top[start..start + piece.len()].copy_from_slice(piece)
    })?;
    let mut tau = host_zeros(pk)?;
    exec.download(taubuf, tau_at, pk, &mut |start, piece| {
        tau[start..start + piece.len()].copy_from_slice(piece)
    })?;
    // V's top block: unit diagonal, zeros above it; its part of the Gram matrix.
    for c in 0..pk {
        for r in 0..c {
            top[r + c * pk] = T::ZERO;
        }
        top[c + c * pk] = T::ONE;
    }
    for b in 0..pk {
        for a in 0..pk {
            let mut acc = gram[a + b * pk];
            for r in a.max(b)..pk {
                acc = acc + top[r + a * pk] * top[r + b * pk];
            }
            gram[a + b * pk] = acc;
        }
    }
    let t = t_from_gram(pk, &gram, &tau)?;
    upload_panels(exec, &mut bufs.s, &mut bufs.t, &top, &t)?;
    exec.copy(pk, pk, op(&bufs.s, 0, pk), op_mut(&mut bufs.v, 0, pn))?;
    exec.gemm(
        false,
        false,
        pn,
        pk,
        pk,
        T::ONE,
        op(&bufs.v, 0, pn),
        op(&bufs.t, 0, pk),
        T::ZERO,
        op_mut(&mut bufs.z, 0, pn),
    )?;
    Ok(1)
}

/// QR of the m x k panel `p` (m > k) on the executor, by sub-panels of [`SUB_PANEL`] columns
/// ([`panel_on_executor`] each, applied to the columns on its right): the panel ends in
/// xGEQRF's layout, τ in `taubuf[tau_at..tau_at + k]`, `V` in `v` and `Z = V T` in `z` (both
/// m x k, leading dimension m). `T` itself is never formed: with `Z_q = V_q T_q` from sub-panel q
/// (columns a..a+w), `Z[.., a..a+w] = Z_q − Z[.., ..a] (V[.., ..a]ᵀ Z_q)`. Returns how many
/// sub-panels went by CholeskyQR2 and by xGEQRF. `profile`: as for [`panel_on_executor`].
#[allow(clippy::too_many_arguments)]
pub(in crate::sbr) fn blocked_panel<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    p: OpMut<E::Buf>,
    m: usize,
    k: usize,
    taubuf: &mut E::Buf,
    tau_at: usize,
    v: &mut E::Buf,
    z: &mut E::Buf,
    sub: &mut SubPanels<E::Buf>,
    profile: bool,
) -> Result<[usize; 2], ExecError> {
    let (p, off, ld) = (p.buf, p.off, p.ld);
    let mut how = [0, 0];
    let mut a = 0;
    while a < k {
        let w = SUB_PANEL.min(k - a);
        let ma = m - a;
        let set = &mut sub.set;
        let panel = op_mut(p, off + a + a * ld, ld);
        how[panel_on_executor(exec, panel, taubuf, set, ma, w, tau_at + a, profile)?] += 1;
        let rest = k - a - w;
        if rest > 0 {
            // The columns on the right.
            let (vq, zq) = (op(&set.v, 0, ma), op(&set.z, 0, ma));
            let at = off + a + (a + w) * ld;
            apply_qt(exec, ma, w, rest, vq, zq, p, at, ld, &mut sub.scratch)?;
        }
        let zeros = || op(&sub.zeros, 0, k);
        if a > 0 {
            exec.copy(a, w, zeros(), op_mut(v, a * m, m))?;
        }
        exec.copy(ma, w, op(&set.v, 0, ma), op_mut(v, a + a * m, m))?;
        if a == 0 {
            exec.copy(ma, w, op(&set.z, 0, ma), op_mut(z, 0, m))?;
        } else {
            // Y = V[a.., ..a]ᵀ Z_q (Z_q is zero above row a); the new block is built in
            // `set.v` (free once V_q is in place, read as m x w) and copied into Z.
            let y = op_mut(&mut sub.scratch, 0, a);
            exec.gemm(
                true,
                false,
                a,
                w,
                ma,
                T::ONE,
                op(v, a, m),
                op(&set.z, 0, ma),
                T::ZERO,
                y,
            )?;
            exec.copy(a, w, op(&sub.zeros, 0, k), op_mut(&mut set.v, 0, m))?;
            exec.copy(ma, w, op(&set.z, 0, ma), op_mut(&mut set.v, a, m))?;
            let (zl, y) = (op(z, 0, m), op(&sub.scratch, 0, a));
            let block = op_mut(&mut set.v, 0, m);
            exec.gemm(false, false, m, w, a, -T::ONE, zl, y, T::ONE, block)?;
            exec.copy(m, w, op(&set.v, 0, m), op_mut(z, a * m, m))?;
        }
        a += w;
    }
    Ok(how)
}

/// The Gram matrix C := AᵀA of the m x k `a` (C k x k).
pub(in crate::sbr) fn gram_matrix<T: Real, E: Executor<T>>(
    exec: &mut E,
    m: usize,
    k: usize,
    a: Op<E::Buf>,
    c: OpMut<E::Buf>,
) -> Result<(), ExecError> {
    let (x, y) = (op(a.buf, a.off, a.ld), op(a.buf, a.off, a.ld));
    exec.gemm(true, false, k, k, m, T::ONE, x, y, T::ZERO, c)
}

/// The k x k upper triangular `T` of `I − V T Vᵀ = H₁ ⋯ H_k` from `G = VᵀV` and the `τ`s, by
/// xLARFT's forward, column-wise recurrence (a zero τ gives a zero column).
pub(in crate::sbr) fn t_from_gram<T: Real>(
    k: usize,
    g: &[T],
    tau: &[T],
) -> Result<Vec<T>, ExecError> {
    let mut t = host_zeros(k * k)?;
    let mut w = host_zeros(k)?;
    for j in 0..k {
        t[j + j * k] = tau[j];
        if tau[j] == T::ZERO {
            continue;
        }
        for l in 0..j {
            w[l] = T::ZERO - tau[j] * g[l + j * k];
        }
        // Column j above the diagonal: T[..j, ..j] w, by columns of the triangle (contiguous
        // in memory, where rows were k apart).
        let (done, col) = t.split_at_mut(j * k);
        let col = &mut col[..j];
        for (l, &wl) in w[..j].iter().enumerate() {
            for (c, &x) in col[..=l].iter_mut().zip(&done[l * k..l * k + l + 1]) {
                *c = *c + x * wl;
            }
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testmat::Rng;

    /// `T` from the Gram matrix equals xLARFT's, zero τs included.
    #[test]
    fn t_from_gram_matches_larft() {
        let mut rng = Rng::new(crate::testmat::seed_from_time());
        let (m, k) = (40, 9);
        let mut v: Vec<f64> = (0..m * k).map(|_| rng.range(-1.0, 1.0)).collect();
        let mut tau = vec![0.0; k];
        assert_eq!(f64::geqrf(m, k, &mut v, m, &mut tau), 0);
        tau[3] = 0.0;
        for c in 0..k {
            for r in 0..c {
                v[r + c * m] = 0.0;
            }
            v[c + c * m] = 1.0;
        }
        let mut want = vec![0.0; k * k];
        f64::larft(m, k, (&v, m), &tau, &mut want, k);
        let mut g = vec![0.0; k * k];
        f64::gemm(b'T', b'N', k, k, m, 1.0, (&v, m), (&v, m), 0.0, &mut g, k);
        let got = t_from_gram(k, &g, &tau).expect("host memory");
        for c in 0..k {
            for r in 0..=c {
                let (x, y) = (got[r + c * k], want[r + c * k]);
                assert!(
                    (x - y).abs() <= 1e-13 * (1.0 + y.abs()),
                    "T({r},{c}): {x} vs {y}"
                );
            }
        }
    }
}
