//! The CUDA entry points launchgap probes. An entry's position in `APIS`
//! (plus one) is its id: the attach cookie the BPF programs copy into each
//! record, turned back into a name when the trace is written. The table is
//! schema/trace.toml's [cuda] apis, where Python and cudasim get it too.

/// Which BPF program reads this entry point's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeShape {
    /// cuLaunchKernel-like: geometry in registers and on the stack.
    Launch,
    /// cuLaunchKernelEx: geometry in a CUlaunchConfig.
    LaunchEx,
    /// cuGraphLaunch: a graph handle and a stream.
    GraphLaunch,
    /// A blocking sync taking a handle; timed with a return probe.
    Sync,
    /// A synchronous copy taking (dst, src, bytes); timed with a return probe.
    Memcpy,
    /// A runtime entry point: only names the driver call that follows (--api-names).
    RuntimeName,
}

/// Which library an entry point is in; reported as "driver" or "runtime".
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Driver,
    Runtime,
}

#[derive(Clone, Copy, Debug)]
pub struct CudaApi {
    pub name: &'static str,
    pub layer: Layer,
    pub shape: ProbeShape,
}

impl CudaApi {
    /// After this driver sync returns, the calling thread's GPU work has all
    /// finished (schema/trace.toml's drain_api).
    pub fn drains(&self) -> bool {
        self.layer == Layer::Driver && crate::schema_names::DRAIN_API_NAMES.contains(&self.name)
    }
}

const fn driver(name: &'static str, shape: ProbeShape) -> CudaApi {
    CudaApi { name, layer: Layer::Driver, shape }
}

const fn runtime(name: &'static str) -> CudaApi {
    CudaApi { name, layer: Layer::Runtime, shape: ProbeShape::RuntimeName }
}

// APIS: the table, generated from schema/trace.toml's [cuda] apis by scripts/gen_schema.py
include!("generated/cuda_apis.rs");

/// The attach cookie for an entry point.
pub fn cookie_of(index: usize) -> u64 {
    index as u64 + 1
}

/// The attach cookie for the entry point named `name`; None for one not probed.
pub fn cookie_named(name: &str) -> Option<u64> {
    APIS.iter().position(|api| api.name == name).map(cookie_of)
}

/// The name behind a cookie a record carries; None for 0 ("no runtime call").
pub fn name_of(cookie: u16) -> Option<&'static str> {
    (cookie as usize).checked_sub(1).and_then(|i| APIS.get(i)).map(|api| api.name)
}

/// A symbol that tells a file carries the driver, or the runtime.
pub const DRIVER_MARKER: &str = "cuLaunchKernel";
pub const RUNTIME_MARKER: &str = "cudaLaunchKernel";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_round_trip_to_names() {
        for (i, api) in APIS.iter().enumerate() {
            assert_eq!(name_of(cookie_of(i) as u16), Some(api.name));
        }
        assert_eq!(name_of(0), None);
        assert_eq!(
            cookie_named("cudaLaunchKernel").and_then(|c| name_of(c as u16)),
            Some("cudaLaunchKernel")
        );
        assert_eq!(cookie_named("cuNotAnEntryPoint"), None);
        assert_eq!(name_of(APIS.len() as u16 + 1), None);
    }

    #[test]
    fn every_drain_api_is_a_probed_driver_sync() {
        for name in crate::schema_names::DRAIN_API_NAMES {
            let api = APIS
                .iter()
                .find(|a| a.name == name)
                .unwrap_or_else(|| panic!("{name} is not probed"));
            assert!(
                api.drains() && matches!(api.shape, ProbeShape::Sync | ProbeShape::Memcpy),
                "{name}"
            );
        }
        assert!(!APIS.iter().any(|a| a.name == "cuEventSynchronize" && a.drains()));
    }

    #[test]
    fn every_driver_launch_has_a_ptsz_twin() {
        let names: Vec<&str> = APIS.iter().map(|a| a.name).collect();
        for api in APIS.iter().filter(|a| a.layer == Layer::Driver) {
            if api.name.ends_with("_ptsz") || api.name.ends_with("_ptds") {
                continue;
            }
            let twin_expected = matches!(
                api.shape,
                ProbeShape::Launch | ProbeShape::LaunchEx | ProbeShape::GraphLaunch
            );
            if twin_expected {
                assert!(names.contains(&format!("{}_ptsz", api.name).as_str()), "{}", api.name);
            }
        }
    }
}
