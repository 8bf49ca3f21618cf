// Shared by the build scripts of the crates that link libtorch (`train`, `experiment`, `panoramia`, `cli-torch`).
// Included with `include!`.
//
// torch-sys exports the libtorch library directory as `DEP_TCH_LIBTORCH_LIB`
// (its manifest has `links = "tch"`). We turn it into:
// - an rpath, so binaries and test executables find libtorch without
//   LD_LIBRARY_PATH;
// - an explicit `-ltorch_cuda` between `--no-as-needed`/`--as-needed`, so the
//   CUDA kernels register at load time on a GPU host even though no symbol of
//   libtorch_cuda is referenced directly;
// - `DPAUDIT_LIBTORCH_VERSION` / `DPAUDIT_LIBTORCH_LIB` for `dpaudit doctor`.
fn emit_libtorch_link_args() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    let lib_dir = std::env::var("DEP_TCH_LIBTORCH_LIB").unwrap_or_default();
    println!("cargo:rustc-env=DPAUDIT_LIBTORCH_LIB={lib_dir}");
    println!("cargo:rustc-env=DPAUDIT_LIBTORCH_VERSION={}", libtorch_version(&lib_dir));
    if lib_dir.is_empty() {
        println!("cargo:warning=DEP_TCH_LIBTORCH_LIB is not set; binaries will need LD_LIBRARY_PATH");
        return;
    }
    println!("cargo:rustc-link-arg=-Wl,-rpath,{lib_dir}");
    if std::path::Path::new(&lib_dir).join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-ltorch_cuda");
        println!("cargo:rustc-link-arg=-Wl,--as-needed");
    }
}

/// `torch/lib/../version.py` holds `__version__ = '2.11.0+cu130'` in a Python
/// install; a standalone libtorch has `build-version` beside `lib/`.
fn libtorch_version(lib_dir: &str) -> String {
    let root = std::path::Path::new(lib_dir).join("..");
    if let Ok(text) = std::fs::read_to_string(root.join("version.py")) {
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("__version__") {
                let v = rest.trim_start_matches([' ', '=']).trim().trim_matches(['\'', '"']);
                return v.to_string();
            }
        }
    }
    std::fs::read_to_string(root.join("build-version"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}
