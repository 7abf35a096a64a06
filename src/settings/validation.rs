//! Validation of the settings: every key checked, each problem named by
//! its key, and the validated [`Config`] that evaluation works from built
//! from what passed ([`Settings::config`]). Split from `mod.rs`, which keeps
//! the settings as written, so each file stays short (issue #36).

use super::{
    CapacitySettings, CapacitySource, Config, FleetSummarySettings, InitContainer, QosConfig,
    QuantityText, Settings, MAX_PREFERRED_WEIGHT, MIN_PREFERRED_WEIGHT,
};
use crate::request::quantity::{Quantity, QuantityError};
use crate::settings::devices::{check_patterns, DeviceResources};
use crate::settings::names::is_extended_resource_name;
use gpu_topology::names::{is_dns_label, is_dns_subdomain};
use gpu_topology::{LabelPrefix, DEFAULT_STALE_AFTER_SECONDS, HEARTBEAT_INTERVAL_SECONDS};
use std::collections::BTreeSet;

/// What a quantity setting holds.
#[derive(Clone, Copy)]
enum Unit {
    Cpu,
    Memory,
}

impl Settings {
    /// Validates every key and returns the evaluation view, or all problems
    /// joined by "; ", each naming its key.
    pub fn config(&self) -> Result<Config, String> {
        let mut errors = Vec::new();
        self.check_gpu_resources(&mut errors);
        let devices = DeviceResources {
            mig: check_patterns("migResources", &self.mig_resources, &mut errors),
            aligned: check_patterns("deviceResources", &self.device_resources, &mut errors),
        };
        let label_prefix = LabelPrefix::new(&self.label_prefix)
            .map_err(|error| errors.push(format!("labelPrefix: {error}")))
            .ok();
        for namespace in &self.exempt_namespaces {
            if !is_dns_label(namespace) {
                errors.push(format!(
                    "exemptNamespaces: {namespace:?} is not a valid namespace name (lowercase letters, digits and '-', at most 63 characters)"
                ));
            }
        }
        let qos = &self.qos;
        let mut quantity = |key: &str, text: &Option<QuantityText>, unit| {
            text.as_ref()
                .and_then(|text| check_quantity(key, &text.0, unit, &mut errors))
        };
        let qos_config = QosConfig {
            mode: qos.mode,
            cpu_per_gpu: quantity("qos.cpuPerGpu", &qos.cpu_per_gpu, Unit::Cpu),
            memory_per_gpu: quantity("qos.memoryPerGpu", &qos.memory_per_gpu, Unit::Memory),
            sidecar_cpu: quantity("qos.sidecarCpu", &qos.sidecar_cpu, Unit::Cpu),
            sidecar_memory: quantity("qos.sidecarMemory", &qos.sidecar_memory, Unit::Memory),
            whole_cpus: qos.whole_cpus,
            round_to_whole_cores: qos.round_to_whole_cores,
            round_written_cpus: false,
            init_container: match &qos.init_container {
                InitContainer::FitApp => InitContainer::FitApp,
                InitContainer::Fixed { cpu, memory } => InitContainer::Fixed {
                    cpu: quantity("qos.initContainer.cpu", cpu, Unit::Cpu),
                    memory: quantity("qos.initContainer.memory", memory, Unit::Memory),
                },
            },
        };
        self.check_topology(&mut errors);
        self.dra.check(&mut errors);
        if let Some(capacity) = &self.capacity {
            check_capacity(capacity, &mut errors);
        }
        let source = self.capacity.as_ref().map(|c| c.source).unwrap_or_default();
        let summary = self
            .capacity
            .as_ref()
            .and_then(|c| c.fleet_summary.clone())
            .unwrap_or_default();
        match label_prefix {
            Some(label_prefix) if errors.is_empty() => Ok(Config {
                gpu_resources: self.gpu_resources.clone(),
                devices,
                label_prefix,
                exempt_namespaces: gpu_topology::sort::btree_set(
                    self.exempt_namespaces.iter().cloned(),
                ),
                qos: qos_config,
                topology: self.topology.config(),
                capacity_source: source,
                capacity: self
                    .capacity
                    .as_ref()
                    .filter(|c| c.has_static_limits() && source.uses_static_limits())
                    .map(|c| CapacitySettings {
                        // Read from `sources`, where the source reads it.
                        fleet_summary: None,
                        ..c.clone()
                    }),
                sources: source.sources(&summary),
                unlabeled_nodes: self
                    .capacity
                    .as_ref()
                    .map(|c| c.unlabeled_nodes)
                    .unwrap_or_default(),
                dra: self.dra.clone(),
                stale_facts_after: match self
                    .capacity
                    .as_ref()
                    .and_then(|c| c.stale_facts_after_seconds)
                {
                    Some(0) => None,
                    Some(seconds) => Some(seconds),
                    None => Some(DEFAULT_STALE_AFTER_SECONDS),
                },
                topology_max_age: Some(self.binding.topology_max_age_seconds)
                    .filter(|&seconds| seconds > 0),
                topology_aware_scheduler: Some(self.topology.topology_aware_scheduler.clone())
                    .filter(|name| !name.is_empty()),
            }),
            _ => Err(errors.join("; ")),
        }
    }

    fn check_gpu_resources(&self, errors: &mut Vec<String>) {
        if self.gpu_resources.is_empty() {
            errors.push(
                "gpuResources: must list at least one extended resource, e.g. nvidia.com/gpu"
                    .to_owned(),
            );
        }
        let mut seen = BTreeSet::new();
        for name in &self.gpu_resources {
            if !is_extended_resource_name(name) {
                errors.push(format!(
                    "gpuResources: {name:?} is not an extended resource name (domain/name outside kubernetes.io, e.g. nvidia.com/gpu)"
                ));
            } else if !seen.insert(name) {
                errors.push(format!("gpuResources: {name:?} is listed twice"));
            }
        }
    }

