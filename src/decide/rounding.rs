//! Whole CPUs rounded up to whole cores (`qos.roundToWholeCores`, issue
//! #23 item 4). The static CPU Manager with `full-pcpus-only` allocates
//! whole physical cores only: a container's exclusive CPUs that are not a
//! multiple of the threads per core are refused with `SMTAlignmentError`
//! (`cpumanager/policy_static.go`, `Allocate`: `if
//! p.options.FullPhysicalCPUsOnly { if numCPUs % cpusPerCore != 0 { return
//! SMTAlignmentError{...} } }`). The policy already rounds the CPUs it
//! chooses (a default, a fraction rounded up) to that multiple; the CPUs an
//! author wrote it rounds only where nothing else would run the pod:
//!
//! - a node group that takes the pod as written, or may (its answer is
//!   unknown, where the pod need only be admitted), wins: the affinity
//!   steers the pod there, and nothing changes;
//! - otherwise, when some group refuses it with `SMTAlignmentError` for a
//!   count that is not a multiple, every container's exclusive CPUs are
//!   rounded up to the fleet's multiple ([`super::model::cpu_multiple`]), and the
//!   rounding is kept only if some group then takes the pod. A warning says
//!   so.
//!
//! Only under `qos.mode: mutate` (the other modes never edit resources)
//! and `qos.roundToWholeCores: true` (the default; `false` asks for the
//! refusal, which names the multiple to request).

use crate::decide::adjustment::{RoundedCpus, RoundedValue};
use crate::decide::input::PodInput;
use crate::decide::lowering::Search;
use crate::decide::model::Need;
use crate::decide::model::{Answer, AnswerMemo, GroupVerdict};
use crate::decide::qos::{self, Reason};
use crate::settings::{Config, QosConfig, QosMode};
use gpu_topology::kubelet::Refusal;
use serde_json::Value;

/// The QoS configuration to plan this pod with, and what was rounded.
#[derive(Debug, Clone, PartialEq)]
pub struct Rounded {
    pub qos: QosConfig,
    pub cpus: RoundedCpus,
}

/// Whole cores for this pod, when only rounding its written CPUs lets some
/// node take it; `None` otherwise. `qos` is the configuration the pod was
/// planned with (the configured one, or defaults [lowered](crate::decide::lowering)
/// for it), `verdicts` the fleet's answers on that plan.
pub(crate) fn round_to_whole_cores(
    spec: &Value,
    input: &PodInput,
    config: &Config,
    qos: &QosConfig,
    multiple: u64,
    verdicts: &[GroupVerdict],
    memo: &AnswerMemo,
) -> Option<Rounded> {
    if config.qos.mode != QosMode::Mutate || !config.qos.round_to_whole_cores || multiple < 2 {
        return None;
    }
    // `verdicts` are the answers on the pod as planned with `qos`: whether
    // a group takes it as written is read from them, not planned again.
    let need = Need::for_pod(config);
    let takes_as_written = verdicts
        .iter()
        .any(|verdict| verdict.takes_as(&verdict.answer, need, &input.demand.pod));
    // Groups the model cannot answer for stay eligible where the pod need
    // only be admitted: they may run it as written.
    let may_run_as_written = takes_as_written
        || (need == Need::Admit && verdicts.iter().any(|verdict| verdict.answer.is_unknown()));
    if may_run_as_written || !verdicts.iter().any(refused_for_whole_cores) {
        return None;
    }
    let search = Search::new(spec, input, config, multiple, verdicts, memo);
    let rounded_qos = QosConfig {
        round_written_cpus: true,
        ..qos.clone()
    };
    let taking = search.taking(&rounded_qos)?;
    let after = search.nodes_taking(&taking);
    if after == 0 {
        return None;
    }
    let plan = qos::plan(spec, &input.demand.pod, &rounded_qos, multiple).ok()?;
    let values: Vec<RoundedValue> = plan
        .findings
        .iter()
        .flat_map(|finding| {
            finding
                .reasons
                .iter()
                .filter_map(move |reason| match reason {
                    Reason::NotWholeCores { value, rounded } => Some(RoundedValue {
                        target: finding.target.clone(),
                        value: *value,
                        rounded: *rounded,
                    }),
                    _ => None,
                })
        })
        .collect();
    Some(Rounded {
        qos: rounded_qos,
        cpus: RoundedCpus {
            values,
            multiple,
            nodes_after: after,
        },
    })
}

