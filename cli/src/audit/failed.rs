//! The pods that already failed at the kubelet's admission
//! ([`super::pods::FailedPod`]), and whether the policy's binding check
//! ([`gpu_topology_policy::decide::binding`]) would refuse their binding
//! to the node that refused them.
//!
//! The check answers on the node's occupancy now: its NodeResourceTopology
//! as read today, and its labels. A failed pod holds nothing on its node,
//! so where the node's other pods have not changed since it failed, this is
//! what the check would have answered at its binding, and a refusal means
//! the check would have stopped it. Where they have changed, the answer is
//! about the node as it is, which is what matters to the pod's next
//! binding (a controller's recreated pod often lands on the same node).

use super::checks::Outcome;
use super::pods::FailedPod;
use crate::binding::{check_pod, BindingView, CheckResult};
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::decide::binding::explain::not_checked_words;
use gpu_topology_policy::decide::binding::{BindingOutcome, BindingRecord};
use gpu_topology_policy::settings::Config;

/// The policy report's `rule` of a failed pod.
pub const RULE: &str = "kubelet-admission-failed";

/// One failed pod and the binding check of it to its node now.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedAudit {
    pub pod: FailedPod,
    /// The check's record; `None` when the pod names no node.
    pub record: Option<BindingRecord>,
}

/// The binding check of each failed pod to the node that refused it, the
/// Pod answered by the failed pod itself, the Node and the
/// NodeResourceTopology read through `cluster`, judged at `now`.
pub fn audit_failed(
    pods: &[FailedPod],
    config: &Config,
    cluster: &dyn ClusterReader,
    now: u64,
) -> Vec<FailedAudit> {
    pods.iter()
        .map(|pod| FailedAudit {
            pod: pod.clone(),
            record: pod.node.as_deref().map(|node| {
                check_pod(
                    &pod.object,
                    &pod.namespace,
                    &pod.name,
                    node,
                    config,
                    cluster,
                    Some(now),
                )
            }),
        })
        .collect()
}

impl FailedAudit {
    /// A pod that failed is a finding, whatever the check says now.
    pub fn outcome(&self) -> Outcome {
        Outcome::Fail
    }

    /// The binding check as the reports show it.
    pub fn view(&self) -> Option<BindingView> {
        self.record.as_ref().map(BindingView::of)
    }

    /// What the check says now, in a word or two.
    pub fn short(&self) -> &'static str {
        match self.view() {
            None => "no node",
            Some(view) => match view.check {
                CheckResult::Refused => "refuses",
                CheckResult::Admitted => "allows",
                CheckResult::Unknown => "allows, unknown",
                CheckResult::NotChecked => "not checked",
                _ => "not a GPU pod",
            },
        }
    }

    /// `failed at the kubelet of NODE: REASON: MESSAGE`.
    pub fn failure(&self) -> String {
        let pod = &self.pod;
        let node = pod.node.as_deref().unwrap_or("its node");
        match &pod.message {
            Some(message) => format!("failed at the kubelet of {node}: {}: {message}", pod.reason),
            None => format!("failed at the kubelet of {node}: {}", pod.reason),
        }
    }

    /// What the binding check says now, in a sentence.
    pub fn check_words(&self) -> String {
        let Some(record) = &self.record else {
            return "it names no node (spec.nodeName): there is no binding to check".to_owned();
        };
        let view = BindingView::of(record);
        match (&record.outcome, view.check) {
            (_, CheckResult::Refused) => format!(
                "the binding check refuses this binding now (unless the node's pods changed since it failed, it would have stopped the pod): {}",
                view.message.unwrap_or_default()
            ),
            (_, CheckResult::Admitted) => format!(
                "the binding check allows this binding now: {}; so the node's pods changed since it failed, or the kubelet refused it for what the check does not see",
                view.message.unwrap_or_default()
            ),
            (_, CheckResult::Unknown) => format!(
                "the binding check allows this binding now, with a warning: {}",
                view.warnings.join("; ")
            ),
            (BindingOutcome::NotChecked(why), _) => format!(
                "the binding check allows this binding unchecked: {}",
                not_checked_words(why)
            ),
            _ => "not a GPU pod: the binding check allows its binding without reading the node"
                .to_owned(),
        }
    }

    /// The whole finding in one sentence (the policy report's message).
    pub fn message(&self) -> String {
        format!("{}; {}", self.failure(), self.check_words())
    }
}
