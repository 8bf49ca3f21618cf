include!("../../build/libtorch_link.rs");

fn main() {
    emit_libtorch_link_args();
    compile_against_libtorch();
    compile_conv_kernel();
}

/// Compiles `csrc/op_count.cpp` (the operator counter behind
/// `train::op_count`) and `csrc/scalar.cpp` (numbers without an operator,
/// behind `train::scalar`) against the headers of the libtorch torch-sys
/// links. Without them (no `DEP_TCH_LIBTORCH_LIB`) both are left out:
/// `op_count::install` says so, and `scalar` builds its numbers through tch.
fn compile_against_libtorch() {
    println!("cargo:rustc-check-cfg=cfg(dpaudit_op_count)");
    println!("cargo:rustc-check-cfg=cfg(dpaudit_scalar)");
    println!("cargo:rerun-if-changed=csrc/op_count.cpp");
    println!("cargo:rerun-if-changed=csrc/scalar.cpp");
    println!("cargo:rerun-if-env-changed=LIBTORCH_CXX11_ABI");
    let lib_dir = std::env::var("DEP_TCH_LIBTORCH_LIB").unwrap_or_default();
    let include = std::path::Path::new(&lib_dir).join("../include");
    if lib_dir.is_empty() || !include.join("ATen/record_function.h").exists() {
        println!("cargo:warning=libtorch headers not found; `op_count` is unavailable, `scalar` uses tch");
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
        .file("csrc/scalar.cpp")
        .compile("dpaudit_op_count");
    println!("cargo:rustc-cfg=dpaudit_op_count");
    println!("cargo:rustc-cfg=dpaudit_scalar");
}

/// Compiles `csrc/conv_grad_kernel.cpp`, the direct per-sample convolution
/// gradients behind `conv2d::PerSampleMethod::Direct`. It includes no
/// libtorch header and is built twice: for the baseline target and, on
/// x86-64, with AVX2 and FMA (`conv2d` picks one at run time), always at
/// `-O3`, since its speed is the point in test builds as well.
fn compile_conv_kernel() {
    println!("cargo:rerun-if-changed=csrc/conv_grad_kernel.cpp");
    let x86_64 = std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64");
    let mut kernels = vec![("base", &[][..])];
    if x86_64 {
        kernels.push(("avx2", &["-mavx2", "-mfma"][..]));
    }
    for (isa, flags) in kernels {
        let mut build = cc::Build::new();
        build
            .cpp(true)
            .pic(true)
            .std("c++17")
            .opt_level(3)
            .define(
                "DPAUDIT_KERNEL_NAME",
                format!("dpaudit_conv_grad_range_{isa}").as_str(),
            )
            .file("csrc/conv_grad_kernel.cpp")
            // The 8-float vector type only passes between inline functions
            // of one translation unit, so GCC's note that its ABI depends on
            // AVX being enabled does not concern any call across files.
            .flag_if_supported("-Wno-psabi");
        for f in flags {
            build.flag(f);
        }
        build.compile(&format!("dpaudit_conv_grad_{isa}"));
    }
}
