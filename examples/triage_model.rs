//! Trains the model of triage's learned fallback from the labelled real logs, or measures it.
//!
//! `cargo run --example triage_model -- write` writes `src/analysis/triage/model.tsv` from
//! `tests/data/triage/real/` (a unit test fails when the committed file differs);
//! `cargo run --example triage_model -- cv [FOLDS]` prints the k-fold cross-validated accuracy
//! of the whole pipeline, the model retrained on the other folds for each (5 folds unless told);
//! `cv rounds` holds out each round of the corpus in turn (each collected by a different
//! person), `cv trackers [FOLDS]` each fold of trackers, and both also print how the model alone
//! does on the held-out logs, as if no rule had spoken on them.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a developer's tool: its output is the point

use std::path::Path;
use std::process::ExitCode;

use fwfix::analysis::triage::fallback::{self, Grouping};

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
        Some("cv") if matches!(args.get(1).map(String::as_str), Some("rounds" | "trackers")) => {
            let grouping = if args[1] == "rounds" {
                Grouping::Round
            } else {
                Grouping::Tracker
            };
            let folds = args.get(2).and_then(|k| k.parse().ok()).unwrap_or(5);
            grouped(&fallback::cross_validate_grouped(&logs, grouping, folds));
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
            eprintln!("usage: triage_model write | cv [FOLDS] | cv rounds | cv trackers [FOLDS]");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// One line per held-out group, then the totals.
fn grouped(figures: &[fallback::GroupFigure]) {
    let mut total = fallback::GroupFigure::default();
    for f in figures {
        println!("{:>8}: {}", f.group, describe(f));
        total.cv.logs += f.cv.logs;
        total.cv.rules_correct += f.cv.rules_correct;
        total.cv.correct += f.cv.correct;
        total.cv.decided += f.cv.decided;
        total.cv.decided_correct += f.cv.decided_correct;
        total.alone_correct += f.alone_correct;
        total.alone_decided += f.alone_decided;
        total.alone_decided_correct += f.alone_decided_correct;
    }
    println!("   total: {}", describe(&total));
}

/// A group's figures, or the totals': the rules, the whole pipeline and the model alone.
fn describe(f: &fallback::GroupFigure) -> String {
    let percent = |n: usize| 100.0 * n as f64 / f.cv.logs.max(1) as f64;
    format!(
        "{:>4} logs, rules alone {:>4} ({:.1}%), with the fallback {:>4} ({:.1}%; it decided {}, {} right); the model alone {:>4} ({:.1}%; decided {}, {} right)",
        f.cv.logs,
        f.cv.rules_correct,
        percent(f.cv.rules_correct),
        f.cv.correct,
        percent(f.cv.correct),
        f.cv.decided,
        f.cv.decided_correct,
        f.alone_correct,
        percent(f.alone_correct),
        f.alone_decided,
        f.alone_decided_correct
    )
}
