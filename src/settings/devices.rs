//! The `migResources` and `deviceResources` settings: which device-plugin
//! resources besides `gpuResources` the policy reads in a GPU pod.
//!
//! The kubelet's Topology Manager takes hints from every device plugin
//! resource a container lists (`devicemanager/topology_hints.go`
//! `GetTopologyHints` answers one hint list per resource), so a GPU pod's
//! RDMA HCAs, SR-IOV VFs and MIG slices decide its admission as much as its
//! GPUs do. Both lists name resources exactly (`rdma/ib`) or by a prefix
//! ending in `*` (`rdma/*`):
//!
//! - `migResources`: MIG slices of the device plugin's `mixed` strategy
//!   (`nvidia.com/mig-<profile>`). They count as GPU demand (the pod is a
//!   GPU pod, made Guaranteed with `qos.cpuPerGpu` per slice) and are
//!   aligned as device resources at their parent GPU's NUMA node.
//! - `deviceResources`: other device-plugin resources aligned with the
//!   GPUs; they do not make a pod a GPU pod.
//!
//! A resource of `gpuResources` is a GPU whatever the patterns say, and a
//! resource both lists match is a MIG slice: overlaps have no effect and
//! are no error.

use crate::settings::names::is_extended_resource_name;
use std::collections::BTreeSet;

/// MIG slices under the NVIDIA device plugin's `mixed` strategy.
pub(crate) const DEFAULT_MIG_RESOURCES: [&str; 1] = ["nvidia.com/mig-*"];
/// The resources of the common network device plugins: the RDMA shared
/// device plugin (`rdma/`, the NVIDIA network operator's default prefix),
/// the SR-IOV network device plugin (`intel.com/`, its default prefix;
/// `openshift.io/` on OpenShift).
pub(crate) const DEFAULT_DEVICE_RESOURCES: [&str; 3] = ["rdma/*", "intel.com/*", "openshift.io/*"];

/// A resource name, or a prefix of one (`rdma/*`: every resource whose
/// name starts with `rdma/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourcePattern {
    Exact(String),
    Prefix(String),
}

impl ResourcePattern {
    /// Reads `text`: an extended resource name, or `domain/` and the start
    /// of a name followed by `*`. The error says what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.strip_suffix('*') {
            Some(prefix) => {
                let Some((domain, start)) = prefix.split_once('/') else {
                    return Err(format!(
                        "{text:?} has no domain: a pattern is domain/ and the start of a name followed by *, e.g. rdma/*"
                    ));
                };
                // The prefix with a name completed must be a resource name.
                let completed = format!("{domain}/{start}x");
                if !is_extended_resource_name(&completed)
                    || start.starts_with(|c: char| !c.is_ascii_alphanumeric())
                    || start.contains('*')
                {
                    return Err(format!(
                        "{text:?} is not a resource pattern (domain/ and the start of a name followed by *, e.g. rdma/*)"
                    ));
                }
                Ok(ResourcePattern::Prefix(prefix.to_owned()))
            }
            None if is_extended_resource_name(text) => Ok(ResourcePattern::Exact(text.to_owned())),
            None => Err(format!(
                "{text:?} is not an extended resource name or pattern (domain/name outside kubernetes.io, e.g. rdma/ib, or rdma/*)"
            )),
        }
    }

    pub fn matches(&self, resource: &str) -> bool {
        match self {
            ResourcePattern::Exact(name) => name == resource,
            ResourcePattern::Prefix(prefix) => resource.starts_with(prefix.as_str()),
        }
    }
}

/// What a device resource of a GPU pod is to the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    /// A MIG slice (`migResources`): GPU demand, aligned at its parent GPU.
    MigSlice,
    /// Another device-plugin resource (`deviceResources`), aligned with the GPUs.
    Aligned,
}

/// The validated `migResources` and `deviceResources`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceResources {
    pub mig: Vec<ResourcePattern>,
    pub aligned: Vec<ResourcePattern>,
}

impl DeviceResources {
    /// The defaults, valid by construction (a test keeps them so).
    pub fn defaults() -> Self {
        let parse = |list: &[&str]| {
            list.iter()
                .filter_map(|p| ResourcePattern::parse(p).ok())
                .collect()
        };
        DeviceResources {
            mig: parse(&DEFAULT_MIG_RESOURCES),
            aligned: parse(&DEFAULT_DEVICE_RESOURCES),
        }
    }

