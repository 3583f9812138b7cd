//! Where in a function a uprobe goes, and what each hit costs.
//!
//! An x86 uprobe either *emulates* the probed instruction in the trap
//! handler (one trap) or copies it out of line and *single-steps* it (a
//! second trap, about 15x the cost here). NVIDIA's driver exports every
//! entry point as a thunk that begins with a RIP-relative `cmpl`, which is
//! single-stepped; the `je` right after it is emulated. A `cmp` writes only
//! the flags, so a probe on the `je` sees every register and the stack
//! exactly as at entry and reads the same arguments.
//!
//! So: decode forward from the entry (iced-x86) and put the probe on the
//! first instruction the kernel emulates, moving only across instructions
//! that write no register, no memory and are no branch (`endbr64`, `cmp`,
//! `test`, nops). Where that finds nothing, the probe stays on the entry.
//! Pure: bytes in, a placement out.

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, Instruction,
    InstructionInfoFactory, OpAccess,
};

/// How the running kernel handles a uprobe on an instruction (x86-64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeCost {
    /// Emulated in the trap handler (push, call, jmp, jcc, nops): one trap, the cheap case.
    Emulated,
    /// Copied out of line and single-stepped: a second trap, 10-15x the cost.
    SingleStepped,
    /// Refused by the kernel's instruction check (lock or segment prefix, int3, ...):
    /// the attach succeeds but the probe never fires.
    NeverFires,
}

/// Reported by name (`as_str`), as the probe's `probe_cost`.
impl serde::Serialize for ProbeCost {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl ProbeCost {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeCost::Emulated => "emulated",
            ProbeCost::SingleStepped => "single-stepped",
            ProbeCost::NeverFires => "never-fires",
        }
    }
}

/// Where the probe of one function goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Bytes past the function's entry.
    pub offset: u64,
    /// What a hit there costs.
    pub cost: ProbeCost,
    /// The probed instruction, AT&T syntax.
    pub probed: String,
    /// The function's first instruction (the probed one when `offset` is 0).
    pub first: String,
    /// The instructions between the entry and the probe, which run before it fires.
    pub moved_over: Vec<String>,
}

/// Farther than any entry prefix worth moving over; keeps a bad decode from wandering.
const MAX_INSTRUCTIONS_MOVED_OVER: usize = 8;

