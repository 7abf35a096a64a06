//! What one what-if run found, as plain data: the change tried
//! ([`Tried`]) and each object's decision before and after it
//! ([`Outcome`]). The command ([`crate::run::what_if`]) builds them; the
//! renderer ([`crate::render::what_if`]) reads them. They depend on the
//! decisions ([`crate::explain`]) and the comparison
//! ([`crate::what_if::compare`](mod@crate::what_if::compare)), never on
//! the renderer.

use crate::explain::Explanation;
use crate::what_if::change::FleetChange;
use crate::what_if::compare::ShapeChange;

/// One object before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub before: Explanation,
    pub after: Explanation,
    /// Each shape of the before-record and what became of it (empty for
    /// objects without a record on both sides).
    pub shapes: Vec<ShapeChange>,
}

impl Outcome {
    /// The answer to the API server differs: outcome, message or warnings.
    pub fn decision_changed(&self) -> bool {
        self.before.outcome != self.after.outcome
            || self.before.message != self.after.message
            || self.before.warnings != self.after.warnings
            || self.before.patch != self.after.patch
    }
}

/// The kubelet and policy changes of one run, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tried {
    pub fleet: FleetChange,
    /// `--new-settings` was given.
    pub new_settings: bool,
}
