//! The streaming (out-of-core) mode: per step, the panel, a SYMM pass and a SYR2K pass over
//! the trailing matrix's block columns, which stream through a ring of executor buffers,
//! straight from and to the page-locked user's matrix where the executor can map it.

use crate::device::memory::par_copy;
use crate::lapack::Dense;
use crate::real::Real;
use crate::sbr::driver::{Job, Progress, StepBufs};
use crate::sbr::executor::{op, op_mut, DirectBlock, ExecError, Executor, Phases};
use crate::sbr::panel::cholqr;
use crate::sbr::panel::device::blocked_panel;
use crate::sbr::panel::{
    factor_panel, panel_home, panel_through_executor, panel_v, upload_panel, upload_panels,
    PanelBufs, SubPanels,
};
use crate::sbr::plan::{block_columns, describe, symm_columns, Mode};
use crate::sbr::update::{finish_x, symm_block};
use std::time::Instant;

pub(super) struct Pending<T> {
    pub(super) x: Vec<T>,
    pub(super) pk: usize,
    /// Trailing columns `0..done` are written back (a column count, not a block count: a
    /// resumed pass may cut the rest into blocks of another width).
    pub(super) done: usize,
    /// The factored panel (rows `i..`, columns `i..i+kd`), written to the host when the pass
    /// ends, so that the host never holds a factored panel beside a trailing matrix that has
    /// not been updated with it. Its rows `kd..` hold `V` in LAPACK's layout.
    pub(super) panel: Vec<T>,
}

/// The streaming mode's executor buffers: three block columns, and for direct transfers of an
/// upper-stored matrix two more (up, down) that A's block rows go through to be transposed.
pub(super) struct Ring<B> {
    pub(super) slots: [B; 3],
    pub(super) turn: Option<[B; 2]>,
}

/// Buffer `k` of `Ring::turn` (0: up, 1: down), if there are any.
pub(super) fn turn_buf<B>(turn: &mut Option<[B; 2]>, k: usize) -> Option<&mut B> {
    turn.as_mut().map(|t| &mut t[k])
}

/// Uploads block column `(c, w)` of the trailing matrix starting at `s` into `buf` (ld `pn − c`):
/// straight from the host matrix where it is mapped (through `turn` to be transposed where it is
/// stored upper), else through the executor's staging.
pub(super) fn upload_column<T: Real, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    s: usize,
    (c, w): (usize, usize),
    buf: &mut E::Buf,
    turn: Option<&mut E::Buf>,
) -> Result<(), ExecError> {
    let h = job.n - s - c;
    if job.direct {
        let (src, lda) = (job.host.ptr(s + c, s + c), job.host.lda);
        // SAFETY (both): the block lies in the mapped matrix; the passes write the host matrix
        // only through `download_direct` and end with `sync` (see `symm_pass`, `syr2k_pass`).
        return match turn {
            None => unsafe { exec.upload_direct(buf, 0, h, h, w, src, lda) },
            Some(t) => {
                // A's rows s + c.. + w of columns s + c.., w x h.
                unsafe { exec.upload_direct(t, 0, w, w, h, src, lda)? };
                exec.transpose_in_transfer(true, w, h, op(t, 0, w), op_mut(buf, 0, h))
            }
        };
    }
    let host = &*job.host;
    exec.upload(buf, 0, h * w, &mut |start, out| {
        host.gather(s + c, h, s + c, start, out)
    })
}

/// Columns of the tiles along a block column's diagonal block that come back through a host
/// buffer (see [`download_column`]); 3 in the unit tests, so that their small blocks have
/// several.
pub(super) const DIAG_TILE: usize = if cfg!(test) { 3 } else { 64 };

