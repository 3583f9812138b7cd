//! `--list-probes`: what a recording would probe, without tracing. Finds
//! the CUDA libraries as a recording would (the command is not run), plans
//! every probe as the attach would, and prints it all as one JSON object,
//! so a user on a GPU node sees each probe's price before recording
//! (`launchgap probes` prints it as a table).

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use crate::cuda_api::Layer;
use crate::discover::CudaLibraries;
use crate::metadata;
use crate::probe_plan::plan_library;
use crate::probe_report::Probe;
use crate::record_config::RecordConfig;

/// What `--list-probes` prints. Fields (here and below) in alphabetical
/// order, the order the listing had as a serde_json map.
#[derive(Serialize)]
pub struct Listing<'a> {
    kernel_release: Value,
    libraries: Vec<ListedLibrary<'a>>,
    machine: Value,
    missing: Vec<MissingFunction<'a>>,
    probes: Vec<Probe>,
    warnings: Vec<String>,
}

#[derive(Serialize)]
struct ListedLibrary<'a> {
    found_via: &'static str,
    kind: &'static str,
    #[serde(serialize_with = "launchgap_record::names::serialize_path")]
    path: &'a Path,
}

/// An entry point of its layer that a library lacks.
#[derive(Serialize)]
struct MissingFunction<'a> {
    #[serde(serialize_with = "launchgap_record::names::serialize_path")]
    file: &'a Path,
    function: &'static str,
}

fn library_kind(libraries: &CudaLibraries, path: &Path) -> &'static str {
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
pub fn listing(libraries: &CudaLibraries) -> Listing<'_> {
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
        missing.extend(plan.missing.iter().map(|&function| MissingFunction { file, function }));
        for probe in &plan.probes {
            let when = if layer == Layer::Driver { "always" } else { "--api-names" };
            probes.push(Probe { when: Some(when), ..probe.describe(file) });
            warnings.extend(probe.warning(file));
        }
    }
    if libraries.driver.is_empty() {
        warnings
            .push("no CUDA driver library (libcuda.so.*) found: use --cuda-lib PATH".to_string());
    }
    let host = metadata::host();
    Listing {
        kernel_release: host["kernel_release"].clone(),
        machine: host["machine"].clone(),
        libraries: libraries
            .found_via
            .iter()
            .map(|(path, found_via)| ListedLibrary {
                path,
                found_via,
                kind: library_kind(libraries, path),
            })
            .collect(),
        probes,
        missing,
        warnings,
    }
}

/// Prints the listing for the recorder's configuration; the command is never
/// run, but it must be one a recording could run: it is looked up as the
/// recording's would be (as the invoking user, PATH and permissions), then
/// let go at the gate.
pub fn run(config: &RecordConfig) -> Result<i32> {
    if let Some(command) = config.command() {
        let run_as = crate::spawn::invoking_user()?;
        crate::spawn::Gated::spawn(command, run_as.as_ref(), &[])?.abandon();
    }
    let libraries = crate::recording::discover_libraries(config)?;
    let text = serde_json::to_string_pretty(&listing(&libraries))?;
    // a reader that stops early (`| head`) is not an error
    match writeln!(std::io::stdout().lock(), "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        written => written.map(|()| 0).map_err(Into::into),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The listing's key order is the one it had as a serde_json map: every level sorted.
    #[test]
    fn the_listing_keeps_serde_json_s_key_order() {
        let mut libraries = CudaLibraries::default();
        libraries.found_via.push(("/nonexistent/libcuda.so.1".into(), "--cuda-lib"));
        libraries.driver.push("/nonexistent/libcuda.so.1".into());
        let listing = listing(&libraries);
        let text = serde_json::to_string(&listing).unwrap();
        assert_eq!(text, serde_json::to_value(&listing).unwrap().to_string());
        assert!(text.contains(r#""libraries":[{"found_via":"--cuda-lib","kind":"driver","path":"/nonexistent/libcuda.so.1"}]"#));
    }
}
