//! Q1 applied through an executor (cuBLAS on the GPU): Z := Q1 Z from the reflectors that
//! [`super::syrdb`] leaves in A and TAU, in compact WY form. Panel p's block reflector is
//! Q(p) = I − V T Vᵀ on rows s = (p + 1) kd .. n, where V (n − s x pk, unit diagonal, zeros
//! above it) is xGEQRF's for UPLO = 'L' and the transpose of xGELQF's rows for 'U' (so that
//! Q(p) is the transpose of that LQ factor's Q, as [`super::apply_q1`] applies with xORMLQ and
//! TRANS = 'T'); T is xLARFT's forward factor. Consecutive panels together are such a block
//! reflector too, so Q1 goes in blocks of 256 reflectors (see `BLOCK`), each three GEMMs on
//! all columns: W = Vᵀ Z, W := T W, Z −= V W, last block first.
//!
//! T comes from the Gram matrix VᵀV formed on the executor (one GEMM per block, all downloaded
//! at once) by xLARFT's recurrence on the host: xLARFT itself on the host costs n² w / 2 flops
//! of BLAS 2 for blocks of w (seconds at n = 16384). The blocks' V stay in executor memory when
//! they fit beside block columns of Z at least half as wide as without them; otherwise each is
//! uploaded again for every block column. Z is uploaded by block columns (rows kd.., which Q1 leaves alone above)
//! as wide as the budget allows: one when Z fits. Each block column is written back whole
//! before the next one starts, so a failure leaves columns that are either done or untouched.

use super::executor::{host_zeros, op, op_mut, ExecError, Executor};
use super::panel::device::{gram_matrix, t_from_gram};
use crate::host::workers::run_on_threads;
use crate::real::Real;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// How a run of [`apply_q1_on`] went: the seconds spent moving Z's block columns (each
/// transfer timed between synchronisations of the executor) and the block width.
#[derive(Clone, Copy, Debug, Default)]
pub struct Q1Run {
    pub transfer_secs: f64,
    pub block_columns: usize,
    pub width: usize,
    /// Reflectors applied at once (BLOCK, or kd where the budget is short).
    pub reflectors: usize,
    /// The panels' V were kept in executor memory (else uploaded once per block column).
    pub v_resident: bool,
}

/// Why [`apply_q1_on`] stopped: the executor's error and the leading columns of Z already
/// done (the others untouched, unless `torn`: then column `done`'s block may be half written).
#[derive(Debug)]
pub struct Q1Stopped {
    pub error: ExecError,
    pub done: usize,
    pub torn: bool,
}

/// The reflectors applied together: consecutive panels' reflectors form one unit lower
/// trapezoidal V (reflector j's unit at row j + kd, its entries below, whatever its panel), so
/// blocks of BLOCK of them are applied at once, a GEMM's inner dimension of 256 instead of kd
/// (32 or 64), which runs much nearer cuBLAS's peak for the same flops. Where the budget cannot
/// hold such blocks (their T and V take about 2 n · 256 entries), blocks of kd.
const BLOCK: usize = 256;

/// The blocks of w reflectors of a reduction of order n to kd off-diagonals (n > kd + 1): (i,
/// s, k) with the block's first reflector i (A's column i of the lower view), its first row
/// s = i + kd and its k reflectors, first block first.
fn blocks(n: usize, kd: usize, w: usize) -> Vec<(usize, usize, usize)> {
    (0..n - kd)
        .step_by(w)
        .map(|i| (i, i + kd, w.min(n - kd - i)))
        .collect()
}

/// The reflectors of a block: BLOCK (or, `narrow`, kd), at least kd, at most all of them.
fn width(n: usize, kd: usize, narrow: bool) -> usize {
    let w = if narrow { kd } else { kd.max(BLOCK) };
    w.min(n - kd)
}

/// The executor memory (elements) apart from Z's block columns: the blocks' T (w x w each,
/// w their width), all blocks' V or the largest one's; and per column of a block column.
struct Sizes {
    t: usize,
    v_all: usize,
    v_one: usize,
    per_column: usize,
}

