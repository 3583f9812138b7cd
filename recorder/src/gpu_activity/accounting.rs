//! Whether every launch's GPU work arrived: per process, launches (the uprobe rows)
//! against the kernels and graphs CUPTI reported, and what each process's collector
//! said of itself. What is missing at the end becomes `lost` rows, with the cause:
//! - `no_collector`: the process launched kernels but no collector ever started in it
//!   (it did not load CUDA_INJECTION64_PATH: its environment was cleared, or CUDA was
//!   not initialised through the driver that reads it);
//! - `collector_failed`: its collector started but could not use CUPTI (the reason is
//!   its `failed` row's);
//! - `not_flushed`: its collector never said `stopped`: the process was killed, or
//!   ended by _exit, before CUPTI's last buffers were handed back;
//! - `not_delivered`: the collector stopped cleanly yet fewer GPU executions than launches
//!   arrived (a launch the driver refused makes none).
//!
//! Records CUPTI dropped are the collector's own `lost` row (`cupti_dropped`, with its
//! pid): the launches they account for are not counted again. CUPTI does not say which
//! kinds it dropped, so its count is taken as kernels first: a process's missing GPU
//! work is what its dropped records cannot explain.
//! Pure: rows in, counts and rows out.

use std::collections::{BTreeMap, HashSet};

use serde_json::{json, Value};

use crate::schema::Row;

#[derive(Debug, Default)]
struct Process {
    launches: u64,
    /// kernels launched alone and graphs traced as one
    executions: u64,
    /// graphs traced node by node: their nodes share the launch's correlation id
    graph_launches: HashSet<u32>,
    /// records CUPTI dropped in the process, already a lost row of the collector's
    dropped: u64,
    started: bool,
    stopped: bool,
    failed: Option<String>,
}

impl Process {
    fn gpu_executions(&self) -> u64 {
        self.executions + self.graph_launches.len() as u64
    }
}

/// GPU work that never reached the trace, for one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    pub pid: u32,
    pub count: u64,
    /// JSON for the lost row's `detail`
    pub detail: String,
}

#[derive(Debug, Default)]
pub struct GpuAccounting {
    by_pid: BTreeMap<u32, Process>,
}

/// The reason a `failed` row gives, from its detail JSON.
fn reason_of(detail: &str) -> String {
    serde_json::from_str::<Value>(detail)
        .ok()
        .and_then(|v| v.get("reason").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| "no reason given".to_string())
}

/// The process whose collector wrote a `cupti_dropped` lost row, from its detail JSON.
fn dropped_by(detail: &str) -> Option<u32> {
    let v: Value = serde_json::from_str(detail).ok()?;
    (v.get("cause")?.as_str()? == "cupti_dropped").then_some(())?;
    v.get("pid")?.as_u64().and_then(|pid| u32::try_from(pid).ok())
}

