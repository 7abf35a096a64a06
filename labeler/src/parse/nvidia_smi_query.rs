//! Parser for the `Fabric` sections of `nvidia-smi -q` output: each GPU's
//! multi-node NVLink registration (GB200 NVL72), which nvidia-smi prints
//! from NVML's `nvmlDeviceGetGpuFabricInfo`:
//!
//! ```text
//! GPU 00000008:01:00.0
//!     ...
//!     Fabric
//!         State                             : Completed
//!         Status                            : Success
//!         CliqueId                          : 2
//!         ClusterUUID                       : dc6e40c4-d722-4357-9ba6-5291dd461278
//!         Health
//!             Summary                       : Unhealthy
//! ```
//!
//! Whether a GPU is attached follows go-nvlib's `IsFabricAttached`, which GPU
//! Feature Discovery calls (k8s-device-plugin internal/lm/fabric.go
//! `getFabricIDs`): state `Completed`, status `Success`, and a cluster UUID
//! that is not all zeros (H100 reports `Completed` with a zero UUID).

use super::{parse_decimal, ParseError};
use gpu_topology::GpuClique;

const CONTEXT: &str = "nvidia-smi -q output";
const COMPLETED: &str = "Completed";
const SUCCESS: &str = "Success";
const ZERO_UUID: &str = "00000000-0000-0000-0000-000000000000";

fn error(message: impl Into<String>) -> ParseError {
    ParseError::new(CONTEXT, message)
}

/// One GPU's fabric registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuFabric {
    /// The GPU's header (`GPU 00000008:01:00.0`), or `Fabric section <n>`
    /// for an excerpt without headers.
    pub gpu: String,
    pub attachment: Attachment,
}

/// Whether a GPU is in a multi-node NVLink clique.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attachment {
    Attached(GpuClique),
    /// Not attached, and why (`State Not Supported`, `Status Insufficient
    /// Resources`, a zero ClusterUUID).
    NotAttached(String),
}

/// Every `Fabric` section of `nvidia-smi -q` output, in order. Output
/// without any (a driver before fabric info, or a GPU without it) gives
/// none. The `Attached GPUs` count, when printed, must match the GPU
/// headers (else the output was cut short).
pub fn parse(text: &str) -> Result<Vec<GpuFabric>, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut fabrics = Vec::new();
    let mut gpu: Option<&str> = None;
    let mut headers = 0usize;
    let mut attached: Option<usize> = None;
    for (index, line) in lines.iter().enumerate() {
        if let Some(name) = line
            .strip_prefix("GPU ")
            .filter(|rest| !rest.starts_with(' '))
        {
            gpu = Some(name.trim());
            headers += 1;
        } else if let Some(count) = field(line, "Attached GPUs") {
            attached = Some(
                parse_decimal(count)
                    .ok_or_else(|| error(format!("Attached GPUs {count:?} is not a count")))?
                    as usize,
            );
        } else if line.trim() == "Fabric" {
            let name = gpu.map_or_else(
                || format!("Fabric section {}", fabrics.len() + 1),
                |g| format!("GPU {g}"),
            );
            let section = section_fields(&lines, index);
            let attachment = attachment(&name, &section)?;
            fabrics.push(GpuFabric {
                gpu: name,
                attachment,
            });
        }
    }
    match attached {
        Some(count) if count != headers => Err(error(format!(
            "Attached GPUs says {count} but {headers} GPU sections follow (truncated?)"
        ))),
        _ => Ok(fabrics),
    }
}

