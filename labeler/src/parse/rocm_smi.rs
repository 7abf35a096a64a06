//! Parser for `rocm-smi --showtopo` output: the "Link Type between two GPUs"
//! matrix (XGMI or PCIE per pair) and the "Numa Nodes" section.

use super::{parse_decimal, ParseError};
use crate::model::{FabricLink, Links, NumaReading, PairLink, Tool, ToolGpu, ToolReport};

const CONTEXT: &str = "rocm-smi --showtopo output";
const LINK_TYPE_SECTION: &str = "Link Type between two GPUs";
const NUMA_SECTION: &str = "Numa Nodes";
/// rocm-smi always ends with this banner; without it the output was cut short.
const FOOTER: &str = "End of ROCm SMI Log";

fn error(message: impl Into<String>) -> ParseError {
    ParseError::new(CONTEXT, message)
}

/// Parses the whole output of `rocm-smi --showtopo`.
pub fn parse(text: &str) -> Result<ToolReport, ParseError> {
    let sections = split_sections(text);
    if !sections.iter().any(|(title, _)| *title == FOOTER) {
        return Err(error(format!("no {FOOTER:?} banner (truncated?)")));
    }
    let section = |title: &str| {
        sections
            .iter()
            .find(|(t, _)| *t == title)
            .map(|(_, lines)| lines.as_slice())
            .ok_or_else(|| error(format!("no {title:?} section")))
    };
    let links = parse_link_types(section(LINK_TYPE_SECTION)?)?;
    let numa = parse_numa(section(NUMA_SECTION)?, links.len())?;
    let gpus = numa
        .into_iter()
        .enumerate()
        .map(|(index, numa)| ToolGpu {
            name: format!("GPU{index}"),
            pci_address: None,
            numa,
        })
        .collect();
    Ok(ToolReport {
        tool: Tool::RocmSmi,
        gpus,
        links,
        nvswitch: false,
        from_earlier_run: false,
    })
}

/// Splits the output at `=== Title ===` banners into (title, non-blank lines).
fn split_sections(text: &str) -> Vec<(&str, Vec<&str>)> {
    let mut sections: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.len() > 2 && trimmed.starts_with('=') && trimmed.ends_with('=') {
            sections.push((trimmed.trim_matches('=').trim(), Vec::new()));
        } else if let Some((_, lines)) = sections.last_mut().filter(|_| !trimmed.is_empty()) {
            lines.push(trimmed);
        }
    }
    sections
}

/// `GPU3` -> 3.
fn gpu_index(token: &str) -> Option<usize> {
    token
        .strip_prefix("GPU")
        .and_then(parse_decimal)
        .map(|i| i as usize)
}

fn parse_link_types(lines: &[&str]) -> Result<Links, ParseError> {
    let (header, rows) = lines
        .split_first()
        .ok_or_else(|| error("the link type matrix is empty"))?;
    let columns: Vec<&str> = header.split_whitespace().collect();
    if columns.is_empty()
        || columns
            .iter()
            .enumerate()
            .any(|(i, c)| gpu_index(c) != Some(i))
    {
        return Err(error(format!(
            "link type header {header:?} is not GPU0..GPUn"
        )));
    }
    let size = columns.len();
    if rows.len() != size {
        return Err(error(format!(
            "link type matrix has {} rows for {size} GPUs",
            rows.len()
        )));
    }
    let mut cells: Vec<Vec<Option<FabricLink>>> = Vec::with_capacity(size);
    for (row, line) in rows.iter().enumerate() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        match tokens.split_first() {
            Some((name, values)) if gpu_index(name) == Some(row) && values.len() == size => {
                cells.push(
                    values
                        .iter()
                        .enumerate()
                        .map(|(col, value)| link_cell(value, row == col))
                        .collect::<Result<_, _>>()?,
                );
            }
            _ => {
                return Err(error(format!(
                    "link type row {line:?} is not GPU{row} with {size} cells"
                )))
            }
        }
    }
    Links::from_square(&cells, true, |fabric| PairLink { fabric, pcie: None })
        .map_err(|(a, b)| error(format!("asymmetric link types between GPU{a} and GPU{b}")))
}

