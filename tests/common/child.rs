//! The child-process harness of the `alloc_failure*` test programs (issue #23: host memory
//! that cannot be allocated never aborts the host program).
//!
//! Each test re-runs its own test binary as a child process, on that one test (`--exact`), with
//! `ALLOC_FAILURE_CHILD` set. In the child, the test body builds its inputs and the reference
//! answer of the system LAPACK (with no limit), reads the process's address space (VmSize),
//! lowers `RLIMIT_AS` to that plus a margin, makes the call and prints one `RESULT ...` line.
//! The parent checks that the child exited normally (an abort is SIGABRT, an overflow SIGSEGV)
//! and printed the expected line. The margins are below what the code before the fix
//! allocated for the same call, and above what LAPACK itself needs.

use std::process::Command;

pub const CHILD: &str = "ALLOC_FAILURE_CHILD";
pub const MIB: u64 = 1 << 20;

/// The CPU path, whatever the host has. These tests are about host memory: on a GPU host the
/// CUDA driver maps tens of MiB of address space when it starts, which the margins below do not
/// leave room for (seen on an H200 host: the C fallback then found no room for LAPACK's 88 MiB).
pub const CPU_ONLY: [(&str, &str); 1] = [("HYLAPACK_DEVICE", "cpu")];

/// Runs `test` (a test function of the calling test program) in a child process on the CPU path
/// and returns its stdout, after checking that it exited normally with status 0.
pub fn in_child(test: &str) -> String {
    in_child_env(test, &CPU_ONLY).0
}

/// [`in_child`] with extra environment variables; returns the child's stdout and stderr.
pub fn in_child_env(test: &str, env: &[(&str, &str)]) -> (String, String) {
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        // The tests count the library's warnings; per-call log lines (run.sh on the GPU host
        // sets HYLAPACK_LOG=info) would repeat their text.
        .env_remove("HYLAPACK_LOG")
        .envs(env.iter().copied())
        .output()
        .expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert!(
        out.status.signal().is_none(),
        "{test}: child killed by signal {:?} (abort = 6, segfault = 11)\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status.signal()
    );
    assert!(
        out.status.success(),
        "{test}: child failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    eprintln!("{test}: child stdout:\n{stdout}child stderr:\n{stderr}");
    (stdout, stderr.into_owned())
}

/// How many lines of `stderr` contain `text`.
pub fn lines_with(stderr: &str, text: &str) -> usize {
    stderr.lines().filter(|l| l.contains(text)).count()
}

pub fn in_child_process() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// The process's address space in bytes (VmSize).
pub fn vm_size() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmSize:"))
        .expect("VmSize line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("VmSize value");
    kib * 1024
}

/// Limits the address space to what it is now plus `margin` bytes.
pub fn limit_address_space(margin: u64) {
    let base = vm_size();
    let limit = base + margin;
    println!("BASE VmSize {} MiB, limit {} MiB", base / MIB, limit / MIB);
    let rl = libc::rlimit {
        rlim_cur: limit,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit with a valid pointer to an initialised rlimit.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &rl) };
    assert_eq!(rc, 0, "setrlimit");
}

/// The line the parent looks for.
pub fn result_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .unwrap_or_else(|| panic!("no RESULT line in the child's output:\n{stdout}"))
}
