//! One reduction from the user's arguments to its report: the problem, the choice of path
//! (system LAPACK, CPU executor, GPU executor), the run on the plan's mode, and the fallback
//! after an executor stops: the one place that decides between restarting on the untouched
//! input and resuming where the host's state allows (see the module notes of [`super`]).

use crate::config::SbrTuning;
use crate::dispatch::Backend;
use crate::lapack::Dense;
use crate::real::Real;
use crate::sbr::executor::host_zeros;
use crate::sbr::executor::{cpu, gpu, ExecError, Executor};
use crate::sbr::host::{put_band, HostMat};
use crate::sbr::plan::{describe, Mode};
use crate::sbr::streaming::Pending;
use crate::sbr::{plan, Path, SbrReal, SyrdbReport, FACTOPTNB, INFO_NO_HOST_MEMORY};
use crate::sbr::{resident, streaming};

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
    /// Streaming passes take the next step along where they can (see
    /// [`streaming::syr2k_pass`]): always, but the unit tests compare them with plain passes.
    pub(super) stream_ahead: bool,
    /// The settings, resolved once per call by [`reduce_on`].
    pub(super) tuning: SbrTuning,
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
            stream_ahead: true,
            tuning: SbrTuning::default(),
        }
    }

    pub(super) fn upper(&self) -> bool {
        self.uplo.eq_ignore_ascii_case(&b'U')
    }

    /// The system LAPACK's xSYTRD_SY2SB, in place; its workspace may not be allocated (the
    /// arrays then untouched).
    pub(super) fn lapack(&mut self) -> Result<(), ExecError> {
        let (n, kd) = (self.n, self.kd);
        // The general formula: LAPACK releases before 3.12 ask for it even when N ≤ KD + 1.
        let lwork = n * kd + n * kd.max(FACTOPTNB) + 2 * kd * kd;
        let mut work = host_zeros(lwork.max(1))?;
        let info = T::sytrd_sy2sb(
            self.uplo, n, kd, self.a, self.lda, self.ab, self.ldab, self.tau, &mut work, false,
        );
        assert_eq!(info, 0, "xSYTRD_SY2SB rejected checked arguments");
        Ok(())
    }

    /// [`Problem::lapack`], reported as run on the CPU with `note` (and why, where it could
    /// not run: then INFO is [`INFO_NO_HOST_MEMORY`] with the arrays untouched, and
    /// `lapack_without_workspace` set).
    pub(super) fn lapack_report(&mut self, note: Option<String>) -> SyrdbReport {
        let mut report = SyrdbReport::new(Backend::Cpu, note);
        if let Err(e) = self.lapack() {
            report.lapack_without_workspace = true;
            let why = format!("xSYTRD_SY2SB's workspace: {e}");
            let then = " (a Fortran name runs LAPACK in its caller's WORK instead)";
            no_host_memory(&mut report, why, then);
        }
        report
    }
}

/// Marks `report` as failed for want of host memory ([`INFO_NO_HOST_MEMORY`]), `why` added to
/// its note and written on stderr, followed by `then`.
fn no_host_memory(report: &mut SyrdbReport, why: String, then: &str) {
    crate::log::warn(&format!(
        "syrdb: {why}; returning INFO = {INFO_NO_HOST_MEMORY}{then}"
    ));
    report.info = INFO_NO_HOST_MEMORY;
    report.note = Some(match report.note.take() {
        Some(before) => format!("{before}; {why}"),
        None => why,
    });
}

