//! Parser for `nvidia-smi topo -m` (and `-mp`) output.
//!
//! The format drifted across drivers: tabs or spaces (and hand-edited mixes),
//! NIC columns named `NICn` with a legend or literally `mlx5_n`, a `NUMA
//! Affinity` column only since ~450 drivers, a `GPU NUMA ID` column since ~525,
//! an empty cell after `NUMA Affinity` in every row, trailing tabs on NIC
//! rows, and captures taken in a terminal with ANSI escapes (an underlined
//! header). Escape sequences are stripped first. The matrix is split on
//! whitespace and every row checked against the header. The values after the
//! matrix are read by tab-separated cell when every GPU row was written with
//! clean tabs, since only cells tell an empty value (the `CPU Affinity` of a
//! GPU outside the caller's cpuset, as in a Slurm job or a cgroup) from a
//! missing one; otherwise (space-aligned copies, hand edits) by whitespace.
//!
//! Deliberately ignored: the `CPU Affinity` column (it shows the calling
//! process's cpuset, e.g. a container's, not the GPU's NUMA node) and `SYS` as
//! a NUMA hint (VMs report SYS between GPUs on one node).

use super::{parse_decimal, strip_terminal_escapes, ParseError};
use crate::model::{FabricLink, Links, NumaReading, PairLink, PciePath, Tool, ToolGpu, ToolReport};

const CONTEXT: &str = "nvidia-smi topo output";
/// `N/A`, as nvidia-smi prints an unknown value.
const NOT_AVAILABLE: &str = "N/A";

/// Whether the output can show NVLinks at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvlinkView {
    /// `topo -m`: NV# cells present, or the legend explains `NV#`.
    Shown,
    /// `topo -mp`: a complete legend without `NV#`; NVLinks are not shown.
    Hidden,
    /// No legend (an excerpt) and no NV# cell: cannot tell `-m` from `-mp`.
    Undetermined,
}

/// A parsed `nvidia-smi topo` matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvidiaSmiTopology {
    pub gpus: Vec<ToolGpu>,
    /// GPU-to-GPU links; fabric links visible only for [`NvlinkView::Shown`].
    pub links: Links,
    pub view: NvlinkView,
    /// NIC columns (`NICn` or `mlx5_n`), not used for labels.
    pub nics: usize,
}

impl NvidiaSmiTopology {
    /// The report for reconciliation. `ran_topo_m` is true when the labeler ran
    /// `nvidia-smi topo -m` itself, so an undetermined view is known to show NVLinks.
    pub fn into_report(self, ran_topo_m: bool) -> ToolReport {
        let mut links = self.links;
        links.fabric_visible = match self.view {
            NvlinkView::Shown => true,
            NvlinkView::Hidden => false,
            NvlinkView::Undetermined => ran_topo_m,
        };
        ToolReport {
            tool: Tool::NvidiaSmi,
            gpus: self.gpus,
            links,
            nvswitch: false,
            from_earlier_run: false,
        }
    }
}

/// The columns after the matrix, in header order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TailColumn {
    CpuAffinity,
    NumaAffinity,
    GpuNumaId,
}

/// One matrix cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    Diagonal,
    NvLink(u32),
    Pcie(PciePath),
}

impl Cell {
    fn parse(token: &str) -> Option<Cell> {
        let path = match token {
            "X" => return Some(Cell::Diagonal),
            "PIX" => PciePath::Pix,
            "PXB" => PciePath::Pxb,
            "PHB" => PciePath::Phb,
            "NODE" => PciePath::Node,
            // Drivers before ~384 printed SOC where newer ones print SYS.
            "SYS" | "SOC" => PciePath::Sys,
            _ => {
                return token
                    .strip_prefix("NV")
                    .and_then(parse_decimal)
                    .filter(|&links| links > 0)
                    .map(Cell::NvLink)
            }
        };
        Some(Cell::Pcie(path))
    }

    fn link(self) -> PairLink {
        match self {
            Cell::Diagonal => PairLink::default(),
            Cell::NvLink(links) => PairLink {
                fabric: Some(FabricLink::NvLink { links }),
                pcie: None,
            },
            Cell::Pcie(path) => PairLink {
                fabric: None,
                pcie: Some(path),
            },
        }
    }
}

fn error(message: impl Into<String>) -> ParseError {
    ParseError::new(CONTEXT, message)
}