fn sizes(n: usize, kd: usize, w: usize) -> Sizes {
    let bs = blocks(n, kd, w);
    Sizes {
        t: bs.len() * w * w,
        v_all: bs.iter().map(|&(_, s, k)| (n - s) * k).sum(),
        v_one: (n - kd) * bs[0].2,
        per_column: (n - kd) + 2 * w,
    }
}

/// The bytes [`apply_q1_on`] holds on its executor for block columns of `nb` (n > kd + 1),
/// with all of V resident or one block's at a time, in blocks of BLOCK reflectors (or,
/// `narrow`, of kd); its layout takes the widest block columns the executor's budget holds
/// (resident V where that leaves them at least half as wide), in blocks of BLOCK where they
/// fit.
pub fn q1_bytes(n: usize, kd: usize, nb: usize, resident: bool, narrow: bool, elem: usize) -> u64 {
    let z = sizes(n, kd, width(n, kd, narrow));
    let v = if resident { z.v_all } else { z.v_one };
    ((z.t + v + nb * z.per_column) * elem) as u64
}

/// Where the executor holds things: the blocks' V (packed one after the other, or one at a
/// time), their T (w x w each), W (two w x nb), and a block column of Z (n − kd x nb).
struct Layout {
    w: usize,
    v_offsets: Vec<usize>,
    v_len: usize,
    resident: bool,
    nb: usize,
}

/// The layout for `budget` bytes in blocks of BLOCK reflectors, else of kd; or the bytes the
/// narrowest one needs.
fn layout(n: usize, kd: usize, m: usize, elem: usize, budget: u64) -> Result<Layout, u64> {
    fit(n, kd, m, elem, budget, false).or_else(|_| fit(n, kd, m, elem, budget, true))
}

/// [`layout`] with blocks of BLOCK reflectors, or (`narrow`) of kd.
fn fit(
    n: usize,
    kd: usize,
    m: usize,
    elem: usize,
    budget: u64,
    narrow: bool,
) -> Result<Layout, u64> {
    let w = width(n, kd, narrow);
    let z = sizes(n, kd, w);
    let width = |v: usize| {
        let room = (budget / elem as u64).saturating_sub((z.t + v) as u64);
        (room / z.per_column as u64).min(m as u64) as usize
    };
    let (with_v, without) = (width(z.v_all), width(z.v_one));
    if without == 0 {
        return Err(q1_bytes(n, kd, 1, false, narrow, elem));
    }
    // Resident V saves an upload of n²/2 entries per block column; narrower blocks cost more
    // block columns, each of which moves its part of Z once either way.
    let resident = with_v > 0 && 2 * with_v >= without;
    let bs = blocks(n, kd, w);
    let v_offsets = if resident {
        let mut at = 0;
        bs.iter()
            .map(|&(_, s, k)| {
                at += (n - s) * k;
                at - (n - s) * k
            })
            .collect()
    } else {
        vec![0; bs.len()]
    };
    Ok(Layout {
        w,
        v_len: if resident { z.v_all } else { z.v_one },
        v_offsets,
        resident,
        nb: if resident { with_v } else { without },
    })
}

