//! The resident mode: the whole lower triangle in the executor, uploaded once, reduced step by
//! step (the panels factored on the executor with look-ahead, or on the host), and brought back
//! whole or as its band alone.

use crate::lapack::Dense;
use crate::real::Real;
use crate::sbr::driver::{Job, Progress, StepBufs};
use crate::sbr::executor::{host_zeros, op, op_mut, ExecError, Executor, OpMut, Phases};
use crate::sbr::host::put_band;
use crate::sbr::panel::cholqr;
use crate::sbr::panel::device::{blocked_panel, panel_on_executor};
use crate::sbr::panel::{factor_panel, upload_panel, PanelSet, SubPanels};
use crate::sbr::plan::{block_columns, SUB_PANEL, TRANSFER_BLOCK};
use crate::sbr::update::finish_x;
use std::time::Instant;

/// The resident matrix and the buffers every step uses.
pub(super) struct Resident<'a, B> {
    pub(super) whole: &'a mut B,
    pub(super) taubuf: &'a mut B,
    pub(super) xbuf: &'a mut B,
}

/// The look-ahead's buffers: two panel sets (the current panel's, the next one's) and room for
/// the next panel's columns. Factoring the next panel on a second lane while the rest of the
/// trailing matrix is updated took the reduction on the H100 (n = 16384, CholeskyQR2 panels on
/// a lane of the highest priority) from 0.74 to 0.55 s at kd = 64 and from 0.96 to 0.81 s at
/// kd = 32 (docs/bench/2026-11-22-h100-syev-3.txt).
pub(super) struct Ahead<B> {
    pub(super) sets: [PanelSet<B>; 2],
    pub(super) next: B,
}

/// The resident steps with the panels factored on the executor. Step i: `X = A₂ Z`; then,
/// while a next step follows, [`update_ahead`]: the next panel's columns (the first kd of
/// `A₂`) are updated first and copied aside, the rest of `A₂` is updated on lane 0 while lane 1
/// factors the copy (the host waits only for lane 1's small round trip), and the factored copy
/// goes back into place. The last step updates the whole of `A₂`. `profile`: time the panels'
/// steps too.
#[allow(clippy::too_many_arguments)]
pub(super) fn resident_steps<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    n: usize,
    kd: usize,
    progress: &mut Progress<T>,
    r: Resident<E::Buf>,
    mut ahead: Ahead<E::Buf>,
    mut sub: Option<SubPanels<E::Buf>>,
    ph: &mut Phases,
    profile: bool,
) -> Result<(), ExecError> {
    let Resident {
        whole,
        taubuf,
        xbuf,
    } = r;
    // The set that holds the current panel.
    let mut k = 0;
    let i0 = progress.i;
    if i0 + kd < n {
        let s = i0 + kd;
        let panel = op_mut(whole, s + i0 * n, n);
        let set = &mut ahead.sets[0];
        let how = resident_panel(exec, panel, taubuf, set, &mut sub, n - s, kd, i0, profile)?;
        progress.count(how);
    }
    while progress.i + kd < n {
        let i = progress.i;
        let s = i + kd;
        let (pn, pk) = (n - s, (n - s).min(kd));
        ph.end(exec, 1)?;
        let trailing = s + s * n;
        let [a, b] = &mut ahead.sets;
        let (c, o) = if k == 0 { (a, b) } else { (b, a) };
        exec.symm(
            pn,
            pk,
            T::ONE,
            op(whole, trailing, n),
            op(&c.z, 0, pn),
            T::ZERO,
            op_mut(xbuf, 0, pn),
        )?;
        finish_x(exec, pn, pk, &c.v, &c.z, xbuf, &mut c.s)?;
        ph.end(exec, 2)?;
        // Is there a next step (i + kd + kd < n)?
        if pn > kd {
            let r = Resident {
                whole: &mut *whole,
                taubuf: &mut *taubuf,
                xbuf: &mut *xbuf,
            };
            let how = update_ahead(exec, n, kd, s, r, c, o, &mut ahead.next, &mut sub, profile)?;
            progress.count(how);
            k = 1 - k;
        } else {
            exec.syr2k(
                pn,
                pk,
                -T::ONE,
                op(&c.v, 0, pn),
                op(xbuf, 0, pn),
                T::ONE,
                op_mut(whole, trailing, n),
            )?;
        }
        ph.end(exec, 3)?;
        progress.i += kd;
    }
    Ok(())
}

