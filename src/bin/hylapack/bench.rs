//! `hylapack bench <family>`: this library and its peers timed in one run on one machine.

use crate::table::{time, timings, Table};
use hylapack::dispatch::Backend;
use hylapack::lapack::Lapack;
use hylapack::stebz::{self, gpu::CountModel};
use hylapack::testmat::{self, Rng, TridiagFamily};
use std::time::Instant;

struct Options {
    sizes: Vec<usize>,
    csv: Option<String>,
    /// The CPU methods (all O(n^2)) run only where their predicted time is below this.
    lapack_stebz_limit_s: f64,
    index_n: usize,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        sizes: vec![1000, 8000, 32000, 100_000],
        csv: None,
        lapack_stebz_limit_s: 25.0,
        index_n: 1_000_000,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sizes" => {
                let v = it.next().ok_or("--sizes needs a list")?;
                o.sizes = v
                    .split(',')
                    .map(|s| s.trim().parse().map_err(|_| format!("bad size {s}")))
                    .collect::<Result<_, _>>()?;
            }
            "--csv" => o.csv = Some(it.next().ok_or("--csv needs a file")?.clone()),
            "--quick" => {
                o.sizes = vec![500, 2000];
                o.lapack_stebz_limit_s = 5.0;
                o.index_n = 50_000;
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

pub fn run(args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        Some("stebz") => match parse(&args[1..]) {
            Ok(o) => bench_stebz(&o),
            Err(e) => {
                eprintln!("hylapack bench stebz: {e}");
                2
            }
        },
        Some("gtsv") => crate::bench_gtsv::bench_gtsv(&args[1..]),
        Some("stein") => crate::bench_stein::bench_stein(&args[1..]),
        Some("syev") => crate::bench_syev::bench_syev(&args[1..]),
        Some("interval") => crate::bench_interval::bench_interval(&args[1..]),
        Some("overhead") => crate::bench_overhead::bench_overhead(&args[1..]),
        Some("processes") => crate::bench_processes::bench_processes(&args[1..]),
        Some(other) => {
            eprintln!(
                "hylapack bench: no benchmark '{other}' (available: stebz, stein, gtsv, syev, interval, overhead, processes)"
            );
            2
        }
        None => {
            eprintln!("usage: hylapack bench stebz|stein|gtsv|syev|interval|overhead|processes [--sizes ...] [--csv FILE] [--quick]");
            2
        }
    }
}

/// Skips a method whose O(n^2) time, extrapolated from its last run on the same family, would
/// exceed the limit.
#[derive(Default)]
struct Predictor {
    seconds_per_n2: Vec<(TridiagFamily, f64)>,
}

impl Predictor {
    fn run(
        &mut self,
        family: TridiagFamily,
        n: usize,
        limit_s: f64,
        f: impl FnOnce() -> Option<Run>,
    ) -> Option<Run> {
        let rate = self
            .seconds_per_n2
            .iter()
            .find(|(f, _)| *f == family)
            .map(|(_, r)| *r);
        if rate.is_some_and(|r| r * (n as f64).powi(2) > limit_s) {
            return None;
        }
        let result = f();
        if let Some(r) = &result {
            self.seconds_per_n2.retain(|(f, _)| *f != family);
            self.seconds_per_n2
                .push((family, r.seconds / (n as f64).powi(2)));
        }
        result
    }
}

/// Median wall time of `f` over `reps` runs.
fn median_time(reps: usize, f: impl FnMut()) -> f64 {
    let t = timings(reps, f);
    t[t.len() / 2]
}

struct Run {
    seconds: f64,
    w: Vec<f64>,
    /// Sturm row-steps per second the GPU sustained over the whole call.
    gpu_rate: Option<f64>,
    /// What the counter of a GPU call did.
    batches: Option<stebz::gpu::CountStats>,
}

fn ours(
    d: &[f64],
    e: &[f64],
    range: u8,
    il: i32,
    iu: i32,
    backend: Backend,
    reps: usize,
) -> Option<Run> {
    let n = d.len();
    let (mut w, mut iblock, mut isplit) = (vec![0.0; n], vec![0; n], vec![0; n]);
    let mut used = backend;
    let mut m = 0;
    let seconds = median_time(reps, || {
        let r = stebz::stebz(
            range,
            b'E',
            0.0,
            0.0,
            il,
            iu,
            0.0,
            d,
            e,
            &mut w,
            &mut iblock,
            &mut isplit,
            backend,
        );
        used = r.backend;
        m = r.m;
    });
    let stats = stebz::gpu::last_call_stats();
    let gpu_rate = (backend == Backend::Gpu).then(|| stats.gpu_steps as f64 / seconds);
    let batches = (backend == Backend::Gpu).then_some(stats);
    (used == backend).then(|| Run {
        seconds,
        w: w[..m as usize].to_vec(),
        gpu_rate,
        batches,
    })
}

