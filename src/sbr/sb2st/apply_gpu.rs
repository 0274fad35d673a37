//! Z := Q2 Z on the GPU (`kernels/sb2st_q2.cu`, whose notes give the order of the
//! reflectors and how lanes share a column). Z goes up in block columns as wide as the budget
//! holds beside Q2 (one where both fit), each takes the reflectors, a group of sweeps at a
//! time, and comes back; where Q2 itself does not fit, it comes up in pieces of whole groups
//! for each block column. Q2 that the chase left on the GPU is used where it is.

use super::gpu::DeviceReflectors;
use super::{sweep_offset, Reflectors};
use crate::device::blas::CublasReal;
use crate::device::{self, kernels, DeviceError};
use cudarc::driver::{LaunchConfig, PushKernelArg};

/// Threads per CTA of the kernel (`Q2_THREADS`).
const THREADS: usize = 128;

/// Whether the kernel takes Q2 of bandwidth `b` (its windows are compiled for 32 and 64).
pub fn supports(b: usize) -> bool {
    b == 32 || b == 64
}

/// Why [`apply_left`] stopped: the error, the columns of Z it had transformed (the others are
/// untouched), and whether the next block column was being written back (then that block
/// holds neither Z nor the product).
#[derive(Debug)]
pub struct Q2Stopped {
    pub error: DeviceError,
    pub done: usize,
    pub torn: bool,
}

/// How a run of [`apply_left`] went: the block columns Z went up in, and the pieces Q2 came
/// in for each (1: all of it, once).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Q2Run {
    pub block_columns: usize,
    pub pieces: usize,
}

/// Lanes per column and sweeps per group of the kernel (`Q2_KERNEL`).
const LANES: usize = 4;
const GROUP: usize = 32;

/// How Z and Q2 meet on the GPU: Z in block columns of `cols`, Q2 in pieces of `sweeps`
/// sweeps (all of them when it fits beside a block column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Plan {
    cols: usize,
    sweeps: usize,
}

/// The plan for Q2 of order n (`q_len` entries to upload: 0 for Q2 on the GPU already) and
/// the n x m Z with leading dimension `ldz` in `budget` bytes, with groups of `group` sweeps; or the bytes it needs at least. Q2 stays
/// whole while a block column of [`THREADS`] columns fits beside it, since its pieces travel
/// once per block column.
fn plan(
    n: usize,
    m: usize,
    ldz: usize,
    q_len: usize,
    group: usize,
    elem: usize,
    budget: u64,
) -> Result<Plan, u64> {
    let sweeps = n - 2;
    let col = (ldz * elem) as u64;
    let whole = (q_len * elem) as u64;
    let least = m.min(THREADS) as u64;
    if whole + least * col <= budget {
        let cols = ((budget - whole) / col).min(m as u64) as usize;
        return Ok(Plan { cols, sweeps });
    }
    // Half for Z, the rest for pieces of Q2 (a sweep has at most n − 1 entries).
    let cols = (budget / 2 / col).clamp(least, m as u64);
    let per_sweep = ((n - 1) * elem) as u64;
    let room = budget.saturating_sub(cols * col) / per_sweep;
    let piece = (room as usize / group * group).min(sweeps);
    if piece < group.min(sweeps) {
        return Err(least * col + group as u64 * per_sweep);
    }
    Ok(Plan {
        cols: cols as usize,
        sweeps: piece,
    })
}

