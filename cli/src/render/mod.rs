//! Output: the human report ([`text`]) and the versioned machine report
//! ([`report`], `-o json|yaml`), both written from the same records
//! ([`crate::view`]).

pub mod report;
pub mod text;
pub mod what_if;

use crate::args::Output;
use crate::explain::Explanation;
use report::ExplainReport;

/// The report in `format`; `Err` for a format explain does not write.
pub fn explain_report(
    explanations: &[Explanation],
    format: Output,
    verbose: bool,
) -> Result<String, String> {
    let report = ExplainReport::new(explanations);
    match format {
        Output::Table => Ok(text::render(explanations, verbose)),
        Output::Json => serde_json::to_string_pretty(&report)
            .map(|mut json| {
                json.push('\n');
                json
            })
            .map_err(|error| error.to_string()),
        Output::Yaml => serde_saphyr::to_string(&report).map_err(|error| error.to_string()),
        Output::Policyreport => Err("-o policyreport is written by audit only".to_owned()),
    }
}