/// The update of a step that a next one follows, with the next panel factored meanwhile: the
/// next panel's columns of the trailing `A₂` (from row and column `s`) first, `A₂[.., 0..kd]
/// −= V X[0..kd]ᵀ + X V[0..kd]ᵀ` with `c`'s `V`, copied into `next`; the rest of `A₂` on lane 0
/// while lane 1 factors that copy into `o`; the factored copy back into place. Returns the
/// panel counts.
#[allow(clippy::too_many_arguments)]
fn update_ahead<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    n: usize,
    kd: usize,
    s: usize,
    r: Resident<E::Buf>,
    c: &PanelSet<E::Buf>,
    o: &mut PanelSet<E::Buf>,
    next: &mut E::Buf,
    sub: &mut Option<SubPanels<E::Buf>>,
    profile: bool,
) -> Result<[usize; 2], ExecError> {
    let Resident {
        whole,
        taubuf,
        xbuf,
    } = r;
    let (pn, pk) = (n - s, (n - s).min(kd));
    let trailing = s + s * n;
    let minus = -T::ONE;
    exec.syr2k(
        kd,
        pk,
        minus,
        op(&c.v, 0, pn),
        op(xbuf, 0, pn),
        T::ONE,
        op_mut(whole, trailing, n),
    )?;
    let below = pn - kd;
    let (v0, x0) = (op(&c.v, 0, pn), op(xbuf, 0, pn));
    let (vk, xk) = (op(&c.v, kd, pn), op(xbuf, kd, pn));
    let col = op_mut(whole, trailing + kd, n);
    exec.gemm(false, true, below, kd, pk, minus, vk, x0, T::ONE, col)?;
    let col = op_mut(whole, trailing + kd, n);
    exec.gemm(false, true, below, kd, pk, minus, xk, v0, T::ONE, col)?;
    exec.copy(pn, kd, op(whole, trailing, n), op_mut(next, 0, pn))?;
    // The rest of A₂ on lane 0, the next panel meanwhile on lane 1.
    exec.syr2k(
        below,
        pk,
        minus,
        op(&c.v, kd, pn),
        op(xbuf, kd, pn),
        T::ONE,
        op_mut(whole, trailing + kd + kd * n, n),
    )?;
    exec.lane(1)?;
    let panel = op_mut(next, kd, pn);
    let factored = resident_panel(exec, panel, taubuf, o, sub, pn - kd, kd, s, profile);
    exec.lane(0)?;
    let how = factored?;
    exec.copy(pn, kd, op(next, 0, pn), op_mut(whole, trailing, n))?;
    Ok(how)
}

/// A resident step's panel (`panel_on_executor`'s arguments): by sub-panels where `sub` is
/// given and the panel is taller than wide ([`blocked_panel`]), else whole. Returns the
/// CholeskyQR2 and xGEQRF counts.
#[allow(clippy::too_many_arguments)]
pub(super) fn resident_panel<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    panel: OpMut<E::Buf>,
    taubuf: &mut E::Buf,
    set: &mut PanelSet<E::Buf>,
    sub: &mut Option<SubPanels<E::Buf>>,
    pn: usize,
    kd: usize,
    tau_at: usize,
    profile: bool,
) -> Result<[usize; 2], ExecError> {
    match sub {
        Some(sub) if pn > kd => {
            let (v, z) = (&mut set.v, &mut set.z);
            blocked_panel(exec, panel, pn, kd, taubuf, tau_at, v, z, sub, profile)
        }
        _ => {
            let mut how = [0, 0];
            how[panel_on_executor(exec, panel, taubuf, set, pn, kd, tau_at, profile)?] += 1;
            Ok(how)
        }
    }
}

/// After a resident run with the panels factored on the executor, the host's panels hold R
/// where xSYTRD_SY2SB leaves a unit diagonal and zeros: the band of each panel's columns is
/// read from the host matrix, then R is replaced. Returns the first column not yet in AB.
pub(super) fn band_from_panels<T: Real>(job: &mut Job<T>) -> usize {
    let (n, kd, upper) = (job.n, job.kd, job.host.upper);
    let (mut i, mut banded) = (0, 0);
    while i + kd < n {
        let s = i + kd;
        let pk = (n - s).min(kd);
        for c in 0..pk {
            let j = i + c;
            let host = &*job.host;
            put_band(job.ab, job.ldab, kd, n, upper, j, |d| host.get(j + d, j));
        }
        for c in 0..pk {
            for r in 0..=c {
                let x = if r == c { T::ONE } else { T::ZERO };
                job.host.set(s + r, i + c, x);
            }
        }
        banded = i + pk;
        i += kd;
    }
    banded
}

