//! The audit as policy reports (`-o policyreport`), the objects Kubewarden's
//! audit scanner writes, so that the findings land where Kubewarden users
//! look (its UI, policy-reporter). Two APIs ([`ReportApi`]):
//!
//! - OpenReports, `openreports.io/v1alpha1` `Report` (the default): what
//!   the audit scanner writes with `--report-kind openreports`
//!   (kubewarden-controller `audit-scanner/cmd/root.go`), the default of
//!   Kubewarden's current admission-controller chart, which no longer
//!   installs the wgpolicyk8s.io CRDs (issue #37). Fields as the API
//!   defines them: openreports/reports-api
//!   `apis/openreports.io/v1alpha1/report_types.go` (`Report`,
//!   `ReportResult`, `ReportSummary`; commit
//!   74aae7df5dbbad4003f45a763f9b2cd201302102) and its CRD
//!   `chart/templates/openreports.io_reports.yaml` (commit
//!   d63112a8e308b8b7820a02e113438c883d792dc8), whose schema
//!   `cli/tests/fixtures/audit/openreports-v1alpha1-schema.yaml` keeps.
//! - `wgpolicyk8s.io/v1alpha2` `PolicyReport` (`--report-api wgpolicyk8s`),
//!   for clusters that still have only those CRDs: kubernetes-sigs
//!   wg-policy-prototypes `policy-report/crd/v1alpha2`.
//!
//! Both are filled as the audit scanner fills them: kubewarden-controller
//! `audit-scanner/internal/report/report.go` (`newPolicyReportResult`) and
//! its OpenReports twin (`newReportResult`, commit
//! 6219446474acea775bb20939235615e2e95a1587), which set the same fields on
//! either API: `policy`, `rule`, `result` (`pass|fail|warn|error|skip`),
//! `message`, `scored: true`, `source`, `timestamp {seconds, nanos}`,
//! `category`, `properties`, and the summary's five counts. The results
//! are the same in both; the OpenReports `Report` also names its
//! `source` once for the whole report, as `report_types.go` asks of a
//! report whose results come from one engine (v1alpha2 has no such field).
//!
//! Unlike the scanner (one report per resource, scoped to it and owned by
//! it), there is one report per namespace and each result names its pod in
//! `resources`. The reports are labelled `app.kubernetes.io/managed-by:
//! gpu-topology`, not `kubewarden`: the scanner deletes the reports of its
//! earlier runs by the selector `app.kubernetes.io/managed-by=kubewarden`
//! (`audit-scanner/internal/report/openreports_store.go`,
//! `DeleteOldReports`), which leaves these alone.
//!
//! Which API live mode writes when `--report-api` is not given is
//! [`choose`]n from what the API server serves (its discovery).

use super::checks::{Outcome, PodAudit};
use super::failed::{FailedAudit, RULE as FAILED_RULE};
use crate::args::ReportApi;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The policy the results are about.
pub const POLICY: &str = "gpu-topology-policy";
/// The engine that wrote them.
pub const SOURCE: &str = "gpu-topology";
/// The name of each namespace's report.
pub const REPORT_NAME: &str = "gpu-topology-audit";
const CATEGORY: &str = "GPU topology";

impl ReportApi {
    /// The order live mode looks the APIs up in: OpenReports first.
    pub const PREFERRED: [ReportApi; 2] = [ReportApi::Openreports, ReportApi::Wgpolicyk8s];

    /// The reports' `apiVersion`, also the API group/version discovery
    /// answers at `/apis/<apiVersion>`.
    pub fn api_version(self) -> &'static str {
        match self {
            ReportApi::Openreports => "openreports.io/v1alpha1",
            ReportApi::Wgpolicyk8s => "wgpolicyk8s.io/v1alpha2",
        }
    }

    /// The namespaced report's kind.
    pub fn kind(self) -> &'static str {
        match self {
            ReportApi::Openreports => "Report",
            ReportApi::Wgpolicyk8s => "PolicyReport",
        }
    }

    /// The kind's resource, as API discovery lists it.
    pub fn plural(self) -> &'static str {
        match self {
            ReportApi::Openreports => "reports",
            ReportApi::Wgpolicyk8s => "policyreports",
        }
    }

    /// The CRD that must be installed for `kubectl apply` to take them.
    pub fn crd(self) -> &'static str {
        match self {
            ReportApi::Openreports => "reports.openreports.io",
            ReportApi::Wgpolicyk8s => "policyreports.wgpolicyk8s.io",
        }
    }

    /// Its `--report-api` value.
    pub fn flag_value(self) -> &'static str {
        match self {
            ReportApi::Openreports => "openreports",
            ReportApi::Wgpolicyk8s => "wgpolicyk8s",
        }
    }
}

