//! The GPU memory budget and pinned host staging buffers.

use super::{lock, DeviceError, Gpu};
use crate::host::workers::{or_resume, run_parts};
use cudarc::driver::sys::{self, CUdeviceptr};
use cudarc::driver::{
    result as cu, CudaEvent, CudaStream, DeviceRepr, PinnedHostSlice, ValidAsZeroBits,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// How much GPU memory hylapack may hold at once: `HYLAPACK_GPU_MEMORY_LIMIT`, or 90% of the
/// memory free when the GPU was found, whichever is smaller. Calls reserve before allocating
/// and fall back (or work in smaller pieces) when a reservation is refused.
pub struct Budget {
    limit: u64,
    used: AtomicU64,
    /// The part of `used` held by idle caches ([`Budget::reserve_cache`]).
    cached: AtomicU64,
    /// Functions that free the caches' buffers (and so their reservations).
    reclaimers: Mutex<Vec<fn()>>,
}

impl Budget {
    pub fn new(user_limit: Option<u64>, free: u64) -> Self {
        let usable = free / 10 * 9;
        Budget {
            limit: user_limit.map_or(usable, |l| l.min(usable)),
            used: AtomicU64::new(0),
            cached: AtomicU64::new(0),
            reclaimers: Mutex::new(Vec::new()),
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes a reservation can have now: those not reserved, and those of idle caches, which
    /// are freed for it.
    pub fn available(&self) -> u64 {
        let held = self.used.load(Ordering::Relaxed);
        let idle = self.cached.load(Ordering::Relaxed);
        self.limit.saturating_sub(held.saturating_sub(idle))
    }

    /// Reserves `bytes` until the returned guard is dropped, freeing idle caches first if the
    /// budget cannot hold it otherwise.
    pub fn reserve(&self, bytes: u64) -> Result<Reservation<'_>, DeviceError> {
        match self.try_reserve(bytes, false) {
            Err(_) if self.cached.load(Ordering::Relaxed) > 0 => {
                let reclaimers = lock(&self.reclaimers).clone();
                for reclaim in reclaimers {
                    reclaim();
                }
                self.try_reserve(bytes, false)
            }
            got => got,
        }
    }

    /// Reserves `bytes` for a buffer kept between calls: counted as any reservation while it
    /// lasts, but `reclaim` (which must free the buffer and drop this guard, and must not call
    /// into the budget while holding a lock it takes) runs when another reservation would be
    /// refused. Never frees other caches.
    pub fn reserve_cache(&self, bytes: u64, reclaim: fn()) -> Result<Reservation<'_>, DeviceError> {
        {
            let mut reclaimers = lock(&self.reclaimers);
            if !reclaimers.contains(&reclaim) {
                reclaimers.push(reclaim);
            }
        }
        self.try_reserve(bytes, true)
    }

    fn try_reserve(&self, bytes: u64, cache: bool) -> Result<Reservation<'_>, DeviceError> {
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
                    if cache {
                        self.cached.fetch_add(bytes, Ordering::AcqRel);
                    }
                    return Ok(Reservation {
                        budget: self,
                        bytes,
                        cache,
                    });
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
    cache: bool,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.cache {
            self.budget.cached.fetch_sub(self.bytes, Ordering::AcqRel);
        }
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

/// Element types a pinned buffer may hold: plain numbers, for which every byte pattern is a
/// valid value (so reused or fresh buffers can be viewed as them). Sealed to these types.
pub trait PlainData: DeviceRepr + ValidAsZeroBits + Copy + plain::Sealed {}
impl PlainData for f32 {}
impl PlainData for f64 {}
impl PlainData for i32 {}
impl PlainData for u32 {}

mod plain {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
    impl Sealed for u32 {}
}

/// How many threads a host copy of `bytes` uses: one host thread copies at a few GB/s, below
/// what a PCIe 5 copy engine moves, and host memory bandwidth is saturated well before all
/// cores of a large host copy.
pub fn copy_threads(bytes: usize) -> usize {
    const PER_THREAD: usize = 1 << 20;
    const MOST: usize = 8;
    let cores = crate::host::threads();
    (bytes / PER_THREAD).clamp(1, cores.min(MOST))
}

/// `dst.copy_from_slice(src)` on [`copy_threads`] threads.
pub fn par_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    assert_eq!(dst.len(), src.len(), "par_copy: lengths differ");
    let threads = copy_threads(std::mem::size_of_val(src));
    if threads == 1 {
        dst.copy_from_slice(src);
        return;
    }
    let piece = src.len().div_ceil(threads);
    let parts = dst.chunks_mut(piece).zip(src.chunks(piece)).collect();
    or_resume(run_parts(parts, &|(d, from): (&mut [T], &[T])| {
        d.copy_from_slice(from)
    }));
}

/// A page-locked host buffer of `len` elements of `T`, from the pool; it goes back on drop.
///
/// Transfers go through [`Pinned::copy_to_device`] and [`Pinned::copy_from_device`], which
/// remember the point of the stream where they end: reading or writing the buffer, and returning
/// it to the pool, first wait for that point, so a buffer is never reused while a transfer is
/// still touching it.
pub struct Pinned<T> {
    buf: Option<PinnedHostSlice<u8>>,
    len: usize,
    gpu: &'static Gpu,
    in_use_until: Option<CudaEvent>,
    /// A transfer was queued but its end could not be recorded: never reuse or free the buffer.
    poisoned: bool,
    _t: std::marker::PhantomData<T>,
}

impl<T: PlainData> Pinned<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Marks the buffer busy until the work queued so far on `stream` is done: a kernel that
    /// reads or writes it through [`Pinned::device_ptr`] is marked so after its launch.
    pub fn mark(&mut self, stream: &CudaStream) -> Result<(), DeviceError> {
        match stream.record_event(None) {
            Ok(e) => {
                self.in_use_until = Some(e);
                Ok(())
            }
            Err(e) => {
                self.poisoned = true;
                Err(e.into())
            }
        }
    }

    /// Queues a copy of the first `len` elements to device memory at `dst` on `stream`.
    ///
    /// # Safety
    /// `dst` is device memory of at least `len` elements of `T`, valid until the copy is done.
    pub unsafe fn copy_to_device(
        &mut self,
        len: usize,
        dst: CUdeviceptr,
        stream: &CudaStream,
    ) -> Result<(), DeviceError> {
        let src = &self.as_slice()?[..len];
        cu::memcpy_htod_async(dst, src, stream.cu_stream())?;
        self.mark(stream)
    }

    /// Queues a copy of the first `rows · cols` elements (`cols` columns of `rows`, packed) to
    /// device memory at `dst`, whose columns are `ld` elements apart, on `stream`.
    ///
    /// # Safety
    /// `dst` is device memory holding `(cols − 1) · ld + rows` elements of `T`, valid until the
    /// copy is done; `rows ≤ ld`.
    pub unsafe fn copy_to_device_strided(
        &mut self,
        rows: usize,
        cols: usize,
        dst: CUdeviceptr,
        ld: usize,
        stream: &CudaStream,
    ) -> Result<(), DeviceError> {
        assert!(rows <= ld, "rows {rows} exceed the leading dimension {ld}");
        let src = &self.as_slice()?[..rows * cols];
        let from = Side::Host(src.as_ptr().cast_mut().cast(), rows);
        copy_2d::<T>(from, Side::Device(dst, ld), rows, cols, stream)?;
        self.mark(stream)
    }

    /// Queues a copy of `len` elements from device memory at `src` into the buffer on `stream`.
    ///
    /// # Safety
    /// `src` is device memory of at least `len` elements of `T`, valid until the copy is done.
    pub unsafe fn copy_from_device(
        &mut self,
        len: usize,
        src: CUdeviceptr,
        stream: &CudaStream,
    ) -> Result<(), DeviceError> {
        let dst = &mut self.as_mut_slice()?[..len];
        cu::memcpy_dtoh_async(dst, src, stream.cu_stream())?;
        self.mark(stream)
    }

    /// Queues a copy of the `rows` x `cols` device block at `src` (columns `ld` apart) into the
    /// buffer's first `rows · cols` elements (packed), on `stream`.
    ///
    /// # Safety
    /// `src` is device memory holding `(cols − 1) · ld + rows` elements of `T`, valid until the
    /// copy is done; `rows ≤ ld`.
    pub unsafe fn copy_from_device_strided(
        &mut self,
        rows: usize,
        cols: usize,
        src: CUdeviceptr,
        ld: usize,
        stream: &CudaStream,
    ) -> Result<(), DeviceError> {
        assert!(rows <= ld, "rows {rows} exceed the leading dimension {ld}");
        let dst = &mut self.as_mut_slice()?[..rows * cols];
        let to = Side::Host(dst.as_mut_ptr().cast(), rows);
        copy_2d::<T>(Side::Device(src, ld), to, rows, cols, stream)?;
        self.mark(stream)
    }

    /// The buffer's address for kernels, which read and write it straight over the bus (it is
    /// mapped into the device's address space), once its marked work has completed.
    pub fn device_ptr(&mut self) -> Result<CUdeviceptr, DeviceError> {
        let host = self.as_mut_slice()?.as_mut_ptr();
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: `host` is the start of a live allocation of cuMemHostAlloc with
        // CU_MEMHOSTALLOC_DEVICEMAP (`Gpu::pinned`); `ptr` receives its device address.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut ptr, host.cast(), 0) }.result()?;
        Ok(ptr)
    }

    fn wait(&mut self) -> Result<(), DeviceError> {
        if let Some(e) = &self.in_use_until {
            e.synchronize()?;
            self.in_use_until = None;
        }
        Ok(())
    }

    /// The buffer's elements, once the transfers marked with `in_use_by` have completed.
    pub fn as_slice(&mut self) -> Result<&[T], DeviceError> {
        self.wait()?;
        let len = self.len;
        let bytes = self.buf.as_ref().expect("present until drop").as_slice()?;
        // SAFETY: the buffer is page-aligned and holds at least len * size_of::<T>() bytes, all
        // initialised (zeroed when allocated); T is PlainData, so any byte pattern is valid.
        Ok(unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const T, len) })
    }

    pub fn as_mut_slice(&mut self) -> Result<&mut [T], DeviceError> {
        self.wait()?;
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
        if self.poisoned {
            std::mem::forget(buf);
            return;
        }
        if let Some(e) = self.in_use_until.take() {
            if e.synchronize().is_err() {
                // A transfer may still touch it: neither reuse nor free it.
                std::mem::forget(buf);
                return;
            }
        }
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
    pub fn pinned<T: PlainData>(&'static self, len: usize) -> Result<Pinned<T>, DeviceError> {
        let too_large = || DeviceError::Unsupported(format!("a pinned buffer of {len} elements"));
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(too_large)?
            .max(1);
        let reused = {
            let mut pool = super::lock(&self.staging);
            let best = (0..pool.free.len())
                .filter(|&i| pool.free[i].len() >= bytes)
                .min_by_key(|&i| pool.free[i].len());
            best.map(|i| pool.free.swap_remove(i))
        };
        let buf = match reused {
            Some(b) => b,
            None => {
                // Cached on the host, so reading results back is fast (write-combined is not),
                // and mapped, so kernels may write results into it. Rounded up so that a buffer
                // serves later, slightly larger calls too.
                let size = bytes
                    .checked_next_power_of_two()
                    .ok_or_else(too_large)?
                    .max(1 << 16);
                // SAFETY: the bytes are zeroed below before anyone can read them.
                let mut b = unsafe {
                    self.ctx
                        .alloc_pinned_with_flags::<u8>(size, sys::CU_MEMHOSTALLOC_DEVICEMAP)
                }?;
                b.as_mut_slice()?.fill(0);
                b
            }
        };
        Ok(Pinned {
            buf: Some(buf),
            len,
            gpu: self,
            in_use_until: None,
            poisoned: false,
            _t: std::marker::PhantomData,
        })
    }
}

