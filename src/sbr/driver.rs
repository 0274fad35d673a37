//! One reduction from the user's arguments to its report: the problem, the choice of path
//! (system LAPACK, CPU executor, GPU executor), the run on the plan's mode, and the fallback
//! after an executor stops: the one place that decides between restarting on the untouched
//! input and resuming where the host's state allows (see the module notes of [`super`]).

use crate::config::SbrPanel;
use crate::device::memory::par_copy;
use crate::dispatch::Backend;
use crate::lapack::Dense;
use crate::real::Real;
use crate::sbr::executor::{cpu, gpu, op, op_mut, ExecError, Executor, Phases};
use crate::sbr::host::{put_band, HostMat};
use crate::sbr::panel::device::panel_mode;
use crate::sbr::panel::{
    cholqr, factor_panel, panel_through_executor, panel_v, upload_panel, upload_panels, PanelBufs,
    PanelSet, SubPanels,
};
use crate::sbr::plan::{block_columns, describe, symm_columns, Mode, SUB_PANEL, TRANSFER_BLOCK};
use crate::sbr::resident::{
    band_from_device, band_from_panels, lookahead, resident_steps, Resident,
};
use crate::sbr::streaming::{symm_pass, syr2k_pass, upload_v, NextStep, Pending, Ring, DIAG_TILE};
use crate::sbr::update::finish_x;
use crate::sbr::{plan, CublasReal, Path, SyrdbReport, FACTOPTNB};
use std::time::Instant;

/// The arguments of one reduction.
pub(super) struct Problem<'a, T> {
    pub(super) uplo: u8,
    pub(super) n: usize,
    pub(super) kd: usize,
    pub(super) a: &'a mut [T],
    pub(super) lda: usize,
    pub(super) ab: &'a mut [T],
    pub(super) ldab: usize,
    pub(super) tau: &'a mut [T],
    pub(super) band_only: bool,
    /// Streaming passes take the next step along (`HYLAPACK_SBR_STREAM_AHEAD`, see
    /// [`syr2k_pass`]).
    pub(super) stream_ahead: bool,
}

impl<'a, T: Real + Dense> Problem<'a, T> {
    /// A problem whose reflectors are wanted (`band_only` false).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        uplo: u8,
        n: usize,
        kd: usize,
        a: &'a mut [T],
        lda: usize,
        ab: &'a mut [T],
        ldab: usize,
        tau: &'a mut [T],
    ) -> Self {
        Problem {
            uplo,
            n,
            kd,
            a,
            lda,
            ab,
            ldab,
            tau,
            band_only: false,
            stream_ahead: crate::config::get().sbr.stream_ahead,
        }
    }

    pub(super) fn upper(&self) -> bool {
        self.uplo.eq_ignore_ascii_case(&b'U')
    }

    /// The system LAPACK's xSYTRD_SY2SB, in place.
    pub(super) fn lapack(&mut self) {
        let (n, kd) = (self.n, self.kd);
        // The general formula: LAPACK releases before 3.12 ask for it even when N ≤ KD + 1.
        let mut work = vec![T::ZERO; (n * kd + n * kd.max(FACTOPTNB) + 2 * kd * kd).max(1)];
        let info = T::sytrd_sy2sb(
            self.uplo, n, kd, self.a, self.lda, self.ab, self.ldab, self.tau, &mut work, false,
        );
        assert_eq!(info, 0, "xSYTRD_SY2SB rejected checked arguments");
    }
}