/// Uploads block (i, s, pk)'s V into `dst` at `off`: for UPLO = 'L' n − s x pk (leading
/// dimension n − s) from A's columns, for 'U' its transpose pk x n − s (leading dimension
/// pk) from A's rows; the unit diagonal and the zeros beside it written here (A holds the
/// band there).
#[allow(clippy::too_many_arguments)]
fn upload_v<T: Real, E: Executor<T>>(
    exec: &mut E,
    upper: bool,
    n: usize,
    a: &[T],
    lda: usize,
    (i, s, pk): (usize, usize, usize),
    dst: &mut E::Buf,
    off: usize,
) -> Result<(), ExecError> {
    let pn = n - s;
    let (rows, cols) = if upper { (pk, pn) } else { (pn, pk) };
    // Column c of the block: A's entries between the unit diagonal and the zeros, each entry
    // written once (V is n²/2 entries in all).
    let column = |c: usize, col: &mut [T]| {
        if upper {
            // Column c holds entry c of each reflector: A's entries for reflectors before c.
            let k = c.min(pk);
            let at = i + (s + c) * lda;
            col[..k].copy_from_slice(&a[at..at + k]);
            if c < pk {
                col[c] = T::ONE;
                col[c + 1..].fill(T::ZERO);
            }
        } else {
            // Column c is reflector c: A's entries below row c.
            let at = s + (i + c) * lda;
            col[..c].fill(T::ZERO);
            col[c] = T::ONE;
            col[c + 1..].copy_from_slice(&a[at + c + 1..at + rows]);
        }
    };
    exec.upload_block(dst, off, rows, rows, cols, &mut |start, out| {
        fill_columns(out, rows, start / rows, &column)
    })
}

/// `column(c, col)` for the whole columns of `out` (`rows` each), the first being column
/// `first`: a large piece on the host's threads, in runs of columns (forming Q1's T, mostly
/// V's upload, went at about 5 GB/s at n = 100000 with one thread filling the staging).
fn fill_columns<T: Send>(
    out: &mut [T],
    rows: usize,
    first: usize,
    column: &(impl Fn(usize, &mut [T]) + Sync),
) {
    if out.len() < PARALLEL_FILL || rows == 0 {
        for (q, col) in out.chunks_mut(rows.max(1)).enumerate() {
            column(first + q, col);
        }
        return;
    }
    let per = PARALLEL_FILL / 16 / rows + 1;
    let queue = Mutex::new(out.chunks_mut(rows * per).enumerate());
    let next = || queue.lock().unwrap_or_else(PoisonError::into_inner).next();
    run_on_threads(crate::host::threads(), || {
        while let Some((r, run)) = next() {
            for (q, col) in run.chunks_mut(rows).enumerate() {
                column(first + r * per + q, col);
            }
        }
    });
}

/// Pieces of V at least this long (elements) are filled on the host's threads.
const PARALLEL_FILL: usize = 1 << 20;