/// `Key : value` of `line` when its key is `key`.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let (name, value) = line.split_once(':')?;
    (name.trim() == key).then(|| value.trim())
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The `Key : value` lines directly inside the section whose title is
/// `lines[title]`: those indented as its first line, up to the first line
/// indented no deeper than the title (nested sections such as `Health`
/// are skipped).
fn section_fields<'a>(lines: &[&'a str], title: usize) -> Vec<(&'a str, &'a str)> {
    let Some(title_line) = lines.get(title) else {
        return Vec::new();
    };
    let outer = indentation(title_line);
    let body: Vec<&str> = lines
        .iter()
        .skip(title + 1)
        .take_while(|line| !line.trim().is_empty() && indentation(line) > outer)
        .copied()
        .collect();
    let Some(inner) = body.first().map(|line| indentation(line)) else {
        return Vec::new();
    };
    body.iter()
        .filter(|line| indentation(line) == inner)
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim(), value.trim()))
        .collect()
}

fn attachment(gpu: &str, fields: &[(&str, &str)]) -> Result<Attachment, ParseError> {
    let value = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let state =
        value("State").ok_or_else(|| error(format!("the Fabric section of {gpu} has no State")))?;
    if state != COMPLETED {
        return Ok(Attachment::NotAttached(format!("State {state}")));
    }
    match value("Status") {
        Some(SUCCESS) => {}
        Some(status) => return Ok(Attachment::NotAttached(format!("Status {status}"))),
        None => return Err(error(format!("the Fabric section of {gpu} has no Status"))),
    }
    let uuid = value("ClusterUUID")
        .ok_or_else(|| error(format!("the Fabric section of {gpu} has no ClusterUUID")))?;
    if uuid == ZERO_UUID {
        return Ok(Attachment::NotAttached("ClusterUUID all zeros".to_owned()));
    }
    let clique = value("CliqueId")
        .ok_or_else(|| error(format!("the Fabric section of {gpu} has no CliqueId")))?;
    let clique = parse_decimal(clique).ok_or_else(|| {
        error(format!(
            "{gpu}: CliqueId {clique:?} is not a decimal integer"
        ))
    })?;
    GpuClique::new(uuid, clique)
        .map(Attachment::Attached)
        .ok_or_else(|| error(format!("{gpu}: ClusterUUID {uuid:?} is not a UUID")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn gpu(fabric: &str) -> String {
        format!("Attached GPUs : 1\nGPU 00000008:01:00.0\n    Product Name : NVIDIA GB200\n    Fabric\n{fabric}    Processes : None\n")
    }

    #[rstest]
    #[case::no_state(&gpu("        Status : Success\n"), "no State")]
    #[case::no_status(&gpu("        State : Completed\n"), "no Status")]
    #[case::no_uuid(&gpu("        State : Completed\n        Status : Success\n        CliqueId : 2\n"), "no ClusterUUID")]
    #[case::no_clique(&gpu("        State : Completed\n        Status : Success\n        ClusterUUID : dc6e40c4-d722-4357-9ba6-5291dd461278\n"), "no CliqueId")]
    #[case::clique_not_a_number(&gpu("        State : Completed\n        Status : Success\n        CliqueId : two\n        ClusterUUID : dc6e40c4-d722-4357-9ba6-5291dd461278\n"), "\"two\"")]
    #[case::uuid_not_a_uuid(&gpu("        State : Completed\n        Status : Success\n        CliqueId : 2\n        ClusterUUID : dc6e40c4\n"), "not a UUID")]
    #[case::truncated(
        "Attached GPUs : 2\nGPU 00000008:01:00.0\n    Fabric\n        State : N/A\n",
        "truncated"
    )]
    #[case::count_not_a_number("Attached GPUs : many\n", "not a count")]
    fn malformed_output_is_an_error_saying_why(#[case] text: &str, #[case] expected: &str) {
        let message = parse(text).unwrap_err().to_string();
        assert!(message.contains(expected), "{message}");
    }

    #[test]
    fn nested_sections_are_not_read_as_the_fabric_fields() {
        let text =
            gpu("        State : Not Supported\n        Health\n            State : Completed\n");
        let fabrics = parse(&text).unwrap();
        assert_eq!(
            fabrics[0].attachment,
            Attachment::NotAttached("State Not Supported".to_owned())
        );
    }
}
