//! Which kernels launchgap runs on, decided before anything is loaded or
//! attached. Every BPF feature the recorder and the monitor use is a row of
//! [`FEATURES`]: what it is for, the lowest Linux that has it (the README's
//! table, "Kernel compatibility"), how its presence shows in the running
//! kernel's BTF, and what launchgap does without it: refuse, in one line
//! naming what is missing and what would work, or adapt (bpf/core_fixes.bpf.h,
//! or the loader). Presence is read from BTF rather than guessed from the
//! version, since distribution kernels carry backports; the one feature BTF
//! cannot show is asked of the kernel by loading a few instructions (as
//! libbpf probes features), and only when that cannot run does the version
//! decide.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use libbpf_rs::btf::types::{Enum, FuncProto, Struct, Typedef};
use libbpf_rs::btf::{Btf, BtfKind, BtfType};
use serde_json::{json, Value};

/// Where the running kernel exposes its own BTF (CONFIG_DEBUG_INFO_BTF=y).
pub const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";
/// Names another BTF to read in its place, for the checks and for CO-RE: the
/// tests play other kernels with it (one without BTF, older layouts).
pub const BTF_OVERRIDE: &str = "LAUNCHGAP_VMLINUX_BTF";

/// A Linux release, major.minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Linux(pub u32, pub u32);

impl Linux {
    /// "5.10.0-32-amd64" -> 5.10; None when the release does not start with major.minor.
    pub fn from_release(release: &str) -> Option<Linux> {
        let mut parts = release.split(|c: char| !c.is_ascii_digit());
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(Linux(major, minor))
    }
}

impl fmt::Display for Linux {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// The two programs, which need different features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    Recorder,
    Monitor,
}

/// Something a kernel can be asked that its BTF does not say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Probe {
    /// BPF_ATOMIC with BPF_CMPXCHG (BPF ISA v3): a six-instruction socket filter loads.
    AtomicCompareExchange,
}

/// How a feature's presence shows in the kernel's BTF.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Evidence {
    /// A value of one of the kernel's enums (include/uapi/linux/bpf.h: every kernel's BTF has them).
    EnumValue(&'static str, &'static str),
    /// A struct of this name.
    Struct(&'static str),
    /// A member of a struct.
    Member(&'static str, &'static str),
    /// A tracepoint whose arguments begin with these types (btf_trace_NAME, after its leading `void *`).
    TracepointArgs(&'static str, &'static [&'static str]),
    /// Not in BTF: asked of the kernel itself.
    Probe(Probe),
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evidence::EnumValue(_, value) => write!(f, "{value}"),
            Evidence::Struct(name) => write!(f, "struct {name}"),
            Evidence::Member(name, member) => write!(f, "{name}::{member}"),
            Evidence::TracepointArgs(name, args) => {
                write!(f, "btf_trace_{name}({})", args.join(", "))
            }
            Evidence::Probe(Probe::AtomicCompareExchange) => {
                write!(f, "an atomic compare-and-exchange loads")
            }
        }
    }
}

/// What launchgap does on a kernel without the feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Without {
    /// Refuses to start.
    Refuse,
    /// Works another way: which.
    Adapt(&'static str),
}

pub struct Feature {
    pub name: &'static str,
    pub since: Linux,
    /// The kernel commit that brought it.
    pub commit: &'static str,
    pub used_for: &'static str,
    pub recorder: bool,
    pub monitor: bool,
    pub evidence: Evidence,
    pub without: Without,
}

impl Feature {
    pub fn used_by(&self, program: Program) -> bool {
        match program {
            Program::Recorder => self.recorder,
            Program::Monitor => self.monitor,
        }
    }
}

impl fmt::Debug for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (Linux {})", self.name, self.since)
    }
}

/// What BTF launchgap needs at all: CO-RE relocates every program against it, and tp_btf
/// programs are verified against it (/sys/kernel/btf/vmlinux: commit 341dfcf8d78e, Linux 5.4).
pub const BTF_SINCE: Linux = Linux(5, 4);

const SCHED_SWITCH_ARGS_WITH_PREV_STATE: &[&str] =
    &["bool", "struct task_struct *", "struct task_struct *", "unsigned int"];
const UPROBE_MULTI: Evidence = Evidence::Struct("bpf_uprobe_multi_link");

