//! The probes one CUDA library gets and where each goes: the entry points
//! of its layer found in its symbols, each placed by probe_placement. Used
//! by the attach (tracer.rs) and by `--list-probes`, so both say the same.

use std::path::Path;

use crate::cuda_api::{CudaApi, Layer, ProbeShape, APIS};
use crate::elf_symbols::find_functions;
use crate::probe_placement::{place, Placement, ProbeCost};
use crate::probe_report::Probe;
use anyhow::Result;

#[derive(Clone, Debug)]
pub struct PlannedProbe {
    /// Position in `APIS` (its cookie is `cookie_of(index)`).
    pub index: usize,
    pub api: &'static CudaApi,
    /// File offset of the function's entry.
    pub function_offset: u64,
    pub placement: Placement,
}

impl PlannedProbe {
    /// Where the uprobe goes: the function's entry plus the placed offset.
    pub fn file_offset(&self) -> u64 {
        self.function_offset + self.placement.offset
    }

    /// Syncs and copies are timed; runtime entry points (with --api-names)
    /// notice calls that return without reaching the driver. A return probe
    /// sits on the same instruction as its entry probe: it takes the return
    /// address at the stack pointer, which the instructions moved over never
    /// change.
    pub fn has_return_probe(&self) -> bool {
        matches!(self.api.shape, ProbeShape::Sync | ProbeShape::Memcpy | ProbeShape::RuntimeName)
    }

    /// The probe's fields in the trace metadata and in `--list-probes`.
    pub fn describe(&self, file: &Path) -> Probe {
        let p = &self.placement;
        Probe {
            layer: Some(self.api.layer),
            offset: Some(self.function_offset),
            placed_offset: Some(p.offset),
            first_instruction: Some(p.first.clone()),
            moved_over: Some(p.moved_over.clone()),
            probed_instruction: Some(p.probed.clone()),
            probe_cost: Some(p.cost),
            return_probe: Some(self.has_return_probe()),
            ..Probe::uprobe(self.api.name, file)
        }
    }

    /// One line for the user when a hit here costs more than it must, or never comes.
    pub fn warning(&self, file: &Path) -> Option<String> {
        let (name, p) = (self.api.name, &self.placement);
        match p.cost {
            ProbeCost::Emulated => None,
            ProbeCost::NeverFires => Some(format!(
                "{name} in {} begins with {}, which the kernel refuses to probe: the attach succeeds but the probe never fires",
                file.display(),
                p.probed
            )),
            ProbeCost::SingleStepped => Some(format!(
                "{name} in {} begins with {}, which the kernel single-steps, and no instruction the kernel emulates \
                 follows within what can be moved over: each hit costs 10-15x an emulated probe",
                file.display(),
                p.probed
            )),
        }
    }
}

/// The probes of one library, and the entry points of its layer it lacks.
pub struct LibraryPlan {
    pub probes: Vec<PlannedProbe>,
    pub missing: Vec<&'static str>,
}

pub fn plan_library(file: &Path, layer: Layer) -> Result<LibraryPlan> {
    let wanted: Vec<(usize, &'static CudaApi)> =
        APIS.iter().enumerate().filter(|(_, a)| a.layer == layer).collect();
    let names: Vec<&str> = wanted.iter().map(|(_, a)| a.name).collect();
    let sites = find_functions(file, &names)?;
    let mut plan = LibraryPlan { probes: Vec::new(), missing: Vec::new() };
    for (index, api) in wanted {
        match sites.get(api.name) {
            Some(site) => plan.probes.push(PlannedProbe {
                index,
                api,
                function_offset: site.file_offset,
                placement: place(&site.code, site.address),
            }),
            None => plan.missing.push(api.name),
        }
    }
    Ok(plan)
}