/// Parses the whole output of `nvidia-smi topo -m` or `-mp`.
pub fn parse(text: &str) -> Result<NvidiaSmiTopology, ParseError> {
    let text = strip_terminal_escapes(text);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let header_at = lines
        .iter()
        .position(|line| line.split_whitespace().next() == Some("GPU0"))
        .ok_or_else(|| error("no header line starting with GPU0"))?;
    let (columns, tail) = parse_header(lines[header_at])?;
    let gpu_count = columns.iter().take_while(|c| is_gpu_column(c)).count();

    let mut cells: Vec<Vec<Cell>> = Vec::with_capacity(gpu_count);
    let mut tails: Vec<Vec<&str>> = Vec::with_capacity(gpu_count);
    let mut tab_tails: Vec<Option<Vec<&str>>> = Vec::with_capacity(gpu_count);
    for (row, column) in columns.iter().enumerate() {
        let line = lines.get(header_at + 1 + row).ok_or_else(|| {
            error(format!(
                "output ends after {row} of {} matrix rows (truncated?)",
                columns.len()
            ))
        })?;
        // A row cut mid-line could still look valid ("NV18" cut to "NV1"), so a
        // matrix row must be complete: newline-terminated.
        if !line.ends_with('\n') {
            return Err(error(format!(
                "row {column} is not newline-terminated (truncated?)"
            )));
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let (row_cells, rest) = parse_row(&tokens, column, row, columns.len())?;
        if row < gpu_count {
            tab_tails.push(tab_cells_after_matrix(line, column, &row_cells));
            cells.push(row_cells);
            tails.push(rest.to_vec());
        } else if let Some(extra) = rest.first() {
            return Err(error(format!(
                "NIC row {column} has unexpected value {extra:?} after the matrix"
            )));
        }
    }

    let gpu_columns = &columns[..gpu_count];
    let numa = match tab_tails.into_iter().collect::<Option<Vec<_>>>() {
        Some(tab_tails) => parse_tab_tails(gpu_columns, &tab_tails, &tail)?,
        None => parse_tails(gpu_columns, &tails, &tail)?,
    };
    let links = gpu_links(gpu_columns, &cells)?;
    let nvlink_shown = cells
        .iter()
        .flatten()
        .any(|cell| matches!(cell, Cell::NvLink(_)));
    let view = if nvlink_shown {
        NvlinkView::Shown
    } else {
        legend_view(
            lines
                .get(header_at + 1 + columns.len()..)
                .unwrap_or_default(),
        )
    };
    let gpus = gpu_columns
        .iter()
        .zip(numa)
        .map(|(name, numa)| ToolGpu {
            name: (*name).to_owned(),
            pci_address: None,
            numa,
        })
        .collect();
    Ok(NvidiaSmiTopology {
        gpus,
        links,
        view,
        nics: columns.len() - gpu_count,
    })
}

fn is_gpu_column(name: &str) -> bool {
    name.strip_prefix("GPU").and_then(parse_decimal).is_some()
}

/// Splits the header into device columns (GPUs first, then NICs) and tail columns.
fn parse_header(line: &str) -> Result<(Vec<&str>, Vec<TailColumn>), ParseError> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let tail_at = tokens
        .iter()
        .position(|t| matches!(*t, "CPU" | "NUMA" | "GPU"))
        .unwrap_or(tokens.len());
    let (columns, mut rest) = tokens.split_at(tail_at);
    let expected_gpu = columns.iter().take_while(|c| is_gpu_column(c)).count();
    for (index, name) in columns.iter().enumerate() {
        let gpu_index = name.strip_prefix("GPU").and_then(parse_decimal);
        match gpu_index {
            Some(n) if index < expected_gpu && n as usize == index => {}
            Some(_) => return Err(error(format!("header column {name:?} is out of order"))),
            None if Cell::parse(name).is_some() => {
                return Err(error(format!(
                    "header column {name:?} is a matrix cell, not a device name"
                )))
            }
            None if columns[..index].contains(name) => {
                return Err(error(format!("header column {name:?} appears twice")))
            }
            None => {}
        }
    }
    let mut tail = Vec::new();
    while let Some(first) = rest.first() {
        let (column, used) = match rest {
            ["CPU", "Affinity", ..] => (TailColumn::CpuAffinity, 2),
            ["NUMA", "Affinity", ..] => (TailColumn::NumaAffinity, 2),
            ["GPU", "NUMA", "ID", ..] => (TailColumn::GpuNumaId, 3),
            _ => {
                return Err(error(format!(
                    "unknown header column starting at {first:?}"
                )))
            }
        };
        if tail.contains(&column) {
            return Err(error(format!("header column {column:?} appears twice")));
        }
        tail.push(column);
        rest = rest.get(used..).unwrap_or_default();
    }
    Ok((columns.to_vec(), tail))
}

