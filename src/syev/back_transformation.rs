//! The stage of the eigenvector drivers after the tridiagonal's vectors: the back-transformation
//! Z := Q1 Q2 Z, Q2 on the GPU (its kernel) or the host's threads, then Q1 through an executor
//! (cuBLAS on the GPU's) or the host's xORMQR/xORMLQ, Z page-locked for both on the GPU path.

use super::driver::{empty_reflectors, Q2Kept, StageTimes};
use crate::dispatch::{self, Backend};
use crate::sbr::executor::cpu::CpuExecutor;
use crate::sbr::executor::gpu::GpuExecutor;
use crate::sbr::sb2st;
use crate::sbr::sb2st::apply_gpu::{Q2At, Q2Stopped};
use crate::sbr::{apply_q1_on, Executor, Path, Q1Stopped, SbrReal};
use std::time::Instant;

/// Z := Q1 Q2 Z for the n x m `z` (leading dimension `ldz`), `q1` from the `a` and `path` given
/// to [`super::driver::reduce_keeping`] (applied as [`Q1::apply`] does), `times` the kept
/// stages' (Q2's time added): the stages' times, or None if Q2 was lost (then Z holds neither
/// Z_T nor the product); fails, with why, for want of host memory.
pub(super) fn back_transform<T: SbrReal>(
    q1: &Q1<'_, T>,
    q2: &mut Q2Kept<T>,
    times: &mut StageTimes,
    (path, m): (Path, usize),
    z: &mut [T],
    ldz: usize,
) -> Result<Option<StageTimes>, String> {
    let locked = lock_for_transfers(path, m, z, ldz);
    let clock = Instant::now();
    let applied = apply_q2(q2, path, m, z, ldz, times);
    times.q2 += clock.elapsed().as_secs_f64();
    if !applied {
        return Ok(None);
    }
    let mut times = *times;
    let clock = Instant::now();
    q1.apply(path, m, z, ldz, locked.is_some(), &mut times)?;
    times.q1 = clock.elapsed().as_secs_f64();
    // Both stages waited for their copies: the memory can be unlocked.
    drop(locked);
    Ok(Some(times))
}

/// Z page-locked for the GPU path's two back-transformations, which move it to the GPU and
/// back twice (by DMA at the bus's rate instead of pageable copies or staging buffers); None
/// for other paths, or where the driver refuses (Z locked already, a locking limit).
fn lock_for_transfers<T>(
    path: Path,
    m: usize,
    z: &mut [T],
    ldz: usize,
) -> Option<crate::device::memory::Registered> {
    if !matches!(path, Path::Gpu { .. }) || m == 0 {
        return None;
    }
    let gpu = crate::device::gpu().ok()?;
    let len = (ldz * m).min(z.len());
    let clock = Instant::now();
    // SAFETY: `z` stays allocated (borrowed) until the registration is dropped, after both
    // stages have waited for their last copy.
    let locked =
        unsafe { gpu.register_host(z.as_mut_ptr().cast(), std::mem::size_of_val(&z[..len])) };
    dispatch::debug(|| match &locked {
        Ok(_) => format!(
            "syev: Z page-locked in {:.3} s",
            clock.elapsed().as_secs_f64()
        ),
        Err(e) => format!("syev: Z not page-locked ({e})"),
    });
    locked.ok()
}

/// Z := Q2 Z for the n x m `z`: on the GPU for `Path::Gpu` where its kernel takes the
/// bandwidth (by block columns of Z, and pieces of Q2, as the budget holds them), else (and for
/// the columns it left untouched if it failed) on the host's threads, with Q2 downloaded first
/// if the chase left it on the GPU. False if that download failed: Q2 is lost. Panics if the
/// GPU failed while writing a block column back, which leaves neither Z nor the result (as
/// Q1's torn download does).
fn apply_q2<T: SbrReal>(
    q2: &mut Q2Kept<T>,
    path: Path,
    m: usize,
    z: &mut [T],
    ldz: usize,
    times: &mut StageTimes,
) -> bool {
    let mut done = 0;
    let at = match &*q2 {
        Q2Kept::Host(q) => Q2At::Host(q),
        Q2Kept::Gpu(device, _) => Q2At::Gpu(device),
        Q2Kept::Gone(_) => return false,
    };
    if let (Path::Gpu { budget }, true) = (path, m > 0) {
        match sb2st::apply_gpu::apply_left(at, m, z, ldz, budget) {
            Ok(run) => {
                times.q2_on_gpu = true;
                times.q2_block_columns = run.block_columns;
                times.q2_pieces = run.pieces;
                // Q1's GPU memory, no longer Q2's.
                if let Q2Kept::Gpu(_, room) = q2 {
                    *q2 = Q2Kept::Gone(std::mem::replace(room, empty_reflectors()));
                }
                return true;
            }
            Err(Q2Stopped {
                error,
                done,
                torn: true,
            }) => panic!(
                "syev: Q2 failed while writing columns from {done} of Z back ({error}); \
                 the eigenvectors are lost"
            ),
            Err(Q2Stopped { error, done: d, .. }) => {
                dispatch::debug(|| format!("syev: Q2 on the host from column {d}: {error}"));
                done = d;
            }
        }
    }
    if done == m {
        return true;
    }
    if let Q2Kept::Gpu(device, room) = q2 {
        match device.download(room) {
            Ok(()) => {}
            Err(e) => {
                dispatch::debug(|| format!("syev: Q2 could not come down from the GPU: {e}"));
                let room = std::mem::replace(room, empty_reflectors());
                *q2 = Q2Kept::Gone(room);
                return false;
            }
        }
        let room = std::mem::replace(room, empty_reflectors());
        *q2 = Q2Kept::Host(room);
    }
    let Q2Kept::Host(q) = &*q2 else {
        unreachable!("Q2 is on the host by now")
    };
    q.apply_left(m - done, &mut z[done * ldz..], ldz, 0);
    true
}