/// The API chosen for live mode, and what to tell the operator about it
/// (on standard error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub api: ReportApi,
    pub warnings: Vec<String>,
}

/// The API live mode writes without `--report-api`: the first of
/// [`ReportApi::PREFERRED`] that `serves` confirms the API server serves
/// (`Ok(true)`); OpenReports, with a warning naming its CRD, when none is.
/// A lookup that fails (`Err`, e.g. a refused discovery request) counts as
/// not served, with a warning that quotes it.
pub fn choose(mut serves: impl FnMut(ReportApi) -> Result<bool, String>) -> Choice {
    let mut warnings = Vec::new();
    for api in ReportApi::PREFERRED {
        match serves(api) {
            Ok(true) => return Choice { api, warnings },
            Ok(false) => {}
            Err(problem) => warnings.push(format!(
                "cannot tell whether the API server serves {} ({}): {problem}",
                api.api_version(),
                api.crd()
            )),
        }
    }
    let default = ReportApi::Openreports;
    let looked_up: Vec<&str> = ReportApi::PREFERRED
        .iter()
        .map(|api| api.api_version())
        .collect();
    let others: Vec<String> = ReportApi::PREFERRED
        .iter()
        .filter(|api| **api != default)
        .map(|api| {
            format!(
                "--report-api {} for the {} CRD",
                api.flag_value(),
                api.crd()
            )
        })
        .collect();
    warnings.push(format!(
        "found no policy-report API served (looked up {}): writing {} {} objects, which kubectl apply takes only once the {} CRD is installed; or pass {}",
        looked_up.join(", "),
        default.api_version(),
        default.kind(),
        default.crd(),
        others.join(", ")
    ));
    Choice {
        api: default,
        warnings,
    }
}

/// The audited and the failed pods of one namespace.
type Namespace<'a> = (Vec<&'a PodAudit>, Vec<&'a FailedAudit>);

/// One report per namespace holding audited or failed pods, namespaces
/// sorted; in each, the running pods' results, then one per failed pod.
pub fn reports(
    audits: &[PodAudit],
    failed: &[FailedAudit],
    judged_at: u64,
    api: ReportApi,
) -> Vec<Value> {
    let mut by_namespace: BTreeMap<&str, Namespace> = BTreeMap::new();
    for audit in audits {
        by_namespace
            .entry(audit.pod.namespace.as_str())
            .or_default()
            .0
            .push(audit);
    }
    for failed in failed {
        by_namespace
            .entry(failed.pod.namespace.as_str())
            .or_default()
            .1
            .push(failed);
    }
    by_namespace
        .into_iter()
        .map(|(namespace, (audits, failed))| report(namespace, &audits, &failed, judged_at, api))
        .collect()
}

fn pod_resource(name: &str, namespace: &str, uid: Option<&str>) -> Value {
    let mut resource = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "name": name,
        "namespace": namespace,
    });
    if let Some(uid) = uid {
        resource["uid"] = json!(uid);
    }
    resource
}

