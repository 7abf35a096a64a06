//! Parser for the kubelet's config file (`KubeletConfiguration`) and its
//! drop-in files, reduced to what the labels publish: the Topology, CPU and
//! Memory Manager policies and options, and the CPU and memory reservations.
//!
//! Reproduced from the kubelet (kubernetes/kubernetes):
//! - merging, cmd/kubelet/app/server.go `mergeKubeletConfigurations`: the
//!   main file is decoded with its defaults; each drop-in, in the order the
//!   kubelet walks `--config-dir`, is merged into it by JSON merge patch and
//!   the result unmarshaled over the main file's config. So a drop-in's
//!   scalar replaces, its map merges by key into the main file's map, its
//!   list replaces, its `null` is no change, and its `""` stays `""` (no
//!   defaulting after the merge, so the kubelet refuses an empty policy);
//! - defaults, pkg/kubelet/apis/config/v1beta1/defaults.go: an absent or
//!   empty `topologyManagerPolicy` is `none`, `topologyManagerScope`
//!   `container`, `cpuManagerPolicy` `none`, `memoryManagerPolicy` `None`;
//! - options, cm/topologymanager/policy_options.go and
//!   cm/cpumanager/policy_options.go `NewPolicyOptions`/`NewStaticPolicyOptions`:
//!   boolean options read as Go's `strconv.ParseBool`, `max-allowable-numa-nodes`
//!   as `strconv.Atoi` and at least 8 (its default);
//! - reservations: `reservedSystemCPUs` replaces the `cpu` of `kubeReserved`
//!   and `systemReserved` (server.go, "it will overwrite the cpu setting");
//!   `reservedMemory` per NUMA node, a later entry for the same node and
//!   resource replacing an earlier one (memory_manager.go `convertReserved`).
//!
//! A policy word the kubelet would refuse makes the whole config an error, as
//! before. A value of the newer keys that the kubelet would refuse (or that
//! the labeler does not model) leaves only the facts read from it unknown,
//! with the reason, so one odd option does not cost every kubelet label.

use super::sysfs::parse_id_list;
use super::ParseError;
use crate::model::IdSet;
use gpu_topology::quantity::Quantity;
use gpu_topology::{
    CpuManagerPolicy, MemoryManagerPolicy, TopologyManagerPolicy, TopologyManagerScope,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

const CONTEXT: &str = "kubelet config";
const KIND: &str = "KubeletConfiguration";

/// The Topology Manager's default `max-allowable-numa-nodes`
/// (topologymanager `defaultMaxAllowableNUMANodes`), also its minimum.
pub const DEFAULT_MAX_ALLOWABLE_NUMA_NODES: u32 = 8;

/// Topology Manager policy options (`topologyManagerPolicyOptions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopologyOptions {
    pub prefer_closest_numa_nodes: bool,
    pub max_allowable_numa_nodes: u32,
}

impl Default for TopologyOptions {
    fn default() -> Self {
        Self {
            prefer_closest_numa_nodes: false,
            max_allowable_numa_nodes: DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
        }
    }
}

/// Static CPU Manager policy options (`cpuManagerPolicyOptions`). The last
/// three change which CPUs an allocation takes, not whether a pod is
/// admitted, so no label publishes them; they matter for where the
/// reservation lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuOptions {
    pub full_pcpus_only: bool,
    pub distribute_cpus_across_numa: bool,
    pub align_by_socket: bool,
    pub distribute_cpus_across_cores: bool,
    pub strict_cpu_reservation: bool,
    pub prefer_align_cpus_by_uncorecache: bool,
}

/// The CPUs the static CPU Manager keeps out of exclusive allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuReservation {
    /// `reservedSystemCPUs`: exactly these CPUs.
    Cpus(IdSet),
    /// `ceil(kubeReserved.cpu + systemReserved.cpu)` CPUs, taken by topology.
    Count(u32),
}

