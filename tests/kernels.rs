//! Every kernel in kernels/ must compile with NVRTC for the architectures hylapack targets, and
//! the on-disk cache must hit, and rebuild a corrupt entry. Needs NVRTC, not a GPU: CI installs
//! it from PyPI. Without NVRTC these tests skip, unless HYLAPACK_REQUIRE_NVRTC=1 or
//! HYLAPACK_REQUIRE_GPU=1 makes a skip a failure.

use hylapack::device::{self, kernels};

fn nvrtc_or_skip(test: &str) -> bool {
    if device::libraries().nvrtc {
        return true;
    }
    let required = ["HYLAPACK_REQUIRE_NVRTC", "HYLAPACK_REQUIRE_GPU"]
        .iter()
        .any(|v| std::env::var(v).as_deref() == Ok("1"));
    assert!(
        !required,
        "{test}: NVRTC (libnvrtc.so) not found, and it is required"
    );
    eprintln!("{test}: skipped, NVRTC not found (put its lib/ on LD_LIBRARY_PATH)");
    false
}

#[test]
fn every_kernel_compiles_for_sm80_and_sm90() {
    if !nvrtc_or_skip("every_kernel_compiles_for_sm80_and_sm90") {
        return;
    }
    for source in kernels::all() {
        for arch in ["sm_80", "sm_90"] {
            let cubin = kernels::compile(source, arch)
                .unwrap_or_else(|e| panic!("{} for {arch}: {e}", source.name));
            assert!(
                cubin.starts_with(b"\x7fELF"),
                "{} for {arch}: not an ELF cubin",
                source.name
            );
            for name in entry_points(source.name) {
                let symbol = format!("{name}\0");
                assert!(
                    cubin.windows(symbol.len()).any(|w| w == symbol.as_bytes()),
                    "{} for {arch}: no kernel {name}",
                    source.name
                );
            }
        }
    }
}

/// The kernels the library looks up in the module named `module`, for the families split
/// into modules by precision and size (none for the others).
fn entry_points(module: &str) -> Vec<String> {
    if module.starts_with("sb2st_chase_") || module.starts_with("sb2st_q2_") {
        return vec![module.to_string()];
    }
    if let Some(prefix) = module.strip_prefix("gtsv_batch_") {
        let spike = [8, 16].map(|m| format!("gtsv_batch_spike_{prefix}_m{m}"));
        let judge = format!("gtsv_batch_judge_{prefix}");
        return [vec![module.to_string(), judge], spike.to_vec()].concat();
    }
    if let Some(prefix) = module.strip_prefix("stein_") {
        let kernels = [
            "iterate", "refine", "scatter", "chol", "finish", "offdiag", "residual",
        ];
        return kernels
            .iter()
            .map(|k| format!("stein_{k}_{prefix}"))
            .collect();
    }
    let Some(rest) = module.strip_prefix("gtsv_") else {
        return Vec::new();
    };
    let (tag, rest) = match rest.strip_prefix("slice_") {
        Some(r) => ("_slice", r),
        None => ("", rest),
    };
    let (prefix, m) = rest.split_once('_').expect("gtsv_{s,d}_m{M}");
    let mut names: Vec<String> = ["reduce", "reduce_res", "backsub", "backsub_spec", "update"]
        .iter()
        .map(|k| format!("gtsv_{k}{tag}_{prefix}_{m}"))
        .collect();
    if tag.is_empty() {
        names.push(format!("gtsv_tail_{prefix}_{m}"));
        names.push(format!("gtsv_window_{prefix}_{m}"));
        for k in [
            "base",
            "residual",
            "add",
            "window_edges",
            "window_commit",
            "window_restore",
        ] {
            names.push(format!("gtsv_{k}_{prefix}"));
        }
    }
    names
}

#[test]
fn kernel_cache_hits_and_rebuilds_corrupt_entries() {
    if !nvrtc_or_skip("kernel_cache_hits_and_rebuilds_corrupt_entries") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("hylapack-kcache-{}", std::process::id()));
    let source = &kernels::STEBZ;
    let (first, origin) = kernels::cubin(source, "sm_90", &dir, "test").unwrap();
    assert_eq!(origin, kernels::Origin::Compiled);
    let (second, origin) = kernels::cubin(source, "sm_90", &dir, "test").unwrap();
    assert_eq!(origin, kernels::Origin::Cache);
    assert_eq!(first, second);

    let path = kernels::cache_path(&dir, source, "sm_90", "test");
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();
    let (third, origin) = kernels::cubin(source, "sm_90", &dir, "test").unwrap();
    assert_eq!(
        origin,
        kernels::Origin::Compiled,
        "a corrupt entry must be rebuilt"
    );
    assert_eq!(third, first);
    std::fs::write(&path, b"truncated").unwrap();
    assert_eq!(
        kernels::cubin(source, "sm_90", &dir, "test").unwrap().1,
        kernels::Origin::Compiled
    );
    assert_eq!(
        kernels::cubin(source, "sm_90", &dir, "test").unwrap().1,
        kernels::Origin::Cache
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cache_keys_differ_by_arch_and_tag() {
    let dir = std::path::Path::new("/tmp");
    let a = kernels::cache_path(dir, &kernels::STEBZ, "sm_90", "drv1");
    assert_ne!(
        a,
        kernels::cache_path(dir, &kernels::STEBZ, "sm_80", "drv1")
    );
    assert_ne!(
        a,
        kernels::cache_path(dir, &kernels::STEBZ, "sm_90", "drv2")
    );
}
