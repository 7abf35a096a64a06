//! Parser for the kubelet's config file (`KubeletConfiguration`) and its
//! drop-in files, reduced to the three settings the labels publish.

use super::ParseError;
use gpu_topology::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};
use serde::Deserialize;
use std::str::FromStr;

const CONTEXT: &str = "kubelet config";
const KIND: &str = "KubeletConfiguration";

/// The kubelet settings that decide how GPUs, CPUs and memory get aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KubeletSettings {
    pub topology_manager_policy: TopologyManagerPolicy,
    pub topology_manager_scope: TopologyManagerScope,
    pub cpu_manager_policy: CpuManagerPolicy,
}

/// One config document as written: absent (or empty) keys are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfigFile {
    kind: Option<String>,
    topology_manager_policy: Option<String>,
    topology_manager_scope: Option<String>,
    cpu_manager_policy: Option<String>,
}

/// Parses one config (or drop-in) file; the file must be a `KubeletConfiguration`.
pub fn parse_file(text: &str) -> Result<KubeletConfigFile, ParseError> {
    let file: Option<KubeletConfigFile> = serde_saphyr::from_str(text)
        .map_err(|e| ParseError::new(CONTEXT, format!("invalid YAML: {e}")))?;
    let file = file.ok_or_else(|| ParseError::new(CONTEXT, "the file is empty"))?;
    match file.kind.as_deref() {
        Some(KIND) => Ok(file),
        other => Err(ParseError::new(
            CONTEXT,
            format!("kind is {other:?}, expected {KIND:?}"),
        )),
    }
}

/// Applies drop-ins over the main file in order (later files win, as the
/// kubelet merges `--config-dir`), then the kubelet's defaults for absent keys:
/// `topologyManagerPolicy: none`, `topologyManagerScope: container`,
/// `cpuManagerPolicy: none`.
pub fn settings(files: &[KubeletConfigFile]) -> Result<KubeletSettings, ParseError> {
    let last = |field: fn(&KubeletConfigFile) -> &Option<String>| {
        files
            .iter()
            .rev()
            .filter_map(|file| field(file).as_deref())
            // The kubelet treats an empty string as unset and defaults it.
            .find(|value| !value.is_empty())
    };
    Ok(KubeletSettings {
        topology_manager_policy: setting(
            "topologyManagerPolicy",
            last(|f| &f.topology_manager_policy),
            TopologyManagerPolicy::None,
            TopologyManagerPolicy::EXPECTED,
        )?,
        topology_manager_scope: setting(
            "topologyManagerScope",
            last(|f| &f.topology_manager_scope),
            TopologyManagerScope::Container,
            TopologyManagerScope::EXPECTED,
        )?,
        cpu_manager_policy: setting(
            "cpuManagerPolicy",
            last(|f| &f.cpu_manager_policy),
            CpuManagerPolicy::None,
            CpuManagerPolicy::EXPECTED,
        )?,
    })
}

fn setting<T: FromStr>(
    key: &str,
    value: Option<&str>,
    default: T,
    expected: &str,
) -> Result<T, ParseError> {
    match value {
        None => Ok(default),
        Some(value) => value.parse().map_err(|_| {
            ParseError::new(CONTEXT, format!("{key} is {value:?}, expected {expected}"))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const HEADER: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

    fn parse_all(texts: &[&str]) -> Result<KubeletSettings, ParseError> {
        let files = texts
            .iter()
            .map(|text| parse_file(&format!("{HEADER}{text}")))
            .collect::<Result<Vec<_>, _>>()?;
        settings(&files)
    }

    #[rstest]
    #[case::defaults(&["cgroupDriver: systemd\n"], TopologyManagerPolicy::None, TopologyManagerScope::Container, CpuManagerPolicy::None)]
    #[case::all_set(
        &["topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\ncpuManagerPolicy: static\n"],
        TopologyManagerPolicy::SingleNumaNode, TopologyManagerScope::Pod, CpuManagerPolicy::Static
    )]
    #[case::empty_string_is_default(&["topologyManagerPolicy: \"\"\n"], TopologyManagerPolicy::None, TopologyManagerScope::Container, CpuManagerPolicy::None)]
    #[case::drop_in_overrides(
        &["topologyManagerPolicy: best-effort\n", "topologyManagerPolicy: restricted\n"],
        TopologyManagerPolicy::Restricted, TopologyManagerScope::Container, CpuManagerPolicy::None
    )]
    fn settings_with_defaults(
        #[case] texts: &[&str],
        #[case] policy: TopologyManagerPolicy,
        #[case] scope: TopologyManagerScope,
        #[case] cpu: CpuManagerPolicy,
    ) {
        let expected = KubeletSettings {
            topology_manager_policy: policy,
            topology_manager_scope: scope,
            cpu_manager_policy: cpu,
        };
        assert_eq!(parse_all(texts).unwrap(), expected);
    }

    #[rstest]
    #[case::unknown_policy("topologyManagerPolicy: SingleNumaNode\n", "SingleNumaNode")]
    #[case::not_a_string("cpuManagerPolicy: [static]\n", "invalid YAML")]
    #[case::broken_yaml("topologyManagerPolicy: [\n", "invalid YAML")]
    fn malformed_settings_are_errors(#[case] text: &str, #[case] expected: &str) {
        let message = parse_all(&[text]).unwrap_err().to_string();
        assert!(message.contains(expected), "{message}");
    }

    #[rstest]
    #[case::wrong_kind("kind: Pod\n")]
    #[case::no_kind("topologyManagerPolicy: none\n")]
    #[case::empty("")]
    #[case::scalar("just text")]
    fn other_documents_are_refused(#[case] text: &str) {
        assert!(parse_file(text).is_err());
    }
}
