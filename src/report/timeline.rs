//! The timeline of report.html: time on the x axis, one lane per phase of the run (or per board
//! of a matrix), a bar for each stretch of time spent in a state, failures marked. This module
//! turns trace lines into bars (pure) and bars into inline SVG (pure, every string escaped); it
//! reads no file and decides nothing about the run.

use super::visible::escape_html;
use crate::machine::State;
use crate::rundir::TraceLine;
use chrono::{DateTime, Utc};
use std::fmt::Write;

/// A lane of a run's timeline: the states the machine spends its time in, grouped the way a
/// firmware engineer thinks of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Build,
    FlashBoot,
    Test,
    Analysis,
    Patch,
    Recovery,
}

impl Phase {
    /// Every lane, top to bottom.
    pub const ALL: [Phase; 6] = [
        Phase::Build,
        Phase::FlashBoot,
        Phase::Test,
        Phase::Analysis,
        Phase::Patch,
        Phase::Recovery,
    ];

    /// The lane's label on the page.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Build => "build",
            Phase::FlashBoot => "flash/boot",
            Phase::Test => "test",
            Phase::Analysis => "analysis",
            Phase::Patch => "patch",
            Phase::Recovery => "recovery",
        }
    }

    /// The CSS class of the lane's bars.
    pub fn class(self) -> &'static str {
        match self {
            Phase::Build => "p-build",
            Phase::FlashBoot => "p-flash",
            Phase::Test => "p-test",
            Phase::Analysis => "p-analysis",
            Phase::Patch => "p-patch",
            Phase::Recovery => "p-recovery",
        }
    }

    /// The lane's position, top first.
    pub fn index(self) -> usize {
        Phase::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }
}

/// The lane a state's time is drawn in; None for the instants around a run (IDLE, INIT, the
/// terminal states), which take no time worth a bar.
pub fn phase_of(state: State) -> Option<Phase> {
    match state {
        // The lint stage judges what the build made: its time is the build's lane.
        State::BuildSetup | State::BuildRun | State::Lint => Some(Phase::Build),
        State::TestSetup => Some(Phase::FlashBoot),
        State::TestRun | State::ResultCollection => Some(Phase::Test),
        State::CodeAnalysis | State::ResultAnalysis | State::ConvergenceCheck => {
            Some(Phase::Analysis)
        }
        State::PatchGeneration | State::PatchReview | State::PatchApply | State::Commit => {
            Some(Phase::Patch)
        }
        State::ErrorRecovery => Some(Phase::Recovery),
        State::Idle | State::Init | State::Success | State::Failure | State::Aborted => None,
    }
}

/// One bar: a lane, a stretch of time, whether it ended badly, and what a person hovering it
/// reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bar {
    pub lane: usize,
    /// The iteration of the trace line that entered the state.
    pub iteration: u32,
    /// The state the bar is time spent in (None for a bar that is not a state, e.g. a matrix
    /// pair's whole run).
    pub state: Option<State>,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// CSS class of the bar's fill.
    pub class: &'static str,
    pub failed: bool,
    pub title: String,
    /// Written inside the bar when it is wide enough (empty: nothing).
    pub text: String,
}

/// A vertical rule across every lane, e.g. where an iteration starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub at: DateTime<Utc>,
    pub label: String,
}

