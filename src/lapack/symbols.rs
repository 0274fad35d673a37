//! The system LAPACK and BLAS, found at run time instead of at link time.
//!
//! Neither `libhylapack.so` nor `libhylapack_preload.so` names a LAPACK or BLAS library as a
//! load-time dependency: a preloaded library that did would put that LAPACK's symbols ahead of
//! the program's own, and cost every process its start-up (OpenBLAS starts its threads when it
//! loads). Each routine is looked up on its first call, in this order:
//! 1. the definition the process already has (`RTLD_DEFAULT`): the program's own LAPACK;
//! 2. if that definition is this library's own (the preload library defines `dstebz_`, …), the
//!    next one after it (`RTLD_NEXT`);
//! 3. a LAPACK opened privately (`RTLD_LOCAL`) on first need: `HYLAPACK_CPU_LAPACK` if set, else
//!    the system's OpenBLAS, else the reference LAPACK.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

/// A LAPACK or BLAS routine, resolved once on first use.
pub struct Symbol {
    /// The symbol's name, NUL-terminated.
    name: &'static str,
    address: OnceLock<usize>,
}

impl Symbol {
    /// `name` must end in a NUL byte.
    pub const fn new(name: &'static str) -> Symbol {
        Symbol {
            name,
            address: OnceLock::new(),
        }
    }

    /// The routine's address. Panics (caught at the FFI boundary, which answers with
    /// INFO = −1000) when no LAPACK in reach defines it.
    pub fn address(&self) -> usize {
        *self.address.get_or_init(|| {
            let name = CStr::from_bytes_with_nul(self.name.as_bytes()).expect("NUL-terminated");
            resolve(name).unwrap_or_else(|| {
                panic!(
                    "no LAPACK defines {}: link the program against LAPACK, install OpenBLAS, or set HYLAPACK_CPU_LAPACK",
                    name.to_string_lossy()
                )
            })
        })
    }
}

/// The base address of the object (executable or shared library) that holds `address`.
fn object_of(address: *const c_void) -> Option<usize> {
    // SAFETY: dladdr only reads the loader's tables; `info` is plain data it fills in.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        (libc::dladdr(address, &mut info) != 0).then_some(info.dli_fbase as usize)
    }
}

/// The object this code was linked into (libhylapack.so, the preload library, or a program).
fn own_object() -> Option<usize> {
    static OWN: OnceLock<Option<usize>> = OnceLock::new();
    *OWN.get_or_init(|| object_of(own_object as *const c_void))
}

/// The address of `name` outside this library (see the module note), or `None`.
pub fn resolve(name: &CStr) -> Option<usize> {
    let own = own_object();
    let not_ours = |p: *mut c_void| (!p.is_null() && object_of(p) != own).then_some(p as usize);
    // SAFETY: dlsym with a pseudo-handle and a NUL-terminated name only looks a symbol up.
    let global = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if let Some(p) = not_ours(global) {
        return Some(p);
    }
    if !global.is_null() {
        // SAFETY: as above; RTLD_NEXT searches the objects loaded after this one.
        let next = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
        if let Some(p) = not_ours(next) {
            return Some(p);
        }
    }
    let library = private_lapack()?;
    // SAFETY: a symbol lookup in a library this module opened and never closes.
    not_ours(unsafe { libc::dlsym(library as *mut c_void, name.as_ptr()) })
}

/// The file of the library that [`resolve`] finds `name` in (for `hylapack info`).
pub fn library_of(name: &CStr) -> Option<String> {
    let address = resolve(name)?;
    // SAFETY: as in `object_of`; dli_fname is the loader's NUL-terminated path.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(address as *const c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        Some(
            CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

/// The libraries tried, in order, when the process has no LAPACK of its own.
const SYSTEM_LAPACKS: [&str; 3] = ["libopenblas.so.0", "liblapack.so.3", "libopenblas.so"];

/// A LAPACK opened with `RTLD_LOCAL` (so its symbols stay out of the process's global scope),
/// once per process; `None` when none opens.
fn private_lapack() -> Option<usize> {
    static HANDLE: OnceLock<Option<usize>> = OnceLock::new();
    *HANDLE.get_or_init(|| {
        let named = std::env::var("HYLAPACK_CPU_LAPACK").ok();
        let found = named
            .iter()
            .map(String::as_str)
            .chain(SYSTEM_LAPACKS)
            .find_map(|path| {
                let path = CString::new(path).ok()?;
                // SAFETY: dlopen of a LAPACK library; the handle is kept for the process's life.
                let handle =
                    unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
                (!handle.is_null()).then_some(handle as usize)
            });
        found
    })
}

// A weak reference to `xerbla_`, made at link time so that a program that defines its own
// `xerbla_` gets it exported to this library and wins over LAPACK's, as it does with LAPACK
// (a dlsym lookup alone would miss an executable's unexported definition). Weak, so that the
// library still loads in a process without LAPACK; the address is then 0.
std::arch::global_asm!(
    ".weak xerbla_",
    ".pushsection .data.rel.ro.hylapack_xerbla_address,\"aw\",@progbits",
    ".balign 8",
    ".globl hylapack_xerbla_address",
    ".hidden hylapack_xerbla_address",
    "hylapack_xerbla_address:",
    ".quad xerbla_",
    ".popsection",
);

type XerblaFn = unsafe extern "C" fn(*const c_char, *const c_int, usize);

extern "C" {
    static hylapack_xerbla_address: usize;
}

/// LAPACK's error reporter: the program's own `xerbla_` if it defines one, else its LAPACK's,
/// else the private LAPACK's; `None` if there is none at all.
pub fn xerbla() -> Option<XerblaFn> {
    // SAFETY: a word in read-only data, filled in by the dynamic linker at load time.
    let linked = unsafe { std::ptr::read_volatile(&raw const hylapack_xerbla_address) };
    let address = if linked != 0 {
        Some(linked)
    } else {
        resolve(c"xerbla_")
    }?;
    // SAFETY: `xerbla_` has LAPACK's signature: name, argument number, hidden name length.
    Some(unsafe { std::mem::transmute::<usize, XerblaFn>(address) })
}

/// Declares LAPACK and BLAS routines, each resolved at run time on its first call (see the
/// module note); the declarations read like an `extern "C"` block.
macro_rules! system_routines {
    ($( fn $name:ident( $($arg:ident : $ty:ty),* $(,)? ) $(-> $ret:ty)?; )*) => {
        $(
            #[allow(clippy::too_many_arguments, dead_code)]
            unsafe fn $name($($arg: $ty),*) $(-> $ret)? {
                static SYMBOL: $crate::lapack::symbols::Symbol =
                    $crate::lapack::symbols::Symbol::new(concat!(stringify!($name), "\0"));
                // SAFETY: the symbol is the LAPACK/BLAS routine of this name, whose signature
                // this declaration states (hidden CHARACTER lengths included).
                let f: unsafe extern "C" fn($($ty),*) $(-> $ret)? =
                    unsafe { std::mem::transmute::<usize, _>(SYMBOL.address()) };
                unsafe { f($($arg),*) }
            }
        )*
    };
}
pub(crate) use system_routines;
