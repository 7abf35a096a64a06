//! What the audit finds about one running GPU pod, as data: one [`Check`]
//! per rule, computed once by [`audit_pod`] from the pod, its node's record
//! and the policy's settings, with the policy's own code (demand, kubelet
//! model, words). The renderers only read them.

use super::nodes::NodeRecord;
use super::pods::RunningPod;
use gpu_topology::kubelet::facts_from_topology;
use gpu_topology::quantity::cpu_words;
use gpu_topology::{parse_heartbeat, CpuManagerPolicy, NodeGroup, NodeTopology};
use gpu_topology_policy::decide::demand::{Demand, PodDevices};
use gpu_topology_policy::decide::explain::{unknown_words, why_and_fix};
use gpu_topology_policy::decide::model::{self, Answer, GroupVerdict, Need};
use gpu_topology_policy::request::pod::containers;
use gpu_topology_policy::request::qos_class::{qos_class, QosClass};
use gpu_topology_policy::settings::Config;
use serde::Serialize;

/// The outcome of one check, in the policy reports' words (the `result`
/// of `openreports.io/v1alpha1` and `wgpolicyk8s.io/v1alpha2` alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Warn,
    Fail,
    /// Not checked: a fact it needs is missing, or it does not apply.
    Skip,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Warn => "warn",
            Outcome::Fail => "fail",
            Outcome::Skip => "skip",
        }
    }

    /// A finding: what makes the audit exit 1.
    pub fn is_finding(self) -> bool {
        matches!(self, Outcome::Warn | Outcome::Fail)
    }
}

/// The pod's QoS class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QosCheck {
    Guaranteed,
    /// Burstable or BestEffort; `missing`: what the policy's QoS plan would
    /// change to make it Guaranteed.
    NotGuaranteed {
        class: String,
        missing: Vec<String>,
    },
}

/// Exclusive CPUs for the GPU containers (the static CPU Manager's rule,
/// `cpumanager/policy_static.go` `guaranteedCPUs`: a Guaranteed pod's
/// container gets exclusive CPUs only for an integer CPU request, and a pod
/// with pod-level resources gets none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuCheck {
    Exclusive,
    /// GPU containers whose CPU request is not whole (`name`, millicores).
    Fractional {
        containers: Vec<(String, u64)>,
    },
    /// Pod-level `spec.resources` keep the pod on the shared pool.
    PodLevelResources,
    /// The node's CPU Manager policy is `none`: every container shares.
    NoStaticCpuManager,
    /// The pod is not Guaranteed (reported by the QoS check).
    NotGuaranteed,
    /// The node does not publish its CPU Manager policy.
    Unknown,
}

/// Whether the node's kubelet, as its labels describe it now, admits the
/// pod (the model, on the node's allocatable resources).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdmissionCheck {
    Aligned,
    /// Admitted with resources across NUMA nodes; the policy's words why.
    Unaligned {
        why: String,
    },
    /// Refused, with the kubelet's reason in the policy's words.
    Refused {
        why: String,
    },
    /// The model cannot tell; the missing fact.
    Unknown {
        why: String,
    },
    /// The node's labels contradict themselves (more reserved CPUs than
    /// CPUs, say): no answer can be trusted.
    Contradictory {
        why: String,
    },
    /// The node has no usable labels (see the label check).
    NoFacts,
}

/// Whether the node's labels are vouched for by a recent heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelCheck {
    Fresh {
        age_seconds: u64,
    },
    Stale {
        age_seconds: u64,
    },
    /// Labels, but no heartbeat (the NFD feature-file sink, or a labeler
    /// older than the heartbeat): freshness unknown.
    NoHeartbeat,
    BadHeartbeat {
        problem: String,
    },
    /// No label under the prefix.
    Unlabeled,
    /// A label under the prefix does not parse.
    Malformed {
        problem: String,
    },
    /// The pod's node is not among the nodes read.
    NodeNotFound,
}

/// One rule's check of one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Not scheduled yet: no node to check against.
    Pending,
    /// GPU counts the policy cannot read.
    Demand {
        problem: String,
    },
    Qos(QosCheck),
    Cpus(CpuCheck),
    Admission(AdmissionCheck),
    Labels(LabelCheck),
}

