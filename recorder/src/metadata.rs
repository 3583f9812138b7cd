//! What the trace says about where and how it was recorded: host, kernel,
//! CPU topology (read from sysfs, never assumed), clocks.

use std::path::Path;

use serde_json::{json, Value};

fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn read_number(path: impl AsRef<Path>) -> Option<i64> {
    read_trimmed(path)?.parse().ok()
}

/// "0-3,8" -> [0, 1, 2, 3, 8]
pub fn parse_cpu_list(list: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

fn numa_node_of(cpu: u32) -> Option<i64> {
    let dir = std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}")).ok()?;
    dir.flatten().find_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
}

pub fn cpu_topology() -> Value {
    let online = read_trimmed("/sys/devices/system/cpu/online").unwrap_or_default();
    let cpus: Vec<Value> = parse_cpu_list(&online)
        .into_iter()
        .map(|cpu| {
            let topo = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
            json!({
                "cpu": cpu,
                "package": read_number(format!("{topo}/physical_package_id")),
                "die": read_number(format!("{topo}/die_id")),
                "core": read_number(format!("{topo}/core_id")),
                "smt_siblings": read_trimmed(format!("{topo}/thread_siblings_list")).map(|s| parse_cpu_list(&s)),
                "numa_node": numa_node_of(cpu),
            })
        })
        .collect();
    json!({ "online": online, "count": cpus.len(), "cpus": cpus })
}

pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

pub fn host() -> Value {
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: uname fills the struct we own.
    unsafe { libc::uname(&mut uts) };
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    json!({
        "hostname": field(&uts.nodename),
        "kernel_release": field(&uts.release),
        "kernel_version": field(&uts.version),
        "machine": field(&uts.machine),
        "preemption": read_trimmed("/sys/kernel/debug/sched/preempt"),
        "isolated_cpus": read_trimmed("/sys/devices/system/cpu/isolated"),
        "nohz_full": read_trimmed("/sys/devices/system/cpu/nohz_full"),
        "cmdline": read_trimmed("/proc/cmdline"),
    })
}

/// How fast the kernel lets NTP slew the system clock (MAXFREQ, 500 ppm): an offset that moved
/// faster between two readings was stepped (the clock was set).
pub const MAX_SLEW_PPM: u64 = 500;

/// CLOCK_REALTIME minus CLOCK_MONOTONIC, a realtime reading between two monotonic ones, the
/// narrowest of several tries: `{monotonic_ns, offset_ns, uncertainty_ns}`, the offset at the
/// middle of the bracket and wrong by at most half its width.
pub fn realtime_offset() -> Value {
    let mut best = (u64::MAX, 0u64, 0i128);
    for _ in 0..16 {
        let before = monotonic_ns();
        let real = clock_ns(libc::CLOCK_REALTIME);
        let after = monotonic_ns();
        let width = after.saturating_sub(before);
        if width < best.0 {
            let middle = before + width / 2;
            best = (width, middle, real as i128 - middle as i128);
        }
    }
    let (width, middle, offset) = best;
    json!({ "monotonic_ns": middle, "offset_ns": offset, "uncertainty_ns": width.div_ceil(2) })
}

/// meta.json's `clock`, its realtime offset read at the start; the end's reading is added when the
/// recorder stops (close_clock).
pub fn clocks() -> Value {
    let start = realtime_offset();
    json!({
        "timestamps": "CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns)",
        "monotonic_ns": start["monotonic_ns"],
        "realtime_minus_monotonic_ns": {
            "start": start, "end": Value::Null, "stepped": Value::Null, "max_slew_ppm": MAX_SLEW_PPM,
        },
    })
}

/// META (meta.json's object) with its clock's end reading taken now, and whether the system clock
/// was stepped since the start's: the offset moved more than the kernel's slew allows, plus both
/// readings' uncertainties. A metadata object without a start reading is left as it is.
pub fn close_clock(meta: &mut Value) {
    let Some(offsets) = meta.pointer_mut("/clock/realtime_minus_monotonic_ns") else { return };
    let (Some(start_offset), Some(start_mono), Some(start_unc)) = (
        offsets.pointer("/start/offset_ns").and_then(Value::as_i64),
        offsets.pointer("/start/monotonic_ns").and_then(Value::as_u64),
        offsets.pointer("/start/uncertainty_ns").and_then(Value::as_u64),
    ) else {
        return;
    };
    let end = realtime_offset();
    let (end_offset, end_mono, end_unc) = (
        end["offset_ns"].as_i64().unwrap_or(start_offset),
        end["monotonic_ns"].as_u64().unwrap_or(start_mono),
        end["uncertainty_ns"].as_u64().unwrap_or(0),
    );
    let allowed =
        end_mono.saturating_sub(start_mono) / 1_000_000 * MAX_SLEW_PPM + start_unc + end_unc;
    offsets["stepped"] = json!(end_offset.abs_diff(start_offset) > allowed);
    offsets["end"] = end;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_is_read_at_start_and_end_and_not_stepped_here() {
        let mut meta = json!({ "clock": clocks() });
        let start = meta["clock"]["realtime_minus_monotonic_ns"]["start"].clone();
        assert!(start["uncertainty_ns"].as_u64().unwrap() < 1_000_000, "{start}");
        assert!(meta["clock"]["realtime_minus_monotonic_ns"]["end"].is_null());
        close_clock(&mut meta);
        let offsets = &meta["clock"]["realtime_minus_monotonic_ns"];
        assert!(offsets["end"]["monotonic_ns"].as_u64() >= start["monotonic_ns"].as_u64());
        assert_eq!(offsets["stepped"], json!(false));
        // an older trace's single integer is left as it was
        let mut old = json!({ "clock": { "realtime_minus_monotonic_ns": 5 } });
        close_clock(&mut old);
        assert_eq!(old["clock"]["realtime_minus_monotonic_ns"], json!(5));
    }

    #[test]
    fn cpu_lists_expand_ranges_and_singles() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list(""), Vec::<u32>::new());
    }

    #[test]
    fn topology_lists_every_online_cpu() {
        let topo = cpu_topology();
        let online =
            parse_cpu_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap());
        assert_eq!(topo["count"].as_u64().unwrap() as usize, online.len());
    }
}

/// The files `launchgap doctor` reads, as they were when recording started.
pub mod host_files;
