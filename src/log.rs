//! The library's lines on standard error: one per call (`HYLAPACK_LOG=info`), debug messages
//! (`debug`), warnings (always). A leaf: it reads the settings and nothing else, so every layer,
//! the device layer included, may log.

use crate::config::{self, LogLevel};
use std::time::Duration;

/// Whether `HYLAPACK_LOG` asks for a line per call.
pub fn logging() -> bool {
    config::get().log >= LogLevel::Info
}

/// Prints a call's log line: `routine` as the program called it, `n` as it was given.
pub fn log_line(
    routine: &str,
    n: &dyn std::fmt::Display,
    backend: crate::dispatch::Backend,
    elapsed: Duration,
    note: Option<&str>,
) {
    let note = note.map(|s| format!(" ({s})")).unwrap_or_default();
    write_line(&format!(
        "hylapack: {routine} n={n} backend={} time={:.3} ms{note}",
        backend.name(),
        elapsed.as_secs_f64() * 1e3
    ));
}

/// Prints a debug-level message.
pub fn debug(msg: impl FnOnce() -> String) {
    if config::get().log >= LogLevel::Debug {
        write_line(&format!("hylapack: {}", msg()));
    }
}

/// Prints a warning, whatever the log level.
pub fn warn(msg: &str) {
    write_line(&format!("hylapack: {msg}"));
}

/// Writes `line` and a newline to standard error in one `write(2)`, taking no lock: a child
/// forked while another thread logs must not inherit a held lock, and lines of several
/// threads or processes must not interleave.
fn write_line(line: &str) {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        // SAFETY: writes initialised bytes of a live buffer to file descriptor 2.
        let written = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        match written {
            w if w > 0 => rest = &rest[w as usize..],
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return,
        }
    }
}