/// A band-only resident run's result: the band of the reduced n x n matrix `whole`, straight
/// into AB (the eigenvalue drivers need neither the reflectors nor τ). Entry (j + d, j) lies at
/// j (n + 1) + d, so the band of the first n − kd columns is a (kd + 1) x (n − kd) matrix of
/// leading dimension n + 1; the last kd columns' lie in the trailing (kd + 1)² block.
pub(super) fn band_from_device<T: Real, E: Executor<T>>(
    exec: &mut E,
    whole: &E::Buf,
    job: &mut Job<T>,
) -> Result<(), ExecError> {
    let (n, kd, upper) = (job.n, job.kd, job.host.upper);
    let h = kd + 1;
    let head = n - kd; // n > kd + 1 here
    let t0 = head - 1; // the trailing block's first row and column
    let len = h * head + h * h;
    let mut buf = exec.alloc(len)?;
    exec.copy(h, head, op(whole, 0, n + 1), op_mut(&mut buf, 0, h))?;
    exec.copy(
        h,
        h,
        op(whole, t0 + t0 * n, n),
        op_mut(&mut buf, h * head, h),
    )?;
    let mut band = host_zeros(len)?;
    exec.download(&buf, 0, len, &mut |start, piece| {
        band[start..start + piece.len()].copy_from_slice(piece)
    })?;
    let (head_part, tail) = band.split_at(h * head);
    for j in 0..n {
        if j < head {
            put_band(job.ab, job.ldab, kd, n, upper, j, |d| head_part[d + j * h]);
        } else {
            let c = j - t0;
            put_band(job.ab, job.ldab, kd, n, upper, j, |d| tail[c + d + c * h]);
        }
    }
    Ok(())
}

/// The resident mode's run (see [`super::driver::run`]): the lower triangle up, the steps
/// (panels on the executor with look-ahead, or on the host where the executor cannot factor
/// them), and the result back (the whole triangle, or the band alone).
pub(super) fn run<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    bufs: StepBufs<E::Buf>,
    pk_max: usize,
    panel_len: usize,
) -> Result<(), ExecError> {
    let (n, kd, profile) = (job.n, job.kd, job.tuning.profile);
    let on_host = !exec.can_factor();
    let names = &["upload", "panel", "symm", "syr2k", "download", "band"];
    let mut ph = Phases::new(names, profile);
    let mut whole = exec.alloc(n * n)?;
    let mut taubuf = exec.alloc(n)?;
    let up = upload_lower(exec, job, &mut whole)?;
    ph.end(exec, 0)?;
    if on_host {
        host_panel_steps(exec, job, progress, &mut whole, bufs, &mut ph)?;
    } else {
        let StepBufs { v, z, mut x, s, t } = bufs;
        let first = PanelSet {
            v,
            z,
            s,
            t,
            q: exec.alloc(cholqr::scratch_len(pk_max).max(1))?,
        };
        let ahead = look_ahead_bufs(exec, first, pk_max, panel_len)?;
        // Panels wider than a sub-panel are factored by sub-panels, as the streaming
        // mode's: one CholeskyQR2 of k columns costs O(k³) on the host (40 s at
        // n = 32768, kd = 1024).
        let sub = if kd > SUB_PANEL {
            Some(SubPanels::new(exec, n - kd, kd)?)
        } else {
            None
        };
        let r = Resident {
            whole: &mut whole,
            taubuf: &mut taubuf,
            xbuf: &mut x,
        };
        resident_steps(exec, n, kd, progress, r, ahead, sub, &mut ph, profile)?;
    }
    exec.sync()?;
    let down = bring_back(exec, job, progress, &whole, &taubuf, on_host, &mut ph)?;
    progress.transfer_secs = Some(up + down);
    ph.end(exec, 5)?;
    ph.report(n, kd, "resident");
    if let (true, Some(split)) = (ph.on, cholqr::report()) {
        eprintln!("hylapack: syrdb panel steps n={n} kd={kd}: {split}");
    }
    Ok(())
}

