//! `hylapack bench overhead`: what the preload library adds to tiny LAPACK calls.
//!
//! The preload library is opened privately (`RTLD_LOCAL`) and each intercepted name is called
//! through it and directly in the LAPACK the library itself falls back to (the same one the
//! preload forwards to here), on the same inputs, n = 1, 2, 8, 32. The environment applies as
//! usual (`HYLAPACK_PRELOAD`, `HYLAPACK_DEVICE`).

use crate::table::Table;
use hylapack::lapack::signatures::{GtsvFn, StebzFn, SteinFn, SyevFn, SyevdFn, SyevrFn, SyevxFn};
use hylapack::lapack::symbols;
use hylapack::lapack::Lapack;
use hylapack::testmat::Rng;
use std::ffi::{c_char, c_int, c_void, CString};
use std::time::{Duration, Instant};

const SIZES: [usize; 4] = [1, 2, 8, 32];
/// The per-call overhead the preload may add (issue #22's target).
const ALLOWED_US: f64 = 2.0;

/// The inputs of one size, and room for every output (each call restores its inputs first).
struct Problem<T> {
    n: usize,
    d: Vec<T>,
    e: Vec<T>,
    a: Vec<T>,
    scratch: Vec<T>,
    work: Vec<T>,
    iwork: Vec<c_int>,
    ints: Vec<c_int>,
    /// xSTEBZ's eigenvalues with ORDER = 'B' (W, IBLOCK, ISPLIT), xSTEIN's input.
    by_block: (Vec<T>, Vec<c_int>, Vec<c_int>),
}

impl<T: Lapack> Problem<T> {
    fn new(n: usize, rng: &mut Rng) -> Self {
        let d: Vec<T> = (0..n)
            .map(|_| T::from_f64(rng.uniform() * 2.0 - 1.0))
            .collect();
        let e: Vec<T> = (0..n)
            .map(|_| T::from_f64(rng.uniform() * 2.0 - 1.0))
            .collect();
        let (mut w, mut iblock, mut isplit) = (vec![T::ZERO; n], vec![0; n], vec![0; n]);
        let z = T::ZERO;
        let found = T::stebz(
            b'A',
            b'B',
            z,
            z,
            0,
            0,
            z,
            &d,
            &e[..n - 1],
            &mut w,
            &mut iblock,
            &mut isplit,
        );
        w.truncate(found.m.max(0) as usize);
        iblock.truncate(w.len());
        let mut a = vec![T::ZERO; n * n];
        for j in 0..n {
            for i in j..n {
                let x = T::from_f64(rng.uniform() * 2.0 - 1.0);
                a[i + j * n] = x;
                a[j + i * n] = x;
            }
        }
        // Enough for every driver's optimal workspace at these orders (xSYEV_2STAGE asks most).
        let lwork = 1 << 17;
        Problem {
            n,
            d,
            e,
            a,
            scratch: vec![T::ZERO; 4 * n * n + 8 * n + 8],
            work: vec![T::ZERO; lwork],
            iwork: vec![0; 16 * n + 64],
            ints: vec![0; 8 * n + 8],
            by_block: (w, iblock, isplit),
        }
    }
}