    /// What `resource` is, if either list names it (`gpuResources` are
    /// checked before, by the caller).
    pub(crate) fn kind_of(&self, resource: &str) -> Option<DeviceKind> {
        if self.mig.iter().any(|p| p.matches(resource)) {
            Some(DeviceKind::MigSlice)
        } else if self.aligned.iter().any(|p| p.matches(resource)) {
            Some(DeviceKind::Aligned)
        } else {
            None
        }
    }

    pub fn is_empty(&self) -> bool {
        self.mig.is_empty() && self.aligned.is_empty()
    }
}

/// Validates the list under `key`, pushing each problem (naming the key)
/// to `errors`; the patterns that are valid.
pub(crate) fn check_patterns(
    key: &str,
    list: &[String],
    errors: &mut Vec<String>,
) -> Vec<ResourcePattern> {
    let mut seen = BTreeSet::new();
    let mut patterns = Vec::with_capacity(list.len());
    for text in list {
        match ResourcePattern::parse(text) {
            Ok(_) if !seen.insert(text.as_str()) => {
                errors.push(format!("{key}: {text:?} is listed twice"));
            }
            Ok(pattern) => patterns.push(pattern),
            Err(problem) => errors.push(format!("{key}: {problem}")),
        }
    }
    patterns
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::exact("rdma/ib", "rdma/ib", true)]
    #[case::exact_is_not_a_prefix("rdma/ib", "rdma/ib2", false)]
    #[case::prefix("rdma/*", "rdma/rdma_shared_device_a", true)]
    #[case::mig_prefix("nvidia.com/mig-*", "nvidia.com/mig-1g.10gb", true)]
    #[case::mig_prefix_not_the_gpu("nvidia.com/mig-*", "nvidia.com/gpu", false)]
    #[case::other_domain("rdma/*", "rdmax/ib", false)]
    fn patterns_match(#[case] pattern: &str, #[case] resource: &str, #[case] matches: bool) {
        assert_eq!(
            ResourcePattern::parse(pattern).unwrap().matches(resource),
            matches
        );
    }

    #[rstest]
    #[case::no_domain("ib", "is not an extended resource name or pattern")]
    #[case::star_without_domain("rdma*", "has no domain")]
    #[case::star_inside("rdma/*ib", "is not an extended resource name or pattern")]
    #[case::reserved_domain("kubernetes.io/*", "is not a resource pattern")]
    #[case::two_stars("rdma/**", "is not a resource pattern")]
    #[case::uppercase_domain("RDMA/*", "is not a resource pattern")]
    fn invalid_patterns_say_why(#[case] pattern: &str, #[case] expected: &str) {
        let error = ResourcePattern::parse(pattern).unwrap_err();
        assert!(error.contains(expected), "{error}");
        assert!(error.contains(&format!("{pattern:?}")), "{error}");
    }

    #[test]
    fn the_defaults_are_valid() {
        let mut errors = Vec::new();
        check_patterns(
            "migResources",
            &DEFAULT_MIG_RESOURCES.map(str::to_owned),
            &mut errors,
        );
        check_patterns(
            "deviceResources",
            &DEFAULT_DEVICE_RESOURCES.map(str::to_owned),
            &mut errors,
        );
        assert_eq!(errors, Vec::<String>::new());
        let defaults = DeviceResources::defaults();
        assert_eq!(defaults.mig.len(), DEFAULT_MIG_RESOURCES.len());
        assert_eq!(defaults.aligned.len(), DEFAULT_DEVICE_RESOURCES.len());
    }

    #[rstest]
    #[case::mig("nvidia.com/mig-3g.40gb", Some(DeviceKind::MigSlice))]
    #[case::shared_rdma("rdma/rdma_shared_device_a", Some(DeviceKind::Aligned))]
    #[case::sriov("intel.com/intel_sriov_netdevice", Some(DeviceKind::Aligned))]
    #[case::openshift_sriov("openshift.io/mlnx_sriov_rdma", Some(DeviceKind::Aligned))]
    #[case::not_a_device("example.com/license", None)]
    fn default_kinds(#[case] resource: &str, #[case] kind: Option<DeviceKind>) {
        assert_eq!(DeviceResources::defaults().kind_of(resource), kind);
    }

    #[test]
    fn a_pattern_listed_twice_is_named() {
        let mut errors = Vec::new();
        let list = ["rdma/*".to_owned(), "rdma/*".to_owned()];
        let patterns = check_patterns("deviceResources", &list, &mut errors);
        assert_eq!(patterns.len(), 1);
        assert_eq!(errors, vec!["deviceResources: \"rdma/*\" is listed twice"]);
    }
}