/// Where Q2 is: in host memory, or left on the GPU by the chase.
#[derive(Clone, Copy)]
pub enum Q2At<'a, T> {
    Host(&'a Reflectors<T>),
    Gpu(&'a DeviceReflectors<T>),
}

/// Z := Q2 Z for the n x m `z` (leading dimension `ldz`), as [`Reflectors::apply_left`], on
/// the GPU within `limit` bytes (and the GPU's budget; Q2 left on the GPU holds its share
/// already).
pub fn apply_left<T: CublasReal>(
    q: Q2At<'_, T>,
    m: usize,
    z: &mut [T],
    ldz: usize,
    limit: Option<u64>,
) -> Result<Q2Run, Q2Stopped> {
    let (n, b, q_len) = match q {
        Q2At::Host(q) => (q.n, q.b, q.v.len()),
        // Nothing to upload: it is whole on the GPU, and the budget is Z's.
        Q2At::Gpu(q) => (q.n, q.b, 0),
    };
    if n < 3 || m == 0 {
        return Ok(Q2Run::default());
    }
    let stopped = |error: DeviceError| Q2Stopped {
        error,
        done: 0,
        torn: false,
    };
    if !supports(b) {
        return Err(stopped(DeviceError::Unsupported(format!(
            "Q2 on the GPU: bandwidth {b}"
        ))));
    }
    assert!(ldz >= n && z.len() >= ldz * (m - 1) + n, "Z too short");
    let gpu = device::gpu().map_err(stopped)?;
    let elem = std::mem::size_of::<T>();
    // `limit` is the call's: Q2 on the GPU already holds part of it.
    let limit = match q {
        Q2At::Host(_) => limit,
        Q2At::Gpu(q) => limit.map(|l| l.saturating_sub(q.bytes())),
    };
    let budget = gpu.budget.available().min(limit.unwrap_or(u64::MAX));
    // The CTAs' step counts, at most one per group and block of THREADS / LANES columns.
    let counts_bytes = ((n - 2).div_ceil(GROUP) * m.div_ceil(THREADS / LANES) * 4) as u64;
    let plan = plan(
        n,
        m,
        ldz,
        q_len,
        GROUP,
        elem,
        budget.saturating_sub(counts_bytes),
    );
    let plan = plan.map_err(|needed| {
        stopped(DeviceError::Unsupported(format!(
            "Q2 on the GPU needs {} bytes, the budget is {budget}",
            needed + counts_bytes
        )))
    })?;
    let piece_len = if plan.sweeps == n - 2 {
        q_len
    } else {
        sweep_offset(n, plan.sweeps)
    };
    // A CTA per group and block of columns, each counting the steps it wrote back.
    let ctas = |sweeps: usize, w: usize| sweeps.div_ceil(GROUP) * w.div_ceil(THREADS / LANES);
    let counts_len = ctas(plan.sweeps, plan.cols);
    let bytes = (piece_len + plan.cols * ldz) * elem + counts_len * std::mem::size_of::<i32>();
    let _memory = gpu.budget.reserve(bytes as u64).map_err(stopped)?;
    let name = format!("sb2st_q2_{}{b}", T::PREFIX);
    let module = kernels::module_named(&kernels::SB2ST_Q2, &name).map_err(stopped)?;
    let func = gpu.function(module, &name).map_err(stopped)?;
    let stream = gpu.linalg().map_err(stopped)?.stream.clone();
    let int = |x: usize| {
        i32::try_from(x)
            .map_err(|_| stopped(DeviceError::Unsupported(format!("{x} exceeds 32 bits"))))
    };
    let n_arg = int(n)?;
    let ldz_arg = ldz as i64;
    let mut piece = stream
        .alloc_zeros::<T>(piece_len.max(1))
        .map_err(|e| stopped(e.into()))?;
    let mut zd = stream
        .alloc_zeros::<T>(plan.cols * ldz)
        .map_err(|e| stopped(e.into()))?;
    let mut progress = stream
        .alloc_zeros::<i32>(counts_len)
        .map_err(|e| stopped(e.into()))?;
    // Pieces of Q2 from the last sweeps to the first: (first sweep, past the last).
    let pieces: Vec<(usize, usize)> = (0..n - 2)
        .step_by(plan.sweeps)
        .map(|i| (i, (i + plan.sweeps).min(n - 2)))
        .rev()
        .collect();
    assert!(
        matches!(q, Q2At::Host(_)) || pieces.len() == 1,
        "Q2 on the GPU is applied whole"
    );
    let clock = std::time::Instant::now();
    let mut kernel_secs = 0.0;
    if let (Q2At::Host(q), [(0, _)]) = (q, &pieces[..]) {
        stream
            .memcpy_htod(&q.v[..], &mut piece.slice_mut(0..q_len))
            .map_err(|e| stopped(e.into()))?;
    }
    for c0 in (0..m).step_by(plan.cols) {
        let w = plan.cols.min(m - c0);
        let span = ldz * (w - 1) + n;
        let at = |error: DeviceError| Q2Stopped {
            error,
            done: c0,
            torn: false,
        };
        let host = &mut z[c0 * ldz..c0 * ldz + span];
        stream
            .memcpy_htod(&host[..], &mut zd.slice_mut(0..span))
            .map_err(|e| at(e.into()))?;
        for &(i_lo, i_hi) in &pieces {
            let q_base = sweep_offset(n, i_lo);
            if let (Q2At::Host(q), true) = (q, pieces.len() > 1) {
                let src = &q.v[q_base..sweep_offset(n, i_hi)];
                stream
                    .memcpy_htod(src, &mut piece.slice_mut(0..src.len()))
                    .map_err(|e| at(e.into()))?;
            }
            let reflectors = match q {
                Q2At::Host(_) => &piece,
                // Whole (one piece from sweep 0), so q_base is 0.
                Q2At::Gpu(q) => &q.v,
            };
            let (w_arg, lo_arg, hi_arg) = (int(w)?, int(i_lo)?, int(i_hi)?);
            let base_arg = q_base as i64;
            let grid = ctas(i_hi - i_lo, w);
            let mut counts = progress.slice_mut(0..grid);
            stream.memset_zeros(&mut counts).map_err(|e| at(e.into()))?;
            let cfg = LaunchConfig {
                grid_dim: (int(grid)? as u32, 1, 1),
                block_dim: (THREADS as u32, 1, 1),
                // Two buffers of a step's coefficients and tau.
                shared_mem_bytes: (2 * GROUP * (b + 2 * LANES + 1) * elem) as u32,
            };
            let mut launch = stream.launch_builder(&func);
            launch
                .arg(reflectors)
                .arg(&mut zd)
                .arg(&n_arg)
                .arg(&w_arg)
                .arg(&ldz_arg)
                .arg(&lo_arg)
                .arg(&hi_arg)
                .arg(&base_arg)
                .arg(&mut counts);
            // SAFETY: the arguments match sb2st_q2_{s,d}{b}: `reflectors` holds
            // Q2's entries of sweeps i_lo .. i_hi from q_base, `zd` w columns of ldz ≥ n
            // entries, `counts` a zeroed count per CTA (one per group of sweeps and block of
            // THREADS / LANES columns); the coefficients of a step in shared memory. A CTA
            // waits only for one launched before it, so the launch ends.
            unsafe { launch.launch(cfg) }.map_err(|e| at(e.into()))?;
        }
        // Everything before the download has finished or failed by now.
        let launched = clock.elapsed().as_secs_f64();
        stream.synchronize().map_err(|e| at(e.into()))?;
        kernel_secs += clock.elapsed().as_secs_f64() - launched;
        let torn = |e: cudarc::driver::DriverError| Q2Stopped {
            error: e.into(),
            done: c0,
            torn: true,
        };
        stream.memcpy_dtoh(&zd.slice(0..span), host).map_err(torn)?;
        stream.synchronize().map_err(torn)?;
    }
    crate::dispatch::debug(|| {
        format!(
            "q2 gpu: n={n} m={m}: {:.3} s, of which waiting for the kernels {kernel_secs:.3} s",
            clock.elapsed().as_secs_f64()
        )
    });
    Ok(Q2Run {
        block_columns: m.div_ceil(plan.cols),
        pieces: pieces.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_keep_q2_whole_while_a_block_column_fits_beside_it() {
        let (n, m, elem) = (1000, 1000, 8);
        let q_len = n * (n - 1) / 2;
        let q = (q_len * elem) as u64;
        let col = (n * elem) as u64;
        let all = plan(n, m, n, q_len, 32, elem, q + m as u64 * col);
        assert_eq!(
            all,
            Ok(Plan {
                cols: m,
                sweeps: n - 2
            })
        );
        let blocks = plan(n, m, n, q_len, 32, elem, q + 300 * col);
        assert_eq!(
            blocks,
            Ok(Plan {
                cols: 300,
                sweeps: n - 2
            })
        );
        // Q2 beside 100 columns only: pieces, half the budget for Z.
        let budget = q + 100 * col;
        let pieces = plan(n, m, n, q_len, 32, elem, budget).expect("a plan");
        assert_eq!(pieces.cols as u64, budget / 2 / col);
        assert_eq!(pieces.sweeps % 32, 0);
        let used = (pieces.cols * n + pieces.sweeps * (n - 1)) * elem;
        assert!(used as u64 <= budget && pieces.sweeps < n - 2, "{pieces:?}");
        // Not even a group beside THREADS columns.
        let least = THREADS as u64 * col + 32 * ((n - 1) * elem) as u64;
        assert_eq!(plan(n, m, n, q_len, 32, elem, least - 1), Err(least));
        assert!(plan(n, m, n, q_len, 32, elem, least).is_ok());
    }

    /// The kernel's pipelined schedule replayed on the host (`kernels/sb2st_q2.cu`): one agent
    /// per group of `g` sweeps with a window of the kernel's padded size for `p` lanes, which
    /// loads its rows only when the group before has written back as many steps as the
    /// kernel waits for, the agents interleaved at random. Each reflector is applied with
    /// the host's arithmetic, so a valid order gives the host's Z bit for bit, and a load
    /// that came too early shows.
    fn pipelined_on_the_host(q: &Reflectors<f64>, z: &mut [f64], g: usize, p: usize, seed: u64) {
        use crate::sbr::sb2st::cpu::dot;
        let (n, b) = (q.n, q.b);
        let sweeps = n - 2;
        let rp = (b + g - 1).div_ceil(p) * p;
        let groups = sweeps.div_ceil(g);
        // (first sweep, window's first row, step, window, state): 0 waits for the first
        // load, 1 applies a step, 2 waits to slide, 3 is done.
        let mut agents: Vec<(usize, usize, usize, Vec<f64>, u8)> = (0..groups)
            .map(|r| {
                let i0 = (sweeps - 1) / g * g - r * g;
                (i0, i0 + 1, 0, vec![0.0; rp], 0)
            })
            .collect();
        let mut progress = vec![0usize; groups];
        let mut rng = crate::testmat::Rng::new(seed);
        let row = |z: &[f64], r: usize| if r < n { z[r] } else { 0.0 };
        loop {
            let before = |r: usize| if r == 0 { usize::MAX } else { progress[r - 1] };
            let ready: Vec<usize> = (0..groups)
                .filter(|&r| match agents[r].4 {
                    0 => before(r) >= 2,
                    1 => true,
                    2 => before(r) >= agents[r].2 + 3,
                    _ => false,
                })
                .collect();
            if ready.is_empty() {
                assert!(agents.iter().all(|a| a.4 == 3), "the schedule deadlocked");
                return;
            }
            let r = ready[rng.below(ready.len())];
            let (i0, top, step, window, state) = &mut agents[r];
            match *state {
                0 => {
                    for (w, x) in window.iter_mut().enumerate() {
                        *x = row(z, *top + w);
                    }
                    *state = 1;
                }
                1 => {
                    let kb = *step * b;
                    for j in (0..g).rev() {
                        let i = *i0 + j;
                        if i >= sweeps || kb >= n - 1 - i {
                            continue;
                        }
                        let len = b.min(n - 1 - i - kb);
                        let at = super::sweep_offset(n, i) + kb;
                        let v = &q.v[at..at + len];
                        let tau = v[0];
                        if tau == 0.0 {
                            continue;
                        }
                        let col = &mut window[j..j + len];
                        let s = (col[0] + dot(&v[1..], &col[1..])) * tau;
                        col[0] -= s;
                        for (x, &vr) in col[1..].iter_mut().zip(&v[1..]) {
                            *x -= s * vr;
                        }
                    }
                    for w in 0..b {
                        if *top + w < n {
                            z[*top + w] = window[w];
                        }
                    }
                    progress[r] = *step + 1;
                    *state = 2;
                }
                _ => {
                    window.copy_within(b.., 0);
                    *top += b;
                    for (w, x) in window.iter_mut().enumerate().skip(rp - b) {
                        *x = row(z, *top + w);
                    }
                    *step += 1;
                    if *top >= n {
                        progress[r] = usize::MAX;
                        *state = 3;
                    } else {
                        *state = 1;
                    }
                }
            }
        }
    }

    #[test]
    fn the_pipelined_schedule_gives_the_hosts_product() {
        for (n, b, g, p) in [
            (200, 8, 4, 4),
            (301, 32, 32, 4),
            (420, 64, 32, 4),
            (257, 16, 8, 8),
        ] {
            for seed in 0..4u64 {
                let mut rng = crate::testmat::Rng::new(seed ^ (n as u64) << 8);
                let mut q = Reflectors::<f64>::new(n, b).expect("memory");
                // Orthogonal reflectors: tau = 2 / (vᵀv) with v's unit first entry.
                for i in 0..n - 2 {
                    let (at, rows) = (super::super::sweep_offset(n, i), n - 1 - i);
                    for k in (0..rows).step_by(b) {
                        let len = b.min(rows - k);
                        let v = &mut q.v[at + k..at + k + len];
                        let mut norm = 1.0;
                        for x in v[1..].iter_mut() {
                            *x = rng.range(-1.0, 1.0);
                            norm += *x * *x;
                        }
                        v[0] = if rng.chance(0.1) { 0.0 } else { 2.0 / norm };
                    }
                }
                let z0: Vec<f64> = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
                let mut host = z0.clone();
                q.apply_left(1, &mut host, n, 1);
                let mut model = z0;
                pipelined_on_the_host(&q, &mut model, g, p, seed);
                assert!(
                    model == host,
                    "n {n} b {b} g {g} p {p} seed {seed}: the pipelined order differs"
                );
            }
        }
    }
}