fn link_cell(value: &str, diagonal: bool) -> Result<Option<FabricLink>, ParseError> {
    match (value, diagonal) {
        ("0" | "X", true) => Ok(None),
        ("XGMI", false) => Ok(Some(FabricLink::Xgmi)),
        ("PCIE", false) => Ok(None),
        _ => Err(error(format!("unexpected link type {value:?}"))),
    }
}

/// Reads `GPU 0 : (Topology) Numa Node: 0` (and `Numa Affinity`) lines.
fn parse_numa(lines: &[&str], size: usize) -> Result<Vec<NumaReading>, ParseError> {
    let mut node: Vec<Option<i64>> = vec![None; size];
    let mut affinity: Vec<Option<i64>> = vec![None; size];
    for line in lines {
        let parts: Vec<&str> = line.split(':').map(str::trim).collect();
        let (gpu, field, value) = match parts.as_slice() {
            [gpu, field, value] => (*gpu, *field, *value),
            _ => return Err(error(format!("unexpected NUMA line {line:?}"))),
        };
        let index = gpu
            .strip_prefix("GPU")
            .map(|i| i.trim().trim_start_matches('[').trim_end_matches(']'))
            .and_then(parse_decimal)
            .map(|i| i as usize)
            .filter(|&i| i < size)
            .ok_or_else(|| error(format!("NUMA line {line:?} names no GPU of the matrix")))?;
        let value = match value {
            "-1" => -1,
            other => i64::from(
                parse_decimal(other)
                    .ok_or_else(|| error(format!("NUMA value {other:?} in {line:?}")))?,
            ),
        };
        let slot = match field {
            "(Topology) Numa Node" => &mut node[index],
            "(Topology) Numa Affinity" => &mut affinity[index],
            _ => return Err(error(format!("unexpected NUMA field {field:?}"))),
        };
        *slot = Some(value);
    }
    (0..size)
        .map(|gpu| match (node[gpu], affinity[gpu]) {
            (None, _) => Err(error(format!(
                "no Numa Node line for GPU {gpu} (truncated?)"
            ))),
            (Some(n), Some(a)) if n >= 0 && a >= 0 && n != a => Err(error(format!(
                "GPU {gpu} Numa Node {n} disagrees with its Numa Affinity {a}"
            ))),
            (Some(n), _) => {
                Ok(u32::try_from(n).map_or(NumaReading::NotAvailable, NumaReading::Node))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn output(matrix: &str, numa: &str) -> String {
        format!(
            "=== ROCm System Management Interface ===\n=== Link Type between two GPUs ===\n{matrix}\n\
             === Numa Nodes ===\n{numa}\n=== End of ROCm SMI Log ===\n"
        )
    }

    const PAIR: &str = "      GPU0  GPU1\nGPU0  0     XGMI\nGPU1  XGMI  0";

    #[test]
    fn xgmi_pair_with_numa() {
        let report = parse(&output(
            PAIR,
            "GPU 0 : (Topology) Numa Node: 0\nGPU[1] : (Topology) Numa Node: -1",
        ))
        .unwrap();
        assert_eq!(report.gpus[0].numa, NumaReading::Node(0));
        assert_eq!(report.gpus[1].numa, NumaReading::NotAvailable);
        assert_eq!(report.links.fabric_group_max(), Some(2));
    }

    #[rstest]
    #[case::no_footer("=== Link Type between two GPUs ===\nGPU0\nGPU0 0\n", "truncated")]
    #[case::missing_numa(&output(PAIR, "GPU 0 : (Topology) Numa Node: 0"), "GPU 1")]
    #[case::disagreeing_numa(
        &output(PAIR, "GPU 0 : (Topology) Numa Node: 0\nGPU 0 : (Topology) Numa Affinity: 1\nGPU 1 : (Topology) Numa Node: 1"),
        "disagrees"
    )]
    #[case::unknown_link(&output("      GPU0  GPU1\nGPU0  0     FOO\nGPU1  FOO  0", ""), "FOO")]
    #[case::asymmetric(&output("      GPU0  GPU1\nGPU0  0     XGMI\nGPU1  PCIE  0", ""), "asymmetric")]
    #[case::missing_row(&output("      GPU0  GPU1\nGPU0  0     XGMI", ""), "rows")]
    fn malformed_output_is_an_error_saying_why(#[case] text: &str, #[case] expected: &str) {
        let message = parse(text).unwrap_err().to_string();
        assert!(message.contains(expected), "{message}");
    }
}
