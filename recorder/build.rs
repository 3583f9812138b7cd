//! Builds the BPF side: one object per concern (CUDA uprobes, scheduling,
//! IRQs), statically linked into launchgap.bpf.o, and one Rust skeleton;
//! and, first, the code generated from schema/trace.toml (build/schema_codegen.rs).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

#[path = "build/schema_codegen.rs"]
mod schema_codegen;

const BPF_DIR: &str = "src/bpf";
const CONCERNS: [&str; 3] = ["cuda", "sched", "irq"];

/// vmlinux.h for CO-RE, from the build host's kernel BTF (CO-RE relocates
/// field offsets at load time, so the binary runs on other kernels too).
fn generate_vmlinux_h(out_dir: &Path) -> PathBuf {
    let header = out_dir.join("vmlinux.h");
    if header.exists() {
        return header;
    }
    let btf = "/sys/kernel/btf/vmlinux";
    let output = Command::new("bpftool")
        .args(["btf", "dump", "file", btf, "format", "c"])
        .output()
        .unwrap_or_else(|e| panic!("running bpftool to make vmlinux.h from {btf}: {e} (install bpftool)"));
    assert!(
        output.status.success(),
        "bpftool btf dump failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::write(&header, output.stdout).expect("writing vmlinux.h");
    header
}

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    generate_vmlinux_h(&out_dir);
    // trace_schema.h (included by events.h) and trace_schema.rs, from schema/trace.toml
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    schema_codegen::generate(&manifest_dir, &out_dir);

    let include_args = [
        "-I".to_string(),
        out_dir.display().to_string(),
        "-I".to_string(),
        BPF_DIR.to_string(),
        "-Wall".to_string(),
        "-Werror".to_string(),
    ];

    let mut linker =
        libbpf_rs::Linker::new(out_dir.join("launchgap.bpf.o")).expect("creating the BPF linker");
    for concern in CONCERNS {
        let source = Path::new(BPF_DIR).join(format!("{concern}.bpf.c"));
        let object = out_dir.join(format!("{concern}.bpf.o"));
        SkeletonBuilder::new()
            .source(&source)
            .obj(&object)
            .clang_args(&include_args)
            .build()
            .unwrap_or_else(|e| panic!("compiling {}: {e:#}", source.display()));
        linker.add_file(&object).expect("adding an object to the BPF linker");
        println!("cargo:rerun-if-changed={}", source.display());
    }
    linker.link().expect("linking the BPF objects");
    println!("cargo:rerun-if-changed={BPF_DIR}/events.h");
    println!("cargo:rerun-if-changed={BPF_DIR}/maps.bpf.h");

    SkeletonBuilder::new()
        .obj(out_dir.join("launchgap.bpf.o"))
        .generate(out_dir.join("launchgap.skel.rs"))
        .expect("generating the skeleton");
}
