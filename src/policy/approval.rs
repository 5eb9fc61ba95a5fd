//! The approval gate: whether a person must look at a patch the policy allows (`--approve
//! never|risky|always`), the [`Approver`] that asks them, the decision and who made it, and the
//! record of it all that the loop writes as `review.json`. It must not evaluate rules (that is
//! `evaluate`'s) nor talk to anyone: the approvers that ask a person live with the ways to reach
//! them (`ui::approve` on the terminal, `mcp::approval` through an MCP client).

use super::{Finding, Review, Risk, Severity, Stats, Verdict};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Risk at or above which `--approve risky` asks: any one of the hardware-facing categories
/// (interrupts, registers, clocks, linker symbols, critical sections) reaches it alone;
/// `volatile`, inline assembly, barriers or DMA need company.
pub const DEFAULT_RISK_THRESHOLD: f32 = 0.25;

/// When a person is asked to approve a patch the policy allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApproveMode {
    /// Never ask: what the policy allows is applied (unattended runs).
    Never,
    /// Ask when the patch is risky or a finding warns.
    Risky,
    /// Ask for every patch.
    Always,
}

impl ApproveMode {
    pub const NAMES: [&'static str; 3] = ["never", "risky", "always"];

    /// `risky` when a person is there to answer (stdin and stderr are terminals), `never`
    /// otherwise: lab CI must never wait for an answer nobody can give.
    pub fn default_for(is_terminal: bool) -> ApproveMode {
        if is_terminal {
            ApproveMode::Risky
        } else {
            ApproveMode::Never
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ApproveMode::Never => "never",
            ApproveMode::Risky => "risky",
            ApproveMode::Always => "always",
        }
    }
}

impl fmt::Display for ApproveMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--approve` takes `never`, `risky` or `always`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown approval mode `{given}` (expected one of: never, risky, always)")]
pub struct UnknownApproveMode {
    pub given: String,
}

impl FromStr for ApproveMode {
    type Err = UnknownApproveMode;

    fn from_str(s: &str) -> Result<ApproveMode, UnknownApproveMode> {
        match s {
            "never" => Ok(ApproveMode::Never),
            "risky" => Ok(ApproveMode::Risky),
            "always" => Ok(ApproveMode::Always),
            other => Err(UnknownApproveMode {
                given: other.to_string(),
            }),
        }
    }
}

/// Whether a person must approve `review`'s patch before it is applied. A denied patch never
/// goes to a person: the policy has already said no, and the loop treats it as a violation.
pub fn needs_human(mode: ApproveMode, review: &Review, risk_threshold: f32) -> bool {
    if review.verdict == Verdict::Deny {
        return false;
    }
    match mode {
        ApproveMode::Never => false,
        ApproveMode::Always => true,
        ApproveMode::Risky => review.risk.score >= risk_threshold || review.has_warnings(),
    }
}

/// What the approver is shown.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalRequest<'a> {
    pub diff: &'a str,
    pub review: &'a Review,
    pub iteration: u32,
    /// Where the patch came from, e.g. `queue: 04-fixes-crc16.diff` or `llm: qwen2.5-coder`.
    pub origin: &'a str,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    Approved,
    /// The reason goes back to analysis as evidence.
    Rejected {
        reason: String,
    },
    /// The person rewrote the patch: the caller checks it against the policy again.
    Edited {
        diff: String,
    },
}

/// Who made a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DecidedBy {
    /// The policy alone: no person was asked, or none could answer.
    Policy,
    Human {
        user: String,
    },
}

/// An answer and who gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub choice: Choice,
    pub decided_by: DecidedBy,
}

impl Decision {
    /// The decision when no person is asked: approved when the policy allows the patch,
    /// rejected with the denying findings as the reason otherwise.
    pub fn by_policy(review: &Review) -> Decision {
        let choice = match review.verdict {
            Verdict::Allow => Choice::Approved,
            Verdict::Deny => Choice::Rejected {
                reason: denial_summary(review),
            },
        };
        Decision {
            choice,
            decided_by: DecidedBy::Policy,
        }
    }

    /// Rejected by the policy side for `reason` (no answer, no terminal).
    pub fn rejected_by_policy(reason: impl Into<String>) -> Decision {
        Decision {
            choice: Choice::Rejected {
                reason: reason.into(),
            },
            decided_by: DecidedBy::Policy,
        }
    }
}

fn denial_summary(review: &Review) -> String {
    let parts: Vec<String> = review
        .denials()
        .map(|f| format!("{}: {}", f.rule, f.message))
        .collect();
    format!("denied by policy: {}", parts.join("; "))
}

/// The approver without a terminal: it never asks, and rejects, because a patch that needed a
/// person must not be applied because nobody was there.
#[derive(Debug, Clone, Copy, Default)]
pub struct NonInteractive;

impl NonInteractive {
    pub fn decision(&self) -> Decision {
        Decision::rejected_by_policy(
            "approval required but there is no terminal to ask on; run fwfix in a terminal, \
             or pass --approve never to apply what the policy allows",
        )
    }
}

impl Approver for NonInteractive {
    fn ask<'a>(
        &'a self,
        _request: ApprovalRequest<'a>,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Decision, ApprovalError>> + Send + 'a>,
    > {
        let decision = self.decision();
        Box::pin(async move { Ok(decision) })
    }
}

/// Something that decides about a patch the policy allows: a person on the terminal (`ui`), an
/// agent's user through an MCP client (`mcp`), or [`NonInteractive`]. The orchestrator is given
/// one and never talks to a person itself; asking is async so an abort need not wait for the
/// answer.
pub trait Approver: Send + Sync + fmt::Debug {
    fn ask<'a>(
        &'a self,
        request: ApprovalRequest<'a>,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Decision, ApprovalError>> + Send + 'a>,
    >;
}

#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error("cannot ask through {via}: {message}")]
    Remote { via: String, message: String },
    #[error("cannot {op} on the terminal: {source}")]
    Terminal {
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot {op} the patch file {path}: {source}")]
    PatchFile {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot run the editor `{command}`: {source}")]
    Editor {
        command: String,
        #[source]
        source: std::io::Error,
    },
}

/// How the decision reads in `review.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    Approved,
    Rejected,
    Edited,
}

