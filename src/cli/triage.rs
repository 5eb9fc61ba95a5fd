//! `fwfix triage FILE...`: classifies logs (build, flash, console) and says which lines decided.
//!
//! Turns the arguments into a [`TriageContext`], hands each file to
//! [`crate::analysis::triage::classify_file`], and prints the result: one JSON object per file
//! with `--json`, otherwise one line per file with the deciding lines quoted under it. It decides
//! nothing itself.

use super::{Exit, GlobalArgs};
use crate::analysis::triage::{self, LogTriage, Triage, TriageContext};
use crate::report::visible;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Deciding lines quoted under a file's summary line; the rest are counted.
const QUOTED_LINES: usize = 10;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Classes, strongest first (a log showing several gets the strongest): TOOL_MISSING, FLASH_ERROR, \
ASSERT, CRASH, INFRA_ERROR, BUILD_ERROR, LINK_ERROR, HANG, TEST_FAILURE, PASS, then UNKNOWN: \
PASS needs a passing verdict in the log; an empty or binary input, or a log showing nothing \
triage recognises, is UNKNOWN.

A FILE may be `-` for standard input (`make 2>&1 | fwfix triage -`), a pipe or a device: \
reading stops after 1 MiB of binary input and at 4 GiB. A FIFO is not waited on: one no program \
has open for writing is UNKNOWN, and the reason says nothing was written to it. UTF-16 logs \
(with or without a byte-order mark) and a UTF-8 byte-order mark are read as the text they hold.

Exit status: 0 when every file was read, whatever its class; 2 when a file could not be read, is \
a directory or is an ELF image rather than a log (the file is named, and the other files are \
still classified).")]
pub struct Args {
    /// Log files: build output, flasher or debugger output, console captures (console.log).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The logs ended at a timeout: a log with no verdict in it is a HANG.
    #[arg(long)]
    timed_out: bool,
}

pub fn run(args: Args, global: &GlobalArgs) -> Exit {
    let ctx = TriageContext {
        timed_out: args.timed_out,
    };
    let mut exit = Exit::Success;
    for file in &args.files {
        // A stream is a log too (`make 2>&1 | fwfix triage -`); the reader stops on
        // binary input and at its size cap, so `/dev/zero` ends as UNKNOWN.
        let classified = triage::classify_file(file, &ctx).map_err(|e| e.to_string());
        let written = match classified {
            Ok(triage) if global.json => print_json(file, &triage),
            Ok(triage) => print_text(file, &triage),
            Err(e) => {
                exit = Exit::Usage;
                if global.json {
                    // The contract's fields, with no class: nothing was read.
                    let line = serde_json::json!({
                        "file": file.display().to_string(),
                        "class": null,
                        "lines": [],
                        "reason": e.to_string(),
                        "error": e.to_string(),
                    });
                    writeln!(io::stdout().lock(), "{line}")
                } else {
                    writeln!(io::stderr().lock(), "error: {}", visible(&e.to_string()))
                }
            }
        };
        if written.is_err() {
            return Exit::Infrastructure;
        }
    }
    exit
}

fn print_json(file: &Path, triage: &Triage) -> io::Result<()> {
    let mut line = serde_json::json!(LogTriage::new(file.display().to_string(), triage));
    if let Some(fields) = line.as_object_mut() {
        fields.insert(
            "error_class".into(),
            serde_json::json!(triage.error_class()),
        );
        fields.insert("matches".into(), serde_json::json!(triage.matches));
    }
    writeln!(io::stdout().lock(), "{line}")
}

fn print_text(file: &Path, triage: &Triage) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let lines = match triage.lines.as_slice() {
        [] => String::new(),
        [one] => format!(" (line {one})"),
        many => {
            let numbers: Vec<String> = many.iter().map(usize::to_string).collect();
            format!(" (lines {})", numbers.join(", "))
        }
    };
    writeln!(
        out,
        "{}: {}{lines}: {}",
        file.display(),
        triage.class,
        visible(&triage.reason)
    )?;
    let quoted = triage.lines.iter().filter_map(|&line| {
        triage
            .matches
            .iter()
            .find(|m| m.line == line)
            .map(|m| (line, m.text.as_str()))
    });
    for (line, text) in quoted.take(QUOTED_LINES) {
        writeln!(out, "  {line:>6} | {}", visible(text))?;
    }
    if triage.lines.len() > QUOTED_LINES {
        writeln!(
            out,
            "         ... and {} more",
            triage.lines.len() - QUOTED_LINES
        )?;
    }
    Ok(())
}