pub(super) fn reduce_on<T: Real + Dense + CublasReal>(
    mut p: Problem<T>,
    path: Path,
) -> SyrdbReport {
    let (n, kd, lda, ldab) = (p.n, p.kd, p.lda, p.ldab);
    let cpu = |note: Option<String>| SyrdbReport {
        backend: Backend::Cpu,
        note,
        transfer_secs: None,
    };
    if n <= kd + 1 {
        // Already a band: LAPACK's quick return copies the triangle into AB.
        let upper = p.upper();
        let host = HostMat { a: p.a, lda, upper };
        for j in 0..n {
            put_band(p.ab, ldab, kd, n, upper, j, |d| host.get(j + d, j));
        }
        return cpu(None);
    }
    let elem = std::mem::size_of::<T>();
    match path {
        Path::Lapack => {
            p.lapack();
            cpu(None)
        }
        Path::CpuBlocked { budget } => match plan(n, kd, elem, budget) {
            Ok(mode) => with_fallback(&mut cpu::CpuExecutor::new(budget), Backend::Cpu, mode, p),
            Err(e) => {
                p.lapack();
                cpu(Some(format!("{e}; system LAPACK")))
            }
        },
        Path::Gpu { budget } => match gpu::GpuExecutor::<T>::new(budget) {
            Ok(mut exec) => match plan(n, kd, elem, exec.budget()) {
                Ok(mode) => with_fallback(&mut exec, Backend::Gpu, mode, p),
                Err(e) => {
                    p.lapack();
                    cpu(Some(format!("GPU not used ({e}); system LAPACK")))
                }
            },
            Err(e) => {
                p.lapack();
                cpu(Some(format!("GPU not used ({e}); system LAPACK")))
            }
        },
    }
}

/// Runs the blocked reduction on `exec`; if it stops, finishes on the CPU without losing the
/// user's data (see the module's notes).
pub(super) fn with_fallback<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    backend: Backend,
    mode: Mode,
    mut p: Problem<T>,
) -> SyrdbReport {
    let (n, kd, ldab, upper) = (p.n, p.kd, p.ldab, p.upper());
    let mut progress = Progress {
        i: 0,
        banded: 0,
        pending: None,
        written_back: false,
        panels: [0, 0],
        direct: None,
        transfer_secs: None,
    };
    let mut host = HostMat {
        a: &mut *p.a,
        lda: p.lda,
        upper,
    };
    let mut job = Job {
        host: &mut host,
        n,
        kd,
        ab: &mut *p.ab,
        ldab,
        tau: &mut *p.tau,
        band_only: p.band_only,
        stream_ahead: p.stream_ahead,
        direct: false,
    };
    let mut report = SyrdbReport {
        backend,
        note: Some(describe(mode)),
        transfer_secs: None,
    };
    let ran = run(exec, &mut job, &mut progress, mode);
    let [chol, geqrf] = progress.panels;
    if chol + geqrf > 0 {
        report.note = Some(format!(
            "{} (panels: {chol} CholeskyQR2, {geqrf} xGEQRF)",
            describe(mode)
        ));
    }
    if let Some(how) = &progress.direct {
        let note = report.note.get_or_insert_with(String::new);
        note.push_str(&format!("; {how}"));
    }
    report.transfer_secs = progress.transfer_secs;
    if let Err(e) = ran {
        // Neither the input nor the result is on the host: no path can finish the call.
        assert!(
            !progress.written_back,
            "syrdb: the {} failed ({e}) while writing the reduced matrix back; the input is lost",
            backend.name()
        );
        let untouched = mode == Mode::Resident || (progress.i == 0 && progress.pending.is_none());
        report.backend = Backend::Cpu;
        if untouched {
            // The host A was not written yet: LAPACK starts over from it.
            crate::dispatch::debug(|| format!("syrdb: executor stopped ({e}); restarting"));
            drop(job);
            p.lapack();
            report.note = Some(format!("{} stopped ({e}); system LAPACK", backend.name()));
            return report;
        }
        // The host holds every finished block column: the CPU goes on from there.
        crate::dispatch::debug(|| format!("syrdb: executor stopped ({e}); resuming on the CPU"));
        let at = progress.i;
        let mut cpu = cpu::CpuExecutor::new(u64::MAX);
        run(&mut cpu, &mut job, &mut progress, mode).expect("the CPU executor does not fail");
        report.note = Some(format!(
            "{} stopped ({e}) at column {at}; finished on the CPU",
            backend.name()
        ));
    }
    let host = &*job.host;
    for j in progress.banded..n {
        put_band(job.ab, ldab, kd, n, upper, j, |d| host.get(j + d, j));
    }
    report
}

