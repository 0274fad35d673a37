//! Step 1, the panel QR `L[s.., i..i+kd] = Q R` with `Q = I − V T Vᵀ`: the panel's executor
//! buffers, the host's factorization ([`factor_panel`]), the panel's moves between the host
//! and the executor (the streaming mode's [`panel_through_executor`]), and `V`/`Z = V T` on the
//! executor. The factorizations on the executor are in [`device`] and [`cholqr`].

pub(super) mod cholqr;
pub(super) mod device;

use crate::device::memory::copy_threads;
use crate::host::workers::{or_resume, run_parts};
use crate::lapack::Dense;
use crate::real::Real;
use crate::sbr::driver::Job;
use crate::sbr::executor::{host_zeros, op, op_mut, ExecError, Executor};
use crate::sbr::host::put_band;
use crate::sbr::panel::device::blocked_panel;
use crate::sbr::plan::SUB_PANEL;

/// A panel's buffers on the executor: `V`, `Z = V T`, two k x k scratch matrices (`T`), and
/// the small matrices of the CholeskyQR2 panel ([`cholqr::scratch_len`]).
pub(in crate::sbr) struct PanelSet<B> {
    pub(in crate::sbr) v: B,
    pub(in crate::sbr) z: B,
    pub(in crate::sbr) s: B,
    pub(in crate::sbr) t: B,
    pub(in crate::sbr) q: B,
}

/// The buffers of [`blocked_panel`]: one sub-panel's set, a k x w scratch and k x w zeros.
pub(in crate::sbr) struct SubPanels<B> {
    pub(in crate::sbr) set: PanelSet<B>,
    pub(in crate::sbr) scratch: B,
    pub(in crate::sbr) zeros: B,
}

impl<B> SubPanels<B> {
    pub(in crate::sbr) fn new<T: Real, E: Executor<T, Buf = B>>(
        exec: &mut E,
        m: usize,
        k: usize,
    ) -> Result<Self, ExecError> {
        let w = SUB_PANEL.min(k).max(1);
        Ok(SubPanels {
            set: PanelSet {
                v: exec.alloc(m * w)?,
                z: exec.alloc(m * w)?,
                s: exec.alloc(w * w)?,
                t: exec.alloc(w * w)?,
                q: exec.alloc(cholqr::scratch_len(w))?,
            },
            scratch: exec.alloc(k * w)?,
            zeros: exec.alloc(k * w)?,
        })
    }
}

/// Panel QR on the host: `p` holds `L[i.., i..i+kd]` (leading dimension `h`); on return its
/// rows `kd..` hold `V` (unit diagonal, zeros above) where the reflectors are, the band of
/// columns `i..i+pk` is in AB and `tau[i..i+pk]` is set. Returns `V` (pn x pk) and the pk x pk
/// triangular `T` of `Q = I − V T Vᵀ`, or [`ExecError::HostMemory`] before anything is written.
pub(in crate::sbr) fn factor_panel<T: Real + Dense>(
    job: &mut Job<T>,
    i: usize,
    p: &mut [T],
    h: usize,
) -> Result<(Vec<T>, Vec<T>), ExecError> {
    let (n, kd) = (job.n, job.kd);
    let pn = n - i - kd;
    let pk = pn.min(kd);
    // The recursive xGEQRT3 gives T with the reflectors and runs at BLAS 3 speed; it needs a
    // panel at least as tall as wide, which only the last one may not be.
    let mut t = host_zeros(pk * pk)?;
    let mut v = host_zeros(pn * pk)?;
    if pn >= kd {
        let info = T::geqrt3(pn, kd, &mut p[kd..], h, &mut t, pk);
        assert_eq!(info, 0, "xGEQRT3 rejected its arguments");
        for c in 0..pk {
            job.tau[i + c] = t[c + c * pk];
        }
    } else {
        let info = T::geqrf(pn, kd, &mut p[kd..], h, &mut job.tau[i..i + pk]);
        assert_eq!(info, 0, "xGEQRF rejected its arguments");
    }
    finish_panel(job, i, p, h);
    copy_v(p, h, kd, pn, &mut v);
    if pn < kd {
        T::larft(pn, pk, (&v, pn), &job.tau[i..i + pk], &mut t, pk);
    }
    Ok((v, t))
}

