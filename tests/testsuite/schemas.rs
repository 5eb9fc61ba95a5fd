//! The committed JSON Schemas (`schemas/`) are what the code generates, and what a real run
//! writes — report.json, the `--json` event stream, `fwfix triage --json` — has their fields:
//! every required field present, no field the schema does not name.
//! `FWFIX_BLESS=1 cargo test --test testsuite schemas` rewrites the files after a deliberate
//! change of an output.

use crate::common::{events, fwfix, report, run_dir, text, FixtureRepo};
use serde_json::Value;
use std::path::Path;

fn schemas_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas")
}

fn committed(name: &str) -> Value {
    let path = schemas_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run FWFIX_BLESS=1 cargo test --test testsuite schemas",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_committed_schemas_are_what_the_code_generates() {
    for (name, schema) in fwfix::schemas::all() {
        if std::env::var_os("FWFIX_BLESS").is_some() {
            let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
            std::fs::write(schemas_dir().join(name), text).unwrap();
        }
        assert!(
            committed(name) == schema,
            "schemas/{name} differs from what the code generates: run \
             FWFIX_BLESS=1 cargo test --test testsuite schemas and review the change"
        );
    }
}

/// The object schema `value` must follow: `schema` itself, or for a tagged enum (`oneOf`) the
/// variant whose `event` constant is the value's.
fn variant<'a>(schema: &'a Value, value: &Value) -> &'a Value {
    let Some(variants) = schema.get("oneOf").and_then(Value::as_array) else {
        return schema;
    };
    variants
        .iter()
        .find(|v| v["properties"]["event"]["const"] == value["event"])
        .unwrap_or_else(|| panic!("no schema variant for {value}"))
}

/// Every required field is present and every field is one the schema names.
fn check_fields(schema: &Value, value: &Value, what: &str) {
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("{what}: {value}"));
    let schema = variant(schema, value);
    let properties = schema["properties"].as_object().unwrap();
    for required in schema["required"].as_array().into_iter().flatten() {
        let field = required.as_str().unwrap();
        assert!(
            object.contains_key(field),
            "{what}: no `{field}` in {value}"
        );
    }
    for field in object.keys() {
        assert!(
            properties.contains_key(field),
            "{what}: `{field}` is not in the schema: {value}"
        );
    }
}

#[test]
fn a_real_run_and_triage_have_the_schemas_fields() {
    let repo = FixtureRepo::new();
    let path = repo.path().to_str().unwrap();
    let out = fwfix(
        &[
            "test",
            "--json",
            "--repo",
            path,
            "--board",
            "qemu-mps2-an385",
            "--profile",
            "crc",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let event_schema = committed("events.schema.json");
    let lines = events(&out);
    assert!(lines.len() > 5, "{}", text(&out));
    for event in &lines {
        check_fields(&event_schema, event, "event");
    }
    check_fields(
        &committed("report.schema.json"),
        &report(&run_dir(&out)),
        "report.json",
    );

    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/triage/esp_idf_abort.log");
    let out = fwfix(&["triage", "--json", log.to_str().unwrap()], repo.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let triage_schema = committed("triage.schema.json");
    for line in events(&out) {
        check_fields(&triage_schema, &line, "triage line");
    }
}
