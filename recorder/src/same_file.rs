//! An -o that is one of the recording's own inputs is refused before
//! anything starts: the trace replaces whatever is at -o when the recording
//! ends, so `-o train.py -- python train.py` would replace the script, and
//! `-o libcuda.so.1 --cuda-lib libcuda.so.1` the driver. Files are compared
//! by device and inode, after following links, so a hard link, a symbolic
//! link or another spelling of the same path is caught too.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use launchgap_record::discover::resolve_executable;

/// A file the recording reads, and what it is to the recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub what: String,
    pub path: PathBuf,
}

fn input(what: impl Into<String>, path: impl Into<PathBuf>) -> Input {
    Input { what: what.into(), path: path.into() }
}

/// Every file the recording reads: the command's executable (found on PATH
/// as exec would) and every argument naming a file (a script, a wrapped
/// program: `taskset 1 prog`, `python train.py`), each --cuda-lib and
/// every library it probes, each -p target's executable, and the recorder.
pub fn inputs(
    command: &[String],
    cuda_libs: &[PathBuf],
    pids: &[i32],
    probed: &[PathBuf],
) -> Vec<Input> {
    let mut out = Vec::new();
    for (position, arg) in command.iter().enumerate() {
        let what = if position == 0 {
            "the command".to_string()
        } else {
            format!("the command's argument {position}")
        };
        let named = [Some(PathBuf::from(arg)), resolve_executable(arg)];
        for path in named.into_iter().flatten().filter(|p| p.is_file()) {
            out.push(input(what.clone(), path));
        }
    }
    out.extend(cuda_libs.iter().map(|p| input("--cuda-lib", p)));
    out.extend(
        pids.iter()
            .map(|pid| input(format!("the executable of pid {pid}"), format!("/proc/{pid}/exe"))),
    );
    out.extend(probed.iter().map(|p| input("a CUDA library the recording probes", p)));
    if let Ok(me) = std::env::current_exe() {
        out.push(input("the recorder itself", me));
    }
    out
}

fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Refuses an output that is the same file as one of the inputs.
pub fn refuse_output_among_inputs(output: &Path, inputs: &[Input]) -> Result<()> {
    let Some(target) = identity(output) else { return Ok(()) };
    if let Some(clash) = inputs.iter().find(|i| identity(&i.path) == Some(target)) {
        let named = if clash.path == output {
            String::new()
        } else {
            format!(" ({})", clash.path.display())
        };
        bail!(
            "-o {} is the same file as {}{named}: the recording would replace it; choose another -o",
            output.display(),
            clash.what
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("launchgap-same-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn refusal(output: &Path, inputs: &[Input]) -> String {
        refuse_output_among_inputs(output, inputs).unwrap_err().to_string()
    }

    #[test]
    fn the_command_its_script_and_its_libraries_are_found_by_inode() {
        let dir = scratch("inode");
        let script = dir.join("train.sh");
        std::fs::write(&script, "exit 0\n").unwrap();
        std::fs::hard_link(&script, dir.join("hard.lg")).unwrap();
        std::os::unix::fs::symlink("train.sh", dir.join("soft.lg")).unwrap();
        let lib = dir.join("libcuda.so.1");
        std::fs::write(&lib, b"\x7fELF").unwrap();
        let command = ["sh".to_string(), script.to_str().unwrap().to_string()];
        let inputs = inputs(&command, std::slice::from_ref(&lib), &[], &[]);

        assert_eq!(
            refusal(&script, &inputs),
            format!("-o {} is the same file as the command's argument 1: the recording would replace it; choose another -o", script.display())
        );
        for alias in ["hard.lg", "soft.lg"] {
            assert_eq!(
                refusal(&dir.join(alias), &inputs),
                format!(
                    "-o {} is the same file as the command's argument 1 ({}): the recording would replace it; choose another -o",
                    dir.join(alias).display(),
                    script.display()
                )
            );
        }
        // another spelling of the same path
        std::fs::create_dir(dir.join("sub")).unwrap();
        let dotted = dir.join("sub/../libcuda.so.1");
        assert_eq!(
            refusal(&dotted, &inputs),
            format!("-o {} is the same file as --cuda-lib ({}): the recording would replace it; choose another -o", dotted.display(), lib.display())
        );
        // the shell itself, found on PATH as exec finds it
        let sh = resolve_executable("sh").unwrap();
        assert!(
            refusal(&sh, &inputs).contains("is the same file as the command"),
            "{}",
            refusal(&sh, &inputs)
        );
        // a new name, or another file, is fine
        refuse_output_among_inputs(&dir.join("new.lg"), &inputs).unwrap();
        std::fs::write(dir.join("other.lg"), "").unwrap();
        refuse_output_among_inputs(&dir.join("other.lg"), &inputs).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn probed_libraries_pid_executables_and_the_recorder_itself_are_inputs() {
        let me = std::env::current_exe().unwrap();
        let pid = std::process::id() as i32;
        let found = inputs(&[], &[], &[pid], &[PathBuf::from("/dev/null")]);
        assert_eq!(
            refusal(&me, &found),
            format!(
                "-o {} is the same file as the executable of pid {pid} (/proc/{pid}/exe): the recording would replace it; choose another -o",
                me.display()
            )
        );
        let found = inputs(&[], &[], &[], &[]);
        assert!(refusal(&me, &found).contains("is the same file as the recorder itself"));
    }
}
