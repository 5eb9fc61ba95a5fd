//! Trains the model of triage's learned fallback from the labelled real logs, or measures it.
//!
//! `cargo run --example triage_model -- write` writes `src/analysis/triage/model.tsv` from
//! `tests/data/triage/real/` (a unit test fails when the committed file differs);
//! `cargo run --example triage_model -- cv [FOLDS]` prints the k-fold cross-validated accuracy
//! of the whole pipeline, the model retrained on the other folds for each (5 folds unless told).
#![allow(clippy::print_stdout, clippy::print_stderr)] // a developer's tool: its output is the point

use std::path::Path;
use std::process::ExitCode;

use fwfix::analysis::triage::fallback;

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let logs = match fallback::read_corpus(&root.join("tests/data/triage/real")) {
        Ok(logs) => logs,
        Err(e) => {
            eprintln!("triage_model: {e}");
            return ExitCode::FAILURE;
        }
    };
    match args.first().map(String::as_str) {
        Some("write") => {
            let file = root.join("src/analysis/triage/model.tsv");
            if let Err(e) = std::fs::write(&file, fallback::train_on(&logs).to_tsv()) {
                eprintln!("triage_model: cannot write {}: {e}", file.display());
                return ExitCode::FAILURE;
            }
            println!("wrote {}", file.display());
        }
        Some("cv") => {
            let folds = args.get(1).and_then(|k| k.parse().ok()).unwrap_or(5);
            let cv = fallback::cross_validate(&logs, folds);
            let percent = |n: usize| 100.0 * n as f64 / cv.logs.max(1) as f64;
            println!(
                "{}-fold cross-validation over {} logs: rules alone {} ({:.1}%), with the fallback {} ({:.1}%); the fallback decided {} logs, {} of them right",
                cv.folds,
                cv.logs,
                cv.rules_correct,
                percent(cv.rules_correct),
                cv.correct,
                percent(cv.correct),
                cv.decided,
                cv.decided_correct
            );
        }
        _ => {
            eprintln!("usage: triage_model write | cv [FOLDS]");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