impl Check {
    /// The policy report's `rule` of this check.
    pub fn rule(&self) -> &'static str {
        match self {
            Check::Pending => "scheduled",
            Check::Demand { .. } => "gpu-demand",
            Check::Qos(_) => "guaranteed-qos",
            Check::Cpus(_) => "exclusive-cpus",
            Check::Admission(_) => "kubelet-admission",
            Check::Labels(_) => "node-labels",
        }
    }

    pub fn outcome(&self) -> Outcome {
        match self {
            Check::Pending => Outcome::Skip,
            Check::Demand { .. } => Outcome::Fail,
            Check::Qos(QosCheck::Guaranteed) => Outcome::Pass,
            Check::Qos(QosCheck::NotGuaranteed { .. }) => Outcome::Fail,
            Check::Cpus(CpuCheck::Exclusive) => Outcome::Pass,
            Check::Cpus(CpuCheck::Fractional { .. } | CpuCheck::PodLevelResources) => Outcome::Fail,
            Check::Cpus(CpuCheck::NoStaticCpuManager) => Outcome::Warn,
            Check::Cpus(CpuCheck::NotGuaranteed | CpuCheck::Unknown) => Outcome::Skip,
            Check::Admission(AdmissionCheck::Aligned) => Outcome::Pass,
            Check::Admission(
                AdmissionCheck::Unaligned { .. } | AdmissionCheck::Contradictory { .. },
            ) => Outcome::Warn,
            Check::Admission(AdmissionCheck::Refused { .. }) => Outcome::Fail,
            Check::Admission(AdmissionCheck::Unknown { .. } | AdmissionCheck::NoFacts) => {
                Outcome::Skip
            }
            Check::Labels(LabelCheck::Fresh { .. }) => Outcome::Pass,
            Check::Labels(LabelCheck::NoHeartbeat) => Outcome::Skip,
            Check::Labels(
                LabelCheck::Stale { .. }
                | LabelCheck::BadHeartbeat { .. }
                | LabelCheck::Unlabeled
                | LabelCheck::NodeNotFound,
            ) => Outcome::Warn,
            Check::Labels(LabelCheck::Malformed { .. }) => Outcome::Fail,
        }
    }

    /// The check in a word or two, for the summary table.
    pub fn short(&self) -> String {
        match self {
            Check::Pending => "pending".to_owned(),
            Check::Demand { .. } => "unreadable".to_owned(),
            Check::Qos(QosCheck::Guaranteed) => "Guaranteed".to_owned(),
            Check::Qos(QosCheck::NotGuaranteed { class, .. }) => class.clone(),
            Check::Cpus(CpuCheck::Exclusive) => "exclusive".to_owned(),
            Check::Cpus(
                CpuCheck::Fractional { .. }
                | CpuCheck::PodLevelResources
                | CpuCheck::NoStaticCpuManager,
            ) => "shared".to_owned(),
            Check::Cpus(CpuCheck::NotGuaranteed | CpuCheck::Unknown) => "-".to_owned(),
            Check::Admission(AdmissionCheck::Aligned) => "admits aligned".to_owned(),
            Check::Admission(AdmissionCheck::Unaligned { .. }) => "admits unaligned".to_owned(),
            Check::Admission(AdmissionCheck::Refused { .. }) => "refuses".to_owned(),
            Check::Admission(AdmissionCheck::Unknown { .. }) => "unknown".to_owned(),
            Check::Admission(AdmissionCheck::Contradictory { .. }) => "contradictory".to_owned(),
            Check::Admission(AdmissionCheck::NoFacts) => "-".to_owned(),
            Check::Labels(LabelCheck::Fresh { age_seconds }) => {
                format!("fresh ({})", age_words(*age_seconds))
            }
            Check::Labels(LabelCheck::Stale { age_seconds }) => {
                format!("stale ({})", age_words(*age_seconds))
            }
            Check::Labels(LabelCheck::NoHeartbeat) => "no heartbeat".to_owned(),
            Check::Labels(LabelCheck::BadHeartbeat { .. }) => "bad heartbeat".to_owned(),
            Check::Labels(LabelCheck::Unlabeled) => "none".to_owned(),
            Check::Labels(LabelCheck::Malformed { .. }) => "malformed".to_owned(),
            Check::Labels(LabelCheck::NodeNotFound) => "node not found".to_owned(),
        }
    }

    /// The check in a sentence.
    pub fn message(&self) -> String {
        match self {
            Check::Pending => "not scheduled yet: no node to check against".to_owned(),
            Check::Demand { problem } => format!("the GPU demand cannot be read: {problem}"),
            Check::Qos(QosCheck::Guaranteed) => "Guaranteed".to_owned(),
            Check::Qos(QosCheck::NotGuaranteed { class, missing }) if missing.is_empty() => {
                format!("{class}, not Guaranteed")
            }
            Check::Qos(QosCheck::NotGuaranteed { class, missing }) => {
                format!("{class}, not Guaranteed: {}", missing.join("; "))
            }
            Check::Cpus(CpuCheck::Exclusive) => {
                "the GPU containers get exclusive CPUs (whole CPUs, static CPU Manager)".to_owned()
            }
            Check::Cpus(CpuCheck::Fractional { containers }) => {
                let list: Vec<String> = containers
                    .iter()
                    .map(|(name, millis)| format!("{name} requests {}", cpu_words(*millis)))
                    .collect();
                format!(
                    "shared CPUs: the static CPU Manager pins only whole CPUs, and {}",
                    list.join(", ")
                )
            }
            Check::Cpus(CpuCheck::PodLevelResources) => {
                "shared CPUs: pod-level spec.resources leave the pod unpinned".to_owned()
            }
            Check::Cpus(CpuCheck::NoStaticCpuManager) => {
                "shared CPUs: the node's CPU Manager policy is none".to_owned()
            }
            Check::Cpus(CpuCheck::NotGuaranteed) => {
                "not checked: only a Guaranteed pod gets exclusive CPUs".to_owned()
            }
            Check::Cpus(CpuCheck::Unknown) => {
                "unknown: the node does not publish its CPU Manager policy".to_owned()
            }
            Check::Admission(AdmissionCheck::Aligned) => {
                "the node's kubelet admits it now, aligned".to_owned()
            }
            Check::Admission(AdmissionCheck::Unaligned { why }) => {
                format!("the node's kubelet admits it now, unaligned: {why}")
            }
            Check::Admission(AdmissionCheck::Refused { why }) => {
                format!("the node's kubelet would refuse it now: {why}")
            }
            Check::Admission(AdmissionCheck::Unknown { why }) => format!("unknown: {why}"),
            Check::Admission(AdmissionCheck::Contradictory { why }) => why.clone(),
            Check::Admission(AdmissionCheck::NoFacts) => {
                "not checked: the node's labels give no facts".to_owned()
            }
            Check::Labels(LabelCheck::Fresh { age_seconds }) => {
                format!("confirmed by the labeler {} ago", age_words(*age_seconds))
            }
            Check::Labels(LabelCheck::Stale { age_seconds }) => format!(
                "stale: the labeler last confirmed them {} ago; is it running?",
                age_words(*age_seconds)
            ),
            Check::Labels(LabelCheck::NoHeartbeat) => {
                "freshness unknown: no heartbeat (the nfd file sink publishes none)".to_owned()
            }
            Check::Labels(LabelCheck::BadHeartbeat { problem }) => problem.clone(),
            Check::Labels(LabelCheck::Unlabeled) => {
                "the node has no gpu-topology labels: is the labeler running there?".to_owned()
            }
            Check::Labels(LabelCheck::Malformed { problem }) => problem.clone(),
            Check::Labels(LabelCheck::NodeNotFound) => {
                "the node is not among the nodes read".to_owned()
            }
        }
    }
}