/// Writes block column `(c, w)` of the trailing matrix starting at `s` back from `buf`
/// (ld `pn − c`), entries on and below the diagonal only. Where the host matrix is mapped, the
/// tiles of [`DIAG_TILE`] columns along the diagonal block (their other triangle is not ours to
/// write) come down into `diagonal` first; then everything below them goes straight into the
/// host matrix in one batch (for an upper-stored matrix, through `turn`, transposed, as the
/// rows of `A` left of each tile and below the block), and the tiles are copied in last. So a
/// failure reported before the batch leaves the column as it was, for the resumption to redo.
/// Where a failure may have left part of the column on the host (a staged download that had
/// handed over a piece, an [`ExecError::Torn`] batch), `landing` is set: neither the
/// resumption (it would update that part twice) nor LAPACK (the input is gone) can finish that
/// call, which stops with an error (see [`with_fallback`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn download_column<T: Real, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    s: usize,
    (c, w): (usize, usize),
    buf: &E::Buf,
    turn: Option<&mut E::Buf>,
    diagonal: &mut Vec<T>,
    landing: &mut bool,
) -> Result<(), ExecError> {
    let h = job.n - s - c;
    let host = &mut *job.host;
    if !job.direct {
        exec.download(buf, 0, h * w, &mut |start, piece| {
            *landing = true;
            host.scatter(s + c, h, s + c, start, piece)
        })?;
        *landing = false;
        return Ok(());
    }
    let b = DIAG_TILE.min(w);
    let tiles = block_columns(w, b);
    // Tile (t, bt) at entry t·b of `diagonal`, leading dimension bt.
    diagonal.resize(b * w, T::ZERO);
    let at = diagonal.as_mut_ptr();
    let to_buffer: Vec<DirectBlock<T>> = tiles
        .iter()
        .map(|&(t, bt)| DirectBlock {
            off: t + t * h,
            ld: h,
            rows: bt,
            cols: bt,
            // (in bounds: t·b + bt² ≤ w·b)
            dst: at.wrapping_add(t * b),
            lda: bt,
        })
        .collect();
    // SAFETY: the tiles lie in `diagonal`, which is ours alone. Nothing of A is written.
    match unsafe { exec.download_direct_blocks(buf, &to_buffer) } {
        Err(ExecError::Torn(e)) => return Err(ExecError::Device(e)),
        r => r?,
    }
    let lda = host.lda;
    let below: Vec<DirectBlock<T>> = match turn {
        None => tiles
            .iter()
            .filter(|&&(t, bt)| t + bt < h)
            .map(|&(t, bt)| DirectBlock {
                off: t + bt + t * h,
                ld: h,
                rows: h - t - bt,
                cols: bt,
                dst: host.ptr(s + c + t + bt, s + c + t),
                lda,
            })
            .collect(),
        Some(tb) => {
            // The column as A's block row (w x h): L(i, j) at j + i·w.
            exec.transpose_in_transfer(false, h, w, op(buf, 0, h), op_mut(tb, 0, w))?;
            let mut blocks: Vec<DirectBlock<T>> = tiles
                .iter()
                .filter(|&&(t, _)| t > 0)
                .map(|&(t, bt)| DirectBlock {
                    off: t * w,
                    ld: w,
                    rows: t,
                    cols: bt,
                    dst: host.ptr(s + c + t, s + c),
                    lda,
                })
                .collect();
            if h > w {
                blocks.push(DirectBlock {
                    off: w * w,
                    ld: w,
                    rows: w,
                    cols: h - w,
                    dst: host.ptr(s + c + w, s + c),
                    lda,
                });
            }
            return finish_column(exec, job, s, c, tb, &blocks, &tiles, diagonal, landing);
        }
    };
    finish_column(exec, job, s, c, buf, &below, &tiles, diagonal, landing)
}

/// The end of [`download_column`]: the batch `below` from `src` into the host matrix, then
/// the tiles from `diagonal`, their entries on and below the diagonal only.
#[allow(clippy::too_many_arguments)]
pub(super) fn finish_column<T: Real, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    s: usize,
    c: usize,
    src: &E::Buf,
    below: &[DirectBlock<T>],
    tiles: &[(usize, usize)],
    diagonal: &[T],
    landing: &mut bool,
) -> Result<(), ExecError> {
    // SAFETY: the blocks lie in the mapped host matrix, strictly below the tiles of this block
    // column's diagonal block; nothing else touches them during the call.
    if let Err(e) = unsafe { exec.download_direct_blocks(src, below) } {
        *landing = matches!(e, ExecError::Torn(_));
        return Err(e);
    }
    let b = tiles[0].1;
    for &(t, bt) in tiles {
        let tile = &diagonal[t * b..t * b + bt * bt];
        job.host.scatter(s + c + t, bt, s + c + t, 0, tile);
    }
    Ok(())
}

/// `X = A₂ Z`, one block column of `A₂` at a time (the next one uploading meanwhile).
#[allow(clippy::too_many_arguments)]
pub(super) fn symm_pass<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    cols: &[(usize, usize)],
    ring: &mut Ring<E::Buf>,
    zbuf: &E::Buf,
    xbuf: &mut E::Buf,
    s: usize,
    pk: usize,
) -> Result<(), ExecError> {
    let pn = job.n - s;
    upload_column(
        exec,
        job,
        s,
        cols[0],
        &mut ring.slots[0],
        turn_buf(&mut ring.turn, 0),
    )?;
    for (q, &(c, w)) in cols.iter().enumerate() {
        if q + 1 < cols.len() {
            let slot = &mut ring.slots[(q + 1) % 3];
            upload_column(exec, job, s, cols[q + 1], slot, turn_buf(&mut ring.turn, 0))?;
        }
        let d = (&ring.slots[q % 3], 0, pn - c);
        symm_block(exec, d, (c, w), pn, pk, zbuf, xbuf)?;
    }
    if job.direct {
        // The direct uploads read the host matrix until they are done.
        exec.sync()?;
    }
    Ok(())
}

/// What a SYR2K pass needs to take the next step along (see [`syr2k_pass`]).
pub(super) struct NextStep<'a, B, T> {
    /// `Z` of the next panel.
    pub(super) z: &'a mut B,
    /// The next step's `A₂ Z`; its `V` while the panel is factored.
    pub(super) x: &'a mut B,
    pub(super) tau: &'a mut B,
    pub(super) sub: &'a mut SubPanels<B>,
    /// The next panel on the host, as [`Pending::panel`] holds it.
    pub(super) panel: &'a mut Vec<T>,
}