/// One end of a 2D copy: its first element and the distance between its columns (elements).
#[derive(Clone, Copy, Debug)]
pub enum Side {
    Host(*mut std::ffi::c_void, usize),
    Device(CUdeviceptr, usize),
}

/// Queues a copy of a `rows` x `cols` block of `T` between host and device on `stream`
/// (cuMemcpy2DAsync; a DMA straight from or into host memory that is page-locked, pinned or
/// registered, and a staged, synchronous copy otherwise).
///
/// # Safety
/// Both ends hold the block (`rows` ≤ their column distance) and stay valid until the copy is
/// done; nothing else writes the destination or the host source meanwhile.
pub unsafe fn copy_2d<T>(
    from: Side,
    to: Side,
    rows: usize,
    cols: usize,
    stream: &CudaStream,
) -> Result<(), DeviceError> {
    let elem = std::mem::size_of::<T>();
    let host = sys::CUmemorytype::CU_MEMORYTYPE_HOST;
    let device = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
    let (src_type, src_host, src_device, src_ld) = match from {
        Side::Host(p, ld) => (host, p as *const std::ffi::c_void, 0, ld),
        Side::Device(p, ld) => (device, std::ptr::null(), p, ld),
    };
    let (dst_type, dst_host, dst_device, dst_ld) = match to {
        Side::Host(p, ld) => (host, p, 0, ld),
        Side::Device(p, ld) => (device, std::ptr::null_mut(), p, ld),
    };
    assert!(
        rows <= src_ld && rows <= dst_ld,
        "rows {rows} exceed a leading dimension ({src_ld}, {dst_ld})"
    );
    let copy = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: src_type,
        srcHost: src_host,
        srcDevice: src_device,
        srcArray: std::ptr::null_mut(),
        srcPitch: src_ld * elem,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host,
        dstDevice: dst_device,
        dstArray: std::ptr::null_mut(),
        dstPitch: dst_ld * elem,
        WidthInBytes: rows * elem,
        Height: cols,
    };
    sys::cuMemcpy2DAsync_v2(&copy, stream.cu_stream()).result()?;
    Ok(())
}

