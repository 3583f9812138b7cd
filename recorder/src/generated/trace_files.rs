// generated from schema/trace.toml by scripts/gen_schema.py; do not edit

/// meta.json's keys the recorder writes (schema/trace.toml [meta]), each with the JSON types its value may
/// have: TraceMeta serializes to exactly these.
pub const META_KEYS: [(&str, &[&str]); 19] = [("format", &["string"]), ("version", &["integer"]), ("recorder", &["object"]), ("start_ns", &["integer"]), ("mode", &["string"]), ("command", &["array", "null"]), ("command_pid", &["integer", "null"]), ("pids", &["array"]), ("recorder_pid", &["integer", "null"]), ("host", &["object"]), ("topology", &["object"]), ("clock", &["object"]), ("kernel_support", &["object"]), ("host_files", &["object"]), ("options", &["object"]), ("cuda_libraries", &["array"]), ("gpu_activity", &["object"]), ("cgroups", &["object"]), ("probes", &["array"])];