/// One call of the named routine at `f` on `p` (inputs copied in first).
unsafe fn call<T: Lapack>(name: &str, f: usize, p: &mut Problem<T>) {
    let n = p.n as c_int;
    let (c_a, c_n, c_v, c_b, c_e, c_u) = (b'A', b'N', b'V', b'B', b'E', b'U');
    let ch = |c: &u8| c as *const u8 as *const c_char;
    let (zero, one, abstol) = (T::ZERO, T::ONE, T::ZERO);
    let (il, iu, nrhs) = (1 as c_int, n, 1 as c_int);
    let lwork = p.work.len() as c_int;
    let liwork = p.iwork.len() as c_int;
    let (mut m, mut nsplit, mut info) = (0 as c_int, 0 as c_int, 0 as c_int);
    let n_ = p.n;
    let s = &mut p.scratch;
    let w = s.as_mut_ptr().add(n_ * n_);
    let z = s.as_mut_ptr().add(n_ * n_ + n_);
    let (iblock, rest) = p.ints.split_at_mut(n_ + 1);
    let (isplit, ifail) = rest.split_at_mut(n_ + 1);
    let _ = c_v;
    match &name[1..] {
        "stebz_" => {
            let f: StebzFn<T> = std::mem::transmute(f);
            f(
                ch(&c_a),
                ch(&c_b),
                &n,
                &zero,
                &one,
                &il,
                &iu,
                &abstol,
                p.d.as_ptr(),
                p.e.as_ptr(),
                &mut m,
                &mut nsplit,
                w,
                iblock.as_mut_ptr(),
                isplit.as_mut_ptr(),
                p.work.as_mut_ptr(),
                p.iwork.as_mut_ptr(),
                &mut info,
                1,
                1,
            );
            let _ = c_e;
        }
        "stein_" => {
            let (w, iblock, isplit) = &p.by_block;
            let m = w.len() as c_int;
            let f: SteinFn<T> = std::mem::transmute(f);
            f(
                &n,
                p.d.as_ptr(),
                p.e.as_ptr(),
                &m,
                w.as_ptr(),
                iblock.as_ptr(),
                isplit.as_ptr(),
                s.as_mut_ptr(),
                &n,
                p.work.as_mut_ptr(),
                p.iwork.as_mut_ptr(),
                ifail.as_mut_ptr(),
                &mut info,
            );
        }
        "gtsv_" => {
            // DL, D, DU, B in the scratch matrix's room.
            s[..n_].copy_from_slice(&p.e);
            s[n_..2 * n_].iter_mut().for_each(|x| *x = T::from_f64(4.0));
            s[2 * n_..3 * n_].copy_from_slice(&p.e);
            s[3 * n_..4 * n_].copy_from_slice(&p.d);
            let f: GtsvFn<T> = std::mem::transmute(f);
            let base = s.as_mut_ptr();
            f(
                &n,
                &nrhs,
                base,
                base.add(n_),
                base.add(2 * n_),
                base.add(3 * n_),
                &n,
                &mut info,
            );
        }
        "syev_" | "syev_2stage_" => {
            s[..n_ * n_].copy_from_slice(&p.a);
            let f: SyevFn<T> = std::mem::transmute(f);
            f(
                ch(&c_n),
                ch(&c_u),
                &n,
                s.as_mut_ptr(),
                &n,
                w,
                p.work.as_mut_ptr(),
                &lwork,
                &mut info,
                1,
                1,
            );
        }
        "syevd_" => {
            s[..n_ * n_].copy_from_slice(&p.a);
            let f: SyevdFn<T> = std::mem::transmute(f);
            f(
                ch(&c_n),
                ch(&c_u),
                &n,
                s.as_mut_ptr(),
                &n,
                w,
                p.work.as_mut_ptr(),
                &lwork,
                p.iwork.as_mut_ptr(),
                &liwork,
                &mut info,
                1,
                1,
            );
        }
        "syevx_" => {
            s[..n_ * n_].copy_from_slice(&p.a);
            let f: SyevxFn<T> = std::mem::transmute(f);
            f(
                ch(&c_n),
                ch(&c_a),
                ch(&c_u),
                &n,
                s.as_mut_ptr(),
                &n,
                &zero,
                &one,
                &il,
                &iu,
                &abstol,
                &mut m,
                w,
                z,
                &n,
                p.work.as_mut_ptr(),
                &lwork,
                p.iwork.as_mut_ptr(),
                ifail.as_mut_ptr(),
                &mut info,
                1,
                1,
                1,
            );
        }
        "syevr_" => {
            s[..n_ * n_].copy_from_slice(&p.a);
            let f: SyevrFn<T> = std::mem::transmute(f);
            f(
                ch(&c_n),
                ch(&c_a),
                ch(&c_u),
                &n,
                s.as_mut_ptr(),
                &n,
                &zero,
                &one,
                &il,
                &iu,
                &abstol,
                &mut m,
                w,
                z,
                &n,
                ifail.as_mut_ptr(),
                p.work.as_mut_ptr(),
                &lwork,
                p.iwork.as_mut_ptr(),
                &liwork,
                &mut info,
                1,
                1,
                1,
            );
        }
        other => unreachable!("no call for {other}"),
    }
    assert!(info >= 0, "{name} n={n}: INFO = {info}");
}

/// The median time of one call through `lapack` and through `preload`, over 15 rounds that
/// alternate a batch of each (so that drifts of clock and cache hit both alike).
fn per_call_pair<T: Lapack>(
    name: &str,
    lapack: usize,
    preload: usize,
    p: &mut Problem<T>,
) -> (Duration, Duration) {
    // SAFETY: `f` is `name` in LAPACK or the preload library; `call` passes its arguments.
    let once = |f: usize, p: &mut Problem<T>| unsafe { call(name, f, p) };
    once(lapack, p);
    once(preload, p);
    let started = Instant::now();
    let mut reps = 0u32;
    while started.elapsed() < Duration::from_millis(2) {
        once(lapack, p);
        reps += 1;
    }
    let batch = reps.max(1);
    let time = |f: usize, p: &mut Problem<T>| {
        let t = Instant::now();
        for _ in 0..batch {
            once(f, p);
        }
        t.elapsed() / batch
    };
    let (mut a, mut b): (Vec<Duration>, Vec<Duration>) =
        (0..15).map(|_| (time(lapack, p), time(preload, p))).unzip();
    a.sort();
    b.sort();
    (a[a.len() / 2], b[b.len() / 2])
}