/// Host memory the driver page-locked for this value's lifetime (cuMemHostRegister), so that
/// [`copy_2d`] moves it by DMA without a staging copy. Dropping it unlocks the memory: its
/// owner first waits for every copy that touches it (or calls [`Registered::keep`]).
pub struct Registered {
    ptr: *mut std::ffi::c_void,
    bytes: usize,
    gpu: &'static Gpu,
}

/// The byte ranges (start, end) hylapack has page-locked at this moment (every live
/// [`Registered`]): memory a concurrent call of ours will unlock when it ends, which another
/// call must not take for memory its caller locked ([`Gpu::host_locked`]).
static OURS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// Whether [start, end) overlaps one of `ranges`.
fn overlaps(ranges: &[(usize, usize)], start: usize, end: usize) -> bool {
    ranges.iter().any(|&(s, e)| start < e && s < end)
}

impl Gpu {
    /// Page-locks the `bytes` bytes at `ptr`. Refused where any of their pages is locked
    /// already (by the caller, or by a concurrent call on a neighbouring matrix): whoever
    /// locked them may unlock them while our copies run.
    ///
    /// # Safety
    /// The bytes are host memory of this process that stays allocated until the value is
    /// dropped.
    pub unsafe fn register_host(
        &'static self,
        ptr: *mut u8,
        bytes: usize,
    ) -> Result<Registered, DeviceError> {
        self.ctx.bind_to_thread()?;
        let mut ours = super::lock(&OURS);
        sys::cuMemHostRegister_v2(ptr.cast(), bytes, 0).result()?;
        ours.push((ptr as usize, ptr as usize + bytes));
        Ok(Registered {
            ptr: ptr.cast(),
            bytes,
            gpu: self,
        })
    }

