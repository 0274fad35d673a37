//! What the test programs share: their own `xerbla_` (a program's definition must win over
//! LAPACK's, as with LAPACK, so each test program defines one and records every report), the
//! seed of a run, whether the GPU path is required, and ([`child`]) the child-process harness
//! of the `alloc_failure*` programs. Each test program includes it with `mod common;` and uses
//! what it needs.
#![allow(dead_code)]

pub mod child;

use std::ffi::{c_char, c_int};
use std::sync::Mutex;

/// (routine name, argument number) of every `xerbla_` call in this process.
static XERBLA_CALLS: Mutex<Vec<(String, i32)>> = Mutex::new(Vec::new());

/// LAPACK's error reporter, replaced: records the report instead of printing it.
///
/// # Safety
/// `srname` points to `len` readable bytes and `info` to an integer, as LAPACK passes them.
#[no_mangle]
pub unsafe extern "C" fn xerbla_(srname: *const c_char, info: *const c_int, len: usize) {
    // SAFETY: the caller passes a name of `len` bytes and a readable integer.
    let name = unsafe { std::slice::from_raw_parts(srname as *const u8, len) };
    let arg = unsafe { *info };
    XERBLA_CALLS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((String::from_utf8_lossy(name).trim().to_string(), arg));
}

/// How many times `xerbla_` reported argument `arg` of `name`.
pub fn xerbla_count(name: &str, arg: i32) -> usize {
    XERBLA_CALLS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(n, a)| n == name && *a == arg)
        .count()
}

/// Whether `xerbla_` ever reported argument `arg` of `name`.
pub fn reported(name: &str, arg: i32) -> bool {
    xerbla_count(name, arg) > 0
}

/// A fresh seed (or `HYLAPACK_TEST_SEED`), printed so that a failure can be replayed.
pub fn seed() -> u64 {
    let seed = hylapack::testmat::seed_from_time();
    println!("seed {seed} (HYLAPACK_TEST_SEED={seed} repeats it)");
    seed
}

/// Whether the GPU path must run (`HYLAPACK_REQUIRE_GPU=1`): a test that would skip fails.
pub fn gpu_required() -> bool {
    std::env::var("HYLAPACK_REQUIRE_GPU").as_deref() == Ok("1")
}

/// Whether a GPU test runs (`HYLAPACK_DEVICE=gpu`): then, without a GPU, it fails if
/// `HYLAPACK_REQUIRE_GPU=1` and is skipped otherwise.
pub fn gpu_test() -> bool {
    if std::env::var("HYLAPACK_DEVICE").as_deref() != Ok("gpu") {
        return false;
    }
    if let Err(e) = hylapack::device::gpu() {
        assert!(!gpu_required(), "HYLAPACK_REQUIRE_GPU=1 but no GPU: {e}");
        return false;
    }
    true
}
