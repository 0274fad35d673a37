//! [`gtsv_strided_batch`]: many systems of one size on the GPU, small ones by xGTSV's own
//! elimination a warp each ([`gpu::batch`]), larger ones stacked into one SPIKE solve (each
//! system then judged on its own); or LAPACK xGTSV per system over host threads.

use super::{gpu, judge, lu, residual_rows, try_vec, Options, Solver};
use crate::device::DeviceError;
use crate::dispatch::Backend;
use crate::host::workers::{or_resume, run_parts};
use crate::lapack::Lapack;
use gpu::batch::HostBatch;

/// The host thread count from which LAPACK per system on the host's threads (the CPU path)
/// solves a strided batch of host arrays faster than the GPU path, transfers included. On an
/// H200 with a 16-thread host, 4096 systems with one right-hand side (docs/bench/
/// 2026-11-27-h200-session26.txt, section 7), the CPU path won at every size: n = 256 in
/// 2.6-3.2 ms against 4.6-5.3 ms, 512 in 4.1 against 14-15, 1024 in 7.2-7.9 against 28-31,
/// 4096 in 25-41 against 324-413. Taking the CPU's time as inversely proportional to its
/// threads, the GPU pays below about 8 threads for systems the warp kernel solves with
/// partitions of 8 rows, below 4 for the kernel's other sizes, and not for the stacked ones.
pub fn batch_gpu_below_threads<T>(n: usize, nrhs: usize) -> usize {
    if !gpu::batch::fits::<T>(n, nrhs) {
        1
    } else if n <= 256 {
        8
    } else {
        4
    }
}