    /// Whether the `bytes` bytes at `ptr` (not empty) are host memory that the caller keeps
    /// page-locked through the call (cuMemHostAlloc, cudaMallocHost, or registered by the
    /// caller), so that copies may move them by DMA straight away. False for pageable and
    /// managed memory, and for memory one of our own calls locked, which it may unlock while
    /// our copies run.
    pub fn host_locked(&self, ptr: *const u8, bytes: usize) -> bool {
        if bytes == 0 || self.ctx.bind_to_thread().is_err() {
            return false;
        }
        let (start, end) = (ptr as usize, ptr as usize + bytes);
        let attribute = |at: usize, which: sys::CUpointer_attribute| {
            let mut value: u32 = 0;
            // SAFETY: both attributes asked for are 32-bit values written into `value`; the
            // context is current; an address the driver does not know is an error, not a fault.
            let r = unsafe {
                sys::cuPointerGetAttribute(
                    &mut value as *mut u32 as *mut std::ffi::c_void,
                    which,
                    at as CUdeviceptr,
                )
            };
            (r == sys::CUresult::CUDA_SUCCESS).then_some(value)
        };
        let host = sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32;
        let locked_at = |at: usize| {
            attribute(
                at,
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            ) == Some(host)
                && attribute(
                    at,
                    sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED,
                ) == Some(0)
        };
        locked_at(start) && locked_at(end - 1) && !overlaps(&super::lock(&OURS), start, end)
    }
}

impl Gpu {
    /// Page-locks every byte range of `ranges` (address, length), each page once: ranges that
    /// share a page (neighbouring arrays of one allocation) are locked as one, since the driver
    /// refuses to lock a page twice. All or nothing: where one lock is refused, those already
    /// taken are undone before the error returns.
    ///
    /// # Safety
    /// As [`Gpu::register_host`], for every range (empty ranges are skipped).
    pub unsafe fn register_ranges(
        &'static self,
        ranges: &[(*const u8, usize)],
    ) -> Result<Vec<Registered>, DeviceError> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|&p| p.is_power_of_two())
            .unwrap_or(4096);
        let merged = page_spans(ranges.iter().map(|&(p, len)| (p as usize, len)), page);
        let mut locked = Vec::with_capacity(merged.len());
        for (start, end) in merged {
            // SAFETY: whole pages of the caller's ranges (mapped, since they hold its bytes),
            // allocated for the values' life (this function's contract); a refusal drops the
            // locks already taken.
            locked.push(unsafe { self.register_host(start as *mut u8, end - start)? });
        }
        Ok(locked)
    }
}