/// The next step's panel, the first kd columns of the block column in `slot` (rows s.. of
/// columns s..s + kd, leading dimension pn), factored in place on lane 1 once the host holds
/// the column as this pass left it: it ends on the host as `panel_through_executor` leaves
/// it, `Z` in `next.z`. Returns the sub-panel counts.
pub(super) fn factor_ahead<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    s: usize,
    slot: &mut E::Buf,
    next: &mut NextStep<E::Buf, T>,
) -> Result<[usize; 2], ExecError> {
    let (n, kd) = (job.n, job.kd);
    let pn = n - s;
    exec.lane(1)?;
    let panel = op_mut(slot, kd, pn);
    let how = blocked_panel(
        exec,
        panel,
        pn - kd,
        kd,
        next.tau,
        0,
        next.x,
        next.z,
        next.sub,
        job.tuning.profile,
    );
    exec.lane(0)?;
    let how = how?;
    let p = &mut *next.panel;
    p.resize(pn * kd, T::ZERO);
    panel_home(exec, job, slot, next.tau, s, p, pn, 0)?;
    Ok(how)
}

/// `V` (pn x pk) of the finished panel `p` (leading dimension `h`) into `vbuf`.
pub(super) fn upload_v<T: Real, E: Executor<T>>(
    exec: &mut E,
    job: &Job<T>,
    vbuf: &mut E::Buf,
    p: &[T],
    h: usize,
    pn: usize,
    pk: usize,
) -> Result<(), ExecError> {
    let kd = job.kd;
    if job.direct {
        // SAFETY: `p` is mapped (one of the run's panel buffers) and is not written before the
        // step's SYR2K pass ends, which waits for the upload.
        return unsafe { exec.upload_direct(vbuf, 0, pn, pn, pk, p[kd..].as_ptr(), h) };
    }
    let v = panel_v(p, h, kd, pn, pk)?;
    exec.upload(vbuf, 0, pn * pk, &mut |start, out| {
        out.copy_from_slice(&v[start..start + out.len()])
    })
}

/// `A₂ −= V Xᵀ + X Vᵀ` block column by block column: upload the next, update this one, write
/// back the previous one, in blocks of `nb` columns. Resumes after `progress.pending.done`
/// columns; returns the finished step's `Pending`, whose host buffers the next step reuses.
///
/// With `next` (a pass from its first column, nb > kd, and a next step whose panel is taller
/// than wide) the pass takes the next step along, so that the trailing matrix travels once per
/// step: once the first block column is back on the host, its first kd columns (the next
/// panel) are factored on lane 1 while the second block column is updated, and every block
/// column then adds its part of the next step's `X = A₂ Z` ([`symm_block`], in the block
/// columns of [`symm_columns`]) before its buffer is reused. That part is queued after the
/// column's write-back: an executor buffer keeps the event of its last read only, so the
/// upload that reuses it waits for the last one queued. (Queued before it, the SYMM's read on
/// lane 0 was forgotten behind the write-back's, and at n = 100000 the next upload overwrote
/// columns the SYMM had yet to read.) Returns the sub-panel counts too.
#[allow(clippy::too_many_arguments)]
pub(super) fn syr2k_pass<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    nb: usize,
    ring: &mut Ring<E::Buf>,
    vbuf: &E::Buf,
    xbuf: &E::Buf,
    s: usize,
    diagonal: &mut Vec<T>,
    mut next: Option<NextStep<E::Buf, T>>,
) -> Result<(Pending<T>, [usize; 2]), ExecError> {
    let pn = job.n - s;
    let (done, pk) = {
        let p = progress.pending.as_ref().expect("a pass in progress");
        (p.done, p.pk)
    };
    let cols: Vec<(usize, usize)> = block_columns(pn - done, nb)
        .into_iter()
        .map(|(c, w)| (done + c, w))
        .collect();
    let mut how = [0, 0];
    // Block columns whose part of the next X is queued.
    let mut added = 0;
    if cols.is_empty() {
        // Resumed after its last column was written back.
        return Ok((finish_pass(job, progress), how));
    }
    let slot = &mut ring.slots[0];
    upload_column(exec, job, s, cols[0], slot, turn_buf(&mut ring.turn, 0))?;
    for q in 0..cols.len() {
        let (c, w) = cols[q];
        if q + 1 < cols.len() {
            let slot = &mut ring.slots[(q + 1) % 3];
            upload_column(exec, job, s, cols[q + 1], slot, turn_buf(&mut ring.turn, 0))?;
        }
        let d = &mut ring.slots[q % 3];
        update_block(exec, d, (c, w), pn, pk, vbuf, xbuf)?;
        if q > 0 {
            let slot = &ring.slots[(q - 1) % 3];
            let turn = turn_buf(&mut ring.turn, 1);
            let landing = &mut progress.written_back;
            download_column(exec, job, s, cols[q - 1], slot, turn, diagonal, landing)?;
            progress.pending.as_mut().expect("in progress").done = c;
            if let Some(next) = &mut next {
                if q == 1 {
                    how = factor_ahead(exec, job, s, &mut ring.slots[0], next)?;
                }
                // After the write-back: a buffer keeps only its last read's event, and the
                // upload that reuses it must wait for this read on lane 0 (see above).
                add_next_x(exec, ring, next, &cols, &mut added, q - 1, pn, job.kd)?;
            }
        }
    }
    if job.direct {
        // The direct uploads read the host matrix until they are done; a failure here
        // leaves the last block column to redo, unwritten.
        exec.sync()?;
    }
    let last = cols.len() - 1;
    let slot = &ring.slots[last % 3];
    let turn = turn_buf(&mut ring.turn, 1);
    let landing = &mut progress.written_back;
    download_column(exec, job, s, cols[last], slot, turn, diagonal, landing)?;
    // Every column is home: a failure from here on must not have one redone.
    progress.pending.as_mut().expect("in progress").done = pn;
    if let Some(next) = &mut next {
        if last == 0 {
            how = factor_ahead(exec, job, s, &mut ring.slots[0], next)?;
        }
        add_next_x(exec, ring, next, &cols, &mut added, last, pn, job.kd)?;
    }
    Ok((finish_pass(job, progress), how))
}

