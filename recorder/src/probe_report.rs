//! One probe as launchgap reports it: in a trace's meta.json (`probes`), in
//! `--list-probes`, and counted by the monitor (docs/trace-format.md,
//! "probes"). Which fields a probe has depends on what it is and who asks:
//! a tracepoint has its name; a CUDA uprobe where it sits and what a hit
//! there costs (probe_plan's `describe`), then how the attach went; the
//! listing says when it would be taken instead.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cuda_api::Layer;
use crate::probe_placement::ProbeCost;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    Tracepoint,
    Uprobe,
}

/// How a CUDA uprobe went in (kernel_features decides).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// many probes in one link
    UprobeMulti,
    /// one link per probe
    Uprobe,
}

/// The fields are in alphabetical order: the JSON keeps the key order it had
/// when probes were serde_json maps, which sort their keys. A field a probe
/// does not have is left out, not written as null.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Probe {
    /// whether it took (absent from `--list-probes`, which attaches nothing)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attached: Option<bool>,
    /// Why it did not take. A CUDA probe the attach tried says `null` when it
    /// took (`Some(None)`); a tracepoint that took says nothing (`None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Option<String>>,
    /// the library probed
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::names::serialize_optional_path"
    )]
    pub file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_instruction: Option<String>,
    /// the CUDA entry point probed
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<&'static str>,
    pub kind: ProbeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_over: Option<Vec<String>>,
    /// the tracepoint's name
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// the function's entry, as a file offset
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// where the probe sits, in bytes past the entry
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placed_offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_cost: Option<ProbeCost>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probed_instruction: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub return_probe: Option<bool>,
    /// `--list-probes`: "always" (driver), or "--api-names" (runtime)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<&'static str>,
}

impl Probe {
    /// A probe of this kind with no field but its kind, for the constructors below.
    fn of_kind(kind: ProbeKind) -> Self {
        Probe {
            attached: None,
            error: None,
            file: None,
            first_instruction: None,
            function: None,
            kind,
            layer: None,
            link: None,
            moved_over: None,
            name: None,
            offset: None,
            placed_offset: None,
            probe_cost: None,
            probed_instruction: None,
            return_probe: None,
            when: None,
        }
    }

    /// A tracepoint: attached, or why not.
    pub fn tracepoint(name: &str, attached: Result<(), String>) -> Self {
        Probe {
            name: Some(name.to_string()),
            attached: Some(attached.is_ok()),
            error: attached.err().map(Some),
            ..Probe::of_kind(ProbeKind::Tracepoint)
        }
    }

    /// A CUDA uprobe on `function` in `file`, no more known yet.
    pub fn uprobe(function: &'static str, file: &Path) -> Self {
        Probe {
            function: Some(function),
            file: Some(file.to_path_buf()),
            ..Probe::of_kind(ProbeKind::Uprobe)
        }
    }

    /// An entry point of its layer that `file` does not define.
    pub fn not_defined(function: &'static str, file: &Path) -> Self {
        Probe {
            attached: Some(false),
            error: Some(Some("not defined in this file".to_string())),
            ..Probe::uprobe(function, file)
        }
    }

    /// Whether it is a CUDA uprobe.
    pub fn is_uprobe(&self) -> bool {
        self.kind == ProbeKind::Uprobe
    }

    /// Whether it took.
    pub fn took(&self) -> bool {
        self.attached == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_serialise_with_sorted_keys_and_only_the_fields_they_have() {
        let text = |probe: &Probe| serde_json::to_string(probe).unwrap();
        assert_eq!(
            text(&Probe::tracepoint("sched_switch", Ok(()))),
            r#"{"attached":true,"kind":"tracepoint","name":"sched_switch"}"#
        );
        assert_eq!(
            text(&Probe::tracepoint("irq_vectors", Err("not in this kernel".into()))),
            r#"{"attached":false,"error":"not in this kernel","kind":"tracepoint","name":"irq_vectors"}"#
        );
        // a CUDA probe that took says so with a null error
        let took = Probe {
            attached: Some(true),
            error: Some(None),
            link: Some(LinkKind::UprobeMulti),
            ..Probe::uprobe("cuInit", Path::new("/l.so"))
        };
        assert_eq!(
            text(&took),
            r#"{"attached":true,"error":null,"file":"/l.so","function":"cuInit","kind":"uprobe","link":"uprobe_multi"}"#
        );
        // the order serde_json's own maps give
        let value = serde_json::to_value(&took).unwrap();
        assert_eq!(serde_json::to_string(&value).unwrap(), text(&took));
    }
}
