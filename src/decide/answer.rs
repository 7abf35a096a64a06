//! The answer to one admission request: accept, mutate (with the object as
//! changed) or reject, and warnings. The bottom of the decision: every
//! stage that answers on its own (a claim, a binding) and the pipeline
//! make one of these, and `response` writes it.

use serde_json::Value;
use std::fmt;

/// What to answer. `Object` is the mutated object: JSON text in the answer,
/// a JSON tree while the pod decision is being made.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict<Object = MutatedObject> {
    Accept,
    /// Accept the object as changed here.
    Mutate(Object),
    Reject(String),
}

/// A verdict with non-fatal notes for the requesting client.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision<Object = MutatedObject> {
    pub verdict: Verdict<Object>,
    pub warnings: Vec<String>,
}

impl<Object> Decision<Object> {
    pub fn accept() -> Self {
        Verdict::Accept.into()
    }

    pub fn reject(message: String) -> Self {
        Verdict::Reject(message).into()
    }

    /// The same decision with the mutated object converted by `convert`.
    pub(crate) fn try_map<Other>(
        self,
        convert: impl FnOnce(Object) -> Result<Other, String>,
    ) -> Result<Decision<Other>, String> {
        let verdict = match self.verdict {
            Verdict::Accept => Verdict::Accept,
            Verdict::Mutate(object) => Verdict::Mutate(convert(object)?),
            Verdict::Reject(message) => Verdict::Reject(message),
        };
        Ok(Decision {
            verdict,
            warnings: self.warnings,
        })
    }
}

impl<Object> From<Verdict<Object>> for Decision<Object> {
    fn from(verdict: Verdict<Object>) -> Self {
        Decision {
            verdict,
            warnings: Vec::new(),
        }
    }
}

/// The mutated object as JSON text, which the answer carries as it is. It is
/// JSON by construction: the admitted text with serialised values spliced in
/// at value boundaries ([`crate::request::pod_text::PodText::rewrite`]), or a serialised tree.
#[derive(Clone, PartialEq)]
pub struct MutatedObject(pub(crate) String);

impl MutatedObject {
    pub fn from_value(value: &Value) -> Result<Self, String> {
        serde_json::to_string(value)
            .map(Self)
            .map_err(|error| format!("the mutated object cannot be written: {error}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The object as a JSON tree (tests and tools; the answer uses the text).
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_slice(self.as_str().as_bytes())
    }
}

impl fmt::Debug for MutatedObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
