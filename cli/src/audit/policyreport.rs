//! The audit as PolicyReport objects (`wgpolicyk8s.io/v1alpha2`), the
//! format Kubewarden's audit scanner writes, so that the findings land
//! where Kubewarden users look (its UI, policy-reporter).
//!
//! Fields as the CRD defines them (wg-policy-prototypes
//! `policy-report/crd/v1alpha2`) and as the audit scanner fills them
//! (kubewarden-controller `audit-scanner/internal/report/report.go`):
//! `policy`, `rule`, `result` (`pass|fail|warn|error|skip`), `message`,
//! `scored: true`, `source`, `timestamp {seconds, nanos}`, `category`,
//! `properties`, and the summary's five counts. Unlike the scanner (one
//! report per resource, scoped to it and owned by it), there is one report
//! per namespace and each result names its pod in `resources`; the
//! reports are labelled `app.kubernetes.io/managed-by: gpu-topology`, not
//! `kubewarden`, so that the scanner's clean-up of its own stale reports
//! does not delete them.

use super::checks::{Outcome, PodAudit};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub const API_VERSION: &str = "wgpolicyk8s.io/v1alpha2";
/// The policy the results are about.
pub const POLICY: &str = "gpu-topology-policy";
/// The engine that wrote them.
pub const SOURCE: &str = "gpu-topology";
/// The name of each namespace's report.
pub const REPORT_NAME: &str = "gpu-topology-audit";
const CATEGORY: &str = "GPU topology";

/// One PolicyReport per namespace holding audited pods, namespaces sorted.
pub fn reports(audits: &[PodAudit], judged_at: u64) -> Vec<Value> {
    let mut by_namespace: BTreeMap<&str, Vec<&PodAudit>> = BTreeMap::new();
    for audit in audits {
        by_namespace
            .entry(audit.pod.namespace.as_str())
            .or_default()
            .push(audit);
    }
    by_namespace
        .into_iter()
        .map(|(namespace, audits)| report(namespace, &audits, judged_at))
        .collect()
}

fn report(namespace: &str, audits: &[&PodAudit], judged_at: u64) -> Value {
    let mut counts: BTreeMap<&str, u64> = ["pass", "fail", "warn", "error", "skip"]
        .into_iter()
        .map(|result| (result, 0))
        .collect();
    let mut results = Vec::new();
    for audit in audits {
        let mut resource = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "name": audit.pod.name,
            "namespace": audit.pod.namespace,
        });
        if let Some(uid) = &audit.pod.uid {
            resource["uid"] = json!(uid);
        }
        for check in &audit.checks {
            let outcome = check.outcome();
            *counts.entry(outcome.as_str()).or_default() += 1;
            let mut properties = BTreeMap::new();
            if let Some(node) = &audit.pod.node {
                properties.insert("node", node.as_str());
            }
            let mut result = json!({
                "policy": POLICY,
                "rule": check.rule(),
                "category": CATEGORY,
                "result": outcome.as_str(),
                "message": check.message(),
                "scored": true,
                "source": SOURCE,
                "timestamp": {"seconds": judged_at, "nanos": 0},
                "resources": [resource.clone()],
            });
            if outcome == Outcome::Fail {
                result["severity"] = json!("high");
            }
            if !properties.is_empty() {
                result["properties"] = json!(properties);
            }
            results.push(result);
        }
    }
    json!({
        "apiVersion": API_VERSION,
        "kind": "PolicyReport",
        "metadata": {
            "name": REPORT_NAME,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": SOURCE},
        },
        "summary": counts,
        "results": results,
    })
}
