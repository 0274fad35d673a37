//! The GPU memory budget and pinned host staging buffers.

use super::{DeviceError, Gpu};
use cudarc::driver::{DeviceRepr, PinnedHostSlice, ValidAsZeroBits};
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

/// Pinned buffers kept for reuse: page-locking memory costs about a millisecond per megabyte
/// region, far more than the small transfers of one call.
pub(super) struct StagingPool {
    free: Vec<PinnedHostSlice<u8>>,
}

impl StagingPool {
    pub(super) fn new() -> Self {
        StagingPool { free: Vec::new() }
    }
}

/// Bytes of idle pinned buffers kept for reuse; larger returns are freed.
const POOL_BYTES: usize = 256 << 20;

/// A page-locked host buffer of `len` elements of `T`, from the pool; it goes back on drop.
pub struct Pinned<T> {
    buf: Option<PinnedHostSlice<u8>>,
    len: usize,
    gpu: &'static Gpu,
    _t: std::marker::PhantomData<T>,
}

impl<T: DeviceRepr + ValidAsZeroBits> Pinned<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn bytes(&self) -> &PinnedHostSlice<u8> {
        self.buf.as_ref().expect("present until drop")
    }

    /// The buffer's elements, once pending transfers that use it have completed.
    pub fn as_slice(&self) -> Result<&[T], DeviceError> {
        let bytes = self.bytes().as_slice()?;
        // SAFETY: the buffer is page-aligned and holds at least len * size_of::<T>() bytes; T is
        // plain data (ValidAsZeroBits), so any byte pattern is a valid T.
        Ok(unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const T, self.len) })
    }

    pub fn as_mut_slice(&mut self) -> Result<&mut [T], DeviceError> {
        let len = self.len;
        let bytes = self
            .buf
            .as_mut()
            .expect("present until drop")
            .as_mut_slice()?;
        // SAFETY: as in as_slice, and the borrow of self is exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut T, len) })
    }
}

impl<T> Drop for Pinned<T> {
    fn drop(&mut self) {
        let Some(buf) = self.buf.take() else { return };
        let mut pool = super::lock(&self.gpu.staging);
        let kept: usize = pool.free.iter().map(|b| b.len()).sum();
        if kept + buf.len() <= POOL_BYTES {
            pool.free.push(buf);
        }
    }
}

impl Gpu {
    /// A page-locked host buffer of `len` elements for fast transfers in both directions,
    /// reused from earlier calls when one is large enough.
    pub fn pinned<T: DeviceRepr + ValidAsZeroBits>(
        &'static self,
        len: usize,
    ) -> Result<Pinned<T>, DeviceError> {
        let bytes = (len * std::mem::size_of::<T>()).max(1);
        let reused = {
            let mut pool = super::lock(&self.staging);
            let best = (0..pool.free.len())
                .filter(|&i| pool.free[i].len() >= bytes)
                .min_by_key(|&i| pool.free[i].len());
            best.map(|i| pool.free.swap_remove(i))
        };
        let buf = match reused {
            Some(b) => b,
            // Flags 0: cached on the host, so reading results back is fast (write-combined is
            // not). Rounded up so that a buffer serves later, slightly larger calls too.
            // SAFETY: the contents are uninitialised bytes, valid for the plain-data T they hold.
            None => unsafe {
                self.ctx
                    .alloc_pinned_with_flags::<u8>(bytes.next_power_of_two().max(1 << 16), 0)
            }?,
        };
        Ok(Pinned {
            buf: Some(buf),
            len,
            gpu: self,
            _t: std::marker::PhantomData,
        })
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