/// Uploads the lower triangle of the host matrix into `whole` (n x n), by block columns (rows
/// c.. of columns c..c + w): the strict upper triangle of the resident copy is never read.
/// Returns the seconds it took, the executor synchronised.
fn upload_lower<T: Real, E: Executor<T>>(
    exec: &mut E,
    job: &Job<T>,
    whole: &mut E::Buf,
) -> Result<f64, ExecError> {
    let n = job.n;
    let host = &*job.host;
    let started = Instant::now();
    for (c, w) in block_columns(n, TRANSFER_BLOCK) {
        exec.upload_block(whole, c + c * n, n, n - c, w, &mut |start, out| {
            host.gather(c, n - c, c, start, out)
        })?;
    }
    exec.sync()?;
    Ok(started.elapsed().as_secs_f64())
}

/// The look-ahead's buffers: `first` (the step buffers as a panel set), a second panel set and
/// the next panel's columns.
fn look_ahead_bufs<T: Real, E: Executor<T>>(
    exec: &mut E,
    first: PanelSet<E::Buf>,
    pk_max: usize,
    panel_len: usize,
) -> Result<Ahead<E::Buf>, ExecError> {
    let small = (pk_max * pk_max).max(1);
    let second = PanelSet {
        v: exec.alloc(panel_len)?,
        z: exec.alloc(panel_len)?,
        s: exec.alloc(small)?,
        t: exec.alloc(small)?,
        q: exec.alloc(cholqr::scratch_len(pk_max).max(1))?,
    };
    Ok(Ahead {
        sets: [first, second],
        next: exec.alloc(panel_len)?,
    })
}

/// The resident steps with the panels factored on the host (an executor that cannot factor
/// them): each panel comes down through a contiguous span of its columns, is factored by
/// [`factor_panel`] and goes back up with its `V` and `Z`.
fn host_panel_steps<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    whole: &mut E::Buf,
    bufs: StepBufs<E::Buf>,
    ph: &mut Phases,
) -> Result<(), ExecError> {
    let (n, kd) = (job.n, job.kd);
    let StepBufs {
        v: mut vbuf,
        z: mut zbuf,
        x: mut xbuf,
        s: mut sbuf,
        t: mut tbuf,
    } = bufs;
    while progress.i + kd < n {
        let i = progress.i;
        let (h, s) = (n - i, i + kd);
        let (pn, pk) = (n - s, (n - s).min(kd));
        // Columns i..i+kd, rows i.. of the resident copy, through a contiguous span.
        let span_off = i + i * n;
        let span_len = n * (kd - 1) + h;
        let mut span = host_zeros(span_len)?;
        exec.download(whole, span_off, span_len, &mut |start, piece| {
            span[start..start + piece.len()].copy_from_slice(piece)
        })?;
        let (v, t) = factor_panel(job, i, &mut span, n)?;
        exec.upload(whole, span_off, span_len, &mut |start, out| {
            out.copy_from_slice(&span[start..start + out.len()])
        })?;
        progress.banded = i + pk;
        upload_panel(exec, &mut vbuf, &mut tbuf, &mut zbuf, &v, &t, pn, pk)?;
        ph.end(exec, 1)?;
        let trailing = s + s * n;
        exec.symm(
            pn,
            pk,
            T::ONE,
            op(whole, trailing, n),
            op(&zbuf, 0, pn),
            T::ZERO,
            op_mut(&mut xbuf, 0, pn),
        )?;
        finish_x(exec, pn, pk, &vbuf, &zbuf, &mut xbuf, &mut sbuf)?;
        ph.end(exec, 2)?;
        exec.syr2k(
            pn,
            pk,
            -T::ONE,
            op(&vbuf, 0, pn),
            op(&xbuf, 0, pn),
            T::ONE,
            op_mut(whole, trailing, n),
        )?;
        ph.end(exec, 3)?;
        progress.i += kd;
    }
    Ok(())
}