/// The bars of one trace: each state the machine entered, from the line entering it to the line
/// leaving it. `label` names the trace's part of the run (`iteration 2`, `step 3`) in the bars'
/// titles. A bar is failed when the state was left for ERROR_RECOVERY, FAILURE or ABORTED, or
/// with an error class; ERROR_RECOVERY itself is always failed. Lines whose time cannot be read
/// are skipped, as is a state still running when the trace ends.
pub fn phase_bars(lines: &[TraceLine], label: &dyn Fn(u32) -> String) -> Vec<Bar> {
    let mut bars = Vec::new();
    for pair in lines.windows(2) {
        let (enter, leave) = (&pair[0], &pair[1]);
        if leave.from != enter.to {
            continue;
        }
        let Some(phase) = phase_of(enter.to) else {
            continue;
        };
        let (Some(start), Some(end)) = (timestamp(&enter.ts), timestamp(&leave.ts)) else {
            continue;
        };
        let failed = enter.to == State::ErrorRecovery
            || leave.error_class.is_some()
            || matches!(
                leave.to,
                State::ErrorRecovery | State::Failure | State::Aborted
            );
        let mut title = format!(
            "{}: {} ({} ms) → {}",
            label(enter.iteration),
            enter.to.name(),
            (end - start).num_milliseconds(),
            leave.to.name()
        );
        if let Some(class) = leave.error_class {
            let _ = write!(title, " [{class}]");
        }
        if !leave.reason.is_empty() {
            let _ = write!(title, ": {}", leave.reason);
        }
        bars.push(Bar {
            lane: phase.index(),
            iteration: enter.iteration,
            state: Some(enter.to),
            start,
            end: end.max(start),
            class: phase.class(),
            failed,
            title,
            text: String::new(),
        });
    }
    bars
}

/// Where each iteration of a trace begins: the first line of each new iteration number.
pub fn iteration_marks(lines: &[TraceLine], label: &dyn Fn(u32) -> String) -> Vec<Mark> {
    let mut marks: Vec<Mark> = Vec::new();
    let mut last = None;
    for line in lines {
        if last == Some(line.iteration) {
            continue;
        }
        last = Some(line.iteration);
        if let Some(at) = timestamp(&line.ts) {
            marks.push(Mark {
                at,
                label: label(line.iteration),
            });
        }
    }
    marks
}

/// A trace timestamp (RFC 3339).
pub fn timestamp(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

const WIDTH: f64 = 960.0;
/// The narrowest column of lane labels, and the width of a label's character (12 px sans-serif).
const LABELS: f64 = 110.0;
const CHAR: f64 = 7.5;
const LANE: f64 = 26.0;
const TOP: f64 = 22.0;
const AXIS: f64 = 24.0;
/// The narrowest bar drawn, so an instant state is still visible.
const MIN_BAR: f64 = 1.5;

/// The timeline as an inline `<svg>`: `lanes` top to bottom, each bar a `<rect>` with a `<title>`
/// (the browser's tooltip, no script), a failed bar outlined and crossed at its end, a dashed rule
/// and a label per mark, and a time axis in seconds from the first bar or mark.
pub fn render_svg(lanes: &[&str], bars: &[Bar], marks: &[Mark]) -> String {
    let times = bars
        .iter()
        .flat_map(|b| [b.start, b.end])
        .chain(marks.iter().map(|m| m.at));
    let (Some(first), Some(last)) = (times.clone().min(), times.max()) else {
        return String::new();
    };
    let span_ms = (last - first).num_milliseconds().max(1) as f64;
    let longest = lanes.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let labels = (longest as f64 * CHAR + 16.0).clamp(LABELS, WIDTH / 3.0);
    let plot = WIDTH - labels - 10.0;
    let x = |t: DateTime<Utc>| labels + (t - first).num_milliseconds() as f64 / span_ms * plot;
    let height = TOP + LANE * lanes.len() as f64 + AXIS;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg class=\"timeline\" viewBox=\"0 0 {WIDTH} {height}\" width=\"100%\" role=\"img\" aria-label=\"timeline\">"
    );
    for (i, lane) in lanes.iter().enumerate() {
        let y = TOP + LANE * i as f64;
        let _ = writeln!(
            out,
            "<g class=\"lane\"><rect class=\"lane-bg{}\" x=\"{labels:.1}\" y=\"{y}\" width=\"{plot:.1}\" height=\"{LANE}\"/><text class=\"lane-label\" x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
            if i % 2 == 0 { "" } else { " odd" },
            labels - 6.0,
            y + LANE * 0.65,
            escape_html(lane)
        );
    }
    for mark in marks {
        let at = x(mark.at);
        let _ = writeln!(
            out,
            "<g class=\"mark\"><line x1=\"{at:.1}\" y1=\"{:.1}\" x2=\"{at:.1}\" y2=\"{:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text></g>",
            TOP - 4.0,
            TOP + LANE * lanes.len() as f64,
            at + 2.0,
            TOP - 8.0,
            escape_html(&mark.label)
        );
    }
    for bar in bars {
        let (x0, x1) = (x(bar.start), x(bar.end));
        let width = (x1 - x0).max(MIN_BAR);
        let y = TOP + LANE * bar.lane as f64 + 4.0;
        let h = LANE - 8.0;
        let failed = if bar.failed { " failed" } else { "" };
        let _ = write!(
            out,
            "<g class=\"bar{failed}\"><title>{}</title><rect class=\"{}\" x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{h:.1}\"/>",
            escape_html(&bar.title),
            bar.class
        );
        if !bar.text.is_empty() && width > bar.text.chars().count() as f64 * CHAR + 8.0 {
            let _ = write!(
                out,
                "<text class=\"bar-text\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x0 + 4.0,
                y + h * 0.72,
                escape_html(&bar.text)
            );
        }
        if bar.failed {
            let cx = x0 + width;
            let _ = write!(
                out,
                "<path class=\"cross\" d=\"M{:.1} {:.1} l7 7 m0 -7 l-7 7\"/>",
                cx - 3.5,
                y + h / 2.0 - 3.5
            );
        }
        let _ = writeln!(out, "</g>");
    }
    let axis_y = TOP + LANE * lanes.len() as f64;
    let _ = writeln!(
        out,
        "<g class=\"axis\"><line x1=\"{labels:.1}\" y1=\"{axis_y}\" x2=\"{:.1}\" y2=\"{axis_y}\"/>",
        labels + plot
    );
    for tick in 0..=5 {
        let ms = span_ms * f64::from(tick) / 5.0;
        let tx = labels + plot * f64::from(tick) / 5.0;
        let anchor = match tick {
            0 => "start",
            5 => "end",
            _ => "middle",
        };
        let _ = writeln!(
            out,
            "<line x1=\"{tx:.1}\" y1=\"{axis_y}\" x2=\"{tx:.1}\" y2=\"{:.1}\"/><text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>",
            axis_y + 4.0,
            axis_y + 16.0,
            seconds(ms)
        );
    }
    let _ = writeln!(out, "</g>\n</svg>");
    out
}