/// Q1 of a reduction: its reflectors in `a` and `tau` (see [`crate::sbr::apply_q1`]).
pub(super) struct Q1<'a, T> {
    pub(super) uplo: u8,
    pub(super) n: usize,
    pub(super) kd: usize,
    pub(super) a: &'a [T],
    pub(super) lda: usize,
    pub(super) tau: &'a [T],
}

impl<T: SbrReal> Q1<'_, T> {
    /// Z := Q1 Z for the n x m `z`: on `path`'s executor ([`apply_q1_on`]: cuBLAS on the GPU's;
    /// the CPU's BLAS for `Path::CpuBlocked`, which runs the GPU's tiling without one), and by
    /// the host's xORMQR/xORMLQ for LAPACK's path and for the columns an executor that failed
    /// left untouched. Fails, with why, for want of host memory.
    fn apply(
        &self,
        path: Path,
        m: usize,
        z: &mut [T],
        ldz: usize,
        z_locked: bool,
        times: &mut StageTimes,
    ) -> Result<(), String> {
        let done = match path {
            Path::Gpu { budget } => match GpuExecutor::<T>::new(budget) {
                Ok(mut exec) => self.on(&mut exec, Backend::Gpu, m, z, ldz, z_locked, times),
                Err(e) => {
                    dispatch::debug(|| format!("syev: Q1 on the host: {e}"));
                    0
                }
            },
            Path::CpuBlocked { budget } => {
                let mut exec = CpuExecutor::new(budget);
                self.on(&mut exec, Backend::Cpu, m, z, ldz, false, times)
            }
            Path::Lapack => 0,
        };
        if done == m {
            return Ok(());
        }
        let Q1 {
            uplo,
            n,
            kd,
            a,
            lda,
            tau,
        } = *self;
        crate::sbr::apply_q1(
            uplo,
            n,
            kd,
            a,
            lda,
            tau,
            m - done,
            &mut z[done * ldz..],
            ldz,
        )
    }

    /// [`apply_q1_on`] on `exec`: the columns of Z it transformed (the others are untouched).
    /// Panics if it failed while writing a block column back, which leaves neither Z nor the
    /// result (as the band reduction's torn download does; the API reports it as an internal
    /// error).
    #[allow(clippy::too_many_arguments)]
    fn on<E: Executor<T>>(
        &self,
        exec: &mut E,
        backend: Backend,
        m: usize,
        z: &mut [T],
        ldz: usize,
        z_locked: bool,
        times: &mut StageTimes,
    ) -> usize {
        let (uplo, n, kd, a, lda, tau) = (self.uplo, self.n, self.kd, self.a, self.lda, self.tau);
        match apply_q1_on(exec, uplo, n, kd, a, lda, tau, m, z, ldz, z_locked) {
            Ok(run) => {
                times.transfers += run.transfer_secs;
                times.q1_on_gpu = backend == Backend::Gpu;
                times.q1_block_columns = run.block_columns;
                m
            }
            Err(Q1Stopped {
                error,
                done,
                torn: true,
            }) => panic!(
                "syev: Q1 failed while writing columns from {done} of Z back ({error}); \
                 the eigenvectors are lost"
            ),
            Err(Q1Stopped { error, done, .. }) => {
                dispatch::debug(|| format!("syev: Q1 on the host from column {done}: {error}"));
                done
            }
        }
    }
}