/// `review.json`: what the policy found and what was decided, by whom, when. The edited patch
/// itself is not in it; the loop keeps patches as `.diff` files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewRecord {
    pub iteration: u32,
    pub origin: String,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    pub risk: Risk,
    pub stats: Stats,
    pub decision: DecisionKind,
    pub decided_by: DecidedBy,
    /// Why it was rejected; `None` otherwise.
    pub reason: Option<String>,
    pub time: DateTime<Utc>,
}

impl ReviewRecord {
    pub fn new(request: &ApprovalRequest<'_>, decision: &Decision, time: DateTime<Utc>) -> Self {
        let (kind, reason) = match &decision.choice {
            Choice::Approved => (DecisionKind::Approved, None),
            Choice::Rejected { reason } => (DecisionKind::Rejected, Some(reason.clone())),
            Choice::Edited { .. } => (DecisionKind::Edited, None),
        };
        let review = request.review;
        ReviewRecord {
            iteration: request.iteration,
            origin: request.origin.to_string(),
            verdict: review.verdict,
            findings: review.findings.clone(),
            risk: review.risk.clone(),
            stats: review.stats,
            decision: kind,
            decided_by: decision.decided_by.clone(),
            reason,
            time,
        }
    }

    /// The warnings and denials, for a summary line.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::evaluate;
    use super::super::testing::*;
    use super::*;
    use crate::config::BuiltinDeny;
    use chrono::TimeZone;

    fn plain() -> Review {
        evaluate(
            include_str!("../../fixtures/fwtests/patches/04-fixes-crc16.diff"),
            &spec(),
        )
    }

    fn risky() -> Review {
        evaluate(&diff("src/uart.c", &[], &["    __disable_irq();"]), &spec())
    }

