//! `--list-probes`: what a recording would probe, without tracing. Finds
//! the CUDA libraries as a recording would (the command is not run), plans
//! every probe as the attach would, and prints it all as one JSON object,
//! so a user on a GPU node sees each probe's price before recording
//! (`launchgap probes` prints it as a table).

use std::io::Write;

use anyhow::Result;
use serde_json::{json, Value};

use crate::cli::Args;
use crate::cuda_api::Layer;
use crate::discover::CudaLibraries;
use crate::metadata;
use crate::probe_plan::plan_library;

fn library_kind(libraries: &CudaLibraries, path: &std::path::Path) -> &'static str {
    if libraries.driver.iter().any(|p| p == path) {
        "driver"
    } else if libraries.static_runtime.iter().any(|p| p == path) {
        "static runtime"
    } else {
        "runtime"
    }
}

/// The listing for libraries already found: every library, every probe
/// (runtime ones marked as taken only with --api-names), every warning.
pub fn listing(libraries: &CudaLibraries) -> Value {
    let mut probes = Vec::new();
    let mut missing = Vec::new();
    let mut warnings = libraries.warnings.clone();
    let targets = libraries.driver.iter().map(|p| (p, Layer::Driver)).chain(
        libraries.runtime.iter().chain(&libraries.static_runtime).map(|p| (p, Layer::Runtime)),
    );
    for (file, layer) in targets {
        let plan = match plan_library(file, layer) {
            Ok(plan) => plan,
            Err(e) => {
                warnings.push(format!("cannot read {}: {e:#}", file.display()));
                continue;
            }
        };
        missing.extend(plan.missing.iter().map(|name| json!({"file": file, "function": name})));
        for probe in &plan.probes {
            let mut described = probe.describe(file);
            described["when"] = json!(if layer == Layer::Driver { "always" } else { "--api-names" });
            probes.push(described);
            warnings.extend(probe.warning(file));
        }
    }
    if libraries.driver.is_empty() {
        warnings.push("no CUDA driver library (libcuda.so.*) found: use --cuda-lib PATH".to_string());
    }
    let host = metadata::host();
    json!({
        "kernel_release": host["kernel_release"],
        "machine": host["machine"],
        "libraries": libraries.found_via.iter()
            .map(|(path, via)| json!({"path": path, "found_via": via, "kind": library_kind(libraries, path)}))
            .collect::<Vec<_>>(),
        "probes": probes,
        "missing": missing,
        "warnings": warnings,
    })
}

/// Prints the listing for the recorder's arguments; the command is never
/// run, but it must be one a recording could run: it is looked up as the
/// recording's would be (as the invoking user, PATH and permissions), then
/// let go at the gate.
pub fn run(args: &Args) -> Result<i32> {
    crate::check_pids(&args.pid)?;
    if !args.command.is_empty() {
        let run_as = crate::spawn::invoking_user()?;
        crate::spawn::Gated::spawn(&args.command, run_as.as_ref(), &[])?.abandon();
    }
    let libraries = crate::discover_libraries(args)?;
    let text = serde_json::to_string_pretty(&listing(&libraries))?;
    // a reader that stops early (`| head`) is not an error
    match writeln!(std::io::stdout().lock(), "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        written => written.map(|()| 0).map_err(Into::into),
    }
}