/// After a panel's QR (xGEQRF's layout in rows `kd..` of `p`, as [`factor_panel`]): its band
/// into AB, and LAPACK's layout in `p` (unit diagonal, zeros above it).
pub(in crate::sbr) fn finish_panel<T: Real>(job: &mut Job<T>, i: usize, p: &mut [T], h: usize) {
    let (n, kd) = (job.n, job.kd);
    let pn = n - i - kd;
    let pk = pn.min(kd);
    for c in 0..pk {
        let upper = job.host.upper;
        put_band(job.ab, job.ldab, kd, n, upper, i + c, |d| p[c + d + c * h]);
        for r in 0..=c {
            p[kd + r + c * h] = if r == c { T::ONE } else { T::ZERO };
        }
    }
}

/// `V` (pn x pk, leading dimension pn) of a finished panel `p` (leading dimension `h`), or
/// [`ExecError::HostMemory`].
pub(in crate::sbr) fn panel_v<T: Real>(
    p: &[T],
    h: usize,
    kd: usize,
    pn: usize,
    pk: usize,
) -> Result<Vec<T>, ExecError> {
    let mut v = host_zeros(pn * pk)?;
    copy_v(p, h, kd, pn, &mut v);
    Ok(v)
}

/// The columns of `V` (pn rows each) of a finished panel `p` (leading dimension `h`) into `v`.
fn copy_v<T: Real>(p: &[T], h: usize, kd: usize, pn: usize, v: &mut [T]) {
    for (c, col) in v.chunks_exact_mut(pn).enumerate() {
        col.copy_from_slice(&p[kd + c * h..kd + c * h + pn]);
    }
}

/// Uploads `V` and `T` and forms `Z = V T` on the executor.
#[allow(clippy::too_many_arguments)]
pub(in crate::sbr) fn upload_panel<T: Real, E: Executor<T>>(
    exec: &mut E,
    vbuf: &mut E::Buf,
    tbuf: &mut E::Buf,
    zbuf: &mut E::Buf,
    v: &[T],
    t: &[T],
    pn: usize,
    pk: usize,
) -> Result<(), ExecError> {
    upload_panels(exec, vbuf, tbuf, v, t)?;
    exec.gemm(
        false,
        false,
        pn,
        pk,
        pk,
        T::ONE,
        op(vbuf, 0, pn),
        op(tbuf, 0, pk),
        T::ZERO,
        op_mut(zbuf, 0, pn),
    )
}

pub(in crate::sbr) fn upload_panels<T: Real, E: Executor<T>>(
    exec: &mut E,
    first: &mut E::Buf,
    second: &mut E::Buf,
    a: &[T],
    b: &[T],
) -> Result<(), ExecError> {
    exec.upload(first, 0, a.len(), &mut |start, out| {
        out.copy_from_slice(&a[start..start + out.len()])
    })?;
    exec.upload(second, 0, b.len(), &mut |start, out| {
        out.copy_from_slice(&b[start..start + out.len()])
    })
}

/// The executor buffers a streaming panel is factored in ([`panel_through_executor`]).
pub(in crate::sbr) struct PanelBufs<'a, B> {
    /// For an upper-stored matrix's direct upload (room for the panel): the panel goes
    /// through it to be transposed.
    pub(in crate::sbr) turn: Option<&'a mut B>,
    pub(in crate::sbr) p: &'a mut B,
    pub(in crate::sbr) tau: &'a mut B,
    pub(in crate::sbr) v: &'a mut B,
    pub(in crate::sbr) z: &'a mut B,
    pub(in crate::sbr) sub: &'a mut SubPanels<B>,
}