pub(super) fn reduce_on<T: SbrReal>(mut p: Problem<T>, path: Path) -> SyrdbReport {
    // The one place a reduction reads the settings.
    p.tuning = crate::config::get().sbr;
    let (n, kd, lda, ldab) = (p.n, p.kd, p.lda, p.ldab);
    if n <= kd + 1 {
        // Already a band: LAPACK's quick return copies the triangle into AB.
        let upper = p.upper();
        let host = HostMat { a: p.a, lda, upper };
        for j in 0..n {
            put_band(p.ab, ldab, kd, n, upper, j, |d| host.get(j + d, j));
        }
        return SyrdbReport::new(Backend::Cpu, None);
    }
    let elem = std::mem::size_of::<T>();
    match path {
        Path::Lapack => p.lapack_report(None),
        Path::CpuBlocked { budget } => match plan(n, kd, elem, budget) {
            Ok(mode) => with_fallback(&mut cpu::CpuExecutor::new(budget), Backend::Cpu, mode, p),
            Err(e) => p.lapack_report(Some(format!("{e}; system LAPACK"))),
        },
        Path::Gpu { budget } => match gpu::GpuExecutor::<T>::new(budget) {
            Ok(mut exec) => match plan(n, kd, elem, exec.budget()) {
                Ok(mode) => with_fallback(&mut exec, Backend::Gpu, mode, p),
                Err(e) => p.lapack_report(Some(format!("GPU not used ({e}); system LAPACK"))),
            },
            Err(e) => p.lapack_report(Some(format!("GPU not used ({e}); system LAPACK"))),
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
        tuning: p.tuning,
        direct: false,
    };
    let mut report = SyrdbReport::new(backend, Some(describe(mode)));
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
            let note = format!("{} stopped ({e}); system LAPACK", backend.name());
            return p.lapack_report(Some(note));
        }
        // The host holds every finished block column: the CPU goes on from there.
        crate::dispatch::debug(|| format!("syrdb: executor stopped ({e}); resuming on the CPU"));
        let at = progress.i;
        let mut cpu = cpu::CpuExecutor::new(u64::MAX);
        let resumed = run(&mut cpu, &mut job, &mut progress, mode);
        report.note = Some(format!(
            "{} stopped ({e}) at column {at}; finished on the CPU",
            backend.name()
        ));
        if let Err(e) = resumed {
            // The CPU executor fails only for want of host memory; the input is gone.
            report.note = Some(format!("{} stopped at column {at}", backend.name()));
            let why = format!("the CPU could not finish ({e}): the input is lost");
            no_host_memory(&mut report, why, "");
            return report;
        }
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
    pub(super) tuning: SbrTuning,
    /// The executor has mapped the host matrix (`Executor::map_host`): streaming block columns
    /// move straight between it and the executor.
    pub(super) direct: bool,
}

/// The executor buffers of every step: `V`, `Z = V T` and `X` (n x kd each), two kd x kd
/// matrices (`T` and scratch).
pub(super) struct StepBufs<B> {
    pub(super) v: B,
    pub(super) z: B,
    pub(super) x: B,
    pub(super) s: B,
    pub(super) t: B,
}

/// Runs the reduction from `progress` on `exec`, updating `progress` as it goes: the step
/// buffers, then the plan's mode.
pub(super) fn run<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    mode: Mode,
) -> Result<(), ExecError> {
    let (n, kd) = (job.n, job.kd);
    let pk_max = kd.min(n.saturating_sub(kd + progress.i));
    let panel_len = n * pk_max.max(1);
    let bufs = StepBufs {
        v: exec.alloc(panel_len)?,
        z: exec.alloc(panel_len)?,
        x: exec.alloc(panel_len)?,
        s: exec.alloc((pk_max * pk_max).max(1))?,
        t: exec.alloc((pk_max * pk_max).max(1))?,
    };
    match mode {
        Mode::Resident => resident::run(exec, job, progress, bufs, pk_max, panel_len),
        Mode::Streaming { nb } => streaming::run(exec, job, progress, mode, nb, bufs, panel_len),
    }
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

    /// Whether there is a GPU for a test; without one the test is to skip, unless
    /// `HYLAPACK_REQUIRE_GPU=1` (read here, for the tests of every stage), where it fails.
    pub(in crate::sbr) fn has_gpu() -> bool {
        match crate::device::gpu() {
            Ok(_) => true,
            Err(e) => {
                let required = crate::config::get().require_gpu;
                assert!(!required, "HYLAPACK_REQUIRE_GPU=1 but no GPU: {e}");
                false
            }
        }
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
                p.lapack_report(None)
            }
        };
        (a, ab, tau, report)
    }
}
