//! The fleet summary ConfigMap that `gpu-topology-labeler summarize` writes
//! (format: `gpu_topology::summary`), read with one `get_resource` call.
//!
//! On large clusters the Node list costs milliseconds per admission request,
//! to the policy-server and to the policy alike; the summary is a few hundred
//! bytes whatever the node count, and the host caches `get_resource` answers
//! for a few seconds. A summary older than `maxAgeSeconds` is not trusted,
//! so a stopped summarizer makes the policy list Nodes again rather than
//! decide on a stale fleet.

use crate::cluster::host::{quote_host_error, ClusterReader};
use crate::cluster::ClusterView;
use crate::settings::FleetSummarySettings;
use gpu_topology::dra::{ExtendedResources, DRA_DEVICES_KEY, DRA_EXTENDED_RESOURCES_KEY};
use gpu_topology::summary::{FORMAT_KEY, GENERATED_AT_KEY};
use gpu_topology::FleetSummary;
use kubewarden_policy_sdk::host_capabilities::kubernetes::GetResourceRequest;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

const CONFIG_MAP_API_VERSION: &str = "v1";
const CONFIG_MAP_KIND: &str = "ConfigMap";
/// Only `data` is read; the host prunes the rest of the ConfigMap's body.
pub(crate) const SUMMARY_FIELD_MASK: &str = "data";

/// The `get_resource` request for the summary ConfigMap. The host's short
/// cache is kept: the summary changes once per summarizer interval.
pub fn summary_request(settings: &FleetSummarySettings) -> GetResourceRequest {
    GetResourceRequest {
        api_version: CONFIG_MAP_API_VERSION.to_owned(),
        kind: CONFIG_MAP_KIND.to_owned(),
        name: settings.name.clone(),
        namespace: Some(settings.namespace.clone()),
        disable_cache: false,
        field_masks: Some(gpu_topology::sort::btree_set([
            SUMMARY_FIELD_MASK.to_owned()
        ])),
    }
}

/// How far ahead of the policy-server's clock a summary may be dated.
pub(crate) const MAX_CLOCK_SKEW_SECONDS: u64 = 60;

/// Reads the summary and checks its age against the time `clock` tells
/// (Unix seconds; read only once there is a summary to date); `Err` says
/// why it is not used, for the warning.
pub(crate) fn read_summary(
    cluster: &dyn ClusterReader,
    settings: &FleetSummarySettings,
    clock: impl FnOnce() -> Option<u64>,
) -> Result<ClusterView, String> {
    let mut now = None;
    let (summary, data) = read_fresh(cluster, settings, || {
        now = clock();
        now
    })?;
    let (extended_by_dra, extended_by_dra_problem) = match data.get(DRA_EXTENDED_RESOURCES_KEY) {
        None => (ExtendedResources::default(), None),
        Some(text) => match ExtendedResources::from_summary_text(text) {
            Ok(mapped) => (mapped, None),
            Err(problem) => (ExtendedResources::default(), Some(problem)),
        },
    };
    Ok(ClusterView {
        fleet: summary.fleet,
        malformed: summary.malformed,
        first_problem: None,
        // The summary counts shapes, not nodes by name.
        pinned_node: None,
        from_node_list: false,
        extended_by_dra,
        extended_by_dra_problem,
        heartbeats: summary.heartbeats,
        read_at: now,
    })
}

/// The summary, when it is there and fresh, with the ConfigMap's data (the
/// DRA entries are read from it: `gpu_topology::dra`).
pub(crate) fn read_fresh(
    cluster: &dyn ClusterReader,
    settings: &FleetSummarySettings,
    clock: impl FnOnce() -> Option<u64>,
) -> Result<(FleetSummary, BTreeMap<String, String>), String> {
    // The pod path needs the node groups and the small DRA entry, never the
    // DRA devices, which claims read.
    let data = read_fresh_data(
        cluster,
        settings,
        clock,
        Entries::AllBut(&[DRA_DEVICES_KEY]),
    )?;
    let summary = FleetSummary::from_data(data.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|problem| unreadable(settings, &problem.to_string()))?;
    Ok((summary, data))
}

/// Which entries of the summary's data to keep.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Entries<'a> {
    All,
    /// Every entry but these, which are skipped unread.
    AllBut(&'a [&'a str]),
    /// These, besides the format and the date; the others are skipped
    /// unread (a claim needs the DRA devices, not the node groups).
    Only(&'a [&'a str]),
}

impl Entries<'_> {
    fn keeps(&self, key: &str) -> bool {
        match self {
            Entries::All => true,
            Entries::AllBut(keys) => !keys.contains(&key),
            Entries::Only(keys) => {
                key == FORMAT_KEY || key == GENERATED_AT_KEY || keys.contains(&key)
            }
        }
    }
}