/// `A₂ −= V Xᵀ + X Vᵀ` on block column `(c, w)` of the trailing matrix (of order `pn`), held
/// in `d` (leading dimension pn − c): the diagonal block by SYR2K, the rows below it by two
/// GEMMs.
fn update_block<T: Real, E: Executor<T>>(
    exec: &mut E,
    d: &mut E::Buf,
    (c, w): (usize, usize),
    pn: usize,
    pk: usize,
    vbuf: &E::Buf,
    xbuf: &E::Buf,
) -> Result<(), ExecError> {
    let h = pn - c;
    exec.syr2k(
        w,
        pk,
        -T::ONE,
        op(vbuf, c, pn),
        op(xbuf, c, pn),
        T::ONE,
        op_mut(d, 0, h),
    )?;
    if h > w {
        exec.gemm(
            false,
            true,
            h - w,
            w,
            pk,
            -T::ONE,
            op(vbuf, c + w, pn),
            op(xbuf, c, pn),
            T::ONE,
            op_mut(d, w, h),
        )?;
        exec.gemm(
            false,
            true,
            h - w,
            w,
            pk,
            -T::ONE,
            op(xbuf, c + w, pn),
            op(vbuf, c, pn),
            T::ONE,
            op_mut(d, w, h),
        )?;
    }
    Ok(())
}

/// The next step's SYMM (`next.x += A₂' next.z`, `A₂'` the next trailing matrix, of order
/// pn − kd) over block columns `*added..=last` of this pass (`cols`, in the ring), the first
/// less the next panel's kd columns; `*added` counts those queued.
#[allow(clippy::too_many_arguments)]
fn add_next_x<T: Real, E: Executor<T>>(
    exec: &mut E,
    ring: &Ring<E::Buf>,
    next: &mut NextStep<E::Buf, T>,
    cols: &[(usize, usize)],
    added: &mut usize,
    last: usize,
    pn: usize,
    kd: usize,
) -> Result<(), ExecError> {
    while *added <= last {
        let (c, w) = cols[*added];
        let (d, off, ld) = (&ring.slots[*added % 3], 0, pn - c);
        let (d, col) = if c == 0 {
            ((d, off + kd + kd * ld, ld), (0, w - kd))
        } else {
            ((d, off, ld), (c - kd, w))
        };
        symm_block(exec, d, col, pn - kd, kd, next.z, next.x)?;
        *added += 1;
    }
    Ok(())
}

/// The end of a SYR2K pass whose columns are all written back: the factored panel into the
/// host matrix, its band columns counted. Returns the step's `Pending`.
pub(super) fn finish_pass<T: Real>(job: &mut Job<T>, progress: &mut Progress<T>) -> Pending<T> {
    let pending = progress.pending.take().expect("in progress");
    let i = progress.i;
    job.host.scatter(i, job.n - i, i, 0, &pending.panel);
    progress.banded = i + pending.pk;
    pending
}

/// The streaming mode's run (see [`super::driver::run`]): the user's matrix and the steps'
/// host buffers mapped where the executor can ([`Mapped`], which undoes it on every exit),
/// then the steps ([`steps`]).
pub(super) fn run<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    mode: Mode,
    nb: usize,
    bufs: StepBufs<E::Buf>,
    panel_len: usize,
) -> Result<(), ExecError> {
    let (n, kd) = (job.n, job.kd);
    let mut host_ph = Phases::new(&["map", "buffers", "unmap"], job.tuning.profile);
    let mut mapped = Mapped {
        exec: &mut *exec,
        host: HostBufs::default(),
    };
    let (turn, nb) = map_matrix(mapped.exec, job, progress, nb);
    // Timing only: a failing wait shows again in the run below, which unmaps.
    host_ph.end(mapped.exec, 0).ok();
    let ran = HostBufs::new(n, kd, nb).and_then(|host| {
        mapped.host = host;
        if job.direct {
            mapped.map_buffers();
        }
        host_ph.end(mapped.exec, 1).ok();
        let Mapped { exec: e, host } = &mut mapped;
        steps(
            &mut **e,
            job,
            progress,
            mode,
            (nb, turn),
            bufs,
            panel_len,
            host,
        )
    });
    if job.direct {
        host_ph.last = Instant::now();
        drop(mapped);
        job.direct = false;
        host_ph.end(exec, 2)?;
        host_ph.report(n, kd, "host memory");
    }
    ran
}