/// The result back to the host once the steps are done: the band alone for a band-only run
/// whose panels the executor factored (the host's A keeps the input), else τ (from the
/// executor, where it factored the panels) and the lower triangle by block columns, as it went
/// up (the rest is not ours), then the band of the panels ([`band_from_panels`]). Returns the
/// seconds it took.
#[allow(clippy::too_many_arguments)]
fn bring_back<T: Real, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    whole: &E::Buf,
    taubuf: &E::Buf,
    on_host: bool,
    ph: &mut Phases,
) -> Result<f64, ExecError> {
    let n = job.n;
    let started = Instant::now();
    if job.band_only && !on_host {
        band_from_device(exec, whole, job)?;
        progress.banded = n;
        ph.end(exec, 4)?;
        return Ok(started.elapsed().as_secs_f64());
    }
    if !on_host {
        let tau = &mut *job.tau;
        exec.download(taubuf, 0, n - job.kd, &mut |start, piece| {
            tau[start..start + piece.len()].copy_from_slice(piece)
        })?;
    }
    let host = &mut *job.host;
    for (c, w) in block_columns(n, TRANSFER_BLOCK) {
        let written = &mut progress.written_back;
        exec.download_block(whole, c + c * n, n, n - c, w, &mut |start, piece| {
            *written = true;
            host.scatter(c, n - c, c, start, piece)
        })?;
    }
    ph.end(exec, 4)?;
    if !on_host {
        progress.banded = band_from_panels(job);
    }
    Ok(started.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use crate::dispatch::Backend;
    use crate::sbr::driver::testing::{panic_message, random_input, reduce, reduce_with};
    use crate::sbr::executor::flaky::Flaky;
    use crate::sbr::plan::Mode;

    /// A band-only resident run (the eigenvalue drivers) gives a full run's band bit for bit
    /// and leaves the host's A as it was; stopped at any operation, it ends with LAPACK's band.
    #[test]
    fn band_only_run_matches_full_run() {
        let (n, kd) = (60, 5);
        let (a0, seed) = random_input(n);
        let whole = |left| Some((Flaky::new(left, false, true), Mode::Resident));
        for uplo in [b'L', b'U'] {
            let full = reduce(&a0, uplo, n, kd, whole(usize::MAX));
            let band = reduce_with(&a0, uplo, n, kd, whole(usize::MAX), true, true);
            let what = format!("uplo={} seed {seed}", uplo as char);
            assert_eq!(band.3.backend, Backend::Gpu, "{what}");
            assert!(band.1 == full.1, "AB differs: {what}");
            assert!(band.0 == a0, "A changed: {what}");
            let lapack = reduce(&a0, uplo, n, kd, None);
            let mut stopped = 0;
            for left in (0..1000).step_by(7) {
                let got = reduce_with(&a0, uplo, n, kd, whole(left), true, true);
                if got.3.backend == Backend::Gpu {
                    assert!(got.1 == full.1, "AB differs: {what} left={left}");
                } else {
                    stopped += 1;
                    assert!(
                        got.1 == lapack.1,
                        "AB differs from LAPACK's: {what} left={left}"
                    );
                }
            }
            assert!(stopped > 10, "{what}: only {stopped} runs stopped");
        }
    }

    /// A resident run whose final download fails half way has neither the input nor the
    /// result on the host: it must stop with an error, never restart LAPACK on the half-written
    /// matrix. Downloads that fail before writing anything still restart from the input.
    #[test]
    fn torn_final_download_is_an_error() {
        let (n, kd) = (40, 4);
        let (a0, _) = random_input(n);
        let lapack = reduce(&a0, b'L', n, kd, None);
        let (mut torn, mut restarted) = (0, 0);
        for left in 0..2000 {
            let exec = Flaky::new(left, false, true);
            let run =
                std::panic::catch_unwind(|| reduce(&a0, b'L', n, kd, Some((exec, Mode::Resident))));
            match run {
                Err(payload) => {
                    let msg = panic_message(payload);
                    assert!(msg.contains("the input is lost"), "left={left}: {msg}");
                    torn += 1;
                }
                Ok(got) if got.3.backend == Backend::Gpu => break, // ran to the end
                Ok(got) => {
                    assert!(got.0 == lapack.0 && got.1 == lapack.1, "left={left}");
                    restarted += 1;
                }
            }
        }
        // The final download hands one column per operation (one block: n < TRANSFER_BLOCK):
        // a failure at any column but the first tears it.
        assert_eq!(torn, n - 1, "failure points that tear the final download");
        assert!(restarted > 10);
    }
}