fn open_preload(path: Option<&str>) -> Result<(usize, String), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe.parent().ok_or("no executable directory")?.to_path_buf();
    let candidates: Vec<std::path::PathBuf> = match path {
        Some(p) => vec![p.into()],
        None => vec![
            dir.join("libhylapack_preload.so"),
            dir.join("../lib/libhylapack_preload.so"),
        ],
    };
    for c in candidates {
        let Ok(cpath) = CString::new(c.to_string_lossy().as_bytes()) else {
            continue;
        };
        // SAFETY: dlopen of the preload library, kept open for the process's life.
        let h = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if !h.is_null() {
            return Ok((h as usize, c.to_string_lossy().into_owned()));
        }
    }
    Err("libhylapack_preload.so not found (build it, or pass --preload PATH)".into())
}

fn bench_names<T: Lapack>(names: &[&str], preload: usize, table: &mut Table) -> usize {
    let mut over = 0;
    let mut rng = Rng::new(22);
    let problems: Vec<usize> = SIZES.to_vec();
    for name in names {
        let cname = CString::new(*name).expect("no NUL");
        // SAFETY: symbol lookups in the preload library's handle and in LAPACK.
        let via_preload = unsafe { libc::dlsym(preload as *mut c_void, cname.as_ptr()) };
        let Some(lapack) = symbols::resolve(&cname) else {
            eprintln!("hylapack bench overhead: LAPACK has no {name}");
            continue;
        };
        if via_preload.is_null() {
            eprintln!("hylapack bench overhead: the preload library has no {name}");
            continue;
        }
        for &n in &problems {
            let mut p = Problem::<T>::new(n, &mut rng);
            let (t_lapack, t_preload) = per_call_pair(name, lapack, via_preload as usize, &mut p);
            let extra = (t_preload.as_secs_f64() - t_lapack.as_secs_f64()) * 1e6;
            let ok = extra <= ALLOWED_US;
            over += usize::from(!ok);
            table.row(vec![
                name.to_string(),
                n.to_string(),
                format!("{:.2}", t_lapack.as_secs_f64() * 1e6),
                format!("{:.2}", t_preload.as_secs_f64() * 1e6),
                format!("{extra:+.2}"),
                if ok { "ok" } else { "over" }.to_string(),
            ]);
        }
    }
    over
}

pub fn bench_overhead(args: &[String]) -> i32 {
    let mut preload_path = None;
    let mut csv = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--preload" => preload_path = it.next().cloned(),
            "--csv" => csv = it.next().cloned(),
            other => {
                eprintln!(
                    "hylapack bench overhead: unknown option {other} (--preload PATH, --csv FILE)"
                );
                return 2;
            }
        }
    }
    let (preload, path) = match open_preload(preload_path.as_deref()) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("hylapack bench overhead: {e}");
            return 2;
        }
    };
    println!("preload library: {path}");
    println!(
        "LAPACK:          {}",
        symbols::library_of(c"dsyev_").unwrap_or_else(|| "not found".into())
    );
    println!(
        "HYLAPACK_PRELOAD={} HYLAPACK_DEVICE={}",
        std::env::var("HYLAPACK_PRELOAD").unwrap_or_else(|_| "(auto)".into()),
        std::env::var("HYLAPACK_DEVICE").unwrap_or_else(|_| "(auto)".into())
    );
    let mut table = Table::new(&[
        "routine",
        "n",
        "LAPACK us",
        "preload us",
        "extra us",
        "<= 2 us",
    ]);
    let mut over = bench_names::<f64>(
        &[
            "dstebz_",
            "dstein_",
            "dgtsv_",
            "dsyev_",
            "dsyev_2stage_",
            "dsyevd_",
            "dsyevx_",
            "dsyevr_",
        ],
        preload,
        &mut table,
    );
    over += bench_names::<f32>(
        &[
            "sstebz_",
            "sstein_",
            "sgtsv_",
            "ssyev_",
            "ssyev_2stage_",
            "ssyevd_",
            "ssyevx_",
            "ssyevr_",
        ],
        preload,
        &mut table,
    );
    table.print();
    if let Some(file) = csv {
        if let Err(e) = table.write_csv(&file) {
            eprintln!("hylapack bench overhead: {file}: {e}");
        }
    }
    println!("{over} rows above {ALLOWED_US} us of extra time");
    0
}
