//! meta.json: what a trace says about its own recording, written when it
//! starts (docs/trace-format.md, "meta.json"). Its keys are schema/trace.toml's
//! [meta] (a test checks TraceMeta serializes to them). The fields are in alphabetical
//! order, here and in the structs below: the file keeps the key order it had
//! when it was a serde_json map, which sorts its keys. The parts other
//! modules describe (the host, the kernel, the cgroups, GPU activity) are
//! their JSON as they make it.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use launchgap_record::probe_report::Probe;

#[derive(Serialize)]
pub struct TraceMeta<'a> {
    pub cgroups: Value,
    pub clock: Value,
    /// the command started, or empty
    pub command: &'a [String],
    pub command_pid: Option<i32>,
    pub cuda_libraries: Vec<CudaLibrary<'a>>,
    /// schema::FORMAT_NAME
    pub format: &'static str,
    pub gpu_activity: Value,
    pub host: Value,
    pub host_files: Value,
    pub kernel_support: Value,
    /// "system", "command" or "pids"
    pub mode: &'static str,
    pub options: Options,
    pub pids: &'a [i32],
    pub probes: &'a [Probe],
    pub recorder: Recorder,
    pub recorder_pid: u32,
    pub start_ns: u64,
    pub topology: Value,
    /// the trace format's version
    pub version: u32,
}

#[derive(Serialize)]
pub struct CudaLibrary<'a> {
    pub found_via: &'static str,
    #[serde(serialize_with = "launchgap_record::names::serialize_path")]
    pub path: &'a Path,
}

/// The recording's settings.
#[derive(Serialize)]
pub struct Options {
    pub api_names: bool,
    pub cuda_probes: bool,
    pub duration_s: Option<f64>,
    pub poll_ms: u64,
    pub ring_buffer_bytes: u32,
}

#[derive(Serialize)]
pub struct Recorder {
    pub name: &'static str,
    pub version: &'static str,
}

impl Recorder {
    /// This binary.
    pub fn this() -> Self {
        Recorder { name: crate::schema::RECORDER_BINARY, version: env!("CARGO_PKG_VERSION") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeSet;

    use crate::schema::META_KEYS;

    fn with_meta(check: impl FnOnce(&TraceMeta)) {
        let probes = [Probe::tracepoint("sched_switch", Ok(()))];
        let meta = TraceMeta {
            cgroups: json!({"v2_mount": "/sys/fs/cgroup"}),
            clock: json!({}),
            command: &["true".to_string()],
            command_pid: Some(2),
            cuda_libraries: vec![CudaLibrary { found_via: "--cuda-lib", path: Path::new("/l.so") }],
            format: "launchgap-trace",
            gpu_activity: json!({"recorded": false, "why": "not asked for"}),
            host: json!({}),
            host_files: json!({}),
            kernel_support: json!({"adapted": [], "btf": "/sys/kernel/btf/vmlinux"}),
            mode: "command",
            options: Options {
                api_names: false,
                cuda_probes: true,
                duration_s: None,
                poll_ms: 100,
                ring_buffer_bytes: 1 << 24,
            },
            pids: &[],
            probes: &probes,
            recorder: Recorder::this(),
            recorder_pid: 1,
            start_ns: 5,
            topology: json!({}),
            version: 2,
        };
        check(&meta);
    }

    /// The file's key order is serde_json's own maps': every level sorted.
    #[test]
    fn meta_keys_are_in_the_order_a_serde_json_map_gives() {
        with_meta(|meta| {
            let text = serde_json::to_string(meta).unwrap();
            assert_eq!(text, serde_json::to_value(meta).unwrap().to_string());
            assert!(text.contains(r#""options":{"api_names":false,"cuda_probes":true,"duration_s":null,"poll_ms":100,"ring_buffer_bytes":16777216}"#));
        });
    }

    /// A value's type, as schema/trace.toml's [meta] names JSON types.
    fn json_type(value: &Value) -> &'static str {
        match value {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// meta.json holds the keys schema/trace.toml's [meta] says the recorder writes, no other, each of a type it allows.
    #[test]
    fn meta_keys_are_the_schemas() {
        with_meta(|meta| {
            let value = serde_json::to_value(meta).unwrap();
            let written: BTreeSet<&str> =
                value.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(written, META_KEYS.iter().map(|(key, _)| *key).collect::<BTreeSet<_>>());
            for (key, types) in META_KEYS {
                assert!(
                    types.contains(&json_type(&value[key])),
                    "{key}: {} is not one of {types:?}",
                    value[key]
                );
            }
        });
    }
}