/// Where a run stands, kept on the host so that another executor can take over.
pub(super) struct Progress<T> {
    /// The next step's first column.
    pub(super) i: usize,
    /// Band columns `0..banded` are in AB.
    pub(super) banded: usize,
    /// A SYR2K pass interrupted after its first `done` columns of the trailing matrix, with
    /// its `V` and `X` (streaming mode only).
    pub(super) pending: Option<Pending<T>>,
    /// The host matrix may hold part of a write-back: of the resident mode's final download, or
    /// of a streaming block column. No path can finish the call after a failure then.
    pub(super) written_back: bool,
    /// Resident panels factored on the executor by CholeskyQR2 and by xGEQRF.
    pub(super) panels: [usize; 2],
    /// How streaming block columns moved straight between the host matrix and the executor,
    /// if they did (for the report).
    pub(super) direct: Option<String>,
    /// Seconds the resident mode spent moving the matrix to the executor and back.
    pub(super) transfer_secs: Option<f64>,
}

impl<T> Progress<T> {
    /// Adds panels factored by CholeskyQR2 and by xGEQRF.
    pub(super) fn count(&mut self, how: [usize; 2]) {
        self.panels[0] += how[0];
        self.panels[1] += how[1];
    }
}

/// Shared arguments of a run.
pub(super) struct Job<'h, 'a, T> {
    pub(super) host: &'h mut HostMat<'a, T>,
    pub(super) n: usize,
    pub(super) kd: usize,
    pub(super) ab: &'h mut [T],
    pub(super) ldab: usize,
    pub(super) tau: &'h mut [T],
    /// Only AB is wanted (see [`syrdb_band`]).
    pub(super) band_only: bool,
    /// See [`Problem::stream_ahead`].
    pub(super) stream_ahead: bool,
    /// The executor has mapped the host matrix (`Executor::map_host`): streaming block columns
    /// move straight between it and the executor.
    pub(super) direct: bool,
}