/// Checks a row's name and parses its matrix cells; returns them and the tokens after.
fn parse_row<'a, 't>(
    tokens: &'t [&'a str],
    column: &str,
    row: usize,
    width: usize,
) -> Result<(Vec<Cell>, &'t [&'a str]), ParseError> {
    match tokens.first() {
        Some(name) if name == &column => {}
        Some(name) => {
            return Err(error(format!(
                "row {} is {name:?}, expected {column:?}",
                row + 1
            )))
        }
        None => return Err(error(format!("row {column} is missing (blank line)"))),
    }
    let values = tokens.get(1..=width).ok_or_else(|| {
        error(format!(
            "row {column} has {} cells, expected {width} (truncated?)",
            tokens.len().saturating_sub(1)
        ))
    })?;
    let mut cells = Vec::with_capacity(width);
    for (index, token) in values.iter().enumerate() {
        let cell = Cell::parse(token)
            .ok_or_else(|| error(format!("row {column} has an unknown cell {token:?}")))?;
        if (cell == Cell::Diagonal) != (index == row) {
            return Err(error(format!(
                "row {column} cell {} is {token:?}: X must be exactly on the diagonal",
                index + 1
            )));
        }
        cells.push(cell);
    }
    Ok((cells, tokens.get(width + 1..).unwrap_or_default()))
}

/// The tab-separated cells of a GPU row after its matrix cells, when the row
/// was written with clean tabs: its name and each matrix cell exactly one
/// cell, equal to what the whitespace split read. `None` for space-aligned
/// or hand-edited rows.
fn tab_cells_after_matrix<'a>(line: &'a str, name: &str, matrix: &[Cell]) -> Option<Vec<&'a str>> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    if !line.contains('\t') {
        return None;
    }
    let cells: Vec<&str> = line.split('\t').map(str::trim).collect();
    let (first, rest) = cells.split_first()?;
    let written = rest.get(..matrix.len())?;
    let clean = *first == name
        && written
            .iter()
            .zip(matrix)
            .all(|(cell, parsed)| Cell::parse(cell) == Some(*parsed));
    clean.then(|| rest.get(matrix.len()..).unwrap_or_default().to_vec())
}

/// The number of values every GPU row has after the matrix (`None` without
/// rows); rows that differ are an error naming the widths.
fn common_width(tails: &[Vec<&str>], what: &str) -> Result<Option<usize>, ParseError> {
    let widths: Vec<usize> = tails.iter().map(Vec::len).collect();
    if widths.windows(2).any(|w| w[0] != w[1]) {
        return Err(error(format!(
            "GPU rows have different numbers of values after the matrix: {widths:?} {what}"
        )));
    }
    Ok(widths.first().copied())
}

/// Reads each GPU's NUMA Affinity from whitespace-split values after its
/// matrix cells (space-aligned or hand-edited output).
fn parse_tails(
    gpus: &[&str],
    tails: &[Vec<&str>],
    columns: &[TailColumn],
) -> Result<Vec<NumaReading>, ParseError> {
    // nvidia-smi leaves CPU Affinity empty when it cannot tell; then every row
    // has one value less. Mixed widths mean a damaged matrix, not empty cells:
    // without tabs nothing says which column a row lacks.
    let present: &[TailColumn] = match common_width(tails, "values")? {
        None => columns,
        Some(n) if n == columns.len() => columns,
        Some(n) if n + 1 == columns.len() && columns.first() == Some(&TailColumn::CpuAffinity) => {
            &columns[1..]
        }
        Some(n) => {
            return Err(error(format!(
                "GPU rows have {n} values after the matrix but the header names {} columns",
                columns.len()
            )))
        }
    };
    gpus.iter()
        .zip(tails)
        .map(|(gpu, values)| read_tail(gpu, present.iter().copied().zip(values.iter().copied())))
        .collect()
}