    fn denied() -> Review {
        evaluate(&diff("tests/test_crc.c", &["a;"], &["b;"]), &spec())
    }

    fn warned() -> Review {
        let mut s = spec();
        s.allow.push("tests/**".into());
        s.allow_builtin = vec![BuiltinDeny::Tests];
        evaluate(&diff("tests/test_new.c", &[], &["int x;"]), &s)
    }

    #[test]
    fn default_mode_follows_the_terminal() {
        assert_eq!(ApproveMode::default_for(true), ApproveMode::Risky);
        assert_eq!(ApproveMode::default_for(false), ApproveMode::Never);
        for name in ApproveMode::NAMES {
            assert_eq!(name.parse::<ApproveMode>().unwrap().to_string(), name);
        }
        let err = "sometimes".parse::<ApproveMode>().unwrap_err();
        assert!(err.to_string().contains("never, risky, always"));
    }

    #[test]
    fn who_needs_a_human() {
        let t = DEFAULT_RISK_THRESHOLD;
        assert!(!needs_human(ApproveMode::Risky, &plain(), t));
        assert!(needs_human(ApproveMode::Risky, &risky(), t));
        assert!(needs_human(ApproveMode::Risky, &warned(), t));
        assert!(!needs_human(ApproveMode::Risky, &risky(), 0.9));
        assert!(needs_human(ApproveMode::Always, &plain(), t));
        assert!(!needs_human(ApproveMode::Never, &risky(), t));
        for mode in [ApproveMode::Never, ApproveMode::Risky, ApproveMode::Always] {
            assert!(!needs_human(mode, &denied(), t), "{mode}");
        }
    }

    #[test]
    fn policy_decisions_explain_denials() {
        assert_eq!(Decision::by_policy(&plain()).choice, Choice::Approved);
        let d = Decision::by_policy(&denied());
        assert_eq!(d.decided_by, DecidedBy::Policy);
        let Choice::Rejected { reason } = d.choice else {
            panic!("not rejected")
        };
        assert!(reason.contains("path.deny.builtin.tests"), "{reason}");
    }

    #[test]
    fn non_interactive_never_approves() {
        let review = risky();
        let req = ApprovalRequest {
            diff: "",
            review: &review,
            iteration: 1,
            origin: "queue: a.diff",
        };
        let approver: Box<dyn Approver> = Box::new(NonInteractive);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let d = runtime.block_on(approver.ask(req)).unwrap();
        assert_eq!(d.decided_by, DecidedBy::Policy);
        assert!(matches!(d.choice, Choice::Rejected { reason } if reason.contains("no terminal")));
    }

    #[test]
    fn review_record_json_shape() {
        let review = denied();
        let req = ApprovalRequest {
            diff: "",
            review: &review,
            iteration: 3,
            origin: "llm: qwen",
        };
        let time = Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap();
        let rec = ReviewRecord::new(&req, &Decision::by_policy(&review), time);
        let json: serde_json::Value = serde_json::to_value(&rec).unwrap();
        assert_eq!(json["verdict"], "deny");
        assert_eq!(json["decision"], "rejected");
        assert_eq!(json["decided_by"]["kind"], "policy");
        assert_eq!(json["iteration"], 3);
        assert_eq!(json["time"], "2024-05-01T12:00:00Z");
        assert!(json["reason"]
            .as_str()
            .unwrap()
            .starts_with("denied by policy"));
        assert_eq!(json["findings"][0]["severity"], "deny");
        assert!(json["risk"]["score"].is_number());
        let back: ReviewRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, rec);
        assert!(rec.count(Severity::Deny) >= 1);

        let human = Decision {
            choice: Choice::Edited { diff: "x".into() },
            decided_by: DecidedBy::Human { user: "ada".into() },
        };
        let rec = ReviewRecord::new(&req, &human, time);
        let json = serde_json::to_value(&rec).unwrap();
        assert_eq!(json["decision"], "edited");
        assert_eq!(
            json["decided_by"],
            serde_json::json!({"kind": "human", "user": "ada"})
        );
        assert!(json["reason"].is_null());
    }
}
