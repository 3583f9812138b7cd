//! Builds the BPF side: one object per concern (CUDA uprobes, scheduling,
//! IRQs), statically linked into one object and one Rust skeleton for each
//! program: the recorder (launchgap.bpf.o) and the monitor (monitor.bpf.o).
//! The programs include headers generated from schema/trace.toml by
//! scripts/gen_schema.py and committed (src/generated/), so a build needs no Python.
//! And the CUPTI collector (../collector), a shared library the recorder carries inside
//! itself and writes out for `--gpu-activity`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

const BPF_DIR: &str = "src/bpf";
/// what scripts/gen_schema.py writes from schema/trace.toml: headers the programs include, Rust the crate includes
const GENERATED_DIR: &str = "src/generated";
const GENERATED_HEADERS: [&str; 3] = ["trace_schema.h", "ring_records.h", "vocabulary.h"];
const RECORDER_CONCERNS: [&str; 3] = ["cuda", "sched", "irq"];
const MONITOR_CONCERNS: [&str; 3] = ["monitor_cuda", "monitor_sched", "monitor_irq"];
const HEADERS: [&str; 9] = [
    "maps.bpf.h",
    "targets.bpf.h",
    "sched_helpers.bpf.h",
    "core_fixes.bpf.h",
    "cgroup_helpers.bpf.h",
    "launch_stage.bpf.h",
    "irq_programs.bpf.h",
    "monitor.h",
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
        .unwrap_or_else(|e| {
            panic!("running bpftool to make vmlinux.h from {btf}: {e} (install bpftool)")
        });
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

/// NVIDIA's headers the collector is built against: CUPTI's, and the CUDA headers they
/// include (scripts/fetch_real_cuda.sh fetches them from PyPI into .cache/real-cuda).
const CUDA_INCLUDE: &str = "../.cache/real-cuda/cuda-12-include";
const COLLECTOR_DIR: &str = "../collector";

/// Builds ../collector/cupti_collector.c into OUT_DIR/liblaunchgap-cupti.so, against
/// the real CUPTI headers, so every CUPTI record is read at its real layout. It needs
/// nothing but glibc at run time: CUPTI is opened with dlopen.
fn build_collector(out_dir: &Path) {
    let include = env::var("LAUNCHGAP_CUDA_INCLUDE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(CUDA_INCLUDE));
    let cupti_h = include.join("cupti").join("cupti.h");
    assert!(
        cupti_h.exists(),
        "{} is missing: the CUPTI collector is built against NVIDIA's CUPTI headers; \
         run scripts/fetch_real_cuda.sh (make setup does) or set LAUNCHGAP_CUDA_INCLUDE",
        cupti_h.display()
    );
    let source = Path::new(COLLECTOR_DIR).join("cupti_collector.c");
    let library = out_dir.join("liblaunchgap-cupti.so");
    let compiler = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let mut command = Command::new(&compiler);
    command.args([
        "-shared",
        "-fPIC",
        "-O2",
        "-std=gnu11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-fvisibility=hidden",
    ]);
    command.arg(format!("-I{COLLECTOR_DIR}"));
    for part in ["cupti", "runtime", "nvcc"] {
        command.arg(format!("-I{}", include.join(part).display()));
    }
    command.arg(&source).arg("-o").arg(&library).args(["-ldl", "-lpthread", "-Wl,-z,defs"]);
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("running {compiler} for the CUPTI collector: {e}"));
    assert!(
        output.status.success(),
        "building the CUPTI collector failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-changed={COLLECTOR_DIR}/gpu_wire.h");
    println!("cargo:rerun-if-changed={COLLECTOR_DIR}/cupti_clients.h");
    println!("cargo:rerun-if-changed={}", cupti_h.display());
    println!("cargo:rerun-if-env-changed=LAUNCHGAP_CUDA_INCLUDE");
}

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    generate_vmlinux_h(&out_dir);
    build_collector(&out_dir);

    let include_args = [
        "-I".to_string(),
        out_dir.display().to_string(),
        "-I".to_string(),
        BPF_DIR.to_string(),
        "-I".to_string(),
        GENERATED_DIR.to_string(),
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
    for header in GENERATED_HEADERS {
        println!("cargo:rerun-if-changed={GENERATED_DIR}/{header}");
    }
}
