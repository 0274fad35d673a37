//! The device work buffer of one solve (or of a batch's call), kept between calls.

use super::*;

/// The work buffer of the last solve, kept for the next one: `cuMemAllocAsync` hands freed
/// memory back at every synchronization, and mapping ~100 MiB afresh cost more than the solve
/// itself. While idle it holds a cache reservation of the budget, which frees it
/// ([`drop_spare`]) when another reservation needs the room; larger buffers than
/// [`spare_max`] are not kept, since memory held between calls is lost to the rest of the
/// process (other libraries do not see our budget).
static SPARE: std::sync::Mutex<Option<Spare>> = std::sync::Mutex::new(None);

/// The largest work buffer kept in [`SPARE`]: 1 GiB, or a 32nd of the device's memory where
/// that is more (2.5 GB on an 80 GB H100: enough for a solve of 2^26 rows, whose 1.4 GB were
/// mapped afresh at every call before).
fn spare_max(gpu: &Gpu) -> usize {
    let share = usize::try_from(gpu.info.total_memory / 32).unwrap_or(usize::MAX);
    share.max(1 << 30)
}

struct Spare {
    buf: CudaSlice<u8>,
    _held: Reservation<'static>,
}

fn spare() -> std::sync::MutexGuard<'static, Option<Spare>> {
    SPARE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Frees the idle work buffer (the budget's reclaimer for it).
fn drop_spare() {
    let idle = spare().take();
    drop(idle);
}

/// A work buffer taken from [`SPARE`] (or allocated) for one solve and given back on drop.
pub(crate) struct Work {
    buf: Option<CudaSlice<u8>>,
    stream: Arc<CudaStream>,
    gpu: &'static Gpu,
}

impl Work {
    pub(crate) fn take(
        gpu: &'static Gpu,
        stream: &Arc<CudaStream>,
        bytes: usize,
    ) -> Result<Self, DeviceError> {
        // The solve's own reservation covers the buffer from here: the cache's is dropped.
        let idle = spare().take().map(|s| s.buf);
        let buf = match idle {
            Some(b) if b.len() >= bytes => b,
            // SAFETY: every element is written by a kernel, a copy or a memset before it is read.
            _ => unsafe { stream.alloc::<u8>(bytes) }?,
        };
        Ok(Work {
            buf: Some(buf),
            stream: stream.clone(),
            gpu,
        })
    }

    pub(crate) fn base(&self) -> CUdeviceptr {
        addr(self.buf.as_ref().expect("work buffer"), &self.stream)
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let Some(buf) = self.buf.take() else { return };
        // Another solve may take it on another stream: this one's kernels must be done.
        if buf.len() > spare_max(self.gpu) || self.stream.synchronize().is_err() {
            return;
        }
        // Kept only if the budget holds it beside the solve's own reservation.
        let Ok(held) = self.gpu.budget.reserve_cache(buf.len() as u64, drop_spare) else {
            return;
        };
        let mut slot = spare();
        if slot.as_ref().is_none_or(|s| s.buf.len() < buf.len()) {
            *slot = Some(Spare { buf, _held: held });
        }
    }
}