/// Runs the reduction from `progress` on `exec`, updating `progress` as it goes.
pub(super) fn run<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    mode: Mode,
) -> Result<(), ExecError> {
    let (n, kd) = (job.n, job.kd);
    let pk_max = kd.min(n.saturating_sub(kd + progress.i));
    let panel_len = n * pk_max.max(1);
    let mut vbuf = exec.alloc(panel_len)?;
    let mut zbuf = exec.alloc(panel_len)?;
    let mut xbuf = exec.alloc(panel_len)?;
    let mut sbuf = exec.alloc((pk_max * pk_max).max(1))?;
    let mut tbuf = exec.alloc((pk_max * pk_max).max(1))?;

    match mode {
        Mode::Resident => {
            let on_host = panel_mode() == SbrPanel::Host || !exec.can_factor();
            let mut ph = Phases::new(&["upload", "panel", "symm", "syr2k", "download", "band"]);
            let mut whole = exec.alloc(n * n)?;
            let mut taubuf = exec.alloc(n)?;
            // The lower triangle only, by block columns (rows c.. of columns c..c + w): the
            // strict upper triangle of the resident copy is never read.
            let host = &*job.host;
            let t_up = Instant::now();
            for (c, w) in block_columns(n, TRANSFER_BLOCK) {
                exec.upload_block(&mut whole, c + c * n, n, n - c, w, &mut |start, out| {
                    host.gather(c, n - c, c, start, out)
                })?;
            }
            exec.sync()?;
            let up = t_up.elapsed().as_secs_f64();
            ph.end(exec, 0)?;
            if on_host {
                while progress.i + kd < n {
                    let i = progress.i;
                    let (h, s) = (n - i, i + kd);
                    let (pn, pk) = (n - s, (n - s).min(kd));
                    // Columns i..i+kd, rows i.. of the resident copy, through a contiguous span.
                    let span_off = i + i * n;
                    let span_len = n * (kd - 1) + h;
                    let mut span = vec![T::ZERO; span_len];
                    exec.download(&whole, span_off, span_len, &mut |start, piece| {
                        span[start..start + piece.len()].copy_from_slice(piece)
                    })?;
                    let (v, t) = factor_panel(job, i, &mut span, n);
                    exec.upload(&mut whole, span_off, span_len, &mut |start, out| {
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
                        op(&whole, trailing, n),
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
                        op_mut(&mut whole, trailing, n),
                    )?;
                    ph.end(exec, 3)?;
                    progress.i += kd;
                }
            } else {
                let first = PanelSet {
                    v: vbuf,
                    z: zbuf,
                    s: sbuf,
                    t: tbuf,
                    q: exec.alloc(cholqr::scratch_len(pk_max).max(1))?,
                };
                let ahead = if lookahead() {
                    let small = (pk_max * pk_max).max(1);
                    let second = PanelSet {
                        v: exec.alloc(panel_len)?,
                        z: exec.alloc(panel_len)?,
                        s: exec.alloc(small)?,
                        t: exec.alloc(small)?,
                        q: exec.alloc(cholqr::scratch_len(pk_max).max(1))?,
                    };
                    Some((second, exec.alloc(panel_len)?))
                } else {
                    None
                };
                let resident = Resident {
                    whole: &mut whole,
                    taubuf: &mut taubuf,
                    xbuf: &mut xbuf,
                };
                // Panels wider than a sub-panel are factored by sub-panels, as the streaming
                // mode's: one CholeskyQR2 of k columns costs O(k³) on the host (40 s at
                // n = 32768, kd = 1024).
                let sub = if kd > SUB_PANEL {
                    Some(SubPanels::new(exec, n - kd, kd)?)
                } else {
                    None
                };
                resident_steps(exec, n, kd, progress, resident, first, ahead, sub, &mut ph)?;
            }
            exec.sync()?;
            let t_down = Instant::now();
            if job.band_only && !on_host {
                // Only the band goes back; the host's A keeps the input.
                band_from_device(exec, &whole, job)?;
                progress.banded = n;
                ph.end(exec, 4)?;
            } else {
                if !on_host {
                    let tau = &mut *job.tau;
                    exec.download(&taubuf, 0, n - kd, &mut |start, piece| {
                        tau[start..start + piece.len()].copy_from_slice(piece)
                    })?;
                }
                // The lower triangle by block columns, as it went up: the rest is not ours.
                let host = &mut *job.host;
                for (c, w) in block_columns(n, TRANSFER_BLOCK) {
                    let written = &mut progress.written_back;
                    exec.download_block(&whole, c + c * n, n, n - c, w, &mut |start, piece| {
                        *written = true;
                        host.scatter(c, n - c, c, start, piece)
                    })?;
                }
                ph.end(exec, 4)?;
                if !on_host {
                    progress.banded = band_from_panels(job);
                }
            }
            progress.transfer_secs = Some(up + t_down.elapsed().as_secs_f64());
            ph.end(exec, 5)?;
            ph.report(n, kd, "resident");
            if let (true, Some(split)) = (ph.on, cholqr::report()) {
                eprintln!("hylapack: syrdb panel steps n={n} kd={kd}: {split}");
            }
        }
        Mode::Streaming { nb } => {
            let mut host_ph = Phases::new(&["map", "buffers", "unmap"]);
            // SAFETY: the host matrix outlives the run; `unmap_host` ends it below.
            // Upper storage: block columns of L are block rows of A, which go through two
            // buffers to be transposed, in the ring's room (five buffers of 3/5 its width).
            job.direct = crate::config::get().sbr.direct
                && (!job.host.upper || nb >= 2)
                && unsafe { exec.map_host(job.host.a.as_mut_ptr(), job.host.a.len()) };
            let turn = job.direct && job.host.upper;
            let nb = if turn { nb * 3 / 5 } else { nb };
            if job.direct && progress.direct.is_none() {
                progress.direct = Some(if turn {
                    format!("direct transfers of block rows, transposed, {nb} wide")
                } else {
                    "direct block-column transfers".into()
                });
            }
            // Timing only: a failing wait shows again in the run below, which unmaps.
            host_ph.end(exec, 0).ok();
            // The host buffers of the steps (X, two panels, the diagonal block's tiles),
            // allocated once so that their pages are in place, and mapped beside the matrix.
            // They live here, in `spare` (between steps and during a step's panel and SYMM
            // pass) or in `progress.pending`, all of which outlive `unmap_host`; `p_next` holds
            // the next step's panel while a pass factors it.
            let (mut x, mut p, mut p_next, mut diagonal) = (
                Vec::with_capacity(n * kd),
                Vec::with_capacity(n * kd),
                Vec::with_capacity(n * kd),
                Vec::with_capacity(DIAG_TILE.min(nb) * nb),
            );
            if job.direct {
                for b in [&mut x, &mut p, &mut p_next, &mut diagonal] {
                    // SAFETY: the buffers are not reallocated (they stay within their
                    // capacity) and outlive the run, which ends with `unmap_host`.
                    unsafe { exec.map_host(b.as_mut_ptr(), b.capacity()) };
                }
            }
            let mut spare: Option<(Vec<T>, Vec<T>)> = None;
            host_ph.end(exec, 1).ok();
            let ran = (|| -> Result<(), ExecError> {
                let mut x_next = exec.alloc(panel_len)?;
                let ring_len = n * nb;
                let mut ring = Ring {
                    slots: [
                        exec.alloc(ring_len)?,
                        exec.alloc(ring_len)?,
                        exec.alloc(ring_len)?,
                    ],
                    turn: if turn {
                        Some([exec.alloc(ring_len)?, exec.alloc(ring_len)?])
                    } else {
                        None
                    },
                };
                let mut ph = Phases::new(&["panel", "symm pass", "X", "syr2k pass"]);
                let on_executor = panel_mode() != SbrPanel::Host && exec.can_factor();
                let mut sub = SubPanels::new(exec, n.saturating_sub(kd + progress.i), kd)?;
                let mut taubuf = exec.alloc(kd)?;
                // The last pass factored this step's panel (in `p_next`, Z in `zbuf`) and
                // formed its A₂ Z (in `x_next`), see `syr2k_pass`.
                let mut ahead = false;
                while progress.i + kd < n {
                    let i = progress.i;
                    let (h, s) = (n - i, i + kd);
                    let (pn, pk) = (n - s, (n - s).min(kd));
                    if let Some(pending) = &progress.pending {
                        // A SYR2K pass another executor left: its V and X come from the host.
                        let v = panel_v(&pending.panel, h, kd, pn, pending.pk);
                        upload_panels(exec, &mut vbuf, &mut xbuf, &v, &pending.x)?;
                    } else {
                        let (x, p) = spare.get_or_insert_with(|| {
                            (std::mem::take(&mut x), std::mem::take(&mut p))
                        });
                        if ahead {
                            std::mem::swap(p, &mut p_next);
                            std::mem::swap(&mut xbuf, &mut x_next);
                            upload_v(exec, job, &mut vbuf, p, h, pn, pk)?;
                            ph.end(exec, 0)?;
                            ph.end(exec, 1)?;
                        } else if on_executor && pn > kd {
                            p.resize(h * kd, T::ZERO);
                            // The diagonal block: the rows below come back factored.
                            for c in 0..kd {
                                job.host.gather(i, kd, i + c, 0, &mut p[c * h..c * h + kd]);
                            }
                            let bufs = PanelBufs {
                                p: &mut xbuf,
                                tau: &mut taubuf,
                                v: &mut vbuf,
                                z: &mut zbuf,
                                sub: &mut sub,
                                // (n · nb entries: room for the panel's n · kd if kd ≤ nb)
                                turn: ring.turn.as_mut().filter(|_| kd <= nb).map(|t| &mut t[0]),
                            };
                            let how = panel_through_executor(exec, job, i, p, h, bufs)?;
                            progress.count(how);
                        } else {
                            p.resize(h * kd, T::ZERO);
                            job.host.gather(i, h, i, 0, p);
                            let (v, t) = factor_panel(job, i, p, h);
                            upload_panel(exec, &mut vbuf, &mut tbuf, &mut zbuf, &v, &t, pn, pk)?;
                        }
                        if !ahead {
                            ph.end(exec, 0)?;
                            let cols = symm_columns(pn, nb, kd);
                            symm_pass(exec, job, &cols, &mut ring, &zbuf, &mut xbuf, s, pk)?;
                            ph.end(exec, 1)?;
                        }
                        finish_x(exec, pn, pk, &vbuf, &zbuf, &mut xbuf, &mut sbuf)?;
                        x.resize(pn * pk, T::ZERO);
                        if job.direct {
                            // SAFETY: `x` holds pn·pk entries and is ours alone.
                            let to = x.as_mut_ptr();
                            unsafe { exec.download_direct(&xbuf, 0, pn, pn, pk, to, pn)? };
                        } else {
                            exec.download(&xbuf, 0, pn * pk, &mut |start, piece| {
                                par_copy(&mut x[start..start + piece.len()], piece)
                            })?;
                        }
                        progress.pending = Some(Pending {
                            x: std::mem::take(x),
                            pk,
                            done: 0,
                            panel: std::mem::take(p),
                        });
                        ph.end(exec, 2)?;
                    }
                    // The next step's panel and SYMM ride along where its panel is the first
                    // kd columns of this pass's first block column and is factored on the
                    // executor (as `panel_through_executor` would, pn − kd > kd).
                    let fresh = progress.pending.as_ref().is_some_and(|p| p.done == 0);
                    let fuse = job.stream_ahead && on_executor && nb > kd && pn > 2 * kd && fresh;
                    let next = fuse.then_some(NextStep {
                        z: &mut zbuf,
                        x: &mut x_next,
                        tau: &mut taubuf,
                        sub: &mut sub,
                        panel: &mut p_next,
                    });
                    let (done, how) = syr2k_pass(
                        exec,
                        job,
                        progress,
                        nb,
                        &mut ring,
                        &vbuf,
                        &xbuf,
                        s,
                        &mut diagonal,
                        next,
                    )?;
                    spare = Some((done.x, done.panel));
                    // The step is on the host: count it before anything else can fail.
                    progress.i += kd;
                    progress.count(how);
                    ahead = fuse;
                    ph.end(exec, 3)?;
                }
                ph.report(n, kd, &describe(mode));
                if let (true, Some(split)) = (ph.on, cholqr::report()) {
                    eprintln!("hylapack: syrdb panel steps n={n} kd={kd}: {split}");
                }
                Ok(())
            })();
            if job.direct {
                host_ph.last = Instant::now();
                exec.unmap_host();
                job.direct = false;
                host_ph.end(exec, 2)?;
                host_ph.report(n, kd, "host memory");
            }
            ran?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::dispatch::Backend;
    use crate::sbr::driver::testing::{panic_message, random_input, reduce};
    use crate::sbr::executor::flaky::Flaky;
    use crate::sbr::plan::Mode;

    /// An executor that stops at any point leaves a result identical to an uninterrupted run:
    /// resumed on the CPU from the host's state (streaming), or LAPACK's from the untouched
    /// input (resident, or nothing written yet).
    #[test]
    fn failure_at_any_operation_is_recovered() {
        let (n, kd) = (60, 5);
        let (a0, seed) = random_input(n);
        for uplo in [b'L', b'U'] {
            for mode in [Mode::Streaming { nb: 7 }, Mode::Resident] {
                let whole = |left| Some((Flaky::new(left, false, false), mode));
                let clean = reduce(&a0, uplo, n, kd, whole(usize::MAX));
                let lapack = reduce(&a0, uplo, n, kd, None);
                let (mut resumed, mut torn) = (0, 0);
                for left in 0..4000 {
                    let what = format!("uplo={} {mode:?} left={left} seed {seed}", uplo as char);
                    // The resident write-back goes column by column into A: a failure after its
                    // first column must stop the call, and so must every later failure point
                    // up to the run that completes.
                    let run = std::panic::catch_unwind(|| reduce(&a0, uplo, n, kd, whole(left)));
                    let got = match run {
                        Err(payload) => {
                            let msg = panic_message(payload);
                            assert!(mode == Mode::Resident, "{what}: {msg}");
                            assert!(msg.contains("the input is lost"), "{what}: {msg}");
                            torn += 1;
                            continue;
                        }
                        Ok(got) => got,
                    };
                    let note = got.3.note.clone().unwrap_or_default();
                    assert!(
                        torn == 0 || got.3.backend == Backend::Gpu,
                        "{what}: after a tear"
                    );
                    let want = if note.contains("system LAPACK") {
                        &lapack
                    } else if note.contains("finished on the CPU") {
                        resumed += 1;
                        &clean
                    } else {
                        assert_eq!(got.3.backend, Backend::Gpu, "seed {seed}");
                        &clean
                    };
                    let what = format!("{what} ({note})");
                    assert!(got.0 == want.0, "A differs: {what}");
                    assert!(got.1 == want.1, "AB differs: {what}");
                    assert!(got.2 == want.2, "TAU differs: {what}");
                }
                if matches!(mode, Mode::Streaming { .. }) {
                    assert!(
                        resumed > 10,
                        "only {resumed} runs resumed: the test misses the point"
                    );
                } else {
                    assert_eq!(torn, n - 1, "uplo={}: torn write-backs", uplo as char);
                }
            }
        }
    }
}

/// What the tests of the modes share: reductions on a fault-injecting executor.
#[cfg(test)]
pub(super) mod testing {
    use crate::dispatch::Backend;
    use crate::sbr::driver::{with_fallback, Problem};
    use crate::sbr::executor::flaky::Flaky;
    use crate::sbr::plan::Mode;
    use crate::sbr::SyrdbReport;
    use crate::testmat::{dense_symmetric, DenseFamily, Rng};

    pub(in crate::sbr) type Outputs = (Vec<f64>, Vec<f64>, Vec<f64>, SyrdbReport);

    /// A random symmetric matrix of order n, and the seed it was drawn from.
    pub(in crate::sbr) fn random_input(n: usize) -> (Vec<f64>, u64) {
        let seed = crate::testmat::seed_from_time();
        (
            dense_symmetric(DenseFamily::Random, n, &mut Rng::new(seed)),
            seed,
        )
    }

    /// The message of a caught panic.
    pub(in crate::sbr) fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
        payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default()
    }

    /// A reduction on `exec` (LAPACK's where None), streaming passes taking the next step
    /// along (`stream_ahead`): these tests exercise both kinds of pass.
    pub(in crate::sbr) fn reduce(
        a0: &[f64],
        uplo: u8,
        n: usize,
        kd: usize,
        exec: Option<(Flaky, Mode)>,
    ) -> Outputs {
        reduce_with(a0, uplo, n, kd, exec, false, true)
    }

    pub(in crate::sbr) fn reduce_with(
        a0: &[f64],
        uplo: u8,
        n: usize,
        kd: usize,
        exec: Option<(Flaky, Mode)>,
        band_only: bool,
        stream_ahead: bool,
    ) -> Outputs {
        let (mut a, mut ab, mut tau) = (a0.to_vec(), vec![0.0; (kd + 1) * n], vec![0.0; n - kd]);
        let mut p = Problem::new(uplo, n, kd, &mut a, n, &mut ab, kd + 1, &mut tau);
        p.band_only = band_only;
        p.stream_ahead = stream_ahead;
        let report = match exec {
            Some((mut flaky, mode)) => with_fallback(&mut flaky, Backend::Gpu, mode, p),
            None => {
                let mut p = p;
                p.lapack();
                SyrdbReport {
                    backend: Backend::Cpu,
                    note: None,
                    transfer_secs: None,
                }
            }
        };
        (a, ab, tau, report)
    }
}
