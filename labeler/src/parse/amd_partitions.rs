//! Parsers for the sysfs files the AMD device plugin reads to enumerate
//! compute partitions (ROCm/k8s-device-plugin internal/pkg/amdgpu/amdgpu.go
//! `GetAMDGPUs`): a DRM card's `dev` (`226:1`), a KFD topology node's
//! `properties` (`drm_render_minor 128`), and a render node's directory
//! name (`renderD128`).

use super::{parse_decimal, ParseError};

/// The minor number of a DRM device's `dev` file (`<major>:<minor>`), which
/// the device plugin reads from `drm/card*/dev` to find a partition's GPU.
pub fn parse_drm_dev(text: &str) -> Result<u32, ParseError> {
    const CONTEXT: &str = "DRM dev";
    let value = text.trim_end_matches('\n');
    let (major, minor) = value
        .split_once(':')
        .ok_or_else(|| ParseError::new(CONTEXT, format!("{value:?} is not <major>:<minor>")))?;
    match (parse_decimal(major), parse_decimal(minor)) {
        (Some(_), Some(minor)) => Ok(minor),
        _ => Err(ParseError::new(
            CONTEXT,
            format!("{value:?} is not <major>:<minor> in decimal"),
        )),
    }
}

/// The `drm_render_minor` of a KFD topology node's `properties` (one
/// `<name> <value>` per line), `None` when it has none or it is 0 (a CPU
/// node): the device plugin's `renderNodeSetFromTopology` keeps only values
/// above 0.
pub fn parse_kfd_render_minor(text: &str) -> Result<Option<u32>, ParseError> {
    const CONTEXT: &str = "KFD topology properties";
    let Some(value) = text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("drm_render_minor")).then(|| words.collect::<Vec<_>>())
    }) else {
        return Ok(None);
    };
    match value.as_slice() {
        [number] => parse_decimal(number)
            .map(|minor| (minor > 0).then_some(minor))
            .ok_or_else(|| {
                ParseError::new(
                    CONTEXT,
                    format!("drm_render_minor {number:?} is not a decimal integer"),
                )
            }),
        _ => Err(ParseError::new(
            CONTEXT,
            format!("drm_render_minor has {} values, not one", value.len()),
        )),
    }
}

/// The minor of a render node named `renderD<minor>` in a `drm/`
/// directory; `None` for any other entry (`card1`, `controlD64`).
pub fn render_node_minor(name: &str) -> Option<u32> {
    name.strip_prefix("renderD").and_then(parse_decimal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::primary_card("226:1\n", Ok(1))]
    #[case::partition_card("226:9", Ok(9))]
    #[case::no_colon("226\n", Err("not <major>:<minor>"))]
    #[case::negative_minor("226:-1\n", Err("in decimal"))]
    #[case::empty("", Err("not <major>:<minor>"))]
    fn drm_dev_files(#[case] text: &str, #[case] expected: Result<u32, &str>) {
        match (parse_drm_dev(text), expected) {
            (Ok(minor), Ok(want)) => assert_eq!(minor, want),
            (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{e}"),
            (got, want) => panic!("{text:?}: {got:?}, expected {want:?}"),
        }
    }

    #[rstest]
    #[case::gpu_node("simd_count 152\ndrm_render_minor 136\nnum_xcc 1\n", Ok(Some(136)))]
    #[case::cpu_node("cpu_cores_count 96\nsimd_count 0\ndrm_render_minor 0\n", Ok(None))]
    #[case::no_render_minor("cpu_cores_count 96\n", Ok(None))]
    #[case::not_a_number("drm_render_minor x\n", Err("not a decimal integer"))]
    #[case::two_values("drm_render_minor 128 129\n", Err("2 values"))]
    #[case::no_value("drm_render_minor\n", Err("0 values"))]
    fn kfd_properties(#[case] text: &str, #[case] expected: Result<Option<u32>, &str>) {
        match (parse_kfd_render_minor(text), expected) {
            (Ok(minor), Ok(want)) => assert_eq!(minor, want),
            (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{e}"),
            (got, want) => panic!("{text:?}: {got:?}, expected {want:?}"),
        }
    }

    #[rstest]
    #[case::render_node("renderD128", Some(128))]
    #[case::card("card1", None)]
    #[case::control("controlD64", None)]
    #[case::no_number("renderD", None)]
    fn render_node_names(#[case] name: &str, #[case] expected: Option<u32>) {
        assert_eq!(render_node_minor(name), expected);
    }
}