/// The host buffers of the streaming steps (X, two panels, the diagonal block's tiles),
/// allocated once so that their pages are in place, and mapped beside the matrix. They live
/// here, in `spare` (between steps and during a step's panel and SYMM pass) or in
/// `progress.pending`, all of which outlive the mapping; `p_next` holds the next step's panel
/// while a pass factors it.
#[derive(Default)]
pub(super) struct HostBufs<T> {
    x: Vec<T>,
    p: Vec<T>,
    p_next: Vec<T>,
    diagonal: Vec<T>,
    /// The `x` and `p` in use: these first, then those of the last step's `Pending`.
    spare: Option<(Vec<T>, Vec<T>)>,
}

impl<T> HostBufs<T> {
    /// Empty buffers with room for a run's steps, or [`ExecError::HostMemory`].
    fn new(n: usize, kd: usize, nb: usize) -> Result<Self, ExecError> {
        let room = |len: usize| {
            let mut v = Vec::new();
            v.try_reserve_exact(len)
                .map_err(|_| ExecError::HostMemory {
                    bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
                })?;
            Ok::<_, ExecError>(v)
        };
        Ok(HostBufs {
            x: room(n * kd)?,
            p: room(n * kd)?,
            p_next: room(n * kd)?,
            diagonal: room(DIAG_TILE.min(nb) * nb)?,
            spare: None,
        })
    }
}

/// The executor of a streaming run while host memory is mapped for it, with the host buffers
/// it maps: dropping it (on every exit of the run: a return, an error, a panic) undoes the
/// mapping (for the GPU, unlocks the pages once every stream is idle), before the buffers it
/// owns are freed.
pub(super) struct Mapped<'e, T: Real, E: Executor<T>> {
    exec: &'e mut E,
    host: HostBufs<T>,
}

impl<T: Real, E: Executor<T>> Mapped<'_, T, E> {
    /// Maps the host buffers (see [`HostBufs`]).
    fn map_buffers(&mut self) {
        let h = &mut self.host;
        for b in [&mut h.x, &mut h.p, &mut h.p_next, &mut h.diagonal] {
            // SAFETY: the buffers are not reallocated (they stay within their capacity) and
            // are freed after the mapping ends (`Drop`), or live on in `progress.pending`.
            unsafe { self.exec.map_host(b.as_mut_ptr(), b.capacity()) };
        }
    }
}

impl<T: Real, E: Executor<T>> Drop for Mapped<'_, T, E> {
    fn drop(&mut self) {
        self.exec.unmap_host();
    }
}

/// Maps the user's matrix where the executor can and the `direct` setting allows (sets
/// `job.direct`). Upper storage: block columns of L are block rows of A, which go through two
/// buffers to be transposed, in the ring's room (five buffers of 3/5 its width). Returns
/// whether they do and the block width.
fn map_matrix<T: Real, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    nb: usize,
) -> (bool, usize) {
    // SAFETY: the host matrix outlives the run, whose `Mapped` ends the mapping.
    job.direct = job.tuning.direct
        && (!job.host.upper || nb >= 2)
        && unsafe { exec.map_host(job.host.a.as_mut_ptr(), job.host.a.len()) };
    let turn = job.direct && job.host.upper;
    let nb = if turn { nb * 3 / 5 } else { nb };
    if job.direct && progress.direct.is_none() {
        progress.direct = Some(if turn {
            format!("direct transfers of block rows, transposed, {nb} wide")
        } else {
            "direct block-column transfers".into()
        });
    }
    (turn, nb)
}

/// The streaming steps' executor buffers: the step buffers, the next step's `X` (its `V`
/// while a pass factors its panel), τ, the sub-panels' and the ring.
struct Bufs<B> {
    v: B,
    z: B,
    x: B,
    s: B,
    t: B,
    x_next: B,
    tau: B,
    sub: SubPanels<B>,
    ring: Ring<B>,
}