/// Reads each GPU's NUMA Affinity from the tab-separated cells after its
/// matrix cells. nvidia-smi writes one cell per header column, plus cells
/// that are empty in every row (after `NUMA Affinity`); the `CPU Affinity`
/// cell, always the first, is empty for a GPU outside the caller's cpuset.
/// Cells empty in every row are padding; the other cells must match the
/// header's columns one for one, or the output is refused.
fn parse_tab_tails(
    gpus: &[&str],
    tails: &[Vec<&str>],
    columns: &[TailColumn],
) -> Result<Vec<NumaReading>, ParseError> {
    let width = common_width(tails, "tab-separated cells")?.unwrap_or(0);
    let written_in_some_row = |position: usize| {
        tails
            .iter()
            .any(|row| row.get(position).is_some_and(|c| !c.is_empty()))
    };
    let (fixed, rest): (Vec<(usize, TailColumn)>, &[TailColumn]) = match columns.split_first() {
        Some((TailColumn::CpuAffinity, rest)) if width > 0 => {
            (vec![(0, TailColumn::CpuAffinity)], rest)
        }
        _ => (Vec::new(), columns),
    };
    let first_free = fixed.len();
    let positions: Vec<usize> = (first_free..width)
        .filter(|&p| written_in_some_row(p))
        .collect();
    if positions.len() != rest.len() {
        return Err(error(format!(
            "GPU rows have {} written cells after the matrix but the header names {} columns",
            positions.len() + fixed.len(),
            columns.len()
        )));
    }
    let layout: Vec<(usize, TailColumn)> = fixed
        .into_iter()
        .chain(positions.into_iter().zip(rest.iter().copied()))
        .collect();
    gpus.iter()
        .zip(tails)
        .map(|(gpu, cells)| {
            read_tail(
                gpu,
                layout.iter().map(|&(position, column)| {
                    (column, cells.get(position).copied().unwrap_or(""))
                }),
            )
        })
        .collect()
}

/// One GPU's NUMA reading from its (column, value) pairs after the matrix.
/// Only `CPU Affinity` may be empty (a GPU outside the caller's cpuset).
fn read_tail<'a>(
    gpu: &str,
    values: impl Iterator<Item = (TailColumn, &'a str)>,
) -> Result<NumaReading, ParseError> {
    let mut numa = NumaReading::NotReported;
    for (column, value) in values {
        let unknown = value == NOT_AVAILABLE;
        match column {
            TailColumn::CpuAffinity if unknown || value.is_empty() || is_cpulist(value) => {}
            TailColumn::NumaAffinity if unknown => numa = NumaReading::NotAvailable,
            TailColumn::NumaAffinity => {
                numa = NumaReading::Node(parse_decimal(value).ok_or_else(|| {
                    error(format!(
                        "{gpu} NUMA Affinity {value:?} is not a node id or N/A"
                    ))
                })?)
            }
            TailColumn::GpuNumaId if unknown || parse_decimal(value).is_some() => {}
            _ => {
                return Err(error(format!(
                    "{gpu} {column:?} value {value:?} is malformed"
                )))
            }
        }
    }
    Ok(numa)
}

fn is_cpulist(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b',' || b == b'-')
}

/// Builds the GPU-to-GPU links, refusing an asymmetric matrix.
fn gpu_links(gpus: &[&str], cells: &[Vec<Cell>]) -> Result<Links, ParseError> {
    Links::from_square(cells, true, Cell::link).map_err(|(a, b)| {
        let name = |i: usize| gpus.get(i).copied().unwrap_or("?");
        error(format!(
            "asymmetric matrix: {}->{} differs from {}->{}",
            name(a),
            name(b),
            name(b),
            name(a)
        ))
    })
}