/// `reservedMemory`: bytes reserved per NUMA node and resource name
/// (`memory`, `hugepages-2Mi`, ...), as the kubelet looks them up.
pub type MemoryReservation = BTreeMap<u32, BTreeMap<String, u64>>;

/// The kubelet settings the labels publish. A fact whose value the kubelet
/// would refuse, or that the labeler does not model, is an `Err` saying why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletSettings {
    pub topology_manager_policy: TopologyManagerPolicy,
    pub topology_manager_scope: TopologyManagerScope,
    pub cpu_manager_policy: CpuManagerPolicy,
    pub memory_manager_policy: MemoryManagerPolicy,
    pub topology_options: Result<TopologyOptions, String>,
    pub cpu_options: Result<CpuOptions, String>,
    pub cpu_reservation: Result<CpuReservation, String>,
    pub memory_reservation: Result<MemoryReservation, String>,
}

/// One config document as written (a mapping), checked to be a `KubeletConfiguration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletConfigFile {
    document: Map<String, Value>,
}

/// Parses one config (or drop-in) file; the file must be a `KubeletConfiguration`.
pub fn parse_file(text: &str) -> Result<KubeletConfigFile, ParseError> {
    let document: Value = serde_saphyr::from_str(text)
        .map_err(|e| ParseError::new(CONTEXT, format!("invalid YAML: {e}")))?;
    let document = match document {
        Value::Object(document) => document,
        Value::Null => return Err(ParseError::new(CONTEXT, "the file is empty")),
        _ => return Err(ParseError::new(CONTEXT, "the file is not a mapping")),
    };
    match document.get("kind").and_then(Value::as_str) {
        Some(KIND) => Ok(KubeletConfigFile { document }),
        other => Err(ParseError::new(
            CONTEXT,
            format!("kind is {other:?}, expected {KIND:?}"),
        )),
    }
}

/// The main file and the drop-ins merged over it, as the kubelet merges them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MergedConfig {
    main: Map<String, Value>,
    /// Every drop-in merged in order by JSON merge patch (RFC 7386): what the
    /// kubelet unmarshals over the main file's config.
    drop_ins: Map<String, Value>,
}

/// Where a setting's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Main,
    DropIn,
}

impl MergedConfig {
    /// Merges `drop_ins`, in the order given, over `main`.
    pub fn new(
        main: KubeletConfigFile,
        drop_ins: impl IntoIterator<Item = KubeletConfigFile>,
    ) -> Self {
        let mut merged = Map::new();
        for drop_in in drop_ins {
            merge_patch(&mut merged, drop_in.document);
        }
        Self {
            main: main.document,
            drop_ins: merged,
        }
    }

    /// A scalar setting: the drop-ins' value, else the main file's. `null`
    /// in the main file is as absent.
    fn scalar(&self, key: &str) -> Option<(&Value, Origin)> {
        match self.drop_ins.get(key) {
            Some(value) => Some((value, Origin::DropIn)),
            None => self
                .main
                .get(key)
                .filter(|v| !v.is_null())
                .map(|v| (v, Origin::Main)),
        }
    }

    /// A map setting: the main file's entries, overridden key by key by the
    /// drop-ins' (Go's `json.Unmarshal` into an existing map keeps its
    /// entries). `Err` names the key when a value there is not a mapping.
    fn map(&self, key: &str) -> Result<Map<String, Value>, String> {
        let mut entries = Map::new();
        for value in [self.main.get(key), self.drop_ins.get(key)]
            .into_iter()
            .flatten()
        {
            match value {
                Value::Null => {}
                Value::Object(map) => entries.extend(map.clone()),
                _ => return Err(format!("{key} is not a mapping")),
            }
        }
        Ok(entries)
    }
}

