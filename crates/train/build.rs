include!("../../build/libtorch_link.rs");

fn main() {
    emit_libtorch_link_args();
    compile_op_count();
}

/// Compiles `csrc/op_count.cpp` (the libtorch operator counter behind
/// `train::op_count`) against the headers of the libtorch torch-sys links.
/// Without them (no `DEP_TCH_LIBTORCH_LIB`) the counter is left out and
/// `op_count::install` says so.
fn compile_op_count() {
    println!("cargo:rustc-check-cfg=cfg(dpaudit_op_count)");
    println!("cargo:rerun-if-changed=csrc/op_count.cpp");
    println!("cargo:rerun-if-env-changed=LIBTORCH_CXX11_ABI");
    let lib_dir = std::env::var("DEP_TCH_LIBTORCH_LIB").unwrap_or_default();
    let include = std::path::Path::new(&lib_dir).join("../include");
    if lib_dir.is_empty() || !include.join("ATen/record_function.h").exists() {
        println!("cargo:warning=libtorch headers not found; `op_count` is unavailable");
        return;
    }
    // torch >= 2.7 is built with the C++11 ABI (torch-sys reads the same variable).
    let abi = std::env::var("LIBTORCH_CXX11_ABI").unwrap_or_else(|_| "1".into());
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .std("c++17")
        .include(&include)
        .define("_GLIBCXX_USE_CXX11_ABI", abi.as_str())
        .define("GLOG_USE_GLOG_EXPORT", None)
        .warnings(false)
        .file("csrc/op_count.cpp")
        .compile("dpaudit_op_count");
    println!("cargo:rustc-cfg=dpaudit_op_count");
}
