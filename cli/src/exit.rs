//! Exit codes a CI pipeline can gate on (docs/cli.md, "Exit codes").

/// Every object admitted; no audit finding.
pub const OK: u8 = 0;
/// Something was rejected, or the audit found something.
pub const FINDINGS: u8 = 1;
/// Bad input or usage: a missing file, a document that is not YAML, bad
/// settings, an unreachable API server.
pub const USAGE: u8 = 2;