/// RFC 7386 JSON merge patch of `patch` into `target`, as the kubelet merges
/// drop-ins (github.com/evanphx/json-patch `MergePatch`).
fn merge_patch(target: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (key, value) in patch {
        match value {
            Value::Null => {
                target.remove(&key);
            }
            Value::Object(patch) => {
                let entry = target
                    .entry(key)
                    .or_insert_with(|| Value::Object(Map::new()));
                if !entry.is_object() {
                    *entry = Value::Object(Map::new());
                }
                if let Value::Object(entry) = entry {
                    merge_patch(entry, patch);
                }
            }
            value => {
                target.insert(key, value);
            }
        }
    }
}

/// A scalar as the kubelet reads it into a string: YAML numbers and booleans
/// as written (the labeler accepts them where the kubelet may insist on
/// quotes; a kubelet that refuses them does not run).
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// Reads the settings from the merged config, with the kubelet's defaults.
pub fn settings(config: &MergedConfig) -> Result<KubeletSettings, ParseError> {
    Ok(KubeletSettings {
        topology_manager_policy: word(
            config,
            "topologyManagerPolicy",
            TopologyManagerPolicy::None,
            TopologyManagerPolicy::EXPECTED,
            |v| v.parse(),
        )?,
        topology_manager_scope: word(
            config,
            "topologyManagerScope",
            TopologyManagerScope::Container,
            TopologyManagerScope::EXPECTED,
            |v| v.parse(),
        )?,
        cpu_manager_policy: word(
            config,
            "cpuManagerPolicy",
            CpuManagerPolicy::None,
            CpuManagerPolicy::EXPECTED,
            |v| v.parse(),
        )?,
        memory_manager_policy: word(
            config,
            "memoryManagerPolicy",
            MemoryManagerPolicy::None,
            "one of None, Static",
            memory_manager_policy,
        )?,
        topology_options: topology_options(config),
        cpu_options: cpu_options(config),
        cpu_reservation: cpu_reservation(config),
        memory_reservation: memory_reservation(config),
    })
}

/// The kubelet spells its Memory Manager policies `None` and `Static`
/// (memorymanager `policyTypeNone`, `policyTypeStatic`; `BestEffort` is
/// Windows only); the label lowercases them.
fn memory_manager_policy(value: &str) -> Result<MemoryManagerPolicy, ()> {
    match value {
        "None" => Ok(MemoryManagerPolicy::None),
        "Static" => Ok(MemoryManagerPolicy::Static),
        _ => Err(()),
    }
}

/// A policy word: the main file's empty or absent value is the default; a
/// drop-in's empty value is kept, and refused, as the kubelet refuses it.
fn word<T>(
    config: &MergedConfig,
    key: &str,
    default: T,
    expected: &str,
    parse: impl Fn(&str) -> Result<T, ()>,
) -> Result<T, ParseError> {
    let refused = |value: &str, why: &str| {
        ParseError::new(
            CONTEXT,
            format!("{key} is {value:?}{why}, expected {expected}"),
        )
    };
    let Some((value, origin)) = config.scalar(key) else {
        return Ok(default);
    };
    let value = text(value).ok_or_else(|| refused(&value.to_string(), ""))?;
    match (value.as_str(), origin) {
        ("", Origin::Main) => Ok(default),
        ("", Origin::DropIn) => Err(refused(
            "",
            " in a drop-in (the kubelet applies its defaults to the main file only)",
        )),
        (value, _) => parse(value).map_err(|()| refused(value, "")),
    }
}

/// A policy option's value as a string, naming the option when it is not one.
fn option_values(config: &MergedConfig, key: &str) -> Result<BTreeMap<String, String>, String> {
    config
        .map(key)?
        .into_iter()
        .map(|(name, value)| match value {
            // Go reads null into a map of strings as "".
            Value::Null => Ok((name, String::new())),
            value => text(&value)
                .map(|value| (name.clone(), value))
                .ok_or_else(|| format!("{key} {name:?} is not a string")),
        })
        .collect()
}

/// Go's `strconv.ParseBool`.
fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn bool_option(key: &str, name: &str, value: &str) -> Result<bool, String> {
    parse_bool(value).ok_or_else(|| format!("{key} {name} is {value:?}, not a boolean"))
}