/// Every BPF feature the programs use, oldest first. Versions and commits are the
/// mainline kernel's (README, "Kernel compatibility", says where each comes from).
pub const FEATURES: &[Feature] = &[
    Feature {
        name: "BTF-enabled tracepoints (tp_btf)",
        since: Linux(5, 5),
        commit: "9e15db66136a",
        used_for: "every scheduling and interrupt probe: the tracepoint's own arguments, task fields read directly",
        recorder: true,
        monitor: true,
        evidence: Evidence::EnumValue("bpf_attach_type", "BPF_TRACE_RAW_TP"),
        without: Without::Refuse,
    },
    Feature {
        name: "bpf_probe_read_kernel_str",
        since: Linux(5, 5),
        commit: "6ae08ae3dea2",
        used_for: "command, IRQ handler and exec file names",
        recorder: true,
        monitor: true,
        evidence: Evidence::EnumValue("bpf_func_id", "BPF_FUNC_probe_read_kernel_str"),
        without: Without::Refuse,
    },
    Feature {
        name: "the BPF ring buffer",
        since: Linux(5, 8),
        commit: "457f44363a88",
        used_for: "the recorder's one buffer of records, in order across CPUs, its reader woken only when worth it",
        recorder: true,
        monitor: false,
        evidence: Evidence::EnumValue("bpf_map_type", "BPF_MAP_TYPE_RINGBUF"),
        without: Without::Refuse,
    },
    Feature {
        name: "the BPF task iterator",
        since: Linux(5, 8),
        commit: "eaaacd23910f",
        used_for: "writing out, at the stop, the launches still staged in every thread",
        recorder: true,
        monitor: false,
        evidence: Evidence::Struct("bpf_iter__task"),
        without: Without::Refuse,
    },
    Feature {
        name: "bpf_get_current_task_btf",
        since: Linux(5, 11),
        commit: "3ca1032ab7ab",
        used_for: "the current thread's launch stage (recorder) and counters (monitor) from a uprobe",
        recorder: true,
        monitor: true,
        evidence: Evidence::EnumValue("bpf_func_id", "BPF_FUNC_get_current_task_btf"),
        without: Without::Refuse,
    },
    Feature {
        name: "BPF atomic compare-and-exchange (ISA v3)",
        since: Linux(5, 12),
        commit: "5ffa25502b5a",
        used_for: "the monitor's per-CPU slots of waiting threads, shared by every CPU (built with -mcpu=v3)",
        recorder: false,
        monitor: true,
        evidence: Evidence::Probe(Probe::AtomicCompareExchange),
        without: Without::Refuse,
    },
    Feature {
        name: "task local storage in tracing programs",
        since: Linux(5, 13),
        commit: "a10787e6d58c",
        used_for: "each thread's staged launches, and its switch counters as of its last switch",
        recorder: true,
        monitor: true,
        evidence: Evidence::Member("task_struct", "bpf_storage"),
        without: Without::Refuse,
    },
    Feature {
        name: "task_struct::__state",
        since: Linux(5, 14),
        commit: "2f064a59a11f",
        used_for: "a switched-out task's state where sched_switch does not pass it",
        recorder: true,
        monitor: true,
        evidence: Evidence::Member("task_struct", "__state"),
        without: Without::Adapt("task_struct::state is read, at its size"),
    },
    Feature {
        name: "BPF cookies on uprobes",
        since: Linux(5, 15),
        commit: "7adfc6c9b315",
        used_for: "which CUDA entry point a uprobe hit (bpf_get_attach_cookie): one program serves many",
        recorder: true,
        monitor: true,
        evidence: Evidence::EnumValue("bpf_func_id", "BPF_FUNC_get_attach_cookie"),
        without: Without::Refuse,
    },
    Feature {
        name: "thread_info::cpu",
        since: Linux(5, 16),
        commit: "bcf9033e5449",
        used_for: "the CPU a woken or migrating thread is on",
        recorder: true,
        monitor: true,
        evidence: Evidence::Member("thread_info", "cpu"),
        without: Without::Adapt("task_struct::cpu is read"),
    },
    Feature {
        name: "sched_switch's prev_state argument",
        since: Linux(5, 18),
        commit: "9c2136be0878",
        used_for: "the state a thread left the CPU in: blocked, or dead at its last switch",
        recorder: true,
        monitor: true,
        evidence: Evidence::TracepointArgs("sched_switch", SCHED_SWITCH_ARGS_WITH_PREV_STATE),
        without: Without::Adapt(
            "the state is read from the task at the switch (a wakeup racing the switch can show it running)",
        ),
    },
    Feature {
        name: "uprobe_multi links",
        since: Linux(6, 6),
        commit: "89ae89f53d20",
        used_for: "all of a library's CUDA probes in one link, with one RCU wait at detach",
        recorder: true,
        monitor: true,
        evidence: UPROBE_MULTI,
        without: Without::Adapt("one uprobe link per probe, each slower to attach and detach"),
    },
];