fn lapack_stebz(d: &[f64], e: &[f64], range: u8, il: i32, iu: i32) -> Run {
    let n = d.len();
    let (mut w, mut iblock, mut isplit) = (vec![0.0; n], vec![0; n], vec![0; n]);
    let s = Instant::now();
    let r = f64::stebz(
        range,
        b'E',
        0.0,
        0.0,
        il,
        iu,
        0.0,
        d,
        e,
        &mut w,
        &mut iblock,
        &mut isplit,
    );
    Run {
        seconds: s.elapsed().as_secs_f64(),
        w: w[..r.m as usize].to_vec(),
        gpu_rate: None,
        batches: None,
    }
}

fn max_err(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::NAN;
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

fn bench_stebz(o: &Options) -> i32 {
    let seed = testmat::seed_from_time();
    let mut rng = Rng::new(seed);
    let gpu = hylapack::device::gpu();
    println!(
        "bench stebz (double precision, RANGE='A', ORDER='E', ABSTOL=0), seed {seed}; GPU: {}; host threads: {}",
        gpu.as_ref().map_or_else(|e| format!("none ({e})"), |g| g.info.name.clone()),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let mut table = Table::new(&[
        "family",
        "n",
        "gpu",
        "cpu",
        "dstebz",
        "dsterf",
        "dstemr",
        "gpu/dstebz",
        "gpu/dsterf",
        "cpu/dstebz",
        "err gpu",
        "err cpu",
        "ref",
        "gpu Tstep/s",
        "batches g/c",
        "ms g/c/setup",
    ]);
    let fmt_t = |r: &Option<Run>| r.as_ref().map_or("-".to_string(), |r| time(r.seconds));
    // The O(n^2) methods are skipped where their time predicted from the last size exceeds the
    // limit; a skipped cell shows "-".
    let mut budget = [
        Predictor::default(),
        Predictor::default(),
        Predictor::default(),
        Predictor::default(),
    ];
    for &n in &o.sizes {
        let families: &[TridiagFamily] = if n <= 8000 {
            &[
                TridiagFamily::OneTwoOne,
                TridiagFamily::Random,
                TridiagFamily::GluedOneTwoOne,
                TridiagFamily::WilkinsonPlus,
                TridiagFamily::Clustered,
            ]
        } else {
            &[TridiagFamily::OneTwoOne, TridiagFamily::Random]
        };
        for &family in families {
            let (d, e) = testmat::tridiag::<f64>(family, n, &mut rng);
            let reps = if n <= 8000 { 3 } else { 1 };
            let gpu_run = gpu
                .is_ok()
                .then(|| ours(&d, &e, b'A', 1, n as i32, Backend::Gpu, reps))
                .flatten();
            let limit = o.lapack_stebz_limit_s;
            let cpu_run = budget[0].run(family, n, limit, || {
                ours(&d, &e, b'A', 1, n as i32, Backend::Cpu, 1)
            });
            let lapack = budget[1].run(family, n, limit, || {
                Some(lapack_stebz(&d, &e, b'A', 1, n as i32))
            });
            let sterf = budget[2].run(family, n, limit, || {
                let (mut dd, mut ee) = (d.clone(), e.clone());
                let s = Instant::now();
                f64::sterf(&mut dd, &mut ee);
                Some(Run {
                    seconds: s.elapsed().as_secs_f64(),
                    w: dd,
                    gpu_rate: None,
                    batches: None,
                })
            });
            let stemr = budget[3].run(family, n, limit, || {
                let (mut dd, mut ee) = (d.clone(), e.clone());
                ee.push(0.0);
                let mut ww = vec![0.0; n];
                let s = Instant::now();
                f64::stemr_values(&mut dd, &mut ee, &mut ww);
                Some(Run {
                    seconds: s.elapsed().as_secs_f64(),
                    w: ww,
                    gpu_rate: None,
                    batches: None,
                })
            });
            // Errors against LAPACK dstebz where it ran, else against dsterf.
            let (reference, ref_name) = match (&lapack, &sterf) {
                (Some(l), _) => (Some(&l.w), "dstebz"),
                (None, Some(s)) => (Some(&s.w), "dsterf"),
                _ => (None, "-"),
            };
            let err = |r: &Option<Run>| match (r, reference) {
                (Some(r), Some(w)) => format!("{:.1e}", max_err(&r.w, w)),
                _ => "-".to_string(),
            };
            let ratio = |a: &Option<Run>, b: &Option<Run>| match (a, b) {
                (Some(a), Some(b)) => format!("{:.1}x", b.seconds / a.seconds),
                _ => "-".into(),
            };
            table.row(vec![
                family.name().into(),
                n.to_string(),
                fmt_t(&gpu_run),
                fmt_t(&cpu_run),
                fmt_t(&lapack),
                fmt_t(&sterf),
                fmt_t(&stemr),
                ratio(&gpu_run, &lapack),
                ratio(&gpu_run, &sterf),
                ratio(&cpu_run, &lapack),
                err(&gpu_run),
                err(&cpu_run),
                ref_name.into(),
                gpu_run
                    .as_ref()
                    .and_then(|r| r.gpu_rate)
                    .map_or("-".into(), |r| format!("{:.3}", r / 1e12)),
                gpu_run
                    .as_ref()
                    .and_then(|r| r.batches)
                    .map_or("-".into(), |s| {
                        format!("{}/{}", s.gpu_batches, s.cpu_batches)
                    }),
                gpu_run
                    .as_ref()
                    .and_then(|r| r.batches)
                    .map_or("-".into(), |s| {
                        format!(
                            "{:.1}/{:.1}/{:.1}",
                            s.gpu_seconds * 1e3,
                            s.cpu_seconds * 1e3,
                            s.setup_seconds * 1e3
                        )
                    }),
            ]);
            eprintln!("  done {} n={n}", family.name());
        }
    }
    table.print();

    // RANGE = 'I': 1% of the spectrum from the middle of a random matrix. At the largest size
    // LAPACK would take far too long for the whole window: it is checked on 10 eigenvalues of it.
    let mut t2 = Table::new(&[
        "RANGE='I'",
        "n",
        "eigenvalues",
        "gpu",
        "cpu",
        "dstebz",
        "gpu speedup",
        "cpu speedup",
        "err gpu",
        "err cpu",
        "checked",
    ]);
    for n in [o.index_n / 50, o.index_n] {
        let (d, e) = testmat::tridiag::<f64>(TridiagFamily::Random, n, &mut rng);
        let k = (n / 100).max(1) as i32;
        let il = (n as i32 - k) / 2 + 1;
        let iu = il + k - 1;
        let whole = n < o.index_n;
        let gpu_run = gpu
            .is_ok()
            .then(|| ours(&d, &e, b'I', il, iu, Backend::Gpu, 1))
            .flatten();
        let cpu_run = if whole {
            ours(&d, &e, b'I', il, iu, Backend::Cpu, 1)
        } else {
            None
        };
        let check_iu = if whole { iu } else { il + 9 };
        let lapack = lapack_stebz(&d, &e, b'I', il, check_iu);
        let checked = lapack.w.len();
        let speed = |r: &Option<Run>| match r {
            Some(r) if whole => format!("{:.1}x", lapack.seconds / r.seconds),
            _ => "-".to_string(),
        };
        let err = |r: &Option<Run>| {
            r.as_ref().map_or("-".to_string(), |r| {
                format!("{:.1e}", max_err(&r.w[..checked.min(r.w.len())], &lapack.w))
            })
        };
        t2.row(vec![
            "random".into(),
            n.to_string(),
            k.to_string(),
            fmt_t(&gpu_run),
            fmt_t(&cpu_run),
            if whole {
                time(lapack.seconds)
            } else {
                format!("({} for 10)", time(lapack.seconds))
            },
            speed(&gpu_run),
            speed(&cpu_run),
            err(&gpu_run),
            err(&cpu_run),
            checked.to_string(),
        ]);
    }
    t2.print();

    // The standalone Count kernel on one large batch: the ceiling for sustained throughput.
    if gpu.is_ok() {
        count_ceiling(&mut rng);
    }
    if let Some(path) = &o.csv {
        if let Err(e) = table.write_csv(path) {
            eprintln!("cannot write {path}: {e}");
        }
    }
    0
}

/// Sturm steps per second of the count kernel alone on a batch that fills the GPU.
fn count_ceiling(rng: &mut Rng) {
    use hylapack::stebz::count::{Counter, SturmProblem};
    let n = 32_000;
    let (d, e) = testmat::tridiag::<f64>(TridiagFamily::Random, n, rng);
    let mut e2: Vec<f64> = e.iter().map(|x| x * x).collect();
    e2.push(0.0);
    let ends = [n];
    let p = SturmProblem {
        d: &d,
        e2: &e2,
        pivmin: f64::MIN_POSITIVE,
        block_ends: &ends,
    };
    let always_gpu = CountModel::always_gpu();
    let Ok(mut counter) = stebz::gpu::GpuCounter::with_model(&p, always_gpu) else {
        return;
    };
    let points = 200_000;
    let x: Vec<f64> = (0..points).map(|_| rng.range(-3.0, 3.0)).collect();
    let blocks = vec![0u32; points];
    let mut counts = vec![0; points];
    counter.count(&blocks, &x, &mut counts).ok();
    let t = median_time(5, || {
        counter.count(&blocks, &x, &mut counts).ok();
    });
    println!(
        "count kernel alone: {points} points x {n} rows in {}: {:.3} T steps/s",
        time(t),
        (points * n) as f64 / t / 1e12
    );
}