/// `0 s`, `1.25 s`, `73 s`: an axis label.
fn seconds(ms: f64) -> String {
    let s = ms / 1000.0;
    if s == 0.0 {
        "0 s".to_string()
    } else if s < 10.0 {
        format!("{s:.2} s")
    } else {
        format!("{s:.0} s")
    }
}

/// The timeline's CSS: the lanes' colours, failed bars in red.
pub const STYLE: &str = "
svg.timeline{font:12px system-ui,sans-serif;max-width:100%;height:auto;border:1px solid #d0d7de;background:#fff}
svg.timeline .lane-bg{fill:#ffffff}svg.timeline .lane-bg.odd{fill:#f6f8fa}
svg.timeline .lane-label{text-anchor:end;fill:#1f2328}
svg.timeline .mark line{stroke:#6e7781;stroke-dasharray:3 3}svg.timeline .mark text{fill:#57606a;font-size:11px}
svg.timeline .axis line{stroke:#6e7781}svg.timeline .axis text{fill:#57606a;font-size:11px}
svg.timeline .p-build{fill:#0969da}svg.timeline .p-flash{fill:#8250df}svg.timeline .p-test{fill:#1a7f37}
svg.timeline .p-analysis{fill:#9a6700}svg.timeline .p-patch{fill:#bf3989}svg.timeline .p-recovery{fill:#cf222e}
svg.timeline .p-pass{fill:#1a7f37}svg.timeline .p-fail{fill:#cf222e}svg.timeline .p-other{fill:#6e7781}
svg.timeline .failed rect{stroke:#cf222e;stroke-width:2}
svg.timeline .bar-text{fill:#fff;font-size:11px}
svg.timeline .cross{stroke:#cf222e;stroke-width:2.5}
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{ErrorClass, Outcome};

    fn line(seq: u64, ms: u32, from: State, to: State, iteration: u32) -> TraceLine {
        TraceLine {
            seq,
            ts: format!("2026-01-01T00:00:{:02}.{:03}Z", ms / 1000, ms % 1000),
            from,
            to,
            outcome: Outcome::TaskReceived,
            reason: String::new(),
            iteration,
            error_class: None,
            evidence: vec![],
            evidence_sha256: vec![],
        }
    }

    fn label(i: u32) -> String {
        format!("iteration {i}")
    }

    #[test]
    fn every_working_state_has_a_lane_and_the_instants_have_none() {
        for state in State::ALL {
            let expected = !matches!(
                state,
                State::Idle | State::Init | State::Success | State::Failure | State::Aborted
            );
            assert_eq!(phase_of(state).is_some(), expected, "{state:?}");
        }
        assert_eq!(phase_of(State::TestSetup), Some(Phase::FlashBoot));
    }

    #[test]
    fn bars_span_entering_to_leaving_and_mark_what_ended_badly() {
        let mut broke = line(4, 1500, State::BuildRun, State::ErrorRecovery, 1);
        broke.error_class = Some(ErrorClass::BuildFailure);
        broke.reason = "build failed <exit 2>".into();
        let lines = vec![
            line(1, 0, State::Idle, State::Init, 0),
            line(2, 100, State::Init, State::BuildSetup, 0),
            line(3, 200, State::BuildSetup, State::BuildRun, 1),
            broke,
            line(5, 1600, State::ErrorRecovery, State::Failure, 1),
        ];
        let bars = phase_bars(&lines, &label);
        let got: Vec<(usize, i64, bool)> = bars
            .iter()
            .map(|b| (b.lane, (b.end - b.start).num_milliseconds(), b.failed))
            .collect();
        assert_eq!(
            got,
            vec![
                (Phase::Build.index(), 100, false),
                (Phase::Build.index(), 1300, true),
                (Phase::Recovery.index(), 100, true),
            ]
        );
        assert_eq!(
            bars[1].title,
            "iteration 1: BUILD_RUN (1300 ms) → ERROR_RECOVERY [BUILD_FAILURE]: build failed <exit 2>"
        );
        let marks = iteration_marks(&lines, &label);
        assert_eq!(
            marks.iter().map(|m| m.label.as_str()).collect::<Vec<_>>(),
            vec!["iteration 0", "iteration 1"]
        );
    }

    #[test]
    fn a_broken_timestamp_or_a_gap_in_the_trace_costs_only_its_bar() {
        let mut bad = line(2, 100, State::Init, State::BuildSetup, 0);
        bad.ts = "yesterday".into();
        let lines = vec![
            line(1, 0, State::Idle, State::Init, 0),
            bad,
            line(3, 200, State::BuildSetup, State::BuildRun, 0),
            line(5, 900, State::TestSetup, State::TestRun, 0),
            line(6, 950, State::TestRun, State::ResultCollection, 0),
        ];
        let bars = phase_bars(&lines, &label);
        assert_eq!(bars.len(), 1);
        assert_eq!(bars[0].lane, Phase::Test.index());
    }

    #[test]
    fn svg_escapes_what_it_shows_and_is_empty_without_bars() {
        assert_eq!(render_svg(&["build"], &[], &[]), "");
        let start = timestamp("2026-01-01T00:00:00Z").unwrap();
        let bar = Bar {
            lane: 0,
            iteration: 0,
            state: None,
            start,
            end: start + chrono::Duration::milliseconds(2500),
            class: "p-build",
            failed: true,
            title: "<script>alert(1)</script>".into(),
            text: "<i>".into(),
        };
        let mark = Mark {
            at: start,
            label: "<b>".into(),
        };
        let svg = render_svg(&["<lane>", "test"], &[bar], &[mark]);
        assert!(svg.starts_with("<svg class=\"timeline\""));
        assert!(!svg.contains("<script") && !svg.contains("<b>") && !svg.contains("<lane>"));
        assert!(svg.contains(">&lt;i&gt;</text>"), "the bar's text: {svg}");
        assert!(svg.contains("&lt;script&gt;") && svg.contains("&lt;lane&gt;"));
        assert!(svg.contains("class=\"bar failed\"") && svg.contains("class=\"cross\""));
        assert!(svg.contains(">2.50 s</text>"));
    }
}
