//! launchgap-record: the standalone eBPF recorder (copy it to a GPU node;
//! no Python needed there). Arguments are parsed here and made into a
//! `RecordConfig` (record_config.rs); a recording runs in recording/, its
//! drain in drain.rs, and the trace is written by a thread of its own
//! (trace_writer/thread.rs) so the ring-buffer drain never waits on the disk.

mod cgroup_rows;
mod cli;
mod drain;
mod gpu_activity;
mod held_dir;
mod irq_audit;
mod losses;
mod output;
mod privileges;
mod probe_listing;
mod proc_counters;
mod prog_stats;
mod record_config;
mod recording;
mod records;
mod same_file;
mod schema;
mod spawn;
mod trace_meta;
mod trace_writer;
mod tracer;

mod skel {
    #![allow(
        clippy::all,
        unused_imports,
        dead_code,
        non_camel_case_types,
        non_snake_case,
        non_upper_case_globals
    )]
    include!(concat!(env!("OUT_DIR"), "/launchgap.skel.rs"));
}

use launchgap_record::bpf_host::route_libbpf_messages;
// the library modules this binary's own modules reach as crate::NAME
use launchgap_record::{cuda_api, discover, metadata, probe_plan, probe_report};

use crate::record_config::RecordConfig;
use crate::spawn::CommandNotRunnable;

fn main() {
    let args = cli::parse_args();
    route_libbpf_messages();
    if args.print_schema {
        println!(
            "{}",
            serde_json::to_string_pretty(&schema::as_json()).expect("the schema as JSON")
        );
        std::process::exit(0);
    }
    if let Some(path) = &args.write_collector {
        if let Err(e) = gpu_activity::write_collector(path) {
            eprintln!("launchgap-record: {e:#}");
            std::process::exit(1);
        }
        std::process::exit(0);
    }
    let list_probes = args.list_probes;
    let result = RecordConfig::from_args(args).and_then(|config| {
        if list_probes {
            probe_listing::run(&config)
        } else {
            recording::run(config)
        }
    });
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("launchgap-record: {e:#}");
            let code = e.downcast_ref::<CommandNotRunnable>().map_or(1, |c| c.exit_code);
            std::process::exit(code);
        }
    }
}