impl GpuAccounting {
    pub fn observe(&mut self, row: &Row) {
        match row {
            Row::Launch(r) => self.by_pid.entry(r.pid).or_default().launches += 1,
            Row::GpuKernel(r) => {
                let process = self.by_pid.entry(r.pid).or_default();
                if r.graph_id.is_some() {
                    process.graph_launches.insert(r.correlation_id);
                } else {
                    process.executions += 1;
                }
            }
            Row::GpuGraph(r) => self.by_pid.entry(r.pid).or_default().executions += 1,
            Row::Lost(r) if r.lost_event == "gpu_activity" => {
                if let Some(pid) = r.detail.and_then(dropped_by) {
                    let process = self.by_pid.entry(pid).or_default();
                    process.dropped = process.dropped.saturating_add(r.lost_count);
                }
            }
            Row::GpuCollector(r) => {
                let process = self.by_pid.entry(r.pid).or_default();
                match r.state {
                    "started" => process.started = true,
                    "stopped" => process.stopped = true,
                    "failed" => process.failed = Some(reason_of(r.detail)),
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// Per process, the launches whose GPU work is missing, and why.
    pub fn losses(&self) -> Vec<Loss> {
        let mut out = Vec::new();
        for (&pid, p) in &self.by_pid {
            let missing = p.launches.saturating_sub(p.gpu_executions().saturating_add(p.dropped));
            if missing == 0 {
                continue;
            }
            let detail = if let Some(reason) = &p.failed {
                json!({"cause": "collector_failed", "pid": pid, "reason": reason})
            } else if !p.started {
                json!({"cause": "no_collector", "pid": pid})
            } else if !p.stopped {
                json!({"cause": "not_flushed", "pid": pid})
            } else {
                json!({"cause": "not_delivered", "pid": pid})
            };
            out.push(Loss { pid, count: missing, detail: detail.to_string() });
        }
        out
    }

    /// Processes whose collector failed, with the reason.
    pub fn failures(&self) -> Vec<(u32, String)> {
        self.by_pid.iter().filter_map(|(&pid, p)| p.failed.clone().map(|why| (pid, why))).collect()
    }

    /// end.json's `gpu_activity`.
    pub fn summary(&self) -> Value {
        let count = |f: &dyn Fn(&Process) -> bool| self.by_pid.values().filter(|p| f(p)).count();
        json!({
            "collectors_started": count(&|p| p.started),
            "collectors_stopped": count(&|p| p.stopped),
            "collectors_failed": count(&|p| p.failed.is_some()),
            "launching_processes_without_collector": count(&|p| p.launches > 0 && !p.started && p.failed.is_none()),
            "launches": self.by_pid.values().map(|p| p.launches).sum::<u64>(),
            "gpu_executions": self.by_pid.values().map(Process::gpu_executions).sum::<u64>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{GpuCollectorRow, GpuGraphRow, GpuKernelRow, LaunchRow, LostRow};

    fn launch(pid: u32) -> Row<'static> {
        Row::Launch(LaunchRow { pid, ..Default::default() })
    }

    fn kernel(pid: u32, correlation_id: u32, graph_id: Option<u32>) -> Row<'static> {
        Row::GpuKernel(GpuKernelRow { pid, correlation_id, graph_id, ..Default::default() })
    }

    fn state(pid: u32, state: &'static str, detail: &'static str) -> Row<'static> {
        Row::GpuCollector(GpuCollectorRow { pid, state, detail, ..Default::default() })
    }

    #[test]
    fn each_process_is_judged_by_what_its_collector_said() {
        let mut acc = GpuAccounting::default();
        // 10: clean, every launch has its kernel or graph (one graph traced node by node: 3 nodes)
        for _ in 0..4 {
            acc.observe(&launch(10));
        }
        acc.observe(&state(10, "started", "{}"));
        acc.observe(&kernel(10, 1, None));
        acc.observe(&Row::GpuGraph(GpuGraphRow {
            pid: 10,
            correlation_id: 2,
            ..Default::default()
        }));
        acc.observe(&kernel(10, 3, None));
        for _ in 0..3 {
            acc.observe(&kernel(10, 4, Some(9)));
        }
        acc.observe(&state(10, "stopped", "{}"));
        // 11: started, killed: 2 of 5 arrived
        for _ in 0..5 {
            acc.observe(&launch(11));
        }
        acc.observe(&state(11, "started", "{}"));
        acc.observe(&kernel(11, 1, None));
        acc.observe(&kernel(11, 2, None));
        // 12: failed; 13: never started; 14: a parent that launched nothing
        acc.observe(&state(12, "failed", r#"{"reason": "no CUPTI"}"#));
        acc.observe(&launch(12));
        acc.observe(&launch(13));
        acc.observe(&state(14, "started", "{}"));
        acc.observe(&state(14, "stopped", "{}"));
        // 15: stopped cleanly, 2 of 6 kernels dropped by CUPTI (its collector's row), 1 more never came
        for _ in 0..6 {
            acc.observe(&launch(15));
        }
        acc.observe(&state(15, "started", "{}"));
        for id in 0..3 {
            acc.observe(&kernel(15, id, None));
        }
        acc.observe(&Row::Lost(LostRow {
            lost_event: "gpu_activity",
            lost_count: 2,
            detail: Some(r#"{"cause": "cupti_dropped", "pid": 15}"#),
            ..Default::default()
        }));
        acc.observe(&state(15, "stopped", "{}"));
        let losses = acc.losses();
        assert_eq!(
            losses,
            vec![
                Loss { pid: 11, count: 3, detail: r#"{"cause":"not_flushed","pid":11}"#.into() },
                Loss {
                    pid: 12,
                    count: 1,
                    detail: r#"{"cause":"collector_failed","pid":12,"reason":"no CUPTI"}"#.into()
                },
                Loss { pid: 13, count: 1, detail: r#"{"cause":"no_collector","pid":13}"#.into() },
                Loss { pid: 15, count: 1, detail: r#"{"cause":"not_delivered","pid":15}"#.into() },
            ]
        );
        assert_eq!(acc.failures(), vec![(12, "no CUPTI".to_string())]);
        assert_eq!(
            acc.summary(),
            json!({"collectors_started": 4, "collectors_stopped": 3, "collectors_failed": 1,
                   "launching_processes_without_collector": 1, "launches": 17, "gpu_executions": 9})
        );
    }
}
