//! Trains the model of triage's learned fallback from the labelled real logs, or measures it.
//!
//! `cargo run --example triage_model -- write` writes `src/analysis/triage/model.tsv` from
//! `tests/data/triage/real/` (a unit test fails when the committed file differs);
//! `cargo run --example triage_model -- cv [FOLDS]` prints the k-fold cross-validated accuracy
//! of the whole pipeline, the model retrained on the other folds for each (5 folds unless told);
//! `cv rounds` holds out each round of the corpus in turn (each collected by a different
//! person), `cv trackers [FOLDS]` each fold of trackers; both also print how the model alone
//! does on the held-out logs, as if no rule had spoken on them, and how the fallback does on
//! the logs no rule spoke on (right less wrong: what it adds there), and take `--bar P` to
//! measure another confidence bar than the built-in one. `cv curve` prints both groupings'
//! totals over a range of bars.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a developer's tool: its output is the point

use std::path::Path;
use std::process::ExitCode;

use fwfix::analysis::triage::fallback::{self, Grouping};

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let bar = match args.iter().position(|a| a == "--bar") {
        Some(at) => {
            let value = args.get(at + 1).and_then(|p| p.parse::<f64>().ok());
            args.drain(at..(at + 2).min(args.len()));
            match value {
                Some(p) if (0.0..=1.0).contains(&p) => p,
                _ => {
                    eprintln!("triage_model: --bar takes a probability between 0 and 1");
                    return ExitCode::FAILURE;
                }
            }
        }
        None => fallback::MIN_PROBABILITY,
    };
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
            let figures = fallback::cross_validate_grouped(&logs, grouping, folds, bar);
            for f in &figures {
                println!("{:>8}: {}", f.group, describe(f));
            }
            println!("   total: {}", describe(&total(&figures)));
        }
        Some("cv") if args.get(1).map(String::as_str) == Some("curve") => {
            for percent in (50..=95).step_by(5) {
                let bar = f64::from(percent) / 100.0;
                for (name, grouping) in
                    [("rounds", Grouping::Round), ("trackers", Grouping::Tracker)]
                {
                    let figures = fallback::cross_validate_grouped(&logs, grouping, 5, bar);
                    println!("{bar:.2} {name:>8}: {}", describe(&total(&figures)));
                }
            }
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
            eprintln!(
                "usage: triage_model write | cv [FOLDS] | cv rounds [--bar P] | cv trackers [FOLDS] [--bar P] | cv curve"
            );
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// The groups' figures added up.
fn total(figures: &[fallback::GroupFigure]) -> fallback::GroupFigure {
    let mut total = fallback::GroupFigure::default();
    for f in figures {
        total.cv.logs += f.cv.logs;
        total.cv.rules_correct += f.cv.rules_correct;
        total.cv.correct += f.cv.correct;
        total.cv.decided += f.cv.decided;
        total.cv.decided_correct += f.cv.decided_correct;
        total.alone_correct += f.alone_correct;
        total.alone_decided += f.alone_decided;
        total.alone_decided_correct += f.alone_decided_correct;
        total.no_rule += f.no_rule;
        total.no_rule_decided += f.no_rule_decided;
        total.no_rule_correct += f.no_rule_correct;
    }
    total
}

/// A group's figures, or the totals': the rules, the whole pipeline, the model alone, and the
/// fallback on the logs no rule spoke on.
fn describe(f: &fallback::GroupFigure) -> String {
    let percent = |n: usize| 100.0 * n as f64 / f.cv.logs.max(1) as f64;
    let wrong = f.no_rule_decided - f.no_rule_correct;
    format!(
        "{:>4} logs, rules alone {:>4} ({:.1}%), with the fallback {:>4} ({:.1}%; it decided {}, {} right); the model alone {:>4} ({:.1}%; decided {}, {} right); no rule spoke on {}: decided {}, {} right, {} wrong, net {:+}",
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
        f.alone_decided_correct,
        f.no_rule,
        f.no_rule_decided,
        f.no_rule_correct,
        wrong,
        f.no_rule_correct as i64 - wrong as i64
    )
}
