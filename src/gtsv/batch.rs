//! [`gtsv_strided_batch`]: many systems of one size, stacked into one SPIKE solve on the GPU
//! (each system then judged on its own), or LAPACK xGTSV per system over host threads.

use super::{gpu, judge, lu, residual_rows, try_vec, Options, Solver};
use crate::dispatch::Backend;
use crate::host::workers::{or_resume, run_parts};
use crate::lapack::Lapack;

/// What a batched call ([`gtsv_strided_batch`]) did.
#[derive(Clone, Debug)]
pub struct BatchReport {
    pub backend: Backend,
    pub solver: Solver,
    pub note: Option<String>,
}

/// `count` equal-length pieces of `s`, piece `k` starting at `k · stride` (`stride ≥ len`).
fn split_strided<T>(s: &mut [T], stride: usize, len: usize, count: usize) -> Vec<&mut [T]> {
    let mut out = Vec::with_capacity(count);
    let mut rest = s;
    for k in 0..count {
        if len == 0 {
            out.push(&mut [][..]);
            continue;
        }
        let take = if k + 1 < count { stride } else { len };
        let (head, tail) = rest.split_at_mut(take);
        out.push(&mut head[..len]);
        rest = tail;
    }
    out
}

/// Solves `count` independent systems of order `n`, each with LAPACK xGTSV's contract:
/// system `k` is `dl[k·sa ..]` (n − 1), `d[k·sa ..]` (n), `du[k·sa ..]` (n − 1) with right-hand
/// sides `b[k·sb ..]` (`ldb × nrhs`); its INFO goes to `info[k]`.
///
/// On the GPU the systems are stacked into one block-diagonal tridiagonal system (zero
/// couplings between neighbours) and solved by SPIKE in one call; if that answer is rejected
/// (some system singular or badly conditioned) every system is solved by LAPACK xGTSV on the
/// CPU from its untouched data. On the CPU, LAPACK xGTSV runs on each system, spread over host
/// threads. `dl`, `d`, `du` are unspecified on exit, as for [`gtsv`].
#[allow(clippy::too_many_arguments)]
pub fn gtsv_strided_batch<T: Lapack>(
    opts: &Options,
    n: usize,
    nrhs: usize,
    dl: &mut [T],
    d: &mut [T],
    du: &mut [T],
    sa: usize,
    b: &mut [T],
    ldb: usize,
    sb: usize,
    count: usize,
    info: &mut [i32],
    backend: Backend,
) -> BatchReport {
    assert!(sa >= n && ldb >= n.max(1) && sb >= ldb * nrhs && info.len() >= count);
    let mut report = BatchReport {
        backend: Backend::Cpu,
        solver: Solver::Lapack,
        note: None,
    };
    info[..count].fill(0);
    if n == 0 || count == 0 {
        return report;
    }
    let m1 = n - 1;
    let blen = if nrhs == 0 { 0 } else { ldb * (nrhs - 1) + n };
    // Systems whose answer is already in B (empty: none).
    let mut done = Vec::new();
    if backend == Backend::Gpu && nrhs > 0 {
        match solve_stacked(opts, n, nrhs, dl, d, du, sa, b, ldb, sb, count) {
            Ok((solved, rejected)) => {
                report.backend = Backend::Gpu;
                report.solver = Solver::Spike;
                if rejected == 0 {
                    return report;
                }
                done = solved;
                report.note = Some(format!(
                    "{rejected} of {count} systems failed their own check; LAPACK xGTSV ran on them"
                ));
            }
            Err(note) => report.note = Some(note),
        }
    }
    // LAPACK on each system (its factorization alone for NRHS = 0: see `lu`), systems spread
    // over threads, a bounded group at a time so that no bookkeeping grows with `count`.
    const GROUP: usize = 4096;
    let threads = crate::host::threads().min(count.div_ceil(4).max(1));
    let mut k0 = 0;
    while k0 < count {
        let k1 = (k0 + GROUP).min(count);
        let g = k1 - k0;
        let (a0, b0) = (k0 * sa, k0 * sb);
        let (la, lu_, lb) = (dl.len(), du.len(), b.len());
        let dls = split_strided(&mut dl[a0.min(la)..], sa, m1, g);
        let ds = split_strided(&mut d[a0..], sa, n, g);
        let dus = split_strided(&mut du[a0.min(lu_)..], sa, m1, g);
        let bs = split_strided(&mut b[b0.min(lb)..], sb, blen, g);
        let mut jobs: Vec<_> = dls
            .into_iter()
            .zip(ds)
            .zip(dus)
            .zip(bs)
            .zip(info[k0..k1].iter_mut())
            .enumerate()
            .filter(|(j, _)| !done.get(k0 + j).copied().unwrap_or(false))
            .map(|(_, ((((dl, d), du), b), info))| Job { dl, d, du, b, info })
            .collect();
        let one = |job: &mut Job<'_, T>| {
            *job.info = if nrhs == 0 {
                lu::factor_info(job.dl, job.d, job.du)
            } else {
                T::gtsv(job.dl, job.d, job.du, job.b, ldb, nrhs)
            };
        };
        let per = jobs.len().div_ceil(threads).max(1);
        if threads == 1 || jobs.len() <= per {
            jobs.iter_mut().for_each(one);
        } else {
            // LAPACK has written into the caller's arrays by now: a thread's panic cannot fall
            // back, so it is raised again here (as the scope did before).
            let parts: Vec<_> = jobs.chunks_mut(per).collect();
            or_resume(run_parts(parts, &|part: &mut [Job<'_, T>]| {
                part.iter_mut().for_each(one)
            }));
        }
        k0 = k1;
    }
    report
}