/// `SMTAlignmentError` for a count that is not a multiple of the threads
/// per core, which rounding up lifts (not the other kind, too few free
/// whole cores, which rounding up only makes worse).
fn refused_for_whole_cores(verdict: &GroupVerdict) -> bool {
    matches!(
        &verdict.answer,
        Answer::Refuse(Refusal::SmtAlignment { requested, cpus_per_core, .. })
            if *cpus_per_core > 1 && requested % cpus_per_core != 0
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::adjustment::Adjustment;
    use crate::decide::testing::{hgx, hgx_full_pcpus_only, l4, on_first_plan, pod};
    use gpu_topology::NodeTopology;
    use rstest::rstest;
    use serde_json::json;

    /// The rounding the pipeline asks for, on the pod as first planned.
    fn rounded(spec: Value, groups: Vec<(NodeTopology, u32)>, settings: Value) -> Option<Rounded> {
        on_first_plan(
            &spec,
            groups,
            settings,
            |input, config, multiple, verdicts| {
                round_to_whole_cores(
                    &spec,
                    input,
                    config,
                    &config.qos,
                    multiple,
                    verdicts,
                    &AnswerMemo::default(),
                )
            },
        )
    }

    /// The CPU values the rounded plan writes, as (requests, limits) per
    /// container.
    fn written_cpus(spec: &Value, rounded: &Rounded) -> Vec<(String, String)> {
        let demand =
            crate::decide::demand::PodDevices::from_pod_spec(spec, &["nvidia.com/gpu".to_owned()])
                .unwrap();
        let plan = qos::plan(spec, &demand, &rounded.qos, 2).unwrap();
        let mut planned = spec.clone();
        qos::apply(&mut planned, &plan.edits).unwrap();
        planned["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let cpu =
                    |section: &str| c["resources"][section]["cpu"].as_str().unwrap().to_owned();
                (cpu("requests"), cpu("limits"))
            })
            .collect()
    }

    fn requests_only(cpus: &str) -> Value {
        json!({"containers": [{"name": "train", "resources": {"requests": {
            "nvidia.com/gpu": "1", "cpu": cpus, "memory": "64Gi"}, "limits": {"nvidia.com/gpu": "1", "memory": "64Gi"}}}]})
    }

    fn with_sidecar(sidecar_cpu: &str) -> Value {
        json!({"containers": [
            {"name": "train", "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "4", "memory": "64Gi"}}},
            {"name": "proxy", "resources": {"limits": {"cpu": sidecar_cpu, "memory": "1Gi"}}}]})
    }

    /// (pod, groups, settings, the (requests, limits) CPUs each container
    /// ends with, or `None` when the pod is left as written).
    #[rstest]
    #[case::odd_cpus_only_full_pcpus_only_nodes(pod(1, 3),
        vec![(hgx_full_pcpus_only("best-effort"), 4)], json!({}),
        Some(vec![("4", "4")]))]
    #[case::requests_only_completed_then_rounded(requests_only("15"),
        vec![(hgx_full_pcpus_only("single-numa-node"), 4)], json!({}),
        Some(vec![("16", "16")]))]
    #[case::millicores_spelling_of_whole_cpus(requests_only("3000m"),
        vec![(hgx_full_pcpus_only("best-effort"), 4)], json!({}),
        Some(vec![("4", "4")]))]
    #[case::a_sidecars_exclusive_cpu_too(with_sidecar("1"),
        vec![(hgx_full_pcpus_only("best-effort"), 4)], json!({}),
        Some(vec![("4", "4"), ("2", "2")]))]
    // Steered, not rounded: another shape admits the pod as written.
    #[case::another_shape_admits_as_written(pod(1, 3),
        vec![(hgx_full_pcpus_only("best-effort"), 4), (hgx("best-effort"), 1)], json!({}),
        None)]
    #[case::an_unknown_shape_may_admit_as_written(pod(1, 3),
        vec![(hgx_full_pcpus_only("best-effort"), 4), (NodeTopology { gpus: Some(8), ..NodeTopology::default() }.with_shape(), 1)],
        json!({}), None)]
    #[case::even_cpus_need_no_rounding(pod(1, 4),
        vec![(hgx_full_pcpus_only("best-effort"), 4)], json!({}), None)]
    #[case::a_fractional_sidecar_shares_the_pool(with_sidecar("500m"),
        vec![(hgx_full_pcpus_only("best-effort"), 4)], json!({}), None)]
    // Rounded to 58, the CPUs fit no NUMA node (56 at most) that
    // single-numa-node must hold them on, and the L4s have 48.
    #[case::rounding_does_not_help(pod(1, 57),
        vec![(hgx_full_pcpus_only("single-numa-node"), 4), (l4(), 2)], json!({}), None)]
    #[case::the_setting_asks_for_the_refusal(pod(1, 3),
        vec![(hgx_full_pcpus_only("best-effort"), 4)], json!({"qos": {"roundToWholeCores": false}}),
        None)]
    #[case::validate_mode_never_edits(pod(1, 3),
        vec![(hgx_full_pcpus_only("best-effort"), 4)], json!({"qos": {"mode": "validate"}}),
        None)]
    #[case::required_ignores_unknown_shapes(pod(1, 3),
        vec![(hgx_full_pcpus_only("best-effort"), 4), (NodeTopology { gpus: Some(8), ..NodeTopology::default() }.with_shape(), 1)],
        json!({"topology": {"affinity": "required", "alignment": "node"}}), Some(vec![("4", "4")]))]
    fn written_cpus_are_rounded_only_where_nothing_takes_them(
        #[case] spec: Value,
        #[case] groups: Vec<(NodeTopology, u32)>,
        #[case] settings: Value,
        #[case] expected: Option<Vec<(&str, &str)>>,
    ) {
        let outcome = rounded(spec.clone(), groups, settings);
        let written = outcome.as_ref().map(|r| written_cpus(&spec, r));
        let expected = expected.map(|e| {
            e.into_iter()
                .map(|(r, l)| (r.to_owned(), l.to_owned()))
                .collect::<Vec<_>>()
        });
        assert_eq!(written, expected, "{outcome:?}");
    }

    /// (nodes taking the rounded pod, the warning's count)
    #[rstest]
    #[case::one_node(1, "the kubelet of 1 node takes it")]
    #[case::several_nodes(4, "the kubelets of 4 nodes take it")]
    fn the_warning_says_what_was_rounded_and_how_to_refuse(
        #[case] nodes: u32,
        #[case] count: &str,
    ) {
        let warning = rounded(
            pod(1, 3),
            vec![(hgx_full_pcpus_only("best-effort"), nodes)],
            json!({}),
        )
        .unwrap()
        .cpus;
        assert_eq!(
            Adjustment::Rounded(warning).warning(),
            format!("CPUs rounded up to whole cores for this pod (qos.roundToWholeCores): container \"train\"'s 3 to 4. As written, the kubelets of no node take it: those with cpuManagerPolicyOptions full-pcpus-only allocate exclusive CPUs in multiples of 2 only (SMTAlignmentError); rounded, {count}. Set qos.roundToWholeCores: false to have such pods refused instead")
        );
    }
}