/// Go's `strconv.Atoi` for the values the labeler can hold: an optional sign
/// and decimal digits.
fn parse_int(value: &str) -> Option<i64> {
    let digits = value.strip_prefix('+').unwrap_or(value);
    let unsigned = digits.strip_prefix('-').unwrap_or(digits);
    (!unsigned.is_empty() && unsigned.len() <= 18 && unsigned.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

const TOPOLOGY_OPTIONS: &str = "topologyManagerPolicyOptions";
const CPU_OPTIONS: &str = "cpuManagerPolicyOptions";

/// Topology Manager options. An option the labeler does not know (a newer
/// kubelet's, e.g. `numa-allocation-strategy`) may change admission in ways
/// the labels do not describe, so the options are then unknown.
fn topology_options(config: &MergedConfig) -> Result<TopologyOptions, String> {
    let mut options = TopologyOptions::default();
    for (name, value) in option_values(config, TOPOLOGY_OPTIONS)? {
        match name.as_str() {
            "prefer-closest-numa-nodes" => {
                options.prefer_closest_numa_nodes = bool_option(TOPOLOGY_OPTIONS, &name, &value)?
            }
            "max-allowable-numa-nodes" => {
                options.max_allowable_numa_nodes = parse_int(&value)
                    .filter(|&n| n >= i64::from(DEFAULT_MAX_ALLOWABLE_NUMA_NODES))
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        format!(
                            "{TOPOLOGY_OPTIONS} {name} is {value:?}, not an integer of at least {DEFAULT_MAX_ALLOWABLE_NUMA_NODES}"
                        )
                    })?
            }
            _ => return Err(format!("{TOPOLOGY_OPTIONS} has the option {name:?}, which the labeler does not model")),
        }
    }
    Ok(options)
}

/// Static CPU Manager options, and the pairs `NewStaticPolicyOptions` refuses.
fn cpu_options(config: &MergedConfig) -> Result<CpuOptions, String> {
    let mut options = CpuOptions::default();
    for (name, value) in option_values(config, CPU_OPTIONS)? {
        let flag = bool_option(CPU_OPTIONS, &name, &value);
        let field = match name.as_str() {
            "full-pcpus-only" => &mut options.full_pcpus_only,
            "distribute-cpus-across-numa" => &mut options.distribute_cpus_across_numa,
            "align-by-socket" => &mut options.align_by_socket,
            "distribute-cpus-across-cores" => &mut options.distribute_cpus_across_cores,
            "strict-cpu-reservation" => &mut options.strict_cpu_reservation,
            "prefer-align-cpus-by-uncorecache" => &mut options.prefer_align_cpus_by_uncorecache,
            _ => {
                return Err(format!(
                    "{CPU_OPTIONS} has the option {name:?}, which the labeler does not model"
                ))
            }
        };
        *field = flag?;
    }
    let exclusive = [
        (
            options.full_pcpus_only,
            options.distribute_cpus_across_cores,
            "full-pcpus-only",
            "distribute-cpus-across-cores",
        ),
        (
            options.distribute_cpus_across_numa,
            options.distribute_cpus_across_cores,
            "distribute-cpus-across-numa",
            "distribute-cpus-across-cores",
        ),
        (
            options.prefer_align_cpus_by_uncorecache,
            options.distribute_cpus_across_cores,
            "prefer-align-cpus-by-uncorecache",
            "distribute-cpus-across-cores",
        ),
        (
            options.prefer_align_cpus_by_uncorecache,
            options.distribute_cpus_across_numa,
            "prefer-align-cpus-by-uncorecache",
            "distribute-cpus-across-numa",
        ),
    ];
    match exclusive.iter().find(|(a, b, _, _)| *a && *b) {
        Some((_, _, a, b)) => Err(format!(
            "{CPU_OPTIONS} sets {a} and {b}, which the kubelet refuses together"
        )),
        None => Ok(options),
    }
}