fn report(
    namespace: &str,
    audits: &[&PodAudit],
    failed: &[&FailedAudit],
    judged_at: u64,
    api: ReportApi,
) -> Value {
    let mut counts: BTreeMap<&str, u64> = ["pass", "fail", "warn", "error", "skip"]
        .into_iter()
        .map(|result| (result, 0))
        .collect();
    let mut results = Vec::new();
    for audit in audits {
        let resource = pod_resource(
            &audit.pod.name,
            &audit.pod.namespace,
            audit.pod.uid.as_deref(),
        );
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
    for failed in failed {
        let outcome = failed.outcome();
        *counts.entry(outcome.as_str()).or_default() += 1;
        let mut properties = BTreeMap::from([
            ("reason", failed.pod.reason.as_str()),
            ("bindingCheck", failed.short()),
        ]);
        if let Some(node) = &failed.pod.node {
            properties.insert("node", node.as_str());
        }
        results.push(json!({
            "policy": POLICY,
            "rule": FAILED_RULE,
            "category": CATEGORY,
            "result": outcome.as_str(),
            "severity": "high",
            "message": failed.message(),
            "scored": true,
            "source": SOURCE,
            "timestamp": {"seconds": judged_at, "nanos": 0},
            "resources": [pod_resource(&failed.pod.name, &failed.pod.namespace, failed.pod.uid.as_deref())],
            "properties": properties,
        }));
    }
    let mut report = json!({
        "apiVersion": api.api_version(),
        "kind": api.kind(),
        "metadata": {
            "name": REPORT_NAME,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": SOURCE},
        },
        "summary": counts,
        "results": results,
    });
    if api == ReportApi::Openreports {
        report["source"] = json!(SOURCE);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const FORBIDDEN: &str = "forbidden";

    /// (what each API's lookup answers, in [`ReportApi::PREFERRED`] order;
    /// `None`: not asked) → the API chosen and words its warnings hold.
    #[rstest]
    #[case::openreports_served(
        [Some(Ok(true)), None],
        ReportApi::Openreports, &[])]
    #[case::only_wgpolicyk8s_served(
        [Some(Ok(false)), Some(Ok(true))],
        ReportApi::Wgpolicyk8s, &[])]
    #[case::neither_served_defaults_to_openreports_naming_its_crd(
        [Some(Ok(false)), Some(Ok(false))],
        ReportApi::Openreports,
        &["looked up openreports.io/v1alpha1, wgpolicyk8s.io/v1alpha2", "once the reports.openreports.io CRD is installed", "--report-api wgpolicyk8s for the policyreports.wgpolicyk8s.io CRD"])]
    #[case::openreports_lookup_refused_and_wgpolicyk8s_served(
        [Some(Err(FORBIDDEN)), Some(Ok(true))],
        ReportApi::Wgpolicyk8s,
        &["cannot tell whether the API server serves openreports.io/v1alpha1 (reports.openreports.io): forbidden"])]
    #[case::both_lookups_refused(
        [Some(Err(FORBIDDEN)), Some(Err(FORBIDDEN))],
        ReportApi::Openreports,
        &["serves wgpolicyk8s.io/v1alpha2 (policyreports.wgpolicyk8s.io): forbidden", "once the reports.openreports.io CRD is installed"])]
    fn live_mode_writes_the_first_api_the_cluster_serves(
        #[case] answers: [Option<Result<bool, &str>>; 2],
        #[case] chosen: ReportApi,
        #[case] words: &[&str],
    ) {
        let mut asked = Vec::new();
        let choice = choose(|api| {
            asked.push(api);
            let index = ReportApi::PREFERRED.iter().position(|a| *a == api).unwrap();
            answers[index]
                .expect("asked about an API after one was found")
                .map_err(str::to_owned)
        });
        assert_eq!(choice.api, chosen);
        let expected_asked: Vec<ReportApi> = ReportApi::PREFERRED
            .into_iter()
            .zip(answers)
            .filter(|(_, answer)| answer.is_some())
            .map(|(api, _)| api)
            .collect();
        assert_eq!(asked, expected_asked);
        let warnings = choice.warnings.join("\n");
        for word in words {
            assert!(warnings.contains(word), "{word:?} not in {warnings}");
        }
        if words.is_empty() {
            assert_eq!(choice.warnings, Vec::<String>::new());
        }
    }

    #[rstest]
    #[case::openreports(
        ReportApi::Openreports,
        "openreports.io/v1alpha1",
        "Report",
        "reports",
        "reports.openreports.io"
    )]
    #[case::wgpolicyk8s(
        ReportApi::Wgpolicyk8s,
        "wgpolicyk8s.io/v1alpha2",
        "PolicyReport",
        "policyreports",
        "policyreports.wgpolicyk8s.io"
    )]
    fn each_api_names_its_group_kind_and_crd(
        #[case] api: ReportApi,
        #[case] api_version: &str,
        #[case] kind: &str,
        #[case] plural: &str,
        #[case] crd: &str,
    ) {
        assert_eq!(api.api_version(), api_version);
        assert_eq!(api.kind(), kind);
        assert_eq!(api.plural(), plural);
        assert_eq!(api.crd(), crd);
        // The CRD's name is <plural>.<group>.
        let group = api_version.split('/').next().unwrap();
        assert_eq!(crd, format!("{plural}.{group}"));
        // The flag value is clap's name of the variant.
        use clap::ValueEnum;
        assert_eq!(
            api.to_possible_value().unwrap().get_name(),
            api.flag_value()
        );
    }
}
