//! Systems larger than the GPU memory allowed: SPIKE over chunks, each solved on the GPU, the
//! separator system on the host ([`solve_chunked`]).

use super::*;
use crate::host::workers::{or_resume, run_parts};

/// Rows per chunk for [`solve_chunked`]: the most whose solve (with `nrhs` + 2 columns: the
/// right-hand sides and the two spikes) fits in `limit` bytes.
pub fn chunk_rows<T>(n: usize, nrhs: usize, o: &GpuOptions, limit: u64) -> Option<usize> {
    let fits = |c: usize| bytes_needed::<T>(c, nrhs + 2, o) <= limit;
    if !fits(2) {
        return None;
    }
    let (mut lo, mut hi) = (2usize, n.max(2)); // fits(lo); the answer is in lo..=hi
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// SPIKE over chunks, for systems larger than the GPU memory allowed: the rows are cut into
/// chunks of `c` rows separated by single separator rows (the decomposition of the module
/// comment, with chunks for blocks). Each chunk is solved on the GPU (`solve_whole`, with its
/// own check and refinement) for its right-hand sides and its two spikes; the host then solves
/// the small separator system with LAPACK xGTSV, forms `X = Y − W x_L − V x_R`, checks the
/// residual of the whole system and refines it (each correction again over chunks), and writes
/// `B` only when the answer is accepted.
#[allow(clippy::too_many_arguments)]
pub fn solve_chunked<T: Lapack>(
    o: &GpuOptions,
    dl: &[T],
    d: &[T],
    du: &[T],
    b: &mut [T],
    ldb: usize,
    nrhs: usize,
    limit: u64,
) -> Result<Result<(), Reject>, DeviceError> {
    let n = d.len();
    let c = chunk_rows::<T>(n, nrhs, o, limit).ok_or(DeviceError::OutOfBudget {
        needed: bytes_needed::<T>(2, nrhs + 2, o),
        available: limit,
    })?;
    let threads = crate::host::threads();
    let chunks = (n - 1) / (c + 1) + 1;
    let mut x = match host::<T>(n * nrhs) {
        Ok(x) => x,
        Err(r) => return Ok(Err(r)),
    };
    let t0 = Instant::now();
    let mut on_gpu = |dl: &[T], d: &[T], du: &[T], g: &mut [T], ld: usize, k: usize| {
        solve_whole(o, dl, d, du, g, ld, k, false)
    };
    // The chunks' solves record their own phases; this call's are set on every way out.
    let record = || {
        PHASES.with(|p| {
            p.set(Phases {
                solve: t0.elapsed().as_secs_f64(),
                chunks,
                ..Phases::default()
            })
        })
    };
    let a = Bands { dl, d, du };
    let bc = Columns::all(&*b, ldb);
    let first = chunked_pass(a, bc, nrhs, c, &mut x, threads, &mut on_gpu)?;
    if let Err(r) = first {
        record();
        return Ok(Err(r));
    }
    let mut state = match RefineState::try_new(nrhs) {
        Ok(s) => s,
        Err(r) => {
            record();
            return Ok(Err(r));
        }
    };
    let xc = Columns::all(&x, n);
    let Some(checks) = residual_cols(a, xc, bc, nrhs, None, threads, false) else {
        record();
        return Ok(Err(Reject::NoHostMemory(nrhs * threads * 32)));
    };
    state.checks.copy_from_slice(&checks);
    refine(
        a,
        &mut x,
        n,
        bc,
        &mut state,
        threads,
        |r: &mut [T], k: usize| {
            // Refinement is optional: without memory for it, the answer is judged as it is.
            let Ok(mut delta) = host::<T>(n * k) else {
                return Ok(false);
            };
            let rc = Columns::all(&*r, n);
            let solved = chunked_pass(a, rc, k, c, &mut delta, threads, &mut on_gpu)?;
            r.copy_from_slice(&delta);
            Ok::<bool, DeviceError>(solved.is_ok())
        },
    )?;
    record();
    if let Err(r) = judge(state.checks.iter().copied()) {
        return Ok(Err(r));
    }
    for col in 0..nrhs {
        par_copy(&mut b[col * ldb..col * ldb + n], &x[col * n..(col + 1) * n]);
    }
    Ok(Ok(()))
}

/// The solver of one chunk: (dl, d, du, right-hand sides, their leading dimension, columns).
type ChunkSolver<'a, T> = dyn FnMut(&[T], &[T], &[T], &mut [T], usize, usize) -> Result<Result<(), Reject>, DeviceError>
    + 'a;

/// One solve over chunks of `c` rows (see [`solve_chunked`]): `x` (n × nrhs, leading dimension
/// n) receives the solution for the first `nrhs` columns of `f`, unchecked beyond the chunks'
/// own checks and the separator system's solvability. `solve_chunk` solves one chunk in place.
pub(super) fn chunked_pass<T: Lapack>(
    a: Bands<'_, T>,
    f: Columns<'_, T>,
    nrhs: usize,
    c: usize,
    x: &mut [T],
    threads: usize,
    solve_chunk: &mut ChunkSolver<'_, T>,
) -> Result<Result<(), Reject>, DeviceError> {
    let (
        Bands { dl, d, du },
        Columns {
            data: f, ld: ldf, ..
        },
    ) = (a, f);
    let n = d.len();
    let m = c + 1; // a chunk and its separator
    let q = (n - 1) / m; // separators; chunk j is rows j m .. j m + c (the last: .. n)
    let k = nrhs + 2;
    // Every host array of the pass, allocated before the first chunk is solved. The last
    // chunk may have c + 1 rows.
    let alloc = || -> Result<_, Reject> {
        let q1 = q.max(1) - 1;
        Ok((
            [host::<T>(n)?, host::<T>(n)?],
            host::<T>((c + 1).min(n) * k)?,
            [host::<T>(q1)?, host::<T>(q)?, host::<T>(q1)?],
            host::<T>(q * nrhs)?,
        ))
    };
    let ([mut w, mut v], mut gbuf, [mut rdl, mut rd, mut rdu], mut rf) = match alloc() {
        Ok(bufs) => bufs,
        Err(r) => return Ok(Err(r)),
    };
    for j in 0..=q {
        let r0 = j * m;
        let r1 = if j < q { r0 + c } else { n };
        let rows = r1 - r0;
        // The chunk's right-hand sides, then its spikes: A_j⁻¹ (a e_1) and A_j⁻¹ (c e_last).
        let g = &mut gbuf[..rows * k];
        g.fill(T::ZERO);
        for col in 0..nrhs {
            g[col * rows..(col + 1) * rows].copy_from_slice(&f[col * ldf + r0..col * ldf + r1]);
        }
        if j > 0 {
            g[nrhs * rows] = dl[r0 - 1];
        }
        if j < q {
            g[(nrhs + 1) * rows + rows - 1] = du[r1 - 1];
        }
        let tail = rows.saturating_sub(1);
        if let Err(r) = solve_chunk(
            &dl[r0..r0 + tail],
            &d[r0..r1],
            &du[r0..r0 + tail],
            g,
            rows,
            k,
        )? {
            return Ok(Err(r));
        }
        for col in 0..nrhs {
            x[col * n + r0..col * n + r1].copy_from_slice(&g[col * rows..(col + 1) * rows]);
        }
        w[r0..r1].copy_from_slice(&g[nrhs * rows..(nrhs + 1) * rows]);
        v[r0..r1].copy_from_slice(&g[(nrhs + 1) * rows..]);
    }
    if q == 0 {
        return Ok(Ok(()));
    }
    // The separator system (see the module comment of `gtsv`): unknown j is x at s_j.
    for j in 0..q {
        let s = (j + 1) * m - 1;
        let (top, bot) = (s + 1, s - 1); // first row of chunk j + 1, last row of chunk j
        let (a_s, c_s) = (dl[s - 1], du[s]);
        if j > 0 {
            rdl[j - 1] = -(a_s * w[bot]);
        }
        rd[j] = d[s] - a_s * v[bot] - c_s * w[top];
        if j + 1 < q {
            rdu[j] = -(c_s * v[top]);
        }
        for col in 0..nrhs {
            rf[j + col * q] = f[col * ldf + s] - a_s * x[col * n + bot] - c_s * x[col * n + top];
        }
    }
    if T::gtsv(&mut rdl, &mut rd, &mut rdu, &mut rf, q, nrhs) != 0 {
        return Ok(Err(Reject::ReducedSingular));
    }
    // X = Y − W x_L − V x_R on the chunk rows, x_s on the separators, in parallel over rows.
    let threads = threads.clamp(1, n);
    let bounds: Vec<usize> = (0..=threads).map(|t| t * n / threads).collect();
    let Some(parts) = split_rows(x, n, nrhs, &bounds) else {
        return Ok(Err(Reject::NoHostMemory(nrhs * threads * 16)));
    };
    let (w, v, rf) = (&w, &v, &rf);
    let one = |(t, mut cols): (usize, Vec<&mut [T]>)| {
        let row0 = bounds[t];
        for (col, xc) in cols.iter_mut().enumerate() {
            let xs = |j: usize| rf[j + col * q];
            for (e, xi) in xc.iter_mut().enumerate() {
                let i = row0 + e;
                let (j, off) = (i / m, i % m);
                if off == c && j < q {
                    *xi = xs(j);
                } else {
                    let left = if j > 0 { w[i] * xs(j - 1) } else { T::ZERO };
                    let right = if j < q { v[i] * xs(j) } else { T::ZERO };
                    *xi = *xi - left - right;
                }
            }
        }
    };
    or_resume(run_parts(parts.into_iter().enumerate().collect(), &one));
    Ok(Ok(()))
}
