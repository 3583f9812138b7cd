//! Builds the BPF side: one object per concern (CUDA uprobes, scheduling,
//! IRQs), statically linked into one object and one Rust skeleton for each
//! program: the recorder (launchgap.bpf.o) and the monitor (monitor.bpf.o).
//! Before both, the code generated from schema/trace.toml (build/schema_codegen.rs).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

#[path = "build/schema_codegen.rs"]
mod schema_codegen;

const BPF_DIR: &str = "src/bpf";
const RECORDER_CONCERNS: [&str; 3] = ["cuda", "sched", "irq"];
const MONITOR_CONCERNS: [&str; 3] = ["monitor_cuda", "monitor_sched", "monitor_irq"];
const HEADERS: [&str; 7] = [
    "events.h", "maps.bpf.h", "targets.bpf.h", "sched_helpers.bpf.h", "launch_stage.bpf.h", "monitor.h",
    "monitor_maps.bpf.h",
];

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

/// Compiles each concern, links them into `<name>.bpf.o` and generates `<name>.skel.rs`.
fn build_program(name: &str, concerns: &[&str], out_dir: &Path, clang_args: &[String]) {
    let linked = out_dir.join(format!("{name}.bpf.o"));
    let mut linker = libbpf_rs::Linker::new(&linked).expect("creating the BPF linker");
    for concern in concerns {
        let source = Path::new(BPF_DIR).join(format!("{concern}.bpf.c"));
        let object = out_dir.join(format!("{concern}.bpf.o"));
        SkeletonBuilder::new()
            .source(&source)
            .obj(&object)
            .clang_args(clang_args)
            .build()
            .unwrap_or_else(|e| panic!("compiling {}: {e:#}", source.display()));
        linker.add_file(&object).expect("adding an object to the BPF linker");
        println!("cargo:rerun-if-changed={}", source.display());
    }
    linker.link().expect("linking the BPF objects");
    SkeletonBuilder::new()
        .obj(&linked)
        .generate(out_dir.join(format!("{name}.skel.rs")))
        .expect("generating the skeleton");
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
    build_program("launchgap", &RECORDER_CONCERNS, &out_dir, &include_args);
    // the monitor's counters are shared across CPUs: it needs the atomic
    // instructions of BPF ISA v3 (Linux 5.12), which fetch or compare-exchange
    let mut monitor_args = include_args.to_vec();
    monitor_args.push("-mcpu=v3".to_string());
    build_program("monitor", &MONITOR_CONCERNS, &out_dir, &monitor_args);
    for header in HEADERS {
        println!("cargo:rerun-if-changed={BPF_DIR}/{header}");
    }
}
