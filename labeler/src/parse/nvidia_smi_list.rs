//! `nvidia-smi -L`: each GPU by index, and the MIG devices it is cut into.
//!
//! ```text
//! GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-9434a402-...)
//!   MIG 1g.10gb     Device  0: (UUID: MIG-e138a708-...)
//!   MIG 3g.40gb     Device  1: (UUID: MIG-ae9a37c7-...)
//! GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-0e28d4e1-...)
//! ```
//!
//! The GPU index is NVML's, the one `nvidia-smi topo -m` names `GPU<i>`.
//! A MIG line belongs to the GPU line above it. Anything else is an error
//! naming the line: never a guess.

use super::{parse_decimal, strip_terminal_escapes, ParseError};
use std::collections::BTreeMap;

const CONTEXT: &str = "nvidia-smi -L";

/// One GPU and its MIG devices by profile (`1g.10gb`): empty when MIG is off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGpu {
    pub index: u32,
    pub mig_devices: BTreeMap<String, u32>,
}

/// A profile name as `nvidia-smi` prints it: `<n>g.<m>gb`, optionally with
/// `+me` / `+gfx` style suffixes, `-<n>c` compute slices (`1c.3g.40gb`).
fn is_profile(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-'))
        && name.contains('g')
}

pub fn parse(text: &str) -> Result<Vec<ListedGpu>, ParseError> {
    let text = strip_terminal_escapes(text);
    let mut gpus: Vec<ListedGpu> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let error =
            |what: &str| ParseError::new(CONTEXT, format!("line {}: {what}: {line:?}", number + 1));
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("GPU ") {
            let (index, _) = rest
                .split_once(':')
                .ok_or_else(|| error("no ':' after the GPU index"))?;
            let index =
                parse_decimal(index).ok_or_else(|| error("the GPU index is not a number"))?;
            if gpus.iter().any(|g| g.index == index) {
                return Err(error("the GPU index is listed twice"));
            }
            gpus.push(ListedGpu {
                index,
                mig_devices: BTreeMap::new(),
            });
        } else if let Some(rest) = trimmed.strip_prefix("MIG ") {
            let profile = rest
                .split_whitespace()
                .next()
                .filter(|p| is_profile(p))
                .ok_or_else(|| error("no MIG profile"))?;
            if !rest.contains("Device") || !rest.contains("UUID: MIG-") {
                return Err(error("a MIG line without its device and UUID"));
            }
            let gpu = gpus
                .last_mut()
                .ok_or_else(|| error("a MIG device before any GPU"))?;
            let count = gpu.mig_devices.entry(profile.to_owned()).or_insert(0);
            *count = count.saturating_add(1);
        } else {
            return Err(error("neither a GPU nor a MIG device"));
        }
    }
    Ok(gpus)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn mig_devices_belong_to_the_gpu_above() {
        let text = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-a)\n  MIG 1g.10gb     Device  0: (UUID: MIG-b)\n  MIG 1g.10gb     Device  1: (UUID: MIG-c)\n  MIG 3g.40gb     Device  2: (UUID: MIG-d)\nGPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-e)\n";
        let gpus = parse(text).unwrap();
        assert_eq!(gpus.len(), 2);
        assert_eq!(
            gpus[0].mig_devices,
            BTreeMap::from([("1g.10gb".to_owned(), 2), ("3g.40gb".to_owned(), 1)])
        );
        assert!(gpus[1].mig_devices.is_empty());
    }

    #[rstest]
    #[case::mig_first("  MIG 1g.10gb Device 0: (UUID: MIG-a)\n", "before any GPU")]
    #[case::no_index("GPU x: A100 (UUID: GPU-a)\n", "not a number")]
    #[case::twice("GPU 0: A (UUID: GPU-a)\nGPU 0: A (UUID: GPU-b)\n", "listed twice")]
    #[case::other_line("GPU 0: A (UUID: GPU-a)\nNo devices found\n", "neither a GPU")]
    #[case::profile_missing("GPU 0: A (UUID: GPU-a)\n  MIG\n", "neither a GPU")]
    fn unexpected_lines_are_errors(#[case] text: &str, #[case] expected: &str) {
        let error = parse(text).unwrap_err().to_string();
        assert!(error.contains(expected), "{error}");
    }
}