/// `len` entries of `s` from `start`; none (wherever `start` is) for `len = 0`: with N = 1 the
/// caller's DL and DU may hold nothing at all.
fn piece<T>(s: &[T], start: usize, len: usize) -> &[T] {
    if len == 0 {
        &[]
    } else {
        &s[start..start + len]
    }
}

/// One system of a batch on the CPU: its arrays and where its INFO goes.
struct Job<'a, T> {
    dl: &'a mut [T],
    d: &'a mut [T],
    du: &'a mut [T],
    b: &'a mut [T],
    info: &'a mut i32,
}

/// The GPU part of [`gtsv_strided_batch`]: the systems stacked block-diagonally (B packed to
/// leading dimension `n·count`) and solved by SPIKE in one call, then each system judged on its
/// own (the stack's check is normwise over all systems, which could hide a poor answer of a
/// system with small entries). Writes the accepted systems' answers into `b`; returns which
/// systems are done and how many were rejected, or why nothing was (the note).
#[allow(clippy::too_many_arguments)]
fn solve_stacked<T: Lapack>(
    opts: &Options,
    n: usize,
    nrhs: usize,
    dl: &[T],
    d: &[T],
    du: &[T],
    sa: usize,
    b: &mut [T],
    ldb: usize,
    sb: usize,
    count: usize,
) -> Result<(Vec<bool>, usize), String> {
    let m1 = n - 1;
    let big = n
        .checked_mul(count)
        .ok_or("the stacked system is too large; CPU path ran")?;
    let no_memory = || "no host memory to stack the systems; CPU path ran".to_string();
    let mut sdl = try_vec(big - 1, T::ZERO).ok_or_else(no_memory)?;
    let mut sd = try_vec(big, T::ZERO).ok_or_else(no_memory)?;
    let mut sdu = try_vec(big - 1, T::ZERO).ok_or_else(no_memory)?;
    let mut sbx = big
        .checked_mul(nrhs)
        .and_then(|len| try_vec(len, T::ZERO))
        .ok_or_else(no_memory)?;
    let mut done = try_vec(count, false).ok_or_else(no_memory)?;
    for k in 0..count {
        let (r, a0, b0) = (k * n, k * sa, k * sb);
        sd[r..r + n].copy_from_slice(&d[a0..a0 + n]);
        sdl[r..r + m1].copy_from_slice(piece(dl, a0, m1));
        sdu[r..r + m1].copy_from_slice(piece(du, a0, m1));
        for c in 0..nrhs {
            sbx[c * big + r..c * big + r + n].copy_from_slice(&b[b0 + c * ldb..b0 + c * ldb + n]);
        }
    }
    match gpu::solve(&opts.gpu, &sdl, &sd, &sdu, &mut sbx, big, nrhs) {
        Ok(Ok(())) => {
            let mut rejected = 0;
            for (k, done) in done.iter_mut().enumerate() {
                let (r, a0, b0) = (k * n, k * sa, k * sb);
                let (kdl, kd, kdu) = (piece(dl, a0, m1), &d[a0..a0 + n], piece(du, a0, m1));
                let checks = (0..nrhs).map(|c| {
                    let x = &sbx[c * big + r..c * big + r + n];
                    residual_rows(kdl, kd, kdu, x, &b[b0 + c * ldb..], 0..n)
                });
                if judge(checks).is_ok() {
                    for c in 0..nrhs {
                        b[b0 + c * ldb..b0 + c * ldb + n]
                            .copy_from_slice(&sbx[c * big + r..c * big + r + n]);
                    }
                    *done = true;
                } else {
                    rejected += 1;
                }
            }
            Ok((done, rejected))
        }
        Ok(Err(reject)) => Err(format!("{reject}; LAPACK xGTSV ran on every system")),
        Err(e) => Err(format!("GPU path unavailable ({e}); CPU path ran")),
    }
}