/// A streaming step's panel (`p`, gathered from the host as for [`factor_panel`], pn > kd)
/// factored on the executor ([`blocked_panel`]): its rows `kd..` go up into `bufs.p`, come back
/// factored, and end as [`finish_panel`] leaves them, `tau[i..]` set; `V` and `Z` stay on the
/// executor. Returns the sub-panel counts.
pub(in crate::sbr) fn panel_through_executor<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    i: usize,
    p: &mut [T],
    h: usize,
    bufs: PanelBufs<E::Buf>,
) -> Result<[usize; 2], ExecError> {
    let (n, kd) = (job.n, job.kd);
    let (s, pn) = (i + kd, n - i - kd);
    // Rows s.. straight from the host matrix.
    let (src, lda) = (job.host.ptr(s, i), job.host.lda);
    // SAFETY (both): the block lies in the mapped matrix, which the host writes only at the end
    // of the step's SYR2K pass, after the download below has waited for this upload.
    if job.direct && !job.host.upper {
        unsafe { exec.upload_direct(bufs.p, 0, pn, pn, kd, src, lda)? };
    } else if let Some(turn) = bufs.turn {
        // Rows i..i+kd, columns s.. of A, transposed.
        unsafe { exec.upload_direct(turn, 0, kd, kd, pn, src, lda)? };
        exec.transpose(kd, pn, op(turn, 0, kd), op_mut(bufs.p, 0, pn))?;
    } else {
        let host = &*job.host;
        exec.upload(bufs.p, 0, pn * kd, &mut |start, out| {
            host.gather(s, pn, i, start, out)
        })?;
    }
    let panel = op_mut(&mut *bufs.p, 0, pn);
    let (tau, v, z, sub) = (&mut *bufs.tau, bufs.v, bufs.z, bufs.sub);
    let how = blocked_panel(exec, panel, pn, kd, tau, 0, v, z, sub, job.tuning.profile)?;
    panel_home(exec, job, bufs.p, bufs.tau, i, p, h, kd)?;
    Ok(how)
}

/// Step `i`'s panel factored on the executor, rows `from..h` of its kd columns in `buf`
/// (leading dimension h − from), into the host's `p` (h x kd, leading dimension h), τ into
/// `tau[i..]` from `taubuf`; then as [`finish_panel`] leaves it.
#[allow(clippy::too_many_arguments)]
pub(in crate::sbr) fn panel_home<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    buf: &E::Buf,
    taubuf: &E::Buf,
    i: usize,
    p: &mut [T],
    h: usize,
    from: usize,
) -> Result<(), ExecError> {
    let (kd, rows) = (job.kd, h - from);
    if job.direct {
        // SAFETY: rows from.. of the kd columns of `p` (h x kd), which is ours alone.
        let to = p[from..].as_mut_ptr();
        unsafe { exec.download_direct(buf, 0, rows, rows, kd, to, h) }?;
    } else {
        exec.download_block(buf, 0, rows, rows, kd, &mut |start, piece| {
            copy_columns(&mut p[from + start / rows * h..], h, piece, rows)
        })?;
    }
    let tau = &mut job.tau[i..i + kd];
    exec.download(taubuf, 0, kd, &mut |start, piece| {
        tau[start..start + piece.len()].copy_from_slice(piece)
    })?;
    finish_panel(job, i, p, h);
    Ok(())
}

/// Copies `src`, whole columns of `rows` entries, into the columns of `dst` (`ld` apart), on
/// several threads for large copies.
pub(in crate::sbr) fn copy_columns<T: Real>(dst: &mut [T], ld: usize, src: &[T], rows: usize) {
    let cols = src.len() / rows;
    let per = cols.div_ceil(copy_threads(std::mem::size_of_val(src)));
    let copy = |d: &mut [T], from: &[T]| {
        for (j, col) in from.chunks(rows).enumerate() {
            d[j * ld..j * ld + rows].copy_from_slice(col);
        }
    };
    if per == cols {
        return copy(dst, src);
    }
    let parts = dst
        .chunks_mut(per * ld)
        .zip(src.chunks(per * rows))
        .collect();
    or_resume(run_parts(parts, &|(d, from)| copy(d, from)));
}