    /// `preferredWeight` is checked under every `affinity`, and ignored
    /// outside `preferred`; `alignment` is ignored under `off` (the module's
    /// comment says why neither is refused there).
    fn check_topology(&self, errors: &mut Vec<String>) {
        let scheduler = &self.topology.topology_aware_scheduler;
        if !scheduler.is_empty() {
            // The API server validates spec.schedulerName as a DNS subdomain
            // (ValidatePodSpec): any other name would make every pod it is
            // written into fail.
            if let Some(fault) = gpu_topology::names::dns_subdomain_fault(scheduler) {
                errors.push(format!(
                    "topology.topologyAwareScheduler: {scheduler:?} is no scheduler name: {fault}"
                ));
            }
        }
        if let Some(weight) = self.topology.preferred_weight {
            if !(MIN_PREFERRED_WEIGHT..=MAX_PREFERRED_WEIGHT).contains(&weight) {
                errors.push(format!(
                    "topology.preferredWeight: {weight} is out of range: node-affinity weights are {MIN_PREFERRED_WEIGHT} to {MAX_PREFERRED_WEIGHT}"
                ));
            }
        }
    }
}

fn check_capacity(capacity: &CapacitySettings, errors: &mut Vec<String>) {
    // A labeler confirms unchanged labels once per heartbeat interval: a
    // shorter age would take every quiet node's facts as stale.
    if let Some(seconds @ 1..) = capacity.stale_facts_after_seconds {
        if seconds < HEARTBEAT_INTERVAL_SECONDS {
            errors.push(format!(
                "capacity.staleFactsAfterSeconds: {seconds} is shorter than the labeler's heartbeat interval ({HEARTBEAT_INTERVAL_SECONDS} s), so every node whose labels did not change would count as stale; use at least {HEARTBEAT_INTERVAL_SECONDS} (default {DEFAULT_STALE_AFTER_SECONDS}), or 0 to never take facts as stale"
            ));
        }
    }
    for (key, value) in [
        ("capacity.maxGpusPerNode", capacity.max_gpus_per_node),
        (
            "capacity.maxGpusPerNumaNode",
            capacity.max_gpus_per_numa_node,
        ),
    ] {
        if value == Some(0) {
            errors.push(format!("{key}: must be at least 1"));
        }
    }
    if let (Some(per_node), Some(per_numa)) =
        (capacity.max_gpus_per_node, capacity.max_gpus_per_numa_node)
    {
        if per_numa > per_node {
            errors.push(format!(
                "capacity.maxGpusPerNumaNode: {per_numa} is more than capacity.maxGpusPerNode {per_node}: a NUMA node cannot hold more GPUs than its node"
            ));
        }
    }
    // Incomplete only where the static check runs: under the other sources
    // the static limits are ignored, `singleNumaNode` with them.
    if capacity.single_numa_node
        && capacity.max_gpus_per_numa_node.is_none()
        && capacity.source.uses_static_limits()
    {
        errors.push(
            "capacity.singleNumaNode: true needs capacity.maxGpusPerNumaNode to know what fits on one NUMA node"
                .to_owned(),
        );
    }
    // `static` reads nothing else: without a limit it could check nothing.
    if capacity.source == CapacitySource::Static && !capacity.has_static_limits() {
        errors.push(
            "capacity.source: static needs capacity.maxGpusPerNode or capacity.maxGpusPerNumaNode; set one, or use source auto to read the fleet summary and the nodes' labels"
                .to_owned(),
        );
    }
    if let Some(summary) = &capacity.fleet_summary {
        check_fleet_summary(summary, errors);
    }
}

/// Checked under every source, read only where
/// [`CapacitySource::reads_summary`].
fn check_fleet_summary(summary: &FleetSummarySettings, errors: &mut Vec<String>) {
    if !is_dns_label(&summary.namespace) {
        errors.push(format!(
            "capacity.fleetSummary.namespace: {:?} is not a valid namespace name (lowercase letters, digits and '-', at most 63 characters)",
            summary.namespace
        ));
    }
    if !is_dns_subdomain(&summary.name) {
        errors.push(format!(
            "capacity.fleetSummary.name: {:?} is not a valid ConfigMap name (lowercase letters, digits, '-' and '.', at most 253 characters)",
            summary.name
        ));
    }
    if summary.max_age_seconds == 0 {
        errors.push(
            "capacity.fleetSummary.maxAgeSeconds: must be at least 1; use several summarizer intervals (default 300)"
                .to_owned(),
        );
    }
}

/// Parses a quantity setting; CPU and memory must be positive, memory whole bytes.
fn check_quantity(key: &str, text: &str, unit: Unit, errors: &mut Vec<String>) -> Option<Quantity> {
    let problem = match (Quantity::parse(text), unit) {
        (Ok(quantity), _) if quantity.is_zero() => "must be more than zero".to_owned(),
        (Ok(quantity), Unit::Memory) if !quantity.is_whole() => {
            "is not a whole number of bytes (\"m\" means milli: use Mi for mebibytes)".to_owned()
        }
        (Ok(quantity), _) => return Some(quantity),
        (Err(QuantityError::Negative), _) => "must not be negative".to_owned(),
        (Err(error), _) => error.to_string(),
    };
    errors.push(format!("{key}: {text:?} {problem}"));
    None
}
