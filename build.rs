//! Generates the C header from the exported functions into OUT_DIR; a test compares it with
//! the checked-in `include/hylapack.h`, so the two never drift apart.

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    // Test programs define their own xerbla_ to capture reports. LAPACK is opened at run time
    // (src/lapack/symbols.rs), so only an exported definition reaches LAPACK's own calls, as
    // a C program's does when it links LAPACK.
    println!("cargo:rustc-link-arg-tests=-Wl,--export-dynamic-symbol=xerbla_");
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let config = cbindgen::Config::from_file(format!("{root}/cbindgen.toml"))
        .expect("cbindgen.toml is valid");
    let header = cbindgen::Builder::new()
        .with_config(config)
        .with_src(format!("{root}/src/lib.rs"))
        .generate()
        .expect("cbindgen could not parse the sources");
    header.write_to_file(out.join("hylapack.h"));
}