/// The `cpu` of `kubeReserved` or `systemReserved`, zero when absent.
fn reserved_cpu(config: &MergedConfig, key: &str) -> Result<Quantity, String> {
    let Some(value) = config.map(key)?.get("cpu").cloned() else {
        return Ok(Quantity::from_units(0));
    };
    let value = text(&value).ok_or_else(|| format!("{key} cpu is not a quantity"))?;
    // A negative reservation is refused, as by the kubelet's validation.
    Quantity::parse(&value).map_err(|e| format!("{key} cpu {value:?} {e}"))
}

/// What the static CPU Manager reserves: `reservedSystemCPUs` when set, else
/// `ceil(kubeReserved.cpu + systemReserved.cpu)` CPUs.
fn cpu_reservation(config: &MergedConfig) -> Result<CpuReservation, String> {
    const KEY: &str = "reservedSystemCPUs";
    if let Some((value, _)) = config.scalar(KEY) {
        let list = text(value).ok_or_else(|| format!("{KEY} is not a CPU list"))?;
        let cpus = parse_id_list(&list).map_err(|e| format!("{KEY}: {}", e.message))?;
        if !cpus.is_empty() {
            return Ok(CpuReservation::Cpus(cpus));
        }
    }
    let total = reserved_cpu(config, "kubeReserved")?
        .checked_add(&reserved_cpu(config, "systemReserved")?)
        .ok_or("kubeReserved cpu + systemReserved cpu is too large")?;
    // `math.Ceil` of the sum, as the CPU Manager counts it (cpu_manager.go
    // `NewManager`).
    u32::try_from(total.ceil_whole_units())
        .map(CpuReservation::Count)
        .map_err(|_| "kubeReserved cpu + systemReserved cpu is too large".to_owned())
}

