//! The checked-in C header must equal what cbindgen generates from the sources, and must
//! compile as C99 and as C++ with every warning an error.
//! `HYLAPACK_BLESS=1 cargo test --test header` rewrites the checked-in copy.

use std::path::Path;
use std::process::Command;

/// The checked-in header. The repository may have moved since the build (a packed test run on
/// a GPU host sets CARGO_MANIFEST_DIR to where it is now).
fn checked_in() -> std::path::PathBuf {
    let root = std::env::var("CARGO_MANIFEST_DIR")
        .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
    Path::new(&root).join("include/hylapack.h")
}

#[test]
fn header_is_up_to_date() {
    let generated = hylapack::build_info::GENERATED_HEADER;
    if std::env::var("HYLAPACK_BLESS").as_deref() == Ok("1") {
        std::fs::write(checked_in(), generated).expect("write include/hylapack.h");
    }
    let checked_in = std::fs::read_to_string(checked_in()).unwrap_or_default();
    assert!(
        checked_in == generated,
        "include/hylapack.h is stale: regenerate it with `HYLAPACK_BLESS=1 cargo test --test header`"
    );
}

#[test]
fn header_constants_match_the_library() {
    for (name, value) in [
        (
            "HYLAPACK_INFO_INTERNAL_ERROR",
            hylapack::api::HYLAPACK_INFO_INTERNAL_ERROR,
        ),
        ("HYLAPACK_INFO_NO_GPU", hylapack::api::HYLAPACK_INFO_NO_GPU),
    ] {
        let define = format!("#define {name} {value}");
        assert!(
            hylapack::build_info::GENERATED_HEADER.contains(&define),
            "cbindgen.toml must say: {define}"
        );
    }
}

fn compiles(compiler: &str, args: &[&str], source: &str, file: &str) {
    let dir = std::env::temp_dir().join(format!("hylapack-header-{}-{file}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(file);
    std::fs::write(&path, source).unwrap();
    let header = checked_in();
    let include = header.parent().unwrap();
    let out = Command::new(compiler)
        .args(args)
        .arg("-I")
        .arg(include)
        .arg("-fsyntax-only")
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        out.status.success(),
        "{compiler} rejected the header:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const USES: &str = "#include \"hylapack.h\"\nint main(void) { return hylapack_gpu_available() + (hylapack_version() != 0) + (int)sizeof(&dstebz_gpu_) + (int)sizeof(&sstebz_gpu); }\n";

#[test]
fn header_compiles_as_c99() {
    compiles(
        "cc",
        &["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"],
        USES,
        "use.c",
    );
}

#[test]
fn header_compiles_as_cxx() {
    compiles(
        "c++",
        &["-std=c++11", "-Wall", "-Wextra", "-Wpedantic", "-Werror"],
        USES,
        "use.cpp",
    );
}