/// Z := Q1 Z on `exec` (module notes), for the n x m `z` (leading dimension `ldz`), Q1 from
/// the reflectors in the n x n `a` (leading dimension `lda`) and `tau` of a reduction of the
/// `uplo` triangle to `kd` off-diagonals. With `z_locked` (Z page-locked by the caller for
/// the call), Z's block columns move by the executor's direct transfers instead of its
/// staging buffers. On failure, columns `done..` of Z are untouched (see [`Q1Stopped`]).
#[allow(clippy::too_many_arguments)]
pub fn apply_q1_on<T: Real, E: Executor<T>>(
    exec: &mut E,
    uplo: u8,
    n: usize,
    kd: usize,
    a: &[T],
    lda: usize,
    tau: &[T],
    m: usize,
    z: &mut [T],
    ldz: usize,
    z_locked: bool,
) -> Result<Q1Run, Q1Stopped> {
    let mut run = Q1Run::default();
    if n <= kd + 1 || m == 0 {
        return Ok(run);
    }
    let stopped = |error| Q1Stopped {
        error,
        done: 0,
        torn: false,
    };
    let upper = uplo.eq_ignore_ascii_case(&b'U');
    let elem = std::mem::size_of::<T>();
    let plan = layout(n, kd, m, elem, exec.budget()).map_err(|needed| {
        stopped(ExecError::Budget {
            needed,
            budget: exec.budget(),
        })
    })?;
    let (ps, w) = (blocks(n, kd, plan.w), plan.w);
    let mut v = exec.alloc(plan.v_len.max(1)).map_err(stopped)?;
    let mut t = exec.alloc(ps.len() * w * w).map_err(stopped)?;
    let clock = Instant::now();
    form_t(exec, upper, n, w, a, lda, tau, &ps, &plan, &mut v, &mut t).map_err(stopped)?;
    let t_secs = clock.elapsed().as_secs_f64();
    let nb = plan.nb;
    let rows = n - kd;
    let mut w1 = exec.alloc(w * nb).map_err(stopped)?;
    let mut w2 = exec.alloc(w * nb).map_err(stopped)?;
    let mut zb = exec.alloc(rows * nb).map_err(stopped)?;
    (run.width, run.reflectors) = (nb, w);
    run.v_resident = plan.resident;
    let mut j0 = 0;
    while j0 < m {
        let cols = nb.min(m - j0);
        let stop = move |error, torn| Q1Stopped {
            error,
            done: j0,
            torn,
        };
        let clock = Instant::now();
        let first = kd + j0 * ldz;
        assert!(first + (cols - 1) * ldz + rows <= z.len(), "Z too short");
        if z_locked {
            // SAFETY: the block column lies inside `z` (asserted), which nothing else touches
            // until the sync below.
            unsafe { exec.upload_direct(&mut zb, 0, rows, rows, cols, z[first..].as_ptr(), ldz) }
        } else {
            exec.upload_block(&mut zb, 0, rows, rows, cols, &mut |start, out| {
                for (q, col) in out.chunks_mut(rows).enumerate() {
                    let j = j0 + start / rows + q;
                    col.copy_from_slice(&z[kd + j * ldz..kd + j * ldz + rows]);
                }
            })
        }
        .and_then(|()| exec.sync())
        .map_err(|e| stop(e, false))?;
        run.transfer_secs += clock.elapsed().as_secs_f64();
        for (p, &panel) in ps.iter().enumerate().rev() {
            let (_, s, pk) = panel;
            if !plan.resident {
                upload_v(exec, upper, n, a, lda, panel, &mut v, 0).map_err(|e| stop(e, false))?;
            }
            let vp = plan.v_offsets[p];
            apply_panel(
                exec,
                upper,
                (n - s, pk, w, cols),
                (&v, vp),
                (&t, p * w * w),
                (&mut w1, &mut w2),
                &mut zb,
                (s - kd, rows),
            )
            .map_err(|e| stop(e, false))?;
        }
        exec.sync().map_err(|e| stop(e, false))?;
        let clock = Instant::now();
        let mut written = false;
        if z_locked {
            let dst = z[first..].as_mut_ptr();
            // SAFETY: as for the upload; the call waits for its copy.
            unsafe { exec.download_direct(&zb, 0, rows, rows, cols, dst, ldz) }
        } else {
            exec.download_block(&zb, 0, rows, rows, cols, &mut |start, piece| {
                written = true;
                for (q, col) in piece.chunks(rows).enumerate() {
                    let j = j0 + start / rows + q;
                    z[kd + j * ldz..kd + j * ldz + rows].copy_from_slice(col);
                }
            })
        }
        .map_err(|e| {
            let torn = written || matches!(e, ExecError::Torn(_));
            stop(e, torn)
        })?;
        run.transfer_secs += clock.elapsed().as_secs_f64();
        run.block_columns += 1;
        j0 += cols;
    }
    crate::dispatch::debug(|| {
        format!(
            "q1: {} blocks of {w} reflectors, V {}resident: T formed in {t_secs:.3} s; \
             {} block column(s) of {nb}, transfers {:.3} s",
            ps.len(),
            if plan.resident { "" } else { "not " },
            run.block_columns,
            run.transfer_secs
        )
    });
    Ok(run)
}