/// The whole pages (start, end) that hold the byte ranges (address, length), each page once:
/// ranges that share or touch a page merge into one span. Empty ranges hold no page.
fn page_spans(ranges: impl Iterator<Item = (usize, usize)>, page: usize) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = ranges
        .filter(|&(_, len)| len > 0)
        .map(|(start, len)| (start & !(page - 1), (start + len).div_ceil(page) * page))
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

impl Registered {
    /// Leaves the memory locked for the rest of the process: for when a copy into it may still
    /// run (the wait for it failed). It stays among ours, never taken for the caller's.
    pub fn keep(self) {
        std::mem::forget(self)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut ours = super::lock(&OURS);
        // An unlock that fails leaves the pages locked: nothing to do about it here.
        if self.gpu.ctx.bind_to_thread().is_ok() {
            // SAFETY: `ptr` was registered by `register_host` and is unregistered once.
            let _ = unsafe { sys::cuMemHostUnregister(self.ptr) };
        }
        let range = (self.ptr as usize, self.ptr as usize + self.bytes);
        if let Some(i) = ours.iter().position(|&r| r == range) {
            ours.swap_remove(i);
        }
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

    static CACHE_BUDGET: std::sync::OnceLock<Budget> = std::sync::OnceLock::new();
    static HELD: Mutex<Option<Reservation<'static>>> = Mutex::new(None);

    fn free_held() {
        let held = lock(&HELD).take();
        drop(held);
    }

    #[test]
    fn idle_cache_is_freed_only_when_a_reservation_needs_it() {
        let b = CACHE_BUDGET.get_or_init(|| Budget::new(Some(1000), 1 << 30));
        *lock(&HELD) = Some(b.reserve_cache(700, free_held).unwrap());
        // Counted, but offered to reservations.
        assert_eq!(b.available(), 1000);
        let small = b.reserve(200).unwrap();
        assert!(lock(&HELD).is_some(), "freed though the room was there");
        assert_eq!(b.available(), 800);
        // A cache never makes room for another.
        assert!(b.reserve_cache(200, free_held).is_err());
        assert!(lock(&HELD).is_some());
        let large = b.reserve(600).unwrap();
        assert!(lock(&HELD).is_none(), "the cache was not freed");
        assert_eq!(b.available(), 200);
        drop((small, large));
        assert_eq!(b.available(), 1000);
        // Beyond the limit even without caches: refused.
        *lock(&HELD) = Some(b.reserve_cache(300, free_held).unwrap());
        assert!(matches!(
            b.reserve(1001),
            Err(DeviceError::OutOfBudget { needed: 1001, .. })
        ));
        free_held();
        assert_eq!(b.available(), 1000);
    }

    #[test]
    fn overlaps_means_a_byte_in_common() {
        let ours = [(100, 200), (400, 500)];
        assert!(overlaps(&ours, 199, 300));
        assert!(overlaps(&ours, 0, 101));
        assert!(overlaps(&ours, 450, 460));
        assert!(overlaps(&ours, 0, 1000));
        assert!(!overlaps(&ours, 200, 400));
        assert!(!overlaps(&ours, 0, 100));
        assert!(!overlaps(&[], 0, 1000));
    }

    #[test]
    fn page_spans_lock_each_page_once() {
        let p = 4096;
        // Neighbouring arrays of one allocation share pages: one span.
        let one = [(p + 8, 100), (p + 108, 5000), (p + 5108, 100)];
        assert_eq!(page_spans(one.into_iter(), p), vec![(p, 3 * p)]);
        // Apart, in any order; empty ranges ignored; touching spans merge.
        let apart = [(10 * p, p), (2 * p + 1, 1), (0, 0), (3 * p, 1)];
        assert_eq!(
            page_spans(apart.into_iter(), p),
            vec![(2 * p, 4 * p), (10 * p, 11 * p)]
        );
        assert!(page_spans([(5, 0)].into_iter(), p).is_empty());
    }

    #[test]
    fn budget_defaults_to_most_of_free_memory() {
        assert_eq!(Budget::new(None, 1000).limit(), 900);
        assert_eq!(Budget::new(Some(5000), 1000).limit(), 900);
    }
}