/// Tells `-m` from `-mp` by the legend: only `-m` explains `NV#`; `-mp` ends at `PIX`.
fn legend_view(after_matrix: &[&str]) -> NvlinkView {
    let legend_entry = |name: &str| {
        after_matrix
            .iter()
            .any(|line| line.split_whitespace().next() == Some(name))
    };
    if legend_entry("NV#") {
        NvlinkView::Shown
    } else if legend_entry("PIX") {
        NvlinkView::Hidden
    } else {
        NvlinkView::Undetermined
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const TWO_GPUS: &str = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n\
                            GPU0\t X \tNV4\t0-7\t0\n\
                            GPU1\tNV4\t X \t0-7\t0\n";

    #[test]
    fn minimal_matrix() {
        let topo = parse(TWO_GPUS).unwrap();
        assert_eq!(topo.gpus.len(), 2);
        assert_eq!(topo.gpus[1].numa, NumaReading::Node(0));
        assert_eq!(topo.view, NvlinkView::Shown);
        assert_eq!(topo.links.fabric_group_max(), Some(2));
    }

    #[test]
    fn empty_cpu_affinity_cells_shift_no_column() {
        let text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n\
                    GPU0\t X \tPHB\t\t\tN/A\n\
                    GPU1\tPHB\t X \t\t\tN/A\n";
        let topo = parse(text).unwrap();
        assert_eq!(topo.gpus[0].numa, NumaReading::NotAvailable);
    }

    /// Tab-written rows: an empty `CPU Affinity` cell (a GPU outside the
    /// caller's cpuset) and nvidia-smi's empty cell after `NUMA Affinity`.
    #[rstest]
    #[case::all_written(
        "GPU0\t X \tSYS\t0-3\t0\t\tN/A\nGPU1\tSYS\t X \t4-7\t1\t\tN/A\n",
        [NumaReading::Node(0), NumaReading::Node(1)]
    )]
    #[case::one_gpu_outside_the_cpuset(
        "GPU0\t X \tSYS\t0-3\t0\t\tN/A\nGPU1\tSYS\t X \t\t1\t\tN/A\n",
        [NumaReading::Node(0), NumaReading::Node(1)]
    )]
    #[case::every_gpu_outside_the_cpuset(
        "GPU0\t X \tSYS\t\t0\t\tN/A\nGPU1\tSYS\t X \t\t1\t\tN/A\n",
        [NumaReading::Node(0), NumaReading::Node(1)]
    )]
    #[case::trailing_tabs(
        "GPU0\t X \tSYS\t0-3\t0\t\tN/A\t\nGPU1\tSYS\t X \t\t1\t\tN/A\t\n",
        [NumaReading::Node(0), NumaReading::Node(1)]
    )]
    fn tab_separated_values_after_the_matrix(#[case] rows: &str, #[case] numa: [NumaReading; 2]) {
        let text = format!("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n{rows}");
        let topo = parse(&text).unwrap();
        assert_eq!(topo.gpus.iter().map(|g| g.numa).collect::<Vec<_>>(), numa);
    }

    #[test]
    fn an_underlined_header_reads_as_the_plain_one() {
        let underlined = TWO_GPUS.replacen(
            "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity",
            "\u{1b}[4m\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\u{1b}[0m",
            1,
        );
        assert_ne!(underlined, TWO_GPUS);
        assert_eq!(parse(&underlined).unwrap(), parse(TWO_GPUS).unwrap());
    }

    #[rstest]
    #[case::empty_numa_affinity_cell(
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tSYS\t0-3\t0\nGPU1\tSYS\t X \t4-7\t\n",
        "NUMA Affinity \"\""
    )]
    #[case::a_row_with_a_cell_more(
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tSYS\t0-3\t0\nGPU1\tSYS\t X \t4-7\t1\t7\n",
        "different numbers"
    )]
    #[case::a_column_never_written(
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tSYS\t0-3\t0\t\nGPU1\tSYS\t X \t4-7\t1\t\n",
        "header names 3 columns"
    )]
    #[case::an_escape_cut_in_the_header(
        "\u{1b}[4\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU1\tSYS\t X \n",
        "header column"
    )]
    fn ambiguous_tab_separated_values_are_refused(#[case] text: &str, #[case] expected: &str) {
        let message = parse(text).unwrap_err().to_string();
        assert!(message.contains(expected), "{message}");
    }

    #[rstest]
    #[case::asymmetric("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tSYS\t X \n", "asymmetric")]
    #[case::unknown_cell("\tGPU0\tGPU1\nGPU0\t X \tFOO\nGPU1\tFOO\t X \n", "unknown cell")]
    #[case::x_off_diagonal("\tGPU0\tGPU1\nGPU0\t X \tX\nGPU1\tX\t X \n", "diagonal")]
    #[case::missing_row("\tGPU0\tGPU1\nGPU0\t X \tSYS\n", "truncated")]
    #[case::unterminated_row("\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU1\tSYS\t X", "newline")]
    #[case::unknown_column(
        "\tGPU0\tCPU Affinity\tNUMA Distance\nGPU0\t X \t0\t0\n",
        "unknown header column"
    )]
    #[case::no_header("hello\n", "GPU0")]
    #[case::numa_range("\tGPU0\tNUMA Affinity\nGPU0\t X \t0-1\n", "NUMA Affinity")]
    #[case::mixed_row_widths(
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tSYS\t0-3\t0\nGPU1\tSYS\t X \t1\n",
        "different numbers"
    )]
    fn malformed_output_is_an_error_saying_why(#[case] text: &str, #[case] expected: &str) {
        let message = parse(text).unwrap_err().to_string();
        assert!(message.contains(expected), "{message}");
    }
}