/// The summary ConfigMap's `entries`, when its format is this version's
/// and it is fresh; its node groups are not parsed here.
pub(crate) fn read_fresh_data(
    cluster: &dyn ClusterReader,
    settings: &FleetSummarySettings,
    clock: impl FnOnce() -> Option<u64>,
    entries: Entries,
) -> Result<BTreeMap<String, String>, String> {
    // The words are written only for a summary passed over, in one go.
    let (namespace, name) = (&settings.namespace, &settings.name);
    let answer = cluster
        .get_resource(&summary_request(settings))
        .map_err(|problem| {
            format!(
                "the fleet summary ConfigMap {namespace}/{name} is unavailable: {}",
                quote_host_error(&problem).trim_end_matches('.')
            )
        })?;
    let data =
        config_map_data(&answer, entries).map_err(|problem| unreadable(settings, &problem))?;
    let generated_at = FleetSummary::generated_at_of(&data)
        .map_err(|problem| unreadable(settings, &problem.to_string()))?;
    let location = format!("the fleet summary ConfigMap {namespace}/{name}");
    let now =
        clock().ok_or_else(|| format!("{location} cannot be dated: the clock is unavailable"))?;
    // A summary from the future would never age: a stopped summarizer would
    // go unnoticed. Clocks of different machines differ a little.
    let ahead = generated_at.saturating_sub(now);
    if ahead > MAX_CLOCK_SKEW_SECONDS {
        return Err(format!(
            "{location} is dated {ahead} s ahead of this clock (generatedAt {generated_at}): is the summarizer's clock right?"
        ));
    }
    let age = now.saturating_sub(generated_at);
    if age > settings.max_age_seconds {
        return Err(format!(
            "{location} is {age} s old, more than capacity.fleetSummary.maxAgeSeconds ({}): is the summarizer running?",
            settings.max_age_seconds
        ));
    }
    Ok(data)
}

fn unreadable(settings: &FleetSummarySettings, problem: &str) -> String {
    format!(
        "the fleet summary ConfigMap {}/{} is unreadable: {problem}",
        settings.namespace, settings.name
    )
}

/// Reads the summary out of the ConfigMap JSON.
pub fn parse_summary(config_map: &[u8]) -> Result<FleetSummary, String> {
    let data = config_map_data(config_map, Entries::All)?;
    FleetSummary::from_data(data.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|error| error.to_string())
}

/// The ConfigMap's `data` (none: empty), the `entries` kept.
fn config_map_data(
    config_map: &[u8],
    entries: Entries,
) -> Result<BTreeMap<String, String>, String> {
    let mut deserializer = serde_json::Deserializer::from_slice(config_map);
    let data = ConfigMapSeed(entries)
        .deserialize(&mut deserializer)
        .and_then(|data| deserializer.end().map(|()| data))
        .map_err(|error| format!("not a ConfigMap: {error}"))?;
    Ok(data)
}

/// A ConfigMap object, of which `data` is read: the kept entries' values
/// are copied, every other value is skipped as it is scanned.
struct ConfigMapSeed<'a>(Entries<'a>);

impl<'de> DeserializeSeed<'de> for ConfigMapSeed<'_> {
    type Value = BTreeMap<String, String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ConfigMapSeed<'_> {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a ConfigMap object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut data = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "data" {
                if data.is_some() {
                    return Err(serde::de::Error::duplicate_field("data"));
                }
                data = Some(map.next_value_seed(DataSeed(self.0))?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(data.flatten().unwrap_or_default())
    }
}

/// `data`: `null`, or an object of strings.
struct DataSeed<'a>(Entries<'a>);

impl<'de> DeserializeSeed<'de> for DataSeed<'_> {
    type Value = Option<BTreeMap<String, String>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for DataSeed<'_> {
    type Value = Option<BTreeMap<String, String>>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut data = BTreeMap::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            // Every value must be a string, kept or not: a ConfigMap's data
            // is nothing else, and a summary that is not one is unreadable.
            if self.0.keeps(&key) {
                let value: String = map.next_value()?;
                data.insert(key.into_owned(), value);
            } else {
                map.next_value::<StringSkipped>()?;
            }
        }
        Ok(Some(data))
    }
}

/// A string value, checked to be one and not copied.
struct StringSkipped;

impl<'de> Deserialize<'de> for StringSkipped {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Skip;
        impl<'de> Visitor<'de> for Skip {
            type Value = StringSkipped;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<StringSkipped, E> {
                Ok(StringSkipped)
            }
        }
        deserializer.deserialize_str(Skip)
    }
}

