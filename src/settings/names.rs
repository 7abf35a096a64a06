//! Kubernetes name rules the settings are checked against; the DNS label
//! and subdomain rules are `gpu_topology::names`, shared with the labeler.

use gpu_topology::names::is_dns_subdomain;

/// Kubernetes limits a qualified name's name part to 63 characters.
const MAX_NAME_LEN: usize = 63;
/// Extended resources may not live in the kubernetes.io domain, which is
/// reserved for native resources.
const RESERVED_DOMAIN: &str = "kubernetes.io";

/// An extended resource name: `domain/name` with a DNS-subdomain domain outside
/// kubernetes.io and a qualified name part (letters, digits, '-', '_', '.',
/// starting and ending with a letter or digit), e.g. `nvidia.com/gpu`.
pub(crate) fn is_extended_resource_name(resource: &str) -> bool {
    let Some((domain, name)) = resource.split_once('/') else {
        return false;
    };
    let reserved = domain == RESERVED_DOMAIN || domain.ends_with(".kubernetes.io");
    let name_ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric());
    !reserved && name_ok && is_dns_subdomain(domain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::nvidia("nvidia.com/gpu", true)]
    #[case::intel("gpu.intel.com/i915", true)]
    #[case::mig_profile("nvidia.com/mig-1g.10gb", true)]
    #[case::no_domain("gpu", false)]
    #[case::native("cpu", false)]
    #[case::reserved_domain("kubernetes.io/gpu", false)]
    #[case::reserved_subdomain("node.kubernetes.io/gpu", false)]
    #[case::empty_name("nvidia.com/", false)]
    #[case::two_slashes("nvidia.com/gpu/x", false)]
    #[case::leading_dash("nvidia.com/-gpu", false)]
    #[case::uppercase_domain("NVIDIA.com/gpu", false)]
    #[case::long_name(
        "nvidia.com/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        false
    )]
    fn extended_resource_names(#[case] name: &str, #[case] expected: bool) {
        assert_eq!(is_extended_resource_name(name), expected);
    }
}