/// The steps of a streaming run from `progress`: each step's panel, SYMM pass and `X`
/// ([`prepare_step`], or those of the pass another executor left), then its SYR2K pass, which
/// takes the next step's panel and SYMM along where it can (see [`syr2k_pass`]). `(nb, turn)`
/// as [`map_matrix`] returns them.
#[allow(clippy::too_many_arguments)]
fn steps<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    mode: Mode,
    (nb, turn): (usize, bool),
    bufs: StepBufs<E::Buf>,
    panel_len: usize,
    host: &mut HostBufs<T>,
) -> Result<(), ExecError> {
    let (n, kd) = (job.n, job.kd);
    let x_next = exec.alloc(panel_len)?;
    let ring_len = n * nb;
    let ring = Ring {
        slots: [
            exec.alloc(ring_len)?,
            exec.alloc(ring_len)?,
            exec.alloc(ring_len)?,
        ],
        turn: if turn {
            Some([exec.alloc(ring_len)?, exec.alloc(ring_len)?])
        } else {
            None
        },
    };
    let names = &["panel", "symm pass", "X", "syr2k pass"];
    let mut ph = Phases::new(names, job.tuning.profile);
    let on_executor = exec.can_factor();
    let sub = SubPanels::new(exec, n.saturating_sub(kd + progress.i), kd)?;
    let tau = exec.alloc(kd)?;
    let StepBufs { v, z, x, s, t } = bufs;
    let mut b = Bufs {
        v,
        z,
        x,
        s,
        t,
        x_next,
        tau,
        sub,
        ring,
    };
    // The last pass factored this step's panel (in `p_next`, Z in `b.z`) and formed its
    // A₂ Z (in `b.x_next`), see `syr2k_pass`.
    let mut ahead = false;
    while progress.i + kd < n {
        let (h, s) = (n - progress.i, progress.i + kd);
        let pn = n - s;
        if let Some(pending) = &progress.pending {
            // A SYR2K pass another executor left: its V and X come from the host.
            let v = panel_v(&pending.panel, h, kd, pn, pending.pk)?;
            upload_panels(exec, &mut b.v, &mut b.x, &v, &pending.x)?;
        } else {
            let on = (on_executor, ahead);
            prepare_step(exec, job, progress, host, &mut b, nb, on, &mut ph)?;
        }
        // The next step's panel and SYMM ride along where its panel is the first kd columns
        // of this pass's first block column and is factored on the executor (as
        // `panel_through_executor` would, pn − kd > kd).
        let fresh = progress.pending.as_ref().is_some_and(|p| p.done == 0);
        let fuse = job.stream_ahead && on_executor && nb > kd && pn > 2 * kd && fresh;
        let next = fuse.then_some(NextStep {
            z: &mut b.z,
            x: &mut b.x_next,
            tau: &mut b.tau,
            sub: &mut b.sub,
            panel: &mut host.p_next,
        });
        let ring = &mut b.ring;
        let diagonal = &mut host.diagonal;
        let pass = syr2k_pass(exec, job, progress, nb, ring, &b.v, &b.x, s, diagonal, next);
        let (done, how) = pass?;
        host.spare = Some((done.x, done.panel));
        // The step is on the host: count it before anything else can fail.
        progress.i += kd;
        progress.count(how);
        ahead = fuse;
        ph.end(exec, 3)?;
    }
    ph.report(n, kd, &describe(mode));
    if let (true, Some(split)) = (ph.on, cholqr::report()) {
        eprintln!("hylapack: syrdb panel steps n={n} kd={kd}: {split}");
    }
    Ok(())
}

