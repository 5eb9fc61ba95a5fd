//! The JSON Schemas of fwfix's machine-readable outputs, generated from the types that write them:
//! `report.json` ([`crate::report::Report`]), one line of the `--json` event stream
//! ([`crate::events::Event`]) and one line of `fwfix triage --json`. The repository keeps them
//! under `schemas/`; a test checks the committed files against these.

use schemars::JsonSchema;

/// A classified log as `fwfix triage --json` prints it: the triage fields, the machine's error
/// class, and every line a rule claimed.
pub type TriageLine = crate::mcp::TriageOutcome;

/// Every schema, by the file name it is kept under in `schemas/`.
pub fn all() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        ("report.schema.json", schema::<crate::report::Report>()),
        ("events.schema.json", schema::<crate::events::Event>()),
        ("triage.schema.json", schema::<TriageLine>()),
    ]
}

fn schema<T: JsonSchema>() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default()
}