/// `reservedMemory`: a list of `{numaNode, limits}`; each limit an integer
/// number of bytes (the kubelet refuses others).
fn memory_reservation(config: &MergedConfig) -> Result<MemoryReservation, String> {
    const KEY: &str = "reservedMemory";
    let mut reservation = MemoryReservation::new();
    let entries = match config.scalar(KEY) {
        None => return Ok(reservation),
        Some((Value::Array(entries), _)) => entries,
        Some(_) => return Err(format!("{KEY} is not a list")),
    };
    for entry in entries {
        let node = entry
            .get("numaNode")
            .and_then(Value::as_u64)
            .and_then(|node| u32::try_from(node).ok())
            .ok_or_else(|| format!("{KEY} has an entry without a numaNode id: {entry}"))?;
        let limits = match entry.get("limits") {
            None | Some(Value::Null) => continue,
            Some(Value::Object(limits)) => limits,
            Some(_) => {
                return Err(format!(
                    "{KEY} limits of NUMA node {node} are not a mapping"
                ))
            }
        };
        for (resource, value) in limits {
            let bytes = text(value)
                .ok_or_else(|| format!("{KEY} {resource} of NUMA node {node} is not a quantity"))
                .and_then(|value| {
                    Quantity::parse(&value).map_err(|e| format!("{KEY} {resource} of NUMA node {node}: {value:?} {e}"))
                })?
                // Whole bytes only: the Memory Manager converts with
                // `Quantity.AsInt64` (memory_manager.go `convertReserved`).
                .whole_units()
                .ok_or_else(|| format!("{KEY} {resource} of NUMA node {node} is not a whole, non-negative number of bytes"))?;
            reservation
                .entry(node)
                .or_default()
                .insert(resource.clone(), bytes);
        }
    }
    Ok(reservation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const HEADER: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

    /// Settings of a main file and drop-ins, each given without its header.
    fn parse_all(texts: &[&str]) -> Result<KubeletSettings, ParseError> {
        let mut files = texts
            .iter()
            .map(|text| parse_file(&format!("{HEADER}{text}")))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter();
        let main = files.next().unwrap();
        settings(&MergedConfig::new(main, files))
    }

    #[rstest]
    #[case::defaults(&["cgroupDriver: systemd\n"], TopologyManagerPolicy::None, TopologyManagerScope::Container, CpuManagerPolicy::None)]
    #[case::all_set(
        &["topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\ncpuManagerPolicy: static\n"],
        TopologyManagerPolicy::SingleNumaNode, TopologyManagerScope::Pod, CpuManagerPolicy::Static
    )]
    #[case::empty_string_is_default(&["topologyManagerPolicy: \"\"\n"], TopologyManagerPolicy::None, TopologyManagerScope::Container, CpuManagerPolicy::None)]
    #[case::null_is_default(&["topologyManagerPolicy: null\n"], TopologyManagerPolicy::None, TopologyManagerScope::Container, CpuManagerPolicy::None)]
    #[case::drop_in_overrides(
        &["topologyManagerPolicy: best-effort\n", "topologyManagerPolicy: restricted\n"],
        TopologyManagerPolicy::Restricted, TopologyManagerScope::Container, CpuManagerPolicy::None
    )]
    #[case::a_drop_in_null_changes_nothing(
        &["topologyManagerPolicy: best-effort\n", "topologyManagerPolicy: null\n"],
        TopologyManagerPolicy::BestEffort, TopologyManagerScope::Container, CpuManagerPolicy::None
    )]
    #[case::a_later_drop_in_null_undoes_an_earlier_drop_in(
        &["topologyManagerPolicy: best-effort\n", "topologyManagerPolicy: restricted\n", "topologyManagerPolicy: null\n"],
        TopologyManagerPolicy::BestEffort, TopologyManagerScope::Container, CpuManagerPolicy::None
    )]
    fn settings_with_defaults(
        #[case] texts: &[&str],
        #[case] policy: TopologyManagerPolicy,
        #[case] scope: TopologyManagerScope,
        #[case] cpu: CpuManagerPolicy,
    ) {
        let settings = parse_all(texts).unwrap();
        assert_eq!(
            (
                settings.topology_manager_policy,
                settings.topology_manager_scope,
                settings.cpu_manager_policy
            ),
            (policy, scope, cpu)
        );
        assert_eq!(settings.memory_manager_policy, MemoryManagerPolicy::None);
        assert_eq!(settings.topology_options, Ok(TopologyOptions::default()));
        assert_eq!(settings.cpu_options, Ok(CpuOptions::default()));
        assert_eq!(settings.cpu_reservation, Ok(CpuReservation::Count(0)));
        assert_eq!(settings.memory_reservation, Ok(MemoryReservation::new()));
    }

    #[rstest]
    #[case::unknown_policy(&["topologyManagerPolicy: SingleNumaNode\n"], "SingleNumaNode")]
    #[case::not_a_string(&["cpuManagerPolicy: [static]\n"], "cpuManagerPolicy")]
    #[case::broken_yaml(&["topologyManagerPolicy: [\n"], "invalid YAML")]
    #[case::memory_policy_in_lowercase(&["memoryManagerPolicy: static\n"], "None, Static")]
    #[case::memory_policy_best_effort_is_windows_only(&["memoryManagerPolicy: BestEffort\n"], "BestEffort")]
    #[case::empty_policy_in_a_drop_in(&["cpuManagerPolicy: static\n", "cpuManagerPolicy: \"\"\n"], "drop-in")]
    fn malformed_settings_are_errors(#[case] texts: &[&str], #[case] expected: &str) {
        let message = parse_all(texts).unwrap_err().to_string();
        assert!(message.contains(expected), "{message}");
    }

    #[rstest]
    #[case::wrong_kind("kind: Pod\n")]
    #[case::no_kind("topologyManagerPolicy: none\n")]
    #[case::empty("")]
    #[case::scalar("just text")]
    #[case::list("- kind: KubeletConfiguration\n")]
    fn other_documents_are_refused(#[case] text: &str) {
        assert!(parse_file(text).is_err());
    }

    #[rstest]
    #[case::unset(&[""], Ok(TopologyOptions::default()))]
    #[case::both(
        &["topologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: \"true\"\n  max-allowable-numa-nodes: \"16\"\n"],
        Ok(TopologyOptions { prefer_closest_numa_nodes: true, max_allowable_numa_nodes: 16 })
    )]
    #[case::go_spellings_of_booleans(
        &["topologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: T\n"],
        Ok(TopologyOptions { prefer_closest_numa_nodes: true, ..TopologyOptions::default() })
    )]
    #[case::unquoted_yaml_boolean(
        &["topologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: true\n"],
        Ok(TopologyOptions { prefer_closest_numa_nodes: true, ..TopologyOptions::default() })
    )]
    #[case::drop_in_maps_merge_by_key(
        &["topologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: \"true\"\n", "topologyManagerPolicyOptions:\n  max-allowable-numa-nodes: \"12\"\n"],
        Ok(TopologyOptions { prefer_closest_numa_nodes: true, max_allowable_numa_nodes: 12 })
    )]
    #[case::below_the_minimum(
        &["topologyManagerPolicyOptions:\n  max-allowable-numa-nodes: \"4\"\n"],
        Err("at least 8")
    )]
    #[case::not_a_boolean(
        &["topologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: \"yes\"\n"],
        Err("not a boolean")
    )]
    #[case::an_option_not_modelled(
        &["topologyManagerPolicyOptions:\n  numa-allocation-strategy: \"none\"\n"],
        Err("numa-allocation-strategy")
    )]
    fn topology_manager_options(
        #[case] texts: &[&str],
        #[case] expected: Result<TopologyOptions, &str>,
    ) {
        let options = parse_all(texts).unwrap().topology_options;
        match expected {
            Ok(expected) => assert_eq!(options, Ok(expected)),
            Err(why) => assert!(options.as_ref().unwrap_err().contains(why), "{options:?}"),
        }
    }

    #[rstest]
    #[case::full_pcpus(
        &["cpuManagerPolicyOptions:\n  full-pcpus-only: \"true\"\n  distribute-cpus-across-numa: \"false\"\n"],
        Ok(CpuOptions { full_pcpus_only: true, ..CpuOptions::default() })
    )]
    #[case::the_options_no_label_publishes(
        &["cpuManagerPolicyOptions:\n  strict-cpu-reservation: \"true\"\n  prefer-align-cpus-by-uncorecache: \"1\"\n"],
        Ok(CpuOptions { strict_cpu_reservation: true, prefer_align_cpus_by_uncorecache: true, ..CpuOptions::default() })
    )]
    #[case::refused_together(
        &["cpuManagerPolicyOptions:\n  full-pcpus-only: \"true\"\n  distribute-cpus-across-cores: \"true\"\n"],
        Err("refuses together")
    )]
    #[case::unknown_option(&["cpuManagerPolicyOptions:\n  spread-evenly: \"true\"\n"], Err("spread-evenly"))]
    #[case::not_a_mapping(&["cpuManagerPolicyOptions: full-pcpus-only\n"], Err("not a mapping"))]
    fn cpu_manager_options(#[case] texts: &[&str], #[case] expected: Result<CpuOptions, &str>) {
        let options = parse_all(texts).unwrap().cpu_options;
        match expected {
            Ok(expected) => assert_eq!(options, Ok(expected)),
            Err(why) => assert!(options.as_ref().unwrap_err().contains(why), "{options:?}"),
        }
    }

    #[rstest]
    #[case::cpu_list(&["reservedSystemCPUs: \"0,8\"\nkubeReserved:\n  cpu: \"4\"\n"], Ok(CpuReservation::Cpus([0, 8].into())))]
    #[case::kube_and_system_reserved_round_up(
        &["kubeReserved:\n  cpu: 1500m\nsystemReserved:\n  cpu: \"1\"\n"],
        Ok(CpuReservation::Count(3))
    )]
    #[case::unquoted_number(&["kubeReserved:\n  cpu: 2\n"], Ok(CpuReservation::Count(2)))]
    #[case::drop_in_adds_system_reserved(
        &["kubeReserved:\n  cpu: 500m\n", "systemReserved:\n  cpu: 500m\n"],
        Ok(CpuReservation::Count(1))
    )]
    #[case::drop_in_replaces_one_key_of_the_map(
        &["kubeReserved:\n  cpu: \"4\"\n  memory: 1Gi\n", "kubeReserved:\n  memory: 2Gi\n"],
        Ok(CpuReservation::Count(4))
    )]
    #[case::empty_list_falls_back_to_the_count(&["reservedSystemCPUs: \"\"\nkubeReserved:\n  cpu: \"1\"\n"], Ok(CpuReservation::Count(1)))]
    #[case::negative(&["kubeReserved:\n  cpu: \"-1\"\n"], Err("negative"))]
    #[case::not_a_quantity(&["kubeReserved:\n  cpu: one\n"], Err("kubeReserved cpu"))]
    #[case::not_a_cpu_list(&["reservedSystemCPUs: \"0-\"\n"], Err("reservedSystemCPUs"))]
    fn cpu_reservations(#[case] texts: &[&str], #[case] expected: Result<CpuReservation, &str>) {
        let reservation = parse_all(texts).unwrap().cpu_reservation;
        match expected {
            Ok(expected) => assert_eq!(reservation, Ok(expected)),
            Err(why) => assert!(
                reservation.as_ref().unwrap_err().contains(why),
                "{reservation:?}"
            ),
        }
    }

    #[test]
    fn memory_reservations_per_node_and_resource() {
        let settings = parse_all(&[
            "reservedMemory:\n  - numaNode: 0\n    limits:\n      memory: 1100Mi\n      hugepages-1Gi: 1Gi\n  - numaNode: 1\n    limits:\n      memory: 500Mi\n  - numaNode: 0\n    limits:\n      memory: 1Gi\n",
        ])
        .unwrap();
        let expected: MemoryReservation = [
            (
                0,
                [
                    ("hugepages-1Gi".to_owned(), 1 << 30),
                    ("memory".to_owned(), 1 << 30),
                ]
                .into(),
            ),
            (1, [("memory".to_owned(), 500 << 20)].into()),
        ]
        .into();
        assert_eq!(settings.memory_reservation, Ok(expected));
    }

    /// A drop-in's list replaces the main file's whole list.
    #[test]
    fn a_drop_in_list_replaces_the_list() {
        let settings = parse_all(&[
            "reservedMemory:\n  - numaNode: 0\n    limits:\n      memory: 1Gi\n  - numaNode: 1\n    limits:\n      memory: 1Gi\n",
            "reservedMemory:\n  - numaNode: 1\n    limits:\n      memory: 2Gi\n",
        ])
        .unwrap();
        let expected: MemoryReservation = [(1, [("memory".to_owned(), 2 << 30)].into())].into();
        assert_eq!(settings.memory_reservation, Ok(expected));
    }

    #[rstest]
    #[case::fraction_of_a_byte("memory: 100m", "whole")]
    #[case::negative("memory: -1Gi", "\"-1Gi\" is negative")]
    #[case::not_a_quantity("memory: lots", "lots")]
    fn malformed_memory_reservations_leave_it_unknown(#[case] limit: &str, #[case] expected: &str) {
        let settings = parse_all(&[&format!(
            "reservedMemory:\n  - numaNode: 0\n    limits:\n      {limit}\n"
        )])
        .unwrap();
        let why = settings.memory_reservation.unwrap_err();
        assert!(why.contains(expected), "{why}");
    }
}