/// A fresh step (no pass of it under way): its panel (factored by the last pass where
/// `ahead`, else now: on the executor where `on_executor` and it is taller than wide, else on
/// the host), its SYMM pass (unless the last pass formed it), and `X` down into the host's
/// buffer; the step's `Pending` then holds `X` and the panel.
#[allow(clippy::too_many_arguments)]
fn prepare_step<T: Real + Dense, E: Executor<T>>(
    exec: &mut E,
    job: &mut Job<T>,
    progress: &mut Progress<T>,
    host: &mut HostBufs<T>,
    b: &mut Bufs<E::Buf>,
    nb: usize,
    (on_executor, ahead): (bool, bool),
    ph: &mut Phases,
) -> Result<(), ExecError> {
    let (n, kd, i) = (job.n, job.kd, progress.i);
    let (h, s) = (n - i, i + kd);
    let (pn, pk) = (n - s, (n - s).min(kd));
    let (x, p) = host
        .spare
        .get_or_insert_with(|| (std::mem::take(&mut host.x), std::mem::take(&mut host.p)));
    if ahead {
        std::mem::swap(p, &mut host.p_next);
        std::mem::swap(&mut b.x, &mut b.x_next);
        upload_v(exec, job, &mut b.v, p, h, pn, pk)?;
        ph.end(exec, 0)?;
        ph.end(exec, 1)?;
    } else {
        p.resize(h * kd, T::ZERO);
        if on_executor && pn > kd {
            // The diagonal block: the rows below come back factored.
            for c in 0..kd {
                job.host.gather(i, kd, i + c, 0, &mut p[c * h..c * h + kd]);
            }
            let bufs = PanelBufs {
                p: &mut b.x,
                tau: &mut b.tau,
                v: &mut b.v,
                z: &mut b.z,
                sub: &mut b.sub,
                // (n · nb entries: room for the panel's n · kd if kd ≤ nb)
                turn: b.ring.turn.as_mut().filter(|_| kd <= nb).map(|t| &mut t[0]),
            };
            let how = panel_through_executor(exec, job, i, p, h, bufs)?;
            progress.count(how);
        } else {
            job.host.gather(i, h, i, 0, p);
            let (v, t) = factor_panel(job, i, p, h)?;
            upload_panel(exec, &mut b.v, &mut b.t, &mut b.z, &v, &t, pn, pk)?;
        }
        ph.end(exec, 0)?;
        let cols = symm_columns(pn, nb, kd);
        symm_pass(exec, job, &cols, &mut b.ring, &b.z, &mut b.x, s, pk)?;
        ph.end(exec, 1)?;
    }
    finish_x(exec, pn, pk, &b.v, &b.z, &mut b.x, &mut b.s)?;
    x.resize(pn * pk, T::ZERO);
    if job.direct {
        // SAFETY: `x` holds pn·pk entries and is ours alone.
        let to = x.as_mut_ptr();
        unsafe { exec.download_direct(&b.x, 0, pn, pn, pk, to, pn)? };
    } else {
        exec.download(&b.x, 0, pn * pk, &mut |start, piece| {
            par_copy(&mut x[start..start + piece.len()], piece)
        })?;
    }
    progress.pending = Some(Pending {
        x: std::mem::take(x),
        pk,
        done: 0,
        panel: std::mem::take(p),
    });
    ph.end(exec, 2)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::dispatch::Backend;
    use crate::sbr::driver::testing::{has_gpu, panic_message, random_input, reduce, reduce_with};
    use crate::sbr::driver::{with_fallback, Problem};
    use crate::sbr::executor::flaky::Flaky;
    use crate::sbr::executor::gpu;
    use crate::sbr::plan::Mode;

    /// Streaming passes that take the next step along (its panel factored in the pass, its SYMM
    /// formed block column by block column) give the same bits as passes that do not, through
    /// staged and direct transfers, both triangles.
    #[test]
    fn passes_taking_the_next_step_along_change_nothing() {
        let (n, kd) = (60, 5);
        let (a0, seed) = random_input(n);
        for uplo in [b'L', b'U'] {
            for refuse_map in [false, true] {
                let run = |ahead| {
                    let exec = Some((
                        Flaky::new(usize::MAX, refuse_map, false),
                        Mode::Streaming { nb: 7 },
                    ));
                    reduce_with(&a0, uplo, n, kd, exec, false, ahead)
                };
                let (with, without) = (run(true), run(false));
                let what = format!("uplo={} refuse_map={refuse_map} seed {seed}", uplo as char);
                assert!(with.0 == without.0, "A differs: {what}");
                assert!(with.1 == without.1, "AB differs: {what}");
                assert!(with.2 == without.2, "TAU differs: {what}");
            }
        }
    }

    /// A streaming run's mapping of host memory is undone on every exit: after an error (the
    /// run then resumes on the CPU) and after a panic, the executor holds none mapped.
    #[test]
    fn mapping_is_undone_on_every_exit() {
        let (n, kd) = (40, 4);
        let (a0, seed) = random_input(n);
        for uplo in [b'L', b'U'] {
            for panic in [false, true] {
                let mut ended = [0, 0];
                for left in (0..1500).step_by(7) {
                    let mut flaky = Flaky::new(left, false, false);
                    flaky.panic = panic;
                    let (mut a, mut ab) = (a0.clone(), vec![0.0; (kd + 1) * n]);
                    let mut tau = vec![0.0; n - kd];
                    let p = Problem::new(uplo, n, kd, &mut a, n, &mut ab, kd + 1, &mut tau);
                    let mode = Mode::Streaming { nb: 6 };
                    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        with_fallback(&mut flaky, Backend::Gpu, mode, p)
                    }));
                    let what = format!(
                        "uplo={} panic={panic} left={left} seed {seed}",
                        uplo as char
                    );
                    assert_eq!(flaky.mapped, 0, "{what}: still mapped");
                    if flaky.maps > 0 {
                        ended[usize::from(run.is_err())] += 1;
                    }
                }
                let what = format!("uplo={} panic={panic}", uplo as char);
                assert!(
                    ended[usize::from(panic)] > 10,
                    "{what}: {ended:?} runs mapped and ended"
                );
            }
        }
    }

    /// On the GPU, with lane 0 held back before every SYMM (as the copies outran it at
    /// n = 100000, see `GpuExecutor::stall_lane_0`), streaming passes that take the next step
    /// along agree with plain passes to rounding: no buffer is refilled before lane 0 has read
    /// it (a refilled one gives errors of the order of ‖A‖). Both triangles, direct transfers.
    #[test]
    fn gpu_passes_wait_for_a_slow_lane_0() {
        if !has_gpu() {
            return;
        }
        let (n, kd, nb) = (900, 24, 100);
        let (a0, seed) = random_input(n);
        let norm = a0.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let tol = 1e3 * n as f64 * f64::EPSILON * norm;
        for uplo in [b'L', b'U'] {
            let run = |ahead: bool| {
                let mut exec = gpu::GpuExecutor::<f64>::new(None).expect("a GPU executor");
                if ahead {
                    exec.stall_lane_0().expect("stall buffers");
                }
                let (mut a, mut ab) = (a0.clone(), vec![0.0; (kd + 1) * n]);
                let mut tau = vec![0.0; n - kd];
                let mut p = Problem::new(uplo, n, kd, &mut a, n, &mut ab, kd + 1, &mut tau);
                p.stream_ahead = ahead;
                let report = with_fallback(&mut exec, Backend::Gpu, Mode::Streaming { nb }, p);
                assert_eq!(report.backend, Backend::Gpu, "{:?}", report.note);
                (a, ab, tau)
            };
            let (with, without) = (run(true), run(false));
            let far = |x: &[f64], y: &[f64]| {
                x.iter()
                    .zip(y)
                    .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
            };
            let what = format!("uplo={} seed {seed}", uplo as char);
            assert!(far(&with.1, &without.1) <= tol, "AB differs: {what}");
            assert!(far(&with.0, &without.0) <= tol, "A differs: {what}");
            assert!(far(&with.2, &without.2) <= tol, "TAU differs: {what}");
        }
    }

    /// A streaming run whose executor could not map the host matrix, stopped at any operation,
    /// resumes on a CPU executor that can, and so cuts the rest of the interrupted pass into
    /// blocks of another width (3/5 for an upper-stored matrix): the result agrees with an
    /// uninterrupted run's to rounding (the block width changes the summation order, so not
    /// bit for bit; a column updated twice would differ by O(‖A‖)).
    #[test]
    fn resumption_with_another_block_width() {
        let (n, kd) = (60, 5);
        let (a0, seed) = random_input(n);
        let norm = a0.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let tol = 1e3 * n as f64 * f64::EPSILON * norm;
        let far = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .filter(|(x, y)| !(x.is_nan() && y.is_nan()))
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        };
        for uplo in [b'L', b'U'] {
            let whole = |left| Some((Flaky::new(left, true, false), Mode::Streaming { nb: 7 }));
            let clean = reduce(&a0, uplo, n, kd, whole(usize::MAX));
            let mut resumed = 0;
            for left in 0..4000 {
                let got = reduce(&a0, uplo, n, kd, whole(left));
                let note = got.3.note.clone().unwrap_or_default();
                if !note.contains("finished on the CPU") {
                    continue;
                }
                resumed += 1;
                let what = format!("uplo={} left={left} ({note}) seed {seed}", uplo as char);
                assert!(far(&got.0, &clean.0) <= tol, "A differs: {what}");
                assert!(far(&got.1, &clean.1) <= tol, "AB differs: {what}");
                assert!(far(&got.2, &clean.2) <= tol, "TAU differs: {what}");
            }
            assert!(resumed > 10, "only {resumed} runs resumed");
        }
    }

    /// A streaming run stopped at any operation, with the failing download or direct transfer
    /// delivering half its block first: it ends with an uninterrupted run's result, LAPACK's
    /// from the untouched input, or (where a block column of the host matrix was half written
    /// back, so that a resumption would update part of it twice) an error; never another result.
    #[test]
    fn torn_streaming_write_back_is_an_error() {
        let (n, kd) = (40, 4);
        let (a0, seed) = random_input(n);
        for uplo in [b'L', b'U'] {
            for refuse_map in [false, true] {
                let whole = |left| {
                    Some((
                        Flaky::new(left, refuse_map, true),
                        Mode::Streaming { nb: 6 },
                    ))
                };
                let clean = reduce(&a0, uplo, n, kd, whole(usize::MAX));
                let lapack = reduce(&a0, uplo, n, kd, None);
                let what = format!("uplo={} refuse_map={refuse_map} seed {seed}", uplo as char);
                let (mut torn, mut resumed) = (0, 0);
                for left in 0..3000 {
                    let run = std::panic::catch_unwind(|| reduce(&a0, uplo, n, kd, whole(left)));
                    let got = match run {
                        Err(payload) => {
                            let msg = panic_message(payload);
                            assert!(
                                msg.contains("the input is lost"),
                                "{what} left={left}: {msg}"
                            );
                            torn += 1;
                            continue;
                        }
                        Ok(got) => got,
                    };
                    let note = got.3.note.clone().unwrap_or_default();
                    if got.3.backend == Backend::Gpu {
                        assert!(got.0 == clean.0 && got.1 == clean.1, "{what} left={left}");
                        break;
                    }
                    let want = if note.contains("system LAPACK") {
                        &lapack
                    } else {
                        resumed += 1;
                        &clean
                    };
                    // A resumption with another block width agrees to rounding only.
                    let tol = if refuse_map { 1e-10 } else { 0.0 };
                    let far = |a: &[f64], b: &[f64]| {
                        a.iter()
                            .zip(b)
                            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
                    };
                    assert!(
                        far(&got.0, &want.0) <= tol,
                        "A differs: {what} left={left} ({note})"
                    );
                    assert!(
                        far(&got.1, &want.1) <= tol,
                        "AB differs: {what} left={left} ({note})"
                    );
                }
                assert!(torn > 3, "{what}: only {torn} torn write-backs");
                assert!(resumed > 3, "{what}: only {resumed} resumptions");
            }
        }
    }
}
