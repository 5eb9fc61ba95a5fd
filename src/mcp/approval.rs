//! The approval gate over MCP: a candidate that needs a person (`approve` risky or always) is
//! shown to the agent's user through MCP elicitation — the patch, the policy's findings, the
//! risk — and applied only on their explicit yes. Declining, dismissing, or a client that stops
//! answering rejects it; nothing is ever approved for want of an answer.

use crate::policy::{ApprovalError, ApprovalRequest, Approver, Choice, DecidedBy, Decision};
use rmcp::service::ElicitationError;
use rmcp::{Peer, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;
use std::future::Future;
use std::pin::Pin;

/// Longest diff shown in the question; a longer one is cut with a note (the whole patch is in
/// the run directory).
const MAX_DIFF_CHARS: usize = 12_000;

/// What the person answers.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Answer {
    /// Apply this patch?
    pub approve: bool,
    /// Why not (goes back to the loop as evidence for the next candidate).
    #[serde(default)]
    pub reason: String,
}

rmcp::elicit_safe!(Answer);

/// Asks through the client that called `run`.
#[derive(Debug)]
pub struct Eliciting {
    pub peer: Peer<RoleServer>,
}

impl Eliciting {
    /// Who answered, as review.json records it: the client's name.
    fn who(&self) -> String {
        match self.peer.peer_info() {
            Some(info) => format!("{} (through MCP)", info.client_info.name),
            None => "an MCP client's user".to_string(),
        }
    }
}

impl Approver for Eliciting {
    fn ask<'a>(
        &'a self,
        request: ApprovalRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<Decision, ApprovalError>> + Send + 'a>> {
        Box::pin(async move {
            let question = question(&request);
            let decided = |choice| Decision {
                choice,
                decided_by: DecidedBy::Human { user: self.who() },
            };
            match self.peer.elicit::<Answer>(question).await {
                Ok(Some(Answer { approve: true, .. })) => Ok(decided(Choice::Approved)),
                Ok(Some(Answer { reason, .. })) => Ok(decided(Choice::Rejected {
                    reason: if reason.trim().is_empty() {
                        "rejected by the reviewer".to_string()
                    } else {
                        reason
                    },
                })),
                Err(ElicitationError::UserDeclined) => Ok(decided(Choice::Rejected {
                    reason: "declined by the reviewer".to_string(),
                })),
                Ok(None)
                | Err(ElicitationError::UserCancelled)
                | Err(ElicitationError::NoContent) => Ok(Decision::rejected_by_policy(
                    "the approval question was dismissed without an answer",
                )),
                Err(ElicitationError::CapabilityNotSupported) => Ok(Decision::rejected_by_policy(
                    "approval required but the MCP client cannot be asked (no elicitation)",
                )),
                Err(e) => Err(ApprovalError::Remote {
                    via: "the MCP client".to_string(),
                    message: e.to_string(),
                }),
            }
        })
    }
}

/// The question: what the patch is, what the policy found, and the patch itself.
fn question(request: &ApprovalRequest<'_>) -> String {
    let review = request.review;
    let mut text = format!(
        "fwfix: approve iteration {}'s candidate patch ({})? Risk {:.2}",
        request.iteration, request.origin, review.risk.score
    );
    if !review.risk.reasons.is_empty() {
        text.push_str(&format!(" ({})", review.risk.reasons.join("; ")));
    }
    text.push('.');
    for finding in &review.findings {
        text.push_str(&format!(
            "\n- {:?} {}: {}",
            finding.severity, finding.rule, finding.message
        ));
    }
    let diff: String = request.diff.chars().take(MAX_DIFF_CHARS).collect();
    text.push_str("\n\n");
    text.push_str(&crate::report::visible(&diff));
    if request.diff.chars().count() > MAX_DIFF_CHARS {
        text.push_str("\n[... cut; the whole patch is in the run directory]");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Review, Risk, Stats, Verdict};

    fn review() -> Review {
        Review {
            verdict: Verdict::Allow,
            findings: Vec::new(),
            risk: Risk {
                score: 0.5,
                reasons: vec!["registers (0.25) at src/crc.c:3".to_string()],
            },
            stats: Stats::default(),
        }
    }

    #[test]
    fn the_question_shows_origin_risk_and_patch_and_cuts_a_long_one() {
        let review = review();
        let request = ApprovalRequest {
            diff: "+++ b/src/crc.c\n+    uint16_t crc = 0xFFFFu;\n",
            review: &review,
            iteration: 1,
            origin: "queue: 04-fixes-crc16.diff",
        };
        let text = question(&request);
        assert!(text.contains("iteration 1's candidate patch (queue: 04-fixes-crc16.diff)"));
        assert!(text.contains("Risk 0.50 (registers"), "{text}");
        assert!(text.ends_with("0xFFFFu;\n"), "{text}");

        let long = "+x\n".repeat(MAX_DIFF_CHARS);
        let text = question(&ApprovalRequest {
            diff: &long,
            ..request
        });
        assert!(
            text.ends_with("in the run directory]"),
            "{}",
            &text[text.len() - 80..]
        );
        assert!(text.len() < MAX_DIFF_CHARS + 500);
    }
}
