//! The GPU memory budget and pinned host staging buffers.

use super::{DeviceError, Gpu};
use cudarc::driver::{DeviceRepr, PinnedHostSlice};
use std::sync::atomic::{AtomicU64, Ordering};

/// How much GPU memory hylapack may hold at once: `HYLAPACK_GPU_MEMORY_LIMIT`, or 90% of the
/// memory free when the GPU was found, whichever is smaller. Calls reserve before allocating
/// and fall back (or work in smaller pieces) when a reservation is refused.
pub struct Budget {
    limit: u64,
    used: AtomicU64,
}

impl Budget {
    pub fn new(user_limit: Option<u64>, free: u64) -> Self {
        let usable = free / 10 * 9;
        Budget {
            limit: user_limit.map_or(usable, |l| l.min(usable)),
            used: AtomicU64::new(0),
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes not reserved now.
    pub fn available(&self) -> u64 {
        self.limit.saturating_sub(self.used.load(Ordering::Relaxed))
    }

    /// Reserves `bytes` until the returned guard is dropped.
    pub fn reserve(&self, bytes: u64) -> Result<Reservation<'_>, DeviceError> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let next = used.checked_add(bytes).filter(|&n| n <= self.limit);
            let Some(next) = next else {
                return Err(DeviceError::OutOfBudget {
                    needed: bytes,
                    available: self.limit.saturating_sub(used),
                });
            };
            match self
                .used
                .compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Ok(Reservation {
                        budget: self,
                        bytes,
                    })
                }
                Err(now) => used = now,
            }
        }
    }
}

/// GPU memory reserved from the budget; released on drop.
pub struct Reservation<'a> {
    budget: &'a Budget,
    bytes: u64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl Gpu {
    /// A page-locked host buffer of `len` elements for fast transfers in both directions.
    pub fn pinned<T: DeviceRepr + Default>(
        &self,
        len: usize,
    ) -> Result<PinnedHostSlice<T>, DeviceError> {
        // Flags 0: cached on the host, so reading results back is fast (write-combined is not).
        // SAFETY: the contents are uninitialised; every byte is written before it is read,
        // by the callers' memcpy from host data or from the device.
        Ok(unsafe { self.ctx.alloc_pinned_with_flags::<T>(len.max(1), 0) }?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_honours_limit_and_releases() {
        let b = Budget::new(Some(1000), 1 << 30);
        assert_eq!(b.limit(), 1000);
        let r1 = b.reserve(600).unwrap();
        assert!(matches!(
            b.reserve(500),
            Err(DeviceError::OutOfBudget {
                needed: 500,
                available: 400
            })
        ));
        drop(r1);
        let _r2 = b.reserve(1000).unwrap();
        assert_eq!(b.available(), 0);
    }

    #[test]
    fn budget_defaults_to_most_of_free_memory() {
        assert_eq!(Budget::new(None, 1000).limit(), 900);
        assert_eq!(Budget::new(Some(5000), 1000).limit(), 900);
    }
}