/// What the running kernel has: the evidence its BTF holds and the probes it passed.
#[derive(Clone, Debug, Default)]
pub struct KernelFacts {
    pub present: BTreeSet<Evidence>,
    /// Probes that could not be run (say, without the privilege): the version decides them.
    pub unasked: BTreeSet<Probe>,
    pub version: Option<Linux>,
}

impl KernelFacts {
    fn has(&self, feature: &Feature) -> bool {
        match feature.evidence {
            Evidence::Probe(probe) if self.unasked.contains(&probe) => {
                // a release launchgap cannot read leaves it to the load, which says what failed
                self.version.is_none_or(|version| version >= feature.since)
            }
            evidence => self.present.contains(&evidence),
        }
    }
}

/// The decision for one program on one kernel.
#[derive(Debug)]
pub struct Verdict {
    /// Features it needs that the kernel lacks: it refuses.
    pub missing: Vec<&'static Feature>,
    /// Features the kernel lacks that it works without, another way.
    pub adapted: Vec<&'static Feature>,
    /// The oldest mainline Linux with everything the program needs.
    pub minimum: Linux,
}

/// The oldest mainline Linux with every feature `program` cannot do without.
pub fn minimum(program: Program) -> Linux {
    FEATURES
        .iter()
        .filter(|f| f.used_by(program) && f.without == Without::Refuse)
        .map(|f| f.since)
        .max()
        .unwrap_or(BTF_SINCE)
}

pub fn assess(facts: &KernelFacts, program: Program) -> Verdict {
    let mut verdict =
        Verdict { missing: Vec::new(), adapted: Vec::new(), minimum: minimum(program) };
    for feature in FEATURES.iter().filter(|f| f.used_by(program) && !facts.has(f)) {
        match feature.without {
            Without::Refuse => verdict.missing.push(feature),
            Without::Adapt(_) => verdict.adapted.push(feature),
        }
    }
    verdict
}

