//! Who evaluates the Sturm counts of a call: the backend asked for, built on first use, and
//! the CPU when the GPU cannot start or fails mid-run (same counts, so the same result); the
//! [`Trace`] of what happened goes into the report.

use super::count::{Counter, SturmProblem};
use super::cpu::CpuCounter;
use super::gpu;
use crate::dispatch::Backend;
use crate::real::Real;

/// What the counters did, for the report.
#[derive(Default)]
pub(super) struct Trace {
    pub(super) fell_back: bool,
    pub(super) notes: Vec<String>,
}

impl Trace {
    pub(super) fn fall_back(&mut self, why: String) {
        crate::dispatch::debug(|| format!("stebz: {why}"));
        self.fell_back = true;
        self.notes.push(why);
    }
}

/// The counter of one problem, built on first use, with the GPU-to-CPU fallback.
pub(super) struct Counting<'p, T: Real> {
    problem: SturmProblem<'p, T>,
    want: Backend,
    counter: Option<Box<dyn Counter<T> + 'p>>,
}

impl<'p, T: Real> Counting<'p, T> {
    pub(super) fn new(problem: SturmProblem<'p, T>, want: Backend) -> Self {
        Counting {
            problem,
            want,
            counter: None,
        }
    }

    fn counter(&mut self, trace: &mut Trace) -> &mut (dyn Counter<T> + 'p) {
        #[cfg(test)]
        if self.counter.is_none() {
            if let Some(calls) = tests::FLAKY_GPU.with(|f| f.get()) {
                let cpu = CpuCounter::new(&self.problem);
                self.counter = Some(Box::new(tests::Flaky { cpu, calls }));
            }
        }
        if self.counter.is_none() {
            let counter: Box<dyn Counter<T> + 'p> = match self.want {
                Backend::Gpu => match gpu::GpuCounter::new(&self.problem) {
                    Ok(gpu) => Box::new(gpu),
                    Err(why) => {
                        trace.fall_back(format!("GPU not used ({why}); counted on the CPU"));
                        Box::new(CpuCounter::new(&self.problem))
                    }
                },
                Backend::Cpu => Box::new(CpuCounter::new(&self.problem)),
            };
            self.counter = Some(counter);
        }
        self.counter.as_deref_mut().expect("just built")
    }

    pub(super) fn points_per_interval(&mut self, trace: &mut Trace, intervals: usize) -> usize {
        self.counter(trace).points_per_interval(intervals).max(1)
    }

    pub(super) fn count(&mut self, trace: &mut Trace, blocks: &[u32], x: &[T], counts: &mut [i32]) {
        let counter = self.counter(trace);
        if let Err(why) = counter.count(blocks, x, counts) {
            let name = counter.name();
            trace.fall_back(format!("{name} count failed ({why}); finished on the CPU"));
            let cpu = CpuCounter::new(&self.problem);
            cpu.count_into(blocks, x, counts);
            self.counter = Some(Box::new(cpu));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stebz::count::CountError;
    use crate::stebz::stebz;
    use crate::testmat::{self, Rng, TridiagFamily};
    use std::cell::Cell;

    thread_local! {
        /// When set, counters of this thread are a "GPU" that fails after that many batches.
        pub(super) static FLAKY_GPU: Cell<Option<usize>> = const { Cell::new(None) };
    }

    /// A counter that answers like the CPU, then fails like a lost GPU.
    pub(super) struct Flaky<'a, T> {
        pub cpu: CpuCounter<'a, T>,
        pub calls: usize,
    }

    impl<T: Real> Counter<T> for Flaky<'_, T> {
        fn points_per_interval(&self, intervals: usize) -> usize {
            (64 / intervals.max(1)).max(1)
        }
        fn count(&mut self, blocks: &[u32], x: &[T], counts: &mut [i32]) -> Result<(), CountError> {
            if self.calls == 0 {
                // A failed launch may leave garbage behind.
                counts.iter_mut().for_each(|c| *c = -7);
                return Err(CountError("launch failed".into()));
            }
            self.calls -= 1;
            self.cpu.count_into(blocks, x, counts);
            Ok(())
        }
        fn name(&self) -> &'static str {
            "gpu"
        }
    }

    /// A GPU lost mid-run: the CPU finishes, with the same results, and the report says so.
    #[test]
    fn gpu_failing_mid_run_falls_back() {
        let mut rng = Rng::new(5);
        for (family, range) in [
            (TridiagFamily::Random, b'A'),
            (TridiagFamily::Split, b'I'),
            (TridiagFamily::Clustered, b'V'),
        ] {
            let (d, e) = testmat::tridiag::<f64>(family, 120, &mut rng);
            let run = |flaky: Option<usize>| {
                FLAKY_GPU.with(|f| f.set(flaky));
                let (mut w, mut ib, mut is) = (vec![0.0; 120], vec![0; 120], vec![0; 120]);
                let r = stebz(
                    range,
                    b'E',
                    -10.0,
                    10.0,
                    10,
                    90,
                    0.0,
                    &d,
                    &e,
                    &mut w,
                    &mut ib,
                    &mut is,
                    Backend::Gpu,
                );
                FLAKY_GPU.with(|f| f.set(None));
                (r, w, ib, is)
            };
            let (clean, w0, ib0, is0) = run(Some(usize::MAX));
            assert_eq!((clean.backend, clean.note.as_deref()), (Backend::Gpu, None));
            assert!(clean.m > 0);
            for calls in [0, 1, 2] {
                let (r, w, ib, is) = run(Some(calls));
                assert_eq!(
                    (r.m, r.nsplit, r.info),
                    (clean.m, clean.nsplit, clean.info),
                    "{calls}"
                );
                assert_eq!(r.backend, Backend::Cpu, "{} {calls} {r:?}", family.name());
                assert!(
                    r.note.as_deref().unwrap_or("").contains("launch failed"),
                    "{:?}",
                    r.note
                );
                let m = r.m as usize;
                assert_eq!(
                    (&ib[..m], &is[..r.nsplit as usize]),
                    (&ib0[..m], &is0[..r.nsplit as usize])
                );
                assert!(
                    w[..m]
                        .iter()
                        .zip(&w0)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{calls}"
                );
            }
        }
    }
}
