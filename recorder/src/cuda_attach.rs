//! Attaching one CUDA library's planned probes to BPF programs: the part of
//! the attach that the recorder and the monitor share. Which program takes
//! which entry point is the caller's (each has its own skeleton); grouping,
//! uprobe_multi links, cookies, and the per-probe report and warnings are
//! here, so both programs place and describe their probes the same way.

use std::collections::BTreeMap;
use std::path::Path;

use crate::cuda_api::{cookie_of, ProbeShape};
use crate::probe_plan::LibraryPlan;
use crate::probe_report::{LinkKind, Probe};
use libbpf_rs::{Link, ProgramMut, UprobeMultiOpts, UprobeOpts};

/// Whether a program runs at a function's entry or at its return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Entry,
    Return,
}

/// Probes going to one program in one file: (function, file offset, cookie).
type ProbeGroup = Vec<(&'static str, usize, u64)>;

/// A path libbpf can attach uprobes through. libbpf-rs takes only UTF-8 paths, and a library may lie
/// in a folder whose name is not UTF-8 (anyone may name one so; a process attached with -p maps what it
/// likes): such a file is opened and reached through /proc/self/fd/N, which the kernel follows to the
/// same inode at attach (uprobes are placed on the inode, so nothing differs after). The file stays
/// open while the path is held.
pub struct AttachPath {
    path: std::path::PathBuf,
    _open: Option<std::fs::File>,
}

impl AttachPath {
    pub fn of(file: &Path) -> Self {
        if file.to_str().is_some() {
            return AttachPath { path: file.to_path_buf(), _open: None };
        }
        use std::os::unix::fs::OpenOptionsExt;
        // without blocking, as open_elf reads it: a FIFO put at the path since would wait for a writer
        match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(file)
        {
            Ok(open) => {
                use std::os::fd::AsRawFd;
                AttachPath {
                    path: format!("/proc/self/fd/{}", open.as_raw_fd()).into(),
                    _open: Some(open),
                }
            }
            // libbpf says why it cannot attach, on the path as it was
            Err(_) => AttachPath { path: file.to_path_buf(), _open: None },
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn attach_group(
    prog: &ProgramMut,
    file: &Path,
    group: &ProbeGroup,
    retprobe: bool,
    multi: bool,
    links: &mut Vec<Link>,
) -> Vec<(&'static str, Result<(), String>)> {
    let reached = AttachPath::of(file);
    let file = reached.path();
    if multi {
        let opts = UprobeMultiOpts {
            offsets: group.iter().map(|(_, offset, _)| *offset).collect(),
            cookies: group.iter().map(|(_, _, cookie)| *cookie).collect(),
            retprobe,
            ..Default::default()
        };
        let result =
            prog.attach_uprobe_multi_with_opts(-1, file, "", opts).map(|link| links.push(link));
        let result = result.map_err(|e| e.to_string());
        return group.iter().map(|(name, _, _)| (*name, result.clone())).collect();
    }
    group
        .iter()
        .map(|(name, offset, cookie)| {
            let opts = UprobeOpts { cookie: *cookie, retprobe, ..Default::default() };
            let result =
                prog.attach_uprobe_with_opts(-1, file, *offset, opts).map(|link| links.push(link));
            (*name, result.map_err(|e| e.to_string()))
        })
        .collect()
}

/// Attaches every probe of `plan` in `file`: in uprobe_multi links with
/// `multi` (kernel_features decides: one link, and one RCU wait at detach, for
/// many probes, where classic uprobe links each wait out a grace period on
/// detach). `program` names the program (and its name) for an entry point's
/// shape and direction; a probe whose shape has no program is left out. Each
/// probe goes where probe_placement put it, past any entry instruction the
/// kernel would single-step; return probes sit on the same instruction. Every
/// probe is described in `probes` (attached or not, and why); what costs more
/// than it must, or failed, is a line in `warnings`.
pub fn attach_library<'a, 'obj: 'a>(
    plan: &LibraryPlan,
    file: &Path,
    program: &dyn Fn(ProbeShape, Direction) -> Option<(&'a ProgramMut<'obj>, &'static str)>,
    multi: bool,
    links: &mut Vec<Link>,
    probes: &mut Vec<Probe>,
    warnings: &mut Vec<String>,
) {
    for name in &plan.missing {
        probes.push(Probe::not_defined(name, file));
    }
    let mut groups: BTreeMap<(&'static str, bool), (&'a ProgramMut<'obj>, ProbeGroup)> =
        BTreeMap::new();
    let taken: Vec<_> =
        plan.probes.iter().filter(|p| program(p.api.shape, Direction::Entry).is_some()).collect();
    for probe in &taken {
        let site = (probe.api.name, probe.file_offset() as usize, cookie_of(probe.index));
        let mut directions = vec![Direction::Entry];
        if probe.has_return_probe() {
            directions.push(Direction::Return);
        }
        for direction in directions {
            if let Some((prog, name)) = program(probe.api.shape, direction) {
                groups
                    .entry((name, direction == Direction::Return))
                    .or_insert_with(|| (prog, Vec::new()))
                    .1
                    .push(site);
            }
        }
    }
    // entry probes first: a return probe's failure is reported over an entry's success
    let mut results: BTreeMap<&'static str, Result<(), String>> = BTreeMap::new();
    for retprobe in [false, true] {
        for ((_, _), (prog, group)) in groups.iter().filter(|((_, r), _)| *r == retprobe) {
            for (name, result) in attach_group(prog, file, group, retprobe, multi, links) {
                match (retprobe, results.get(name), result) {
                    (false, _, result) => {
                        results.insert(name, result);
                    }
                    (true, Some(Ok(())), Err(e)) => {
                        results.insert(name, Err(format!("return probe: {e}")));
                    }
                    _ => {}
                }
            }
        }
    }
    for probe in taken {
        let name = probe.api.name;
        let result = results.remove(name).unwrap_or_else(|| Err("not attached".to_string()));
        probes.push(Probe {
            link: Some(if multi { LinkKind::UprobeMulti } else { LinkKind::Uprobe }),
            attached: Some(result.is_ok()),
            error: Some(result.as_ref().err().cloned()),
            ..probe.describe(file)
        });
        match result {
            Err(e) => warnings.push(format!("uprobe on {name} in {} failed: {e}", file.display())),
            Ok(()) => warnings.extend(probe.warning(file)),
        }
    }
}