/// arch/x86/include/asm/nops.h: the kernel emulates exactly these byte strings
/// (x86_nops[1..=8]) since Linux 6.16, and `0x90` with any prefixes since 3.x.
/// Measured on 6.18 with bpftrace: 3-, 4-, 6-, 7- and 8-byte forms cost a push's
/// 0.42 us a hit; the 9-byte `66 0f 1f 84 ..` and `0f 1f c0` took 14 us (single-stepped).
const KERNEL_NOPS: [&[u8]; 8] = [
    &[0x90],
    &[0x66, 0x90],
    &[0x0f, 0x1f, 0x00],
    &[0x0f, 0x1f, 0x40, 0x00],
    &[0x0f, 0x1f, 0x44, 0x00, 0x00],
    &[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00],
    &[0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00],
    &[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
];

const LOCK: u8 = 0xf0;
const OPERAND_SIZE: u8 = 0x66;
/// es, cs, ss, ds: the kernel refuses an instruction carrying one (is_prefix_bad).
const REFUSED_SEGMENT_PREFIXES: [u8; 4] = [0x26, 0x2e, 0x36, 0x3e];
const LEGACY_PREFIXES: [u8; 11] =
    [LOCK, 0xf2, 0xf3, 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, OPERAND_SIZE, 0x67];
const REX_B_ONLY: u8 = 0x41;

/// One-byte opcodes the kernel's good-instruction table refuses in 64-bit code
/// (arch/x86/kernel/uprobes.c, good_insns_64), those a user function could begin with.
const REFUSED_OPCODES: [u8; 20] = [
    0x6c, 0x6d, 0x6e, 0x6f, // ins, outs
    0xcc, 0xcd, 0xce, 0xcf, // int3, int n, into, iret
    0xe4, 0xe5, 0xe6, 0xe7, 0xec, 0xed, 0xee, 0xef, // in, out
    0xf1, 0xf4, 0xfa, 0xfb, // int1, hlt, cli, sti
];
/// Two-byte (0f xx) opcodes refused: system groups, syscall, sysret, ud2, sysenter/exit.
const REFUSED_TWO_BYTE_OPCODES: [u8; 7] = [0x00, 0x01, 0x05, 0x07, 0x0b, 0x34, 0x35];

/// Splits an instruction's bytes into its legacy prefixes, its REX byte and the rest.
fn split_prefixes(bytes: &[u8]) -> (&[u8], Option<u8>, &[u8]) {
    let legacy = bytes.iter().take_while(|b| LEGACY_PREFIXES.contains(b)).count();
    let (prefixes, rest) = bytes.split_at(legacy);
    match rest.first() {
        Some(&rex @ 0x40..=0x4f) => (prefixes, Some(rex), &rest[1..]),
        _ => (prefixes, None, rest),
    }
}

/// What the kernel does with a probe on this instruction: a mirror of
/// arch_uprobe_analyze_insn (branch_setup_xol_ops, push_setup_xol_ops) in 6.18.
/// `bytes` are exactly the instruction's bytes.
pub fn cost_of(instruction: &Instruction, bytes: &[u8]) -> ProbeCost {
    if instruction.is_invalid() {
        return ProbeCost::NeverFires;
    }
    let (prefixes, rex, opcode) = split_prefixes(bytes);
    if prefixes.iter().any(|p| *p == LOCK || REFUSED_SEGMENT_PREFIXES.contains(p)) {
        return ProbeCost::NeverFires;
    }
    match opcode {
        [op, ..] if REFUSED_OPCODES.contains(op) => return ProbeCost::NeverFires,
        [0x0f, op, ..] if REFUSED_TWO_BYTE_OPCODES.contains(op) => return ProbeCost::NeverFires,
        _ => {}
    }
    if KERNEL_NOPS.contains(&bytes) || opcode.first() == Some(&0x90) {
        return ProbeCost::Emulated;
    }
    let relative_branch = instruction.is_jcc_short_or_near()
        || instruction.is_jmp_short_or_near()
        || instruction.is_call_near();
    if relative_branch {
        // 16-bit branch forms (66 e8 ..) are refused, as Intel and AMD disagree on them
        return if prefixes.contains(&OPERAND_SIZE) {
            ProbeCost::NeverFires
        } else {
            ProbeCost::Emulated
        };
    }
    // push of a 64-bit register: one byte, or two with exactly REX.B (push %r8..%r15)
    let push_register = matches!(opcode, [0x50..=0x57])
        && prefixes.is_empty()
        && matches!(rex, None | Some(REX_B_ONLY));
    if push_register {
        return ProbeCost::Emulated;
    }
    ProbeCost::SingleStepped
}

/// Whether running this instruction before the probe leaves every register,
/// the stack and memory exactly as at entry: it writes only the flags (or
/// nothing) and falls through to the next instruction.
fn movable(instruction: &Instruction, info: &mut InstructionInfoFactory) -> bool {
    if instruction.flow_control() != FlowControl::Next || instruction.has_lock_prefix() {
        return false;
    }
    if instruction.stack_pointer_increment() != 0 {
        return false;
    }
    let used = info.info(instruction);
    let writes = |access: OpAccess| {
        !matches!(
            access,
            OpAccess::None | OpAccess::Read | OpAccess::CondRead | OpAccess::NoMemAccess
        )
    };
    !used.used_registers().iter().any(|r| writes(r.access()))
        && !used.used_memory().iter().any(|m| writes(m.access()))
}

fn formatter() -> GasFormatter {
    let mut formatter = GasFormatter::new();
    let options = formatter.options_mut();
    // `0x18d933e(%rip)` as objdump prints it, not the absolute target
    options.set_rip_relative_addresses(true);
    options.set_space_after_operand_separator(false);
    options.set_uppercase_hex(false);
    options.set_branch_leading_zeros(false);
    options.set_small_hex_numbers_in_decimal(false);
    formatter
}

fn text(formatter: &mut GasFormatter, instruction: &Instruction) -> String {
    let mut out = String::new();
    formatter.format(instruction, &mut out);
    out
}

/// Where to probe a function whose code (its first bytes, at most its size)
/// is `code`, loaded at `address` (only used to print branch targets).
pub fn place(code: &[u8], address: u64) -> Placement {
    let mut decoder = Decoder::with_ip(64, code, address, DecoderOptions::NONE);
    let mut info = InstructionInfoFactory::new();
    let mut formatter = formatter();
    let mut moved_over = Vec::new();
    let mut entry: Option<(ProbeCost, String)> = None;
    let mut offset = 0usize;
    while decoder.can_decode() && moved_over.len() <= MAX_INSTRUCTIONS_MOVED_OVER {
        let instruction = decoder.decode();
        let cost = cost_of(&instruction, &code[offset..offset + instruction.len()]);
        let shown = if instruction.is_invalid() {
            "(bad)".to_string()
        } else {
            text(&mut formatter, &instruction)
        };
        let first = &entry.get_or_insert_with(|| (cost, shown.clone())).1;
        if cost == ProbeCost::Emulated {
            return Placement {
                offset: offset as u64,
                cost,
                probed: shown,
                first: first.clone(),
                moved_over,
            };
        }
        if cost == ProbeCost::NeverFires || !movable(&instruction, &mut info) {
            break;
        }
        moved_over.push(shown);
        offset += instruction.len();
    }
    // nothing cheaper within reach: the entry, at its own cost
    let (cost, first) = entry.unwrap_or((ProbeCost::NeverFires, "(no code)".to_string()));
    Placement { offset: 0, cost, probed: first.clone(), first, moved_over: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NVIDIA libcuda.so.535.261.03 (Debian bookworm libcuda1), cuLaunchKernel: every
    /// exported entry point is this 30-byte thunk, only the displacements differ.
    const NVIDIA_THUNK: [u8; 30] = [
        0x81, 0x3d, 0x3e, 0x93, 0x8d, 0x01, 0x00, 0xba, 0x1c,
        0x32, // cmpl $0x321cba00,disp(%rip)
        0x74, 0x0c, // je +12
        0xff, 0x25, 0xc6, 0x18, 0x7e, 0x01, // jmp *disp(%rip)
        0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00, // nopw 0x0(%rax,%rax,1)
        0xb8, 0x04, 0x00, 0x00, 0x00, // mov $0x4,%eax
        0xc3, // ret
    ];

    fn cost(bytes: &[u8]) -> ProbeCost {
        let instruction = Decoder::new(64, bytes, DecoderOptions::NONE).decode();
        cost_of(&instruction, &bytes[..instruction.len()])
    }

    #[test]
    fn the_driver_thunk_is_probed_on_its_je() {
        let placed = place(&NVIDIA_THUNK, 0x32f860);
        assert_eq!(placed.offset, 10);
        assert_eq!(placed.cost, ProbeCost::Emulated);
        assert_eq!(placed.first, "cmpl $0x321cba00,0x18d933e(%rip)");
        assert_eq!(placed.moved_over, vec![placed.first.clone()]);
        assert!(placed.probed.starts_with("je "), "{}", placed.probed);
    }

    #[test]
    fn frame_pointer_prologue_is_probed_at_entry() {
        let placed = place(&[0x55, 0x48, 0x89, 0xe5, 0xc3], 0);
        assert_eq!(
            (placed.offset, placed.cost, placed.probed.as_str()),
            (0, ProbeCost::Emulated, "push %rbp")
        );
        assert!(placed.moved_over.is_empty());
    }

    #[test]
    fn endbr64_is_moved_over() {
        // -fcf-protection: endbr64; push %rbp; mov %rsp,%rbp
        let placed = place(&[0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5], 0);
        assert_eq!((placed.offset, placed.cost), (4, ProbeCost::Emulated));
        assert_eq!(placed.moved_over, vec!["endbr64"]);
        assert_eq!(placed.first, "endbr64");
    }

    #[test]
    fn endbr64_then_the_thunk_moves_over_both() {
        let mut code = vec![0xf3, 0x0f, 0x1e, 0xfa];
        code.extend_from_slice(&NVIDIA_THUNK);
        let placed = place(&code, 0);
        assert_eq!(
            (placed.offset, placed.cost, placed.moved_over.len()),
            (14, ProbeCost::Emulated, 2)
        );
    }

    #[test]
    fn a_register_write_is_never_moved_over() {
        // add 0x8(%rsp),%r9d; push %rbp: the add changes an argument register
        let placed = place(&[0x44, 0x03, 0x4c, 0x24, 0x08, 0x55], 0);
        assert_eq!((placed.offset, placed.cost), (0, ProbeCost::SingleStepped));
        // sub $8,%rsp; push %rbp: the stack moves
        assert_eq!(place(&[0x48, 0x83, 0xec, 0x08, 0x55], 0).offset, 0);
        // mov %rdi,%rdi looks harmless, but 6.18 single-steps it and it writes a register
        assert_eq!(place(&[0x48, 0x89, 0xff, 0x55], 0).offset, 0);
    }

    #[test]
    fn a_memory_write_is_never_moved_over() {
        // movl $1,0x10(%rip); push %rbp
        let placed = place(&[0xc7, 0x05, 0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x55], 0);
        assert_eq!((placed.offset, placed.cost), (0, ProbeCost::SingleStepped));
    }

    #[test]
    fn nothing_is_moved_past_an_indirect_branch_or_the_end() {
        // cmp %rdi,%rsi; jmp *%rax: the jmp is not emulated and the path goes elsewhere
        let placed = place(&[0x48, 0x39, 0xfe, 0xff, 0xe0, 0x55], 0);
        assert_eq!((placed.offset, placed.cost), (0, ProbeCost::SingleStepped));
        // the function ends after its cmp
        assert_eq!(place(&[0x48, 0x39, 0xfe], 0).offset, 0);
        assert_eq!(place(&[], 0).cost, ProbeCost::NeverFires);
    }

    #[test]
    fn a_lock_prefix_never_fires_and_is_never_moved_over() {
        // lock addl $1,counter(%rip)
        assert_eq!(cost(&[0xf0, 0x83, 0x05, 0, 0, 0, 0, 0x01]), ProbeCost::NeverFires);
        // test %edi,%edi; lock add ...; push: stop at the lock, keep the entry
        let placed = place(&[0x85, 0xff, 0xf0, 0x83, 0x05, 0, 0, 0, 0, 0x01, 0x55], 0);
        assert_eq!((placed.offset, placed.cost), (0, ProbeCost::SingleStepped));
    }

    #[test]
    fn costs_match_what_the_kernel_emulates() {
        use ProbeCost::*;
        let cases: &[(&[u8], ProbeCost)] = &[
            (&[0x55], Emulated),                                       // push %rbp
            (&[0x41, 0x57], Emulated),                                 // push %r15
            (&[0x48, 0x55], SingleStepped), // rex.w push %rbp: only 0x41 is accepted
            (&[0xe8, 0, 0, 0, 0], Emulated), // call rel32
            (&[0xeb, 0x00], Emulated),      // jmp rel8
            (&[0x0f, 0x84, 0, 0, 0, 0], Emulated), // je rel32
            (&[0x66, 0xe8, 0, 0], NeverFires), // callw
            (&[0x90], Emulated),            // nop
            (&[0xf3, 0x90], Emulated),      // pause
            (&[0x0f, 0x1f, 0x44, 0x00, 0x00], Emulated), // nopl 0x0(%rax,%rax,1)
            (&[0x66, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0], SingleStepped), // nopw 9 bytes: not in x86_nops
            (&[0x0f, 0x1f, 0xc0], SingleStepped),                      // nop %eax
            (&[0xf3, 0x0f, 0x1e, 0xfa], SingleStepped),                // endbr64
            (&[0x48, 0x8d, 0x05, 0, 0, 0, 0], SingleStepped),          // lea 0x0(%rip),%rax
            (&[0xcc], NeverFires),                                     // int3
            (&[0x0f, 0x05], NeverFires),                               // syscall
            (&[0x3e, 0xff, 0xe0], NeverFires), // notrack jmp *%rax: ds prefix
        ];
        for (bytes, expected) in cases {
            assert_eq!(cost(bytes), *expected, "{bytes:02x?}");
        }
    }
}