/// Each block's T into `t` (w x w apart, leading dimension w), from the Gram matrices VᵀV
/// formed in `t` on the executor and downloaded at once; the blocks' V uploaded into `v` as
/// `plan` lays them out.
#[allow(clippy::too_many_arguments)]
fn form_t<T: Real, E: Executor<T>>(
    exec: &mut E,
    upper: bool,
    n: usize,
    w: usize,
    a: &[T],
    lda: usize,
    tau: &[T],
    ps: &[(usize, usize, usize)],
    plan: &Layout,
    v: &mut E::Buf,
    t: &mut E::Buf,
) -> Result<(), ExecError> {
    for (p, &panel) in ps.iter().enumerate() {
        let (_, s, pk) = panel;
        let (pn, off) = (n - s, plan.v_offsets[p]);
        upload_v(exec, upper, n, a, lda, panel, v, off)?;
        let g = op_mut(t, p * w * w, w);
        if upper {
            // V is stored transposed: VᵀV = W Wᵀ for the pk x pn W.
            exec.gemm(
                false,
                true,
                pk,
                pk,
                pn,
                T::ONE,
                op(v, off, pk),
                op(v, off, pk),
                T::ZERO,
                g,
            )?;
        } else {
            gram_matrix(exec, pn, pk, op(v, off, pn), g)?;
        }
    }
    let total = ps.len() * w * w;
    let mut grams = host_zeros(total)?;
    exec.download(t, 0, total, &mut |start, piece| {
        grams[start..start + piece.len()].copy_from_slice(piece)
    })?;
    // The blocks' recurrences are independent: the host's threads take them from a queue.
    let mut ts = host_zeros(total)?;
    let queue = Mutex::new(ts.chunks_mut(w * w).zip(grams.chunks(w * w)).zip(ps));
    let failed = Mutex::new(None);
    let fail = |e| *failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
    let next = || queue.lock().unwrap_or_else(PoisonError::into_inner).next();
    run_on_threads(crate::host::threads().min(ps.len()), || {
        while let Some(((tb, gb), &(i, _, pk))) = next() {
            let mut g = match host_zeros(pk * pk) {
                Ok(g) => g,
                Err(e) => return fail(e),
            };
            for c in 0..pk {
                g[c * pk..(c + 1) * pk].copy_from_slice(&gb[c * w..c * w + pk]);
            }
            match t_from_gram(pk, &g, &tau[i..i + pk]) {
                Ok(tp) => {
                    for c in 0..pk {
                        tb[c * w..c * w + pk].copy_from_slice(&tp[c * pk..(c + 1) * pk]);
                    }
                }
                Err(e) => return fail(e),
            }
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Err(e);
    }
    exec.upload(t, 0, total, &mut |start, out| {
        out.copy_from_slice(&ts[start..start + out.len()])
    })
}

/// Z[r..r + pn, ..cols] −= V T Vᵀ Z[r..] for one block: V (pn x pk, or stored transposed
/// when `upper`) at `v`, its T (leading dimension w, zeros below the diagonal) at `t`, W1 and
/// W2 w x cols each, Z's block column of leading dimension `ldz`.
#[allow(clippy::too_many_arguments)]
fn apply_panel<T: Real, E: Executor<T>>(
    exec: &mut E,
    upper: bool,
    (pn, pk, w, cols): (usize, usize, usize, usize),
    (v, vp): (&E::Buf, usize),
    (t, tp): (&E::Buf, usize),
    (w1, w2): (&mut E::Buf, &mut E::Buf),
    zb: &mut E::Buf,
    (r, ldz): (usize, usize),
) -> Result<(), ExecError> {
    let ldv = if upper { pk } else { pn };
    let vop = || op(v, vp, ldv);
    // W1 = Vᵀ Z (pk x cols).
    exec.gemm(
        !upper,
        false,
        pk,
        cols,
        pn,
        T::ONE,
        vop(),
        op(zb, r, ldz),
        T::ZERO,
        op_mut(w1, 0, w),
    )?;
    // W2 = T W1: a GEMM on the k x k T costs a sliver of the other two.
    exec.gemm(
        false,
        false,
        pk,
        cols,
        pk,
        T::ONE,
        op(t, tp, w),
        op(w1, 0, w),
        T::ZERO,
        op_mut(w2, 0, w),
    )?;
    // Z −= V W2.
    let minus = T::ZERO - T::ONE;
    exec.gemm(
        upper,
        false,
        pn,
        cols,
        pk,
        minus,
        vop(),
        op(w2, 0, w),
        T::ONE,
        op_mut(zb, r, ldz),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sbr::executor::cpu::CpuExecutor;
    use crate::sbr::executor::flaky::Flaky;
    use crate::sbr::{apply_q1, syrdb, Path};
    use crate::testmat::{dense_symmetric, seed_from_time, DenseFamily, Rng};

    /// Every column reaches `column` once, with its index, on the host's threads (pieces from
    /// PARALLEL_FILL) and on the caller's.
    #[test]
    fn large_pieces_of_columns_are_filled_whole_and_once() {
        for (rows, cols, first) in [
            (1000, 3000, 7),
            (3, 400_000, 0),
            (1 << 20, 2, 5),
            (50, 10, 2),
        ] {
            let mut out = vec![-1.0f64; rows * cols];
            let calls = std::sync::atomic::AtomicUsize::new(0);
            fill_columns(&mut out, rows, first, &|c: usize, col: &mut [f64]| {
                calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                assert_eq!(col.len(), rows);
                col.fill(c as f64);
            });
            assert_eq!(calls.into_inner(), cols, "rows {rows} cols {cols}");
            for (q, col) in out.chunks(rows).enumerate() {
                assert!(col.iter().all(|&x| x == (first + q) as f64), "column {q}");
            }
        }
    }

    /// The executor failing at each of its operations in turn, with block columns of 3: the
    /// columns before `done` hold Q1 Z, the others are untouched, unless `torn` (a block's
    /// download failed after its first column: the block's columns are each new or old).
    #[test]
    fn failure_leaves_columns_done_or_untouched() {
        let seed = seed_from_time();
        let (n, kd, m) = (40, 7, 13);
        for (uplo, direct) in [(b'L', false), (b'U', false), (b'L', true), (b'U', true)] {
            let mut rng = Rng::new(seed);
            let mut a = dense_symmetric::<f64>(DenseFamily::Random, n, &mut rng);
            let (mut ab, mut tau) = (vec![0.0; (kd + 1) * n], vec![0.0; n - kd]);
            let r = syrdb(
                uplo,
                n,
                kd,
                &mut a,
                n,
                &mut ab,
                kd + 1,
                &mut tau,
                Path::Lapack,
            );
            assert_eq!(r.info, 0);
            let z0: Vec<f64> = (0..n * m).map(|_| rng.range(-1.0, 1.0)).collect();
            let mut want = z0.clone();
            apply_q1(uplo, n, kd, &a, n, &tau, m, &mut want, n).expect("host memory");
            let budget = q1_bytes(n, kd, 3, false, false, 8);
            let (mut torn_seen, mut left) = (false, 0);
            loop {
                let what = format!(
                    "uplo {} direct {direct} left {left} seed {seed}",
                    uplo as char
                );
                let mut exec = Flaky::new(left, false, false);
                exec.cpu = CpuExecutor::new(budget);
                let mut z = z0.clone();
                let got = apply_q1_on(&mut exec, uplo, n, kd, &a, n, &tau, m, &mut z, n, direct);
                let (done, torn) = match &got {
                    Ok(run) => {
                        assert_eq!(run.width, 3, "{what}");
                        (m, false)
                    }
                    Err(s) => (s.done, s.torn),
                };
                torn_seen |= torn;
                for j in 0..m {
                    let col = j * n..(j + 1) * n;
                    let diff = (z[col.clone()].iter().zip(&want[col.clone()]))
                        .fold(0.0f64, |d, (x, y)| d.max((x - y).abs()));
                    let untouched = z[col.clone()] == z0[col];
                    if j < done {
                        assert!(diff <= 1e-13, "{what}: column {j} off by {diff}");
                    } else if torn && j < done + 3 {
                        // The torn block's columns: each whole, new or old.
                        assert!(diff <= 1e-13 || untouched, "{what}: column {j} mixed");
                    } else {
                        assert!(untouched, "{what}: column {j} written");
                    }
                }
                if got.is_ok() {
                    break;
                }
                left += 1;
            }
            // Direct downloads fail before writing, unless they tear (this executor's do not).
            assert!(
                torn_seen || direct,
                "no torn download among {left} failures"
            );
        }
    }
}