/// The wall clock in Unix seconds (WASI's clock in Wasm); `None` if it is
/// before 1970, which no summary can be compared with.
pub fn now() -> Option<u64> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(|elapsed| elapsed.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_topology::{Fleet, NodeTopology};
    use kubewarden_policy_sdk::host_capabilities::kubernetes::ListAllResourcesRequest;
    use rstest::rstest;
    use serde_json::json;

    const WRITTEN_AT: u64 = 1_764_450_000;

    fn summary() -> FleetSummary {
        let mut fleet = Fleet::new();
        let node = NodeTopology {
            gpus: Some(8),
            gpus_per_numa_max: Some(4),
            ..NodeTopology::default()
        };
        fleet.add_nodes(node, 40);
        FleetSummary {
            fleet,
            malformed: 2,
            generated_at: WRITTEN_AT,
            heartbeats: None,
        }
    }

    fn config_map(summary: &FleetSummary) -> Vec<u8> {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "gpu-topology-fleet", "namespace": "kube-system"},
            "data": summary.to_data(),
        })
        .to_string()
        .into_bytes()
    }

    /// Answers `get_resource` with `answer`, after checking the request.
    struct Host(Result<Vec<u8>, String>);

    impl ClusterReader for Host {
        fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
            unreachable!("the summary is read with get_resource")
        }
        fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
            assert_eq!(
                (
                    request.kind.as_str(),
                    request.name.as_str(),
                    request.namespace.as_deref()
                ),
                ("ConfigMap", "gpu-topology-fleet", Some("kube-system"))
            );
            self.0.clone()
        }
    }

    /// Fresh: up to maxAgeSeconds old, or dated at most a minute ahead.
    #[rstest]
    #[case::a_minute_old(WRITTEN_AT + 60)]
    #[case::at_the_age_limit(WRITTEN_AT + 300)]
    #[case::a_minute_ahead(WRITTEN_AT - 60)]
    fn a_fresh_summary_is_the_cluster_view(#[case] now: u64) {
        let host = Host(Ok(config_map(&summary())));
        let view = read_summary(&host, &FleetSummarySettings::default(), || Some(now)).unwrap();
        assert_eq!(view.fleet, summary().fleet);
        assert_eq!(view.malformed, 2);
    }

    #[rstest]
    #[case::refused(Err("Policy has not been granted access to Kubernetes v1/ConfigMap resources.".into()), Some(WRITTEN_AT),
        "the fleet summary ConfigMap kube-system/gpu-topology-fleet is unavailable: access denied (host: Policy has not been granted access to Kubernetes v1/ConfigMap resources.)")]
    #[case::refused_with_a_backtrace(Err("Cannot get v1/ConfigMap kube-system/gpu-topology-fleet: not found.\n\nStack backtrace:\n   0: anyhow::error::<impl anyhow::Error>::msg\n".into()), Some(WRITTEN_AT),
        "the fleet summary ConfigMap kube-system/gpu-topology-fleet is unavailable: not found (HTTP 404) (host: Cannot get v1/ConfigMap kube-system/gpu-topology-fleet: not found.)")]
    #[case::stale(Ok(config_map(&summary())), Some(WRITTEN_AT + 301),
        "is 301 s old, more than capacity.fleetSummary.maxAgeSeconds (300): is the summarizer running?")]
    #[case::no_clock(Ok(config_map(&summary())), None, "cannot be dated: the clock is unavailable")]
    #[case::from_the_future(Ok(config_map(&summary())), Some(WRITTEN_AT - 61),
        "is dated 61 s ahead of this clock (generatedAt 1764450000): is the summarizer's clock right?")]
    #[case::not_json(Ok(b"{".to_vec()), Some(WRITTEN_AT), "is unreadable: not a ConfigMap")]
    #[case::no_data(Ok(br#"{"kind": "ConfigMap"}"#.to_vec()), Some(WRITTEN_AT), "is unreadable: the fleet summary has no \"format\" entry")]
    #[case::data_not_strings(Ok(br#"{"data": {"format": 1}}"#.to_vec()), Some(WRITTEN_AT), "is unreadable: not a ConfigMap")]
    fn an_unusable_summary_is_an_error_saying_why(
        #[case] answer: Result<Vec<u8>, String>,
        #[case] now: Option<u64>,
        #[case] expected: &str,
    ) {
        let error =
            read_summary(&Host(answer), &FleetSummarySettings::default(), || now).unwrap_err();
        assert!(error.contains(expected), "{error}");
        assert!(!error.contains('\n'), "one line: {error:?}");
    }

    #[test]
    fn the_request_reads_only_the_data() {
        let request = summary_request(&FleetSummarySettings::default());
        assert_eq!(
            request.field_masks,
            Some(std::collections::BTreeSet::from(["data".to_owned()]))
        );
        assert!(!request.disable_cache);
    }

    #[test]
    fn the_clock_reads_after_2020() {
        assert!(now().unwrap() > 1_577_836_800);
    }
}
