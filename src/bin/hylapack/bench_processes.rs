//! `hylapack bench processes`: what `auto` mode gives when several processes share one GPU.
//!
//! For each mode (`auto`, `cpu`) and each count of processes P, P copies of this program call
//! DSYEV (n = 3000, JOBZ = 'N') and DSTEBZ (n = 20 000, RANGE = 'A') through the library's C
//! names in a loop for a fixed time, at once; the table gives the pairs each finished and their
//! summed rate (pairs per second of each process, added up).

use crate::table::Table;
use hylapack::api::stebz::dstebz_gpu;
use hylapack::api::syev::dsyev_ooc;
use hylapack::testmat::Rng;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SYEV_N: usize = 3000;
const STEBZ_N: usize = 20_000;

/// One child: calls the pair in a loop for `seconds`, prints "pairs K seconds S".
fn child(seconds: f64) -> i32 {
    let mut rng = Rng::new(7);
    let mut a0 = vec![0.0f64; SYEV_N * SYEV_N];
    for j in 0..SYEV_N {
        for i in j..SYEV_N {
            let x = rng.uniform() - 0.5;
            a0[i + j * SYEV_N] = x;
            a0[j + i * SYEV_N] = x;
        }
    }
    let d: Vec<f64> = (0..STEBZ_N).map(|_| rng.uniform()).collect();
    let e: Vec<f64> = (0..STEBZ_N).map(|_| rng.uniform()).collect();
    let (mut a, mut w) = (a0.clone(), vec![0.0f64; STEBZ_N]);
    let (mut iblock, mut isplit) = (vec![0i32; STEBZ_N], vec![0i32; STEBZ_N]);
    let started = Instant::now();
    let mut pairs = 0;
    while started.elapsed() < Duration::from_secs_f64(seconds) {
        a.copy_from_slice(&a0);
        let (n, ns) = (SYEV_N as i32, STEBZ_N as i32);
        // SAFETY: a is n x n with leading dimension n; w, iblock, isplit hold N entries.
        let (info_syev, info_stebz, m) = unsafe {
            let info_syev = dsyev_ooc(b'N' as _, b'L' as _, n, a.as_mut_ptr(), n, w.as_mut_ptr());
            let (mut m, mut nsplit) = (0, 0);
            let info_stebz = dstebz_gpu(
                b'A' as _,
                b'B' as _,
                ns,
                0.0,
                0.0,
                0,
                0,
                0.0,
                d.as_ptr(),
                e.as_ptr(),
                &mut m,
                &mut nsplit,
                w.as_mut_ptr(),
                iblock.as_mut_ptr(),
                isplit.as_mut_ptr(),
            );
            (info_syev, info_stebz, m)
        };
        if info_syev != 0 || info_stebz != 0 || m != ns {
            eprintln!("bench processes: INFO {info_syev} / {info_stebz}, M = {m}");
            return 1;
        }
        pairs += 1;
    }
    println!(
        "pairs {pairs} seconds {:.3}",
        started.elapsed().as_secs_f64()
    );
    0
}

pub fn bench_processes(args: &[String]) -> i32 {
    let mut seconds = 15.0;
    let mut counts = vec![1usize, 4, 16];
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--child" => return child(it.next().and_then(|s| s.parse().ok()).unwrap_or(seconds)),
            "--seconds" => seconds = it.next().and_then(|s| s.parse().ok()).unwrap_or(seconds),
            "--processes" => {
                counts = it
                    .next()
                    .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
                    .unwrap_or(counts)
            }
            other => {
                eprintln!("hylapack bench processes: unknown option {other} (--seconds S, --processes 1,4,16)");
                return 2;
            }
        }
    }
    let Ok(exe) = std::env::current_exe() else {
        eprintln!("hylapack bench processes: cannot find this program");
        return 2;
    };
    let mut table = Table::new(&[
        "mode",
        "processes",
        "pairs",
        "pairs/s (summed)",
        "pair time s (median)",
    ]);
    for mode in ["auto", "cpu"] {
        for &p in &counts {
            let children: Vec<_> = (0..p)
                .filter_map(|_| {
                    Command::new(&exe)
                        .args(["bench", "processes", "--child", &seconds.to_string()])
                        .env("HYLAPACK_DEVICE", mode)
                        .stdout(Stdio::piped())
                        .spawn()
                        .ok()
                })
                .collect();
            let mut rates = Vec::new();
            let mut pairs = 0u64;
            for c in children {
                let Ok(out) = c.wait_with_output() else {
                    continue;
                };
                let text = String::from_utf8_lossy(&out.stdout);
                let words: Vec<&str> = text.split_whitespace().collect();
                if let [_, k, _, s] = words[..] {
                    let (k, s): (u64, f64) = (k.parse().unwrap_or(0), s.parse().unwrap_or(1.0));
                    pairs += k;
                    rates.push(k as f64 / s);
                }
            }
            let rate: f64 = rates.iter().sum();
            let mut per_pair: Vec<f64> = rates
                .iter()
                .filter(|&&r| r > 0.0)
                .map(|r| 1.0 / r)
                .collect();
            per_pair.sort_by(f64::total_cmp);
            let median = per_pair
                .get(per_pair.len() / 2)
                .copied()
                .unwrap_or(f64::NAN);
            table.row(vec![
                mode.to_string(),
                format!("{p} ({} reported)", rates.len()),
                pairs.to_string(),
                format!("{rate:.2}"),
                format!("{median:.2}"),
            ]);
        }
    }
    table.print();
    0
}