/// What the audit needs besides the pod and its node.
#[derive(Debug, Clone, Copy)]
pub struct Judge<'c> {
    pub config: &'c Config,
    /// The time the audit judges at (Unix seconds).
    pub now: u64,
    pub stale_after_seconds: u64,
}

/// The audit of one running pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodAudit {
    pub pod: RunningPod,
    /// GPUs the pod's containers ask for (as the policy counts them).
    pub gpus: u32,
    pub checks: Vec<Check>,
}

impl PodAudit {
    /// The worst outcome of its checks.
    pub fn outcome(&self) -> Outcome {
        let mut worst = Outcome::Pass;
        for check in &self.checks {
            worst = match (worst, check.outcome()) {
                (_, Outcome::Fail) | (Outcome::Fail, _) => Outcome::Fail,
                (_, Outcome::Warn) | (Outcome::Warn, _) => Outcome::Warn,
                (current, _) => current,
            };
        }
        worst
    }
}

/// The checks of `pod` on its node (`node`: `None` when it is pending or its
/// node was not read); `None` when it is no GPU pod.
pub fn audit_pod(
    pod: &RunningPod,
    node: Option<&NodeRecord>,
    judge: &Judge<'_>,
) -> Option<PodAudit> {
    let config = judge.config;
    let demand =
        match PodDevices::from_pod_spec_with(&pod.spec, &config.gpu_resources, &config.devices) {
            Ok(demand) if demand.is_gpu_pod() => demand,
            Ok(_) => return None,
            Err(problem) => {
                return Some(PodAudit {
                    pod: pod.clone(),
                    gpus: 0,
                    checks: vec![Check::Demand { problem }],
                })
            }
        };
    let gpus = demand.gpus(config.topology.scope);
    let model_pod = match model::model_pod(&pod.spec, &demand) {
        Ok(model_pod) => model_pod,
        Err(problem) => {
            return Some(PodAudit {
                pod: pod.clone(),
                gpus,
                checks: vec![Check::Demand { problem }],
            })
        }
    };
    let qos = qos_check(pod, &demand, config);
    let guaranteed = qos == QosCheck::Guaranteed;
    let mut checks = vec![Check::Qos(qos)];
    if pod.node.is_none() {
        checks.push(Check::Pending);
        return Some(PodAudit {
            pod: pod.clone(),
            gpus,
            checks,
        });
    };
    let Some(node) = node else {
        checks.push(Check::Labels(LabelCheck::NodeNotFound));
        return Some(PodAudit {
            pod: pod.clone(),
            gpus,
            checks,
        });
    };
    let mut topology = NodeTopology::from_labels(
        &config.label_prefix,
        node.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    if let (Ok(topology), Some(version)) = (&mut topology, node.kubelet_version) {
        topology.take_reported_kubelet_version(version);
    }
    let labels = label_check(&topology, node, judge);
    match &topology {
        Ok(topology) if !topology.is_empty() => {
            checks.push(Check::Cpus(cpu_check(
                guaranteed, &model_pod, &demand, topology,
            )));
            checks.push(Check::Admission(admission_check(
                topology, &model_pod, demand, config,
            )));
        }
        _ => checks.push(Check::Admission(AdmissionCheck::NoFacts)),
    }
    checks.push(Check::Labels(labels));
    Some(PodAudit {
        pod: pod.clone(),
        gpus,
        checks,
    })
}

/// The QoS class: `status.qosClass` when the API server says it, else as
/// Kubernetes computes it (the policy's `qos_class`, one definition); what
/// is missing from the policy's own QoS plan.
fn qos_check(pod: &RunningPod, demand: &PodDevices, config: &Config) -> QosCheck {
    let computed = containers(&pod.spec)
        .and_then(|all| qos_class(&pod.spec, &all))
        .map(QosClass::name);
    let class = match (&pod.qos_class, computed) {
        (Some(class), _) => class.clone(),
        (None, Ok(class)) => class.to_owned(),
        // The model read the same quantities before this check: only a pod
        // the API server would refuse gets here.
        (None, Err(problem)) => {
            return QosCheck::NotGuaranteed {
                class: "unknown".to_owned(),
                missing: vec![problem],
            }
        }
    };
    if class == QosClass::Guaranteed.name() {
        return QosCheck::Guaranteed;
    }
    let missing = match gpu_topology_policy::decide::qos::plan(&pod.spec, demand, &config.qos, 1) {
        Ok(plan) => plan
            .violations()
            .map(|finding| format!("{}: {}", finding.target, finding.reason()))
            .chain(plan.problems.iter().cloned())
            .collect(),
        Err(problem) => vec![problem],
    };
    QosCheck::NotGuaranteed { class, missing }
}

fn cpu_check(
    guaranteed: bool,
    model_pod: &gpu_topology::kubelet::PodDemand,
    demand: &PodDevices,
    topology: &NodeTopology,
) -> CpuCheck {
    if !guaranteed {
        return CpuCheck::NotGuaranteed;
    }
    match topology.cpu_manager_policy {
        None => return CpuCheck::Unknown,
        Some(CpuManagerPolicy::None) => return CpuCheck::NoStaticCpuManager,
        Some(CpuManagerPolicy::Static) => {}
    }
    if model_pod.pod_level_resources {
        return CpuCheck::PodLevelResources;
    }
    let fractional: Vec<(String, u64)> = model_pod
        .containers
        .iter()
        .zip(&demand.containers)
        .filter(|(model, _)| model.gpus.is_some_and(|gpus| gpus > 0))
        .filter(|(model, _)| !model.cpu_millis.is_multiple_of(1000))
        .map(|(model, container)| (container.container.to_string(), model.cpu_millis))
        .collect();
    if fractional.is_empty() {
        CpuCheck::Exclusive
    } else {
        CpuCheck::Fractional {
            containers: fractional,
        }
    }
}

fn admission_check(
    topology: &NodeTopology,
    model_pod: &gpu_topology::kubelet::PodDemand,
    demand: PodDevices,
    config: &Config,
) -> AdmissionCheck {
    let assumed = config.topology.scope;
    let facts = facts_from_topology(topology, assumed);
    let (answer, admission) = model::answer(&facts, model_pod);
    let group = NodeGroup {
        topology: topology.clone(),
        nodes: 1,
    };
    // One node, judged by name: no shape selects it, so it shares none.
    let verdict = GroupVerdict::new(&group, facts, assumed, answer, admission);
    let demand = Demand::new(demand, verdict.scope);
    let words = || {
        why_and_fix(&demand, Need::Host(config.topology.alignment), &verdict)
            .0
            .clone()
    };
    match &verdict.answer {
        Answer::Admit { aligned: true } => AdmissionCheck::Aligned,
        Answer::Admit { aligned: false } => AdmissionCheck::Unaligned { why: words() },
        Answer::Refuse(_) => AdmissionCheck::Refused { why: words() },
        Answer::Unknown(unknown) => AdmissionCheck::Unknown {
            why: unknown_words(unknown),
        },
        Answer::Contradictory(_) => AdmissionCheck::Contradictory { why: words() },
    }
}

fn label_check(
    topology: &Result<NodeTopology, gpu_topology::LabelError>,
    node: &NodeRecord,
    judge: &Judge<'_>,
) -> LabelCheck {
    match topology {
        Err(error) => {
            return LabelCheck::Malformed {
                problem: error.to_string(),
            }
        }
        Ok(topology) if topology.is_empty() => return LabelCheck::Unlabeled,
        Ok(_) => {}
    }
    let Some(heartbeat) = &node.heartbeat else {
        return LabelCheck::NoHeartbeat;
    };
    match parse_heartbeat(heartbeat) {
        Err(error) => LabelCheck::BadHeartbeat {
            problem: error.to_string(),
        },
        Ok(at) => {
            // A heartbeat ahead of this clock is as fresh as can be.
            let age_seconds = judge.now.saturating_sub(at);
            if age_seconds > judge.stale_after_seconds {
                LabelCheck::Stale { age_seconds }
            } else {
                LabelCheck::Fresh { age_seconds }
            }
        }
    }
}

/// `45 s`, `12 min`, `5 h 3 min`, `2 d 4 h`.
pub fn age_words(seconds: u64) -> String {
    match seconds {
        0..=119 => format!("{seconds} s"),
        120..=7199 => format!("{} min", seconds / 60),
        7200..=172_799 => format!("{} h {} min", seconds / 3600, seconds / 60 % 60),
        _ => format!("{} d {} h", seconds / 86_400, seconds / 3600 % 24),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::seconds(45, "45 s")]
    #[case::minutes(20 * 60, "20 min")]
    #[case::hours(5 * 3600 + 180, "5 h 3 min")]
    #[case::days(3 * 86_400 + 4 * 3600, "3 d 4 h")]
    fn ages_are_worded_in_their_unit(#[case] seconds: u64, #[case] words: &str) {
        assert_eq!(age_words(seconds), words);
    }
}