/// "a", "a and b", "a, b and c"
fn in_words(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

impl Verdict {
    /// The one line a program refuses with, when it must; `kernel` names the kernel.
    pub fn refusal(&self, kernel: &str) -> Option<String> {
        if self.missing.is_empty() {
            return None;
        }
        let newest = self.minimum;
        let lacks: Vec<String> =
            self.missing.iter().map(|f| format!("{} (Linux {}+)", f.name, f.since)).collect();
        let them = if self.missing.len() == 1 { "it" } else { "them" };
        Some(format!(
            "this kernel ({kernel}) lacks {}: upgrade to Linux {newest} or later, or to a distribution kernel \
             that backports {them}",
            in_words(&lacks)
        ))
    }
}

/// The line for a kernel that exposes no BTF at all.
pub fn no_btf_line(kernel: &str, btf: &Path) -> String {
    format!(
        "this kernel ({kernel}) exposes no BTF ({}): launchgap needs one built with CONFIG_DEBUG_INFO_BTF=y, \
         as most distributions' kernels since Linux {BTF_SINCE} are",
        btf.display()
    )
}

/// A type as C spells it: "struct task_struct *", "unsigned int", "bool" (typedef names kept).
fn type_text(ty: BtfType, depth: u32) -> Option<String> {
    if depth > 16 {
        return None; // a reference cycle: only in a malformed BTF
    }
    let name = || ty.name().map(|n| n.to_string_lossy().into_owned());
    Some(match ty.kind() {
        BtfKind::Void => "void".to_string(),
        BtfKind::Ptr => format!("{} *", type_text(ty.next_type()?, depth + 1)?),
        BtfKind::Const | BtfKind::Volatile | BtfKind::Restrict | BtfKind::TypeTag => {
            type_text(ty.next_type()?, depth + 1)?
        }
        BtfKind::Struct => format!("struct {}", name()?),
        BtfKind::Union => format!("union {}", name()?),
        BtfKind::Enum | BtfKind::Enum64 => format!("enum {}", name()?),
        _ => name()?,
    })
}

/// The arguments of a tracepoint (its btf_trace_NAME prototype, less the leading `void *`).
fn tracepoint_args(btf: &Btf, tracepoint: &str) -> Option<Vec<String>> {
    let typedef = btf.type_by_name::<Typedef>(&format!("btf_trace_{tracepoint}"))?;
    let pointer = typedef.next_type()?;
    let proto = FuncProto::try_from(pointer.next_type()?).ok()?;
    let mut args: Vec<String> = proto
        .iter()
        .map(|p| btf.type_by_id(p.ty).and_then(|t| type_text(t, 0)))
        .collect::<Option<_>>()?;
    if args.is_empty() {
        return None;
    }
    args.remove(0);
    Some(args)
}

fn btf_holds(btf: &Btf, evidence: Evidence) -> bool {
    let named = |name: Option<&std::ffi::OsStr>, wanted: &str| name.is_some_and(|n| n == wanted);
    match evidence {
        Evidence::EnumValue(name, value) => {
            btf.type_by_name::<Enum>(name).is_some_and(|e| e.iter().any(|v| named(v.name, value)))
        }
        Evidence::Struct(name) => btf.type_by_name::<Struct>(name).is_some(),
        Evidence::Member(name, member) => btf
            .type_by_name::<Struct>(name)
            .is_some_and(|s| s.iter().any(|m| named(m.name, member))),
        Evidence::TracepointArgs(tracepoint, wanted) => tracepoint_args(btf, tracepoint)
            .is_some_and(|args| {
                args.len() >= wanted.len() && args.iter().zip(wanted).all(|(a, w)| a == w)
            }),
        Evidence::Probe(_) => false,
    }
}

/// BPF_ATOMIC | BPF_CMPXCHG on the stack, in a socket filter: loads where the verifier knows
/// the instruction. None when the kernel would not let us ask (no privilege).
fn kernel_loads_atomic_compare_exchange() -> Option<bool> {
    use libbpf_rs::libbpf_sys::{self, bpf_insn};
    let insn = |code: u8, dst: u8, src: u8, off: i16, imm: i32| {
        let mut insn = bpf_insn { code, off, imm, ..Default::default() };
        insn.set_dst_reg(dst);
        insn.set_src_reg(src);
        insn
    };
    const BPF_CMPXCHG: i32 = 0xf0 | 0x01; // include/uapi/linux/bpf.h: BPF_XCHG base, with BPF_FETCH
    let program = [
        insn(0xb7, 0, 0, 0, 0),             // r0 = 0
        insn(0x7b, 10, 0, -8, 0),           // *(u64 *)(r10 - 8) = r0
        insn(0xb7, 1, 0, 0, 1),             // r1 = 1
        insn(0xdb, 10, 1, -8, BPF_CMPXCHG), // r0 = cmpxchg_64(r10 - 8, r0, r1)
        insn(0xb7, 0, 0, 0, 0),             // r0 = 0
        insn(0x95, 0, 0, 0, 0),             // exit
    ];
    // SAFETY: the instructions and the license string outlive the call; no options.
    let fd = unsafe {
        libbpf_sys::bpf_prog_load(
            libbpf_sys::BPF_PROG_TYPE_SOCKET_FILTER,
            std::ptr::null(),
            c"GPL".as_ptr(),
            program.as_ptr(),
            program.len() as _,
            std::ptr::null_mut(),
        )
    };
    if fd >= 0 {
        // SAFETY: the descriptor is ours and used nowhere else.
        unsafe { libc::close(fd) };
        return Some(true);
    }
    // libbpf returns the negated errno
    (-fd == libc::EINVAL).then_some(false)
}

/// Reads the facts `program`'s features are decided by: from `btf`, and the probes from the kernel.
pub fn read_facts(btf: &Btf, release: &str, program: Program) -> KernelFacts {
    let mut facts = KernelFacts { version: Linux::from_release(release), ..Default::default() };
    for feature in FEATURES.iter().filter(|f| f.used_by(program)) {
        let present = match feature.evidence {
            Evidence::Probe(probe @ Probe::AtomicCompareExchange) => {
                match kernel_loads_atomic_compare_exchange() {
                    Some(answer) => answer,
                    None => {
                        facts.unasked.insert(probe);
                        false
                    }
                }
            }
            evidence => btf_holds(btf, evidence),
        };
        if present {
            facts.present.insert(feature.evidence);
        }
    }
    facts
}

/// The running kernel's release (uname -r).
pub fn kernel_release() -> String {
    // SAFETY: uname fills the struct we own.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    unsafe { libc::uname(&mut uts) };
    let bytes: Vec<u8> = uts.release.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// What a program may rely on in this kernel, decided at start.
#[derive(Debug)]
pub struct KernelSupport {
    pub btf: PathBuf,
    /// The BTF CO-RE relocates against when it is not the running kernel's own (the override).
    pub core_btf: Option<PathBuf>,
    pub adapted: Vec<&'static Feature>,
}

impl KernelSupport {
    /// CUDA probes go in as uprobe_multi links.
    pub fn uprobe_multi(&self) -> bool {
        !self.adapted.iter().any(|f| f.evidence == UPROBE_MULTI)
    }

    /// For a trace's meta.json: the BTF read, and what the kernel lacked and how the programs did without it.
    pub fn metadata(&self) -> Value {
        let adapted: Vec<Value> = self
            .adapted
            .iter()
            .map(|f| {
                let instead = match f.without {
                    Without::Adapt(instead) => instead,
                    Without::Refuse => "",
                };
                json!({"feature": f.name, "since": f.since.to_string(), "instead": instead})
            })
            .collect();
        json!({"btf": self.btf, "adapted": adapted})
    }
}

/// Checks this kernel for everything `program` needs, before anything is loaded: one line
/// naming what is missing and what would work when it cannot run here.
pub fn check(program: Program) -> Result<KernelSupport> {
    let overridden = std::env::var_os(BTF_OVERRIDE).map(PathBuf::from);
    let btf_path = overridden.clone().unwrap_or_else(|| PathBuf::from(KERNEL_BTF));
    let release = kernel_release();
    if !btf_path.exists() {
        bail!(no_btf_line(&release, &btf_path));
    }
    // with the override that BTF, not the running kernel's, is what is judged
    let kernel = match &overridden {
        Some(path) => format!("BTF {}", path.display()),
        None => release.clone(),
    };
    let btf = Btf::from_path(&btf_path)
        .map_err(|e| anyhow!("cannot read the kernel's BTF ({}): {e}", btf_path.display()))?;
    let verdict = assess(&read_facts(&btf, &release, program), program);
    if let Some(line) = verdict.refusal(&kernel) {
        bail!(line);
    }
    Ok(KernelSupport { btf: btf_path, core_btf: overridden, adapted: verdict.adapted })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence of every feature, less those named: a kernel that has all but these.
    fn kernel_without(absent: &[&str]) -> KernelFacts {
        let present =
            FEATURES.iter().filter(|f| !absent.contains(&f.name)).map(|f| f.evidence).collect();
        KernelFacts { present, unasked: BTreeSet::new(), version: Some(Linux(6, 18)) }
    }

    fn names(features: &[&'static Feature]) -> Vec<&'static str> {
        features.iter().map(|f| f.name).collect()
    }

    #[test]
    fn releases_read_as_major_minor() {
        assert_eq!(Linux::from_release("5.10.0-32-amd64"), Some(Linux(5, 10)));
        assert_eq!(Linux::from_release("6.18.44-fc-v782"), Some(Linux(6, 18)));
        assert_eq!(Linux::from_release("4.18.0-553.el8_10.x86_64"), Some(Linux(4, 18)));
        assert_eq!(Linux::from_release("6"), None);
        assert_eq!(Linux::from_release("weird"), None);
        assert!(Linux(5, 9) < Linux(5, 10) && Linux(5, 18) < Linux(6, 0));
    }

    #[test]
    fn a_kernel_with_everything_needs_no_adapting() {
        for program in [Program::Recorder, Program::Monitor] {
            let verdict = assess(&kernel_without(&[]), program);
            assert!(verdict.missing.is_empty() && verdict.adapted.is_empty(), "{verdict:?}");
            assert_eq!(verdict.refusal("6.18.44"), None);
        }
    }

    /// The table itself: kernel facts -> what each program lacks, and the line it refuses with.
    #[test]
    fn each_kernel_gets_its_verdict_and_line() {
        struct Case {
            release: &'static str,
            absent: &'static [&'static str],
            program: Program,
            missing: &'static [&'static str],
            adapted: &'static [&'static str],
            line: Option<&'static str>,
        }
        let cases = [
            // 5.7: no ring buffer, no task iterator, nothing since
            Case {
                release: "5.7.0",
                absent: &[
                    "the BPF ring buffer", "the BPF task iterator", "bpf_get_current_task_btf",
                    "task local storage in tracing programs", "task_struct::__state", "BPF cookies on uprobes",
                    "thread_info::cpu", "sched_switch's prev_state argument", "uprobe_multi links",
                ],
                program: Program::Recorder,
                missing: &[
                    "the BPF ring buffer", "the BPF task iterator", "bpf_get_current_task_btf",
                    "task local storage in tracing programs", "BPF cookies on uprobes",
                ],
                adapted: &["task_struct::__state", "thread_info::cpu", "sched_switch's prev_state argument", "uprobe_multi links"],
                line: Some(
                    "this kernel (5.7.0) lacks the BPF ring buffer (Linux 5.8+), the BPF task iterator (Linux 5.8+), \
                     bpf_get_current_task_btf (Linux 5.11+), task local storage in tracing programs (Linux 5.13+) \
                     and BPF cookies on uprobes (Linux 5.15+): upgrade to Linux 5.15 or later, or to a distribution \
                     kernel that backports them",
                ),
            },
            // Debian bullseye's 5.10, for the monitor (which needs no ring buffer)
            Case {
                release: "5.10.0-32-amd64",
                absent: &[
                    "bpf_get_current_task_btf", "task local storage in tracing programs", "task_struct::__state",
                    "BPF cookies on uprobes", "thread_info::cpu", "sched_switch's prev_state argument",
                    "uprobe_multi links",
                ],
                program: Program::Monitor,
                missing: &["bpf_get_current_task_btf", "task local storage in tracing programs", "BPF cookies on uprobes"],
                adapted: &["task_struct::__state", "thread_info::cpu", "sched_switch's prev_state argument", "uprobe_multi links"],
                line: Some(
                    "this kernel (5.10.0-32-amd64) lacks bpf_get_current_task_btf (Linux 5.11+), task local storage \
                     in tracing programs (Linux 5.13+) and BPF cookies on uprobes (Linux 5.15+): upgrade to Linux \
                     5.15 or later, or to a distribution kernel that backports them",
                ),
            },
            // a kernel with one thing backported and one not
            Case {
                release: "5.14.0-backports",
                absent: &["BPF cookies on uprobes", "thread_info::cpu", "sched_switch's prev_state argument"],
                program: Program::Recorder,
                missing: &["BPF cookies on uprobes"],
                adapted: &["thread_info::cpu", "sched_switch's prev_state argument"],
                line: Some(
                    "this kernel (5.14.0-backports) lacks BPF cookies on uprobes (Linux 5.15+): upgrade to Linux 5.15 \
                     or later, or to a distribution kernel that backports it",
                ),
            },
            // 5.15, the oldest that runs both: three adaptations
            Case {
                release: "5.15.0",
                absent: &["thread_info::cpu", "sched_switch's prev_state argument", "uprobe_multi links"],
                program: Program::Recorder,
                missing: &[],
                adapted: &["thread_info::cpu", "sched_switch's prev_state argument", "uprobe_multi links"],
                line: None,
            },
            // 6.1: only uprobe_multi
            Case {
                release: "6.1.0",
                absent: &["uprobe_multi links"],
                program: Program::Monitor,
                missing: &[],
                adapted: &["uprobe_multi links"],
                line: None,
            },
            // no ring buffer: only the recorder minds
            Case {
                release: "6.18.0",
                absent: &["the BPF ring buffer"],
                program: Program::Monitor,
                missing: &[],
                adapted: &[],
                line: None,
            },
        ];
        for case in cases {
            let verdict = assess(&kernel_without(case.absent), case.program);
            assert_eq!(names(&verdict.missing), case.missing, "{}", case.release);
            assert_eq!(names(&verdict.adapted), case.adapted, "{}", case.release);
            assert_eq!(verdict.refusal(case.release).as_deref(), case.line, "{}", case.release);
        }
    }

    #[test]
    fn both_programs_need_linux_5_15() {
        assert_eq!(minimum(Program::Recorder), Linux(5, 15));
        assert_eq!(minimum(Program::Monitor), Linux(5, 15));
    }

    #[test]
    fn no_btf_is_one_line() {
        assert_eq!(
            no_btf_line("5.4.0-1", Path::new(KERNEL_BTF)),
            "this kernel (5.4.0-1) exposes no BTF (/sys/kernel/btf/vmlinux): launchgap needs one built with \
             CONFIG_DEBUG_INFO_BTF=y, as most distributions' kernels since Linux 5.4 are"
        );
    }

    #[test]
    fn atomics_are_asked_of_the_kernel_and_only_unasked_go_by_the_version() {
        let atomics = "BPF atomic compare-and-exchange (ISA v3)";
        // the probe said no: the monitor refuses whatever the version
        let said_no = kernel_without(&[atomics]);
        assert_eq!(names(&assess(&said_no, Program::Monitor).missing), [atomics]);
        assert!(assess(&said_no, Program::Recorder).missing.is_empty());
        // not asked: the release decides (an unreadable one is left to the load)
        let mut unasked = kernel_without(&[atomics]);
        unasked.unasked.insert(Probe::AtomicCompareExchange);
        for (version, refused) in
            [(Some(Linux(5, 11)), true), (Some(Linux(5, 12)), false), (None, false)]
        {
            unasked.version = version;
            assert_eq!(
                !assess(&unasked, Program::Monitor).missing.is_empty(),
                refused,
                "{version:?}"
            );
        }
    }

    #[test]
    fn the_table_is_oldest_first_and_names_each_feature_once() {
        let mut seen = BTreeSet::new();
        for pair in FEATURES.windows(2) {
            assert!(pair[0].since <= pair[1].since, "{:?} before {:?}", pair[0], pair[1]);
        }
        for feature in FEATURES {
            assert!(seen.insert(feature.name), "{} twice", feature.name);
            assert!(feature.recorder || feature.monitor, "{} used by neither", feature.name);
            assert_eq!(feature.commit.len(), 12, "{}", feature.name);
        }
    }

    /// The README's table ("Kernel compatibility") says what this one decides by.
    #[test]
    fn the_readme_table_is_this_table() {
        let readme = include_str!("../../README.md");
        let rows: Vec<&str> = readme.lines().filter(|l| l.starts_with("| ")).collect();
        for feature in FEATURES {
            let yes = |used: bool| if used { "yes" } else { "no" };
            let start = format!(
                "| {} | {} | {} | {} | {} | ",
                feature.name,
                feature.since,
                feature.commit,
                yes(feature.recorder),
                yes(feature.monitor)
            );
            let row = rows
                .iter()
                .find(|r| r.starts_with(&start))
                .unwrap_or_else(|| panic!("README lacks {start}"));
            match feature.without {
                Without::Refuse => assert!(row.ends_with("| refuses |"), "{row}"),
                Without::Adapt(_) => assert!(!row.contains("refuses"), "{row}"),
            }
        }
        let btf_row = format!("| kernel BTF (`{KERNEL_BTF}`) | {BTF_SINCE} | ");
        assert!(rows.iter().any(|r| r.starts_with(&btf_row)), "README lacks {btf_row}");
        assert!(readme.contains(&format!("need **Linux {} or later", minimum(Program::Recorder))));
    }

    #[test]
    fn support_says_what_was_adapted_and_whether_uprobe_multi_is_used() {
        let verdict =
            assess(&kernel_without(&["uprobe_multi links", "thread_info::cpu"]), Program::Recorder);
        let support = KernelSupport {
            btf: PathBuf::from(KERNEL_BTF),
            core_btf: None,
            adapted: verdict.adapted,
        };
        assert!(!support.uprobe_multi());
        assert_eq!(
            support.metadata(),
            json!({"btf": "/sys/kernel/btf/vmlinux", "adapted": [
                {"feature": "thread_info::cpu", "since": "5.16", "instead": "task_struct::cpu is read"},
                {"feature": "uprobe_multi links", "since": "6.6",
                 "instead": "one uprobe link per probe, each slower to attach and detach"},
            ]})
        );
    }
}