/// What a batched call ([`gtsv_strided_batch`]) did.
#[derive(Clone, Debug)]
pub struct BatchReport {
    pub backend: Backend,
    pub solver: Solver,
    pub note: Option<String>,
    /// With [`Solver::WarpPerSystem`]: the systems whose SPIKE answer was refused and which
    /// partial pivoting then solved on the GPU.
    pub pivoted: usize,
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
/// On the GPU, systems that fit a CTA's shared memory ([`gpu::batch::fits`]) are solved by
/// LAPACK xGTSV's partial pivoting, one warp each; a system with an exactly zero pivot is then
/// solved by LAPACK on the CPU from its untouched data (so it ends as LAPACK leaves it). Larger
/// systems are stacked into one block-diagonal tridiagonal system (zero couplings between
/// neighbours) and solved by SPIKE in one call; a system whose answer fails its own check is
/// solved by LAPACK xGTSV on the CPU from its untouched data. On the CPU, LAPACK xGTSV runs on
/// each system, spread over host threads. `dl`, `d`, `du` are unspecified on exit, as for
/// [`gtsv`].
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
        pivoted: 0,
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
        let sys = HostBatch {
            n,
            nrhs,
            count,
            dl,
            d,
            du,
            sa,
            ldb,
            sb,
        };
        // The kernel's path first where it applies; where it cannot run (a batch larger than
        // the GPU memory allowed, say), the stacked solve, which streams or chunks.
        let mut small = gpu::batch::fits::<T>(n, nrhs);
        let mut tried = Err(String::new());
        if small {
            tried = solve_small(opts, &sys, b, &mut report.pivoted);
        }
        if let Err(first) = &tried {
            let first = first.clone();
            small = false;
            tried = solve_stacked(opts, &sys, b).map_err(|e| {
                if first.is_empty() {
                    e
                } else {
                    format!("{first}; stacked: {e}")
                }
            });
        }
        match tried {
            Ok((solved, rejected)) => {
                report.backend = Backend::Gpu;
                report.solver = if small {
                    Solver::WarpPerSystem
                } else {
                    Solver::Spike
                };
                if rejected == 0 {
                    return report;
                }
                done = solved;
                let why = if small {
                    "have an exactly zero pivot"
                } else {
                    "failed their own check"
                };
                report.note = Some(format!(
                    "{rejected} of {count} systems {why}; LAPACK xGTSV ran on them"
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

/// The GPU part of [`gtsv_strided_batch`] for small systems ([`gpu::batch::fits`]): a warp per
/// system, SPIKE or xGTSV's own elimination (`pivoted` counts the latter). Returns which
/// systems are done (their X in `b`) and how many had an exactly zero pivot (left for
/// LAPACK), or why nothing was done (the note).
fn solve_small<T: Lapack>(
    opts: &Options,
    sys: &HostBatch<'_, T>,
    b: &mut [T],
    pivoted: &mut usize,
) -> Result<(Vec<bool>, usize), String> {
    let solved = gpu::batch::solve(&opts.gpu, sys, b)
        .map_err(|e| format!("the warp kernel could not run ({e})"))?;
    *pivoted = solved.pivoted;
    let info = solved.info;
    let mut done = try_vec(sys.count, false).ok_or("no host memory for the batch's flags")?;
    for (flag, &i) in done.iter_mut().zip(&info) {
        *flag = i == 0;
    }
    let rejected = info.iter().filter(|&&i| i != 0).count();
    Ok((done, rejected))
}

/// One group of systems' share of the stacked arrays: their rows of DL, D, DU and of each
/// column of B, the first of them system `first`.
struct Stacked<'a, T> {
    first: usize,
    dl: &'a mut [T],
    d: &'a mut [T],
    du: &'a mut [T],
    b: Vec<&'a mut [T]>,
}

/// The GPU part of [`gtsv_strided_batch`]: the systems stacked block-diagonally (B packed to
/// leading dimension `n·count`) and solved by SPIKE in one call, then each system judged on its
/// own (the stack's check is normwise over all systems, which could hide a poor answer of a
/// system with small entries). The stacking and the judging run on host threads, a group of
/// systems each. Writes the accepted systems' answers into `b`; returns which systems are done
/// and how many were rejected, or why nothing was (the note).
fn solve_stacked<T: Lapack>(
    opts: &Options,
    sys: &HostBatch<'_, T>,
    b: &mut [T],
) -> Result<(Vec<bool>, usize), String> {
    let HostBatch {
        n,
        nrhs,
        count,
        dl,
        d,
        du,
        sa,
        ldb,
        sb,
    } = *sys;
    let m1 = n - 1;
    let big = n
        .checked_mul(count)
        .ok_or("the stacked system is too large; CPU path ran")?;
    let no_memory = || "no host memory to stack the systems; CPU path ran".to_string();
    // DL and DU get `big` entries (the stack uses `big - 1`) so that each system owns `n`: its
    // `n - 1` couplings and the zero one to the next system.
    let mut sdl = try_vec(big, T::ZERO).ok_or_else(no_memory)?;
    let mut sd = try_vec(big, T::ZERO).ok_or_else(no_memory)?;
    let mut sdu = try_vec(big, T::ZERO).ok_or_else(no_memory)?;
    let mut sbx = big
        .checked_mul(nrhs)
        .and_then(|len| try_vec(len, T::ZERO))
        .ok_or_else(no_memory)?;
    let mut done = try_vec(count, false).ok_or_else(no_memory)?;
    // Copying and judging thousands of large systems one after another took longer than the
    // GPU's solve: a contiguous group of systems per thread.
    let per = count.div_ceil(crate::host::threads().min(count));
    let rows = n * per;
    let mut groups: Vec<Stacked<'_, T>> = sdl
        .chunks_mut(rows)
        .zip(sd.chunks_mut(rows))
        .zip(sdu.chunks_mut(rows))
        .enumerate()
        .map(|(g, ((dl, d), du))| Stacked {
            first: g * per,
            dl,
            d,
            du,
            b: Vec::with_capacity(nrhs),
        })
        .collect();
    for col in sbx.chunks_mut(big) {
        for (group, part) in groups.iter_mut().zip(col.chunks_mut(rows)) {
            group.b.push(part);
        }
    }
    let src: &[T] = b;
    or_resume(run_parts(groups, &|mut s: Stacked<'_, T>| {
        for j in 0..s.d.len() / n {
            let (r, a0, b0) = (j * n, (s.first + j) * sa, (s.first + j) * sb);
            s.d[r..r + n].copy_from_slice(&d[a0..a0 + n]);
            s.dl[r..r + m1].copy_from_slice(piece(dl, a0, m1));
            s.du[r..r + m1].copy_from_slice(piece(du, a0, m1));
            for (c, col) in s.b.iter_mut().enumerate() {
                col[r..r + n].copy_from_slice(&src[b0 + c * ldb..b0 + c * ldb + n]);
            }
        }
    }));
    let (sdl, sdu) = (&sdl[..big - 1], &sdu[..big - 1]);
    match gpu::solve(&opts.gpu, sdl, &sd, sdu, &mut sbx, big, nrhs) {
        Ok(Ok(())) => {
            // Group `g` of `b` holds systems `g·per ..` from its start, the last group as far as
            // `b` goes (its last system may end before a full stride).
            let parts: Vec<_> = done
                .chunks_mut(per)
                .zip(b.chunks_mut(per * sb))
                .enumerate()
                .collect();
            let judge_group = |(g, (flags, bg)): (usize, (&mut [bool], &mut [T]))| {
                let mut rejected = 0;
                for (j, flag) in flags.iter_mut().enumerate() {
                    let k = g * per + j;
                    let (r, a0, b0) = (k * n, k * sa, j * sb);
                    let (kdl, kd, kdu) = (piece(dl, a0, m1), &d[a0..a0 + n], piece(du, a0, m1));
                    let x = |c: usize| &sbx[c * big + r..c * big + r + n];
                    let checks = (0..nrhs)
                        .map(|c| residual_rows(kdl, kd, kdu, x(c), &bg[b0 + c * ldb..], 0..n));
                    if judge(checks).is_ok() {
                        for c in 0..nrhs {
                            bg[b0 + c * ldb..b0 + c * ldb + n].copy_from_slice(x(c));
                        }
                        *flag = true;
                    } else {
                        rejected += 1;
                    }
                }
                rejected
            };
            // Accepted answers may be in `b` already: a thread's panic is raised again here.
            let rejected = or_resume(run_parts(parts, &judge_group)).into_iter().sum();
            Ok((done, rejected))
        }
        Ok(Err(reject)) => Err(format!("{reject}; LAPACK xGTSV ran on every system")),
        Err(e) => Err(format!("GPU path unavailable ({e}); CPU path ran")),
    }
}

/// Solves `count` independent systems whose arrays are already in GPU memory (`a`, the
/// layout of [`gtsv_strided_batch`]), each with LAPACK xGTSV's contract; DL, D and DU are only
/// read. Systems the warp kernel solves by SPIKE ([`gpu::batch::spikes`]) are solved there;
/// larger ones are stacked on the device into one SPIKE solve and judged system by system, or
/// where the stack is refused go to the kernel's partial pivoting if it takes them
/// ([`gpu::batch::fits`]); X is written into B. A system with an exactly zero pivot in the
/// kernel or whose stacked answer fails its check (every system where neither takes the
/// batch, or with `nrhs = 0`) is copied to the host, solved by LAPACK xGTSV (over host
/// threads) and its B copied back, so it ends as LAPACK leaves it. Work queued on `after`
/// before the call is waited for; the call returns when every answer is in B.
///
/// `Err`: no usable GPU, a GPU failure, or no host memory for the copies; systems whose X
/// was written before it are solved, the others' B unchanged.
///
/// # Safety
/// `a`'s arrays are device memory of the process's primary context holding what its layout
/// says, not touched by anything else during the call; `after` is live for the call.
pub unsafe fn gtsv_strided_batch_device<T: Lapack>(
    opts: &Options,
    a: &gpu::batch::DevBatch,
    info: &mut [i32],
    after: Option<cudarc::driver::sys::CUstream>,
) -> Result<BatchReport, DeviceError> {
    let count = a.count;
    assert!(a.sa >= a.n && a.ldb >= a.n.max(1) && a.sb >= a.ldb * a.nrhs && info.len() >= count);
    info[..count].fill(0);
    let mut report = BatchReport {
        backend: Backend::Gpu,
        solver: Solver::WarpPerSystem,
        note: None,
        pivoted: 0,
    };
    if a.n == 0 || count == 0 {
        return Ok(report);
    }
    // Systems the kernel solves by SPIKE go there; larger ones are stacked, and go to the
    // kernel's partial pivoting only where the stack is refused.
    let kernel = a.nrhs > 0 && gpu::batch::fits::<T>(a.n, a.nrhs);
    let in_kernel = |report: &mut BatchReport, info: &mut [i32]| -> Result<(), DeviceError> {
        // SAFETY: this function's contract.
        let solved = unsafe { gpu::batch::solve_in_place::<T>(&opts.gpu, a, after)? };
        report.solver = Solver::WarpPerSystem;
        report.pivoted = solved.pivoted;
        let singular: Vec<usize> = (0..count).filter(|&k| solved.info[k] != 0).collect();
        if !singular.is_empty() {
            report.note = Some(format!(
                "{} of {count} systems have an exactly zero pivot; LAPACK xGTSV ran on host copies",
                singular.len()
            ));
            let runs: Vec<_> = singular.iter().map(|&k| (k, k + 1)).collect();
            lapack_on_host::<T>(opts, a, &runs, info)?;
        }
        Ok(())
    };
    if kernel && gpu::batch::spikes::<T>(a.n, a.nrhs) {
        in_kernel(&mut report, info)?;
        return Ok(report);
    }
    if a.nrhs > 0 {
        // SAFETY: this function's contract.
        match unsafe { gpu::batch::solve_stacked_in_place::<T>(&opts.gpu, a, after) } {
            Ok(Ok(accepted)) => {
                report.solver = Solver::Spike;
                let runs: Vec<_> = (0..count)
                    .filter(|&k| !accepted[k])
                    .map(|k| (k, k + 1))
                    .collect();
                if !runs.is_empty() {
                    report.note = Some(format!(
                        "{} of {count} systems failed their own check; LAPACK xGTSV ran on host copies",
                        runs.len()
                    ));
                    lapack_on_host::<T>(opts, a, &runs, info)?;
                }
                return Ok(report);
            }
            Ok(Err(_)) | Err(DeviceError::OutOfBudget { .. } | DeviceError::Unsupported(_))
                if kernel =>
            {
                in_kernel(&mut report, info)?;
                return Ok(report);
            }
            Ok(Err(reject)) => {
                report.note = Some(format!(
                    "the stacked solve: {reject}; LAPACK xGTSV ran on host copies"
                ))
            }
            // Too large for the GPU's memory or the stack's index types: the host's threads
            // still solve it.
            Err(e @ (DeviceError::OutOfBudget { .. } | DeviceError::Unsupported(_))) => {
                report.note = Some(format!(
                    "the stacked solve: {e}; LAPACK xGTSV ran on host copies"
                ))
            }
            Err(e) => return Err(e),
        }
    }
    report.backend = Backend::Cpu;
    report.solver = Solver::Lapack;
    if a.nrhs == 0 {
        report.note = Some("NRHS = 0: LAPACK xGTSV factored host copies".to_string());
    }
    if let Some(s) = after {
        // SAFETY: the caller's stream, live for the call (this function's contract).
        unsafe { gpu::wait_for_caller(s)? };
    }
    lapack_on_host::<T>(opts, a, &[(0, count)], info)?;
    Ok(report)
}

/// Systems `k0 .. k1` of each run copied to the host, solved there by LAPACK xGTSV per
/// system over host threads ([`gtsv_strided_batch`] on the CPU), and their B copied back;
/// their INFOs go to `info[k]`.
///
/// # Safety
/// As for [`gtsv_strided_batch_device`], whose work on the GPU is complete.
unsafe fn lapack_on_host<T: Lapack>(
    opts: &Options,
    a: &gpu::batch::DevBatch,
    runs: &[(usize, usize)],
    info: &mut [i32],
) -> Result<(), DeviceError> {
    use crate::device::memory::{copy_2d, Side};
    let (n, nrhs) = (a.n, a.nrhs);
    let most = runs.iter().map(|&(k0, k1)| k1 - k0).max().unwrap_or(0);
    let elems = most
        .checked_mul(n)
        .and_then(|e| e.checked_mul(3 + nrhs))
        .unwrap_or(usize::MAX);
    let Some(mut host) = try_vec(elems, T::ZERO) else {
        return Err(DeviceError::HostMemory {
            bytes: elems.saturating_mul(std::mem::size_of::<T>()),
        });
    };
    let gpu = crate::device::gpu()?;
    gpu.ctx.bind_to_thread()?;
    let stream = gpu.stream()?;
    let at = |p: u64, k: usize, stride: usize| p + (k * stride * std::mem::size_of::<T>()) as u64;
    for &(k0, k1) in runs {
        let g = k1 - k0;
        // Packed on the host: system j's DL, D, DU at j·n, its B at j·n·nrhs (leading dimension n).
        let (dl, rest) = host.split_at_mut(g * n);
        let (d, rest) = rest.split_at_mut(g * n);
        let (du, rest) = rest.split_at_mut(g * n);
        let b = &mut rest[..g * n * nrhs];
        let host_side = |s: &mut [T], ld: usize| Side::Host(s.as_mut_ptr().cast(), ld);
        // SAFETY: each device side holds g systems of its layout (this function's contract),
        // each host side g columns of `ld`; the stream is synchronized before they are read.
        unsafe {
            if n > 1 {
                let dev = |p| Side::Device(at(p, k0, a.sa), a.sa);
                copy_2d::<T>(dev(a.dl), host_side(dl, n), n - 1, g, &stream)?;
                copy_2d::<T>(dev(a.du), host_side(du, n), n - 1, g, &stream)?;
            }
            copy_2d::<T>(
                Side::Device(at(a.d, k0, a.sa), a.sa),
                host_side(d, n),
                n,
                g,
                &stream,
            )?;
            for c in 0..nrhs {
                let from = Side::Device(at(a.b, k0, a.sb) + at(0, c, a.ldb), a.sb);
                copy_2d::<T>(from, host_side(&mut b[c * n..], n * nrhs), n, g, &stream)?;
            }
        }
        stream.synchronize()?;
        let infos = &mut info[k0..k1];
        gtsv_strided_batch(
            opts,
            n,
            nrhs,
            dl,
            d,
            du,
            n,
            b,
            n,
            n * nrhs,
            g,
            infos,
            Backend::Cpu,
        );
        // SAFETY: as the downloads, the other way; synchronized before `host` is reused.
        unsafe {
            for c in 0..nrhs {
                let to = Side::Device(at(a.b, k0, a.sb) + at(0, c, a.ldb), a.sb);
                copy_2d::<T>(host_side(&mut b[c * n..], n * nrhs), to, n, g, &stream)?;
            }
        }
        stream.synchronize()?;
    }
    Ok(())
}
