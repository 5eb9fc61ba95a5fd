//! One `labgrid-client` invocation: the argv (coordinator, place, the run's identity and
//! reservation token in its environment), run through `process::spawn_group` under a time limit
//! and cancellation, its output returned or turned into a [`DutError`] that names the command.
//!
//! It must not decide what a failure means for the place: `place` does.

use crate::dut::DutError;
use crate::process::output::{self, Limits, Stopped, TOOL_OUTPUT_MAX};
use crate::process::spawn_group;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// The program, as labgrid installs it.
pub const PROGRAM: &str = "labgrid-client";

/// How long one call may take: labgrid-client's Python start-up is ~0.4 s, a power call a
/// little more; a coordinator that does not answer makes it wait for its own gRPC timeout.
pub const CALL_LIMIT: Duration = Duration::from_secs(30);

/// Who fwfix is to the coordinator for one run: `LG_HOSTNAME` and `LG_USERNAME`. Each run has a
/// user of its own (`fwfix-<pid>-<start>`), so two runs on one host are two owners and one
/// cannot release the other's place by accident.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Identity {
    pub host: String,
    pub user: String,
}

impl Identity {
    /// A fresh identity for this process.
    pub fn fresh() -> Identity {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros())
            .unwrap_or_default();
        let host = crate::process::host_name();
        Identity {
            host: if host.is_empty() {
                "localhost".into()
            } else {
                host
            },
            user: format!("fwfix-{}-{started:x}", std::process::id()),
        }
    }

    /// `HOST/USER`, as labgrid shows an owner.
    pub fn owner(&self) -> String {
        format!("{}/{}", self.host, self.user)
    }
}

/// How to reach the coordinator as one identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub coordinator: Option<String>,
    pub identity: Identity,
    /// The reservation's token, once there is one (`LG_TOKEN`, for `-p +`).
    pub token: Option<String>,
}

/// What a call printed.
#[derive(Debug)]
pub struct Answer {
    pub stdout: String,
    pub stderr: String,
}

/// A call that ran and failed.
#[derive(Debug)]
pub struct Refusal {
    pub invocation: String,
    pub message: String,
}

impl Client {
    /// The argv after the program: `-x COORDINATOR` when one is known, `-p PLACE` when given.
    pub fn argv(&self, place: Option<&str>, args: &[&str]) -> Vec<String> {
        let mut argv = Vec::new();
        if let Some(c) = &self.coordinator {
            argv.extend(["-x".to_string(), c.clone()]);
        }
        if let Some(p) = place {
            argv.extend(["-p".to_string(), p.to_string()]);
        }
        argv.extend(args.iter().map(|a| a.to_string()));
        argv
    }

    /// Runs `labgrid-client ARGV`. Err(Ok(refusal)) when it ran and failed (the caller decides
    /// what that means); Err(Err(e)) when it could not be run, overran, or was cancelled.
    pub async fn call(
        &self,
        place: Option<&str>,
        args: &[&str],
        cancel: &CancellationToken,
    ) -> Result<Answer, Result<Refusal, DutError>> {
        self.call_within(place, args, CALL_LIMIT, cancel).await
    }

    /// [`Client::call`] with a time limit of its own (`wait` for a reservation runs until the
    /// run's deadline).
    pub async fn call_within(
        &self,
        place: Option<&str>,
        args: &[&str],
        limit: Duration,
        cancel: &CancellationToken,
    ) -> Result<Answer, Result<Refusal, DutError>> {
        let argv = self.argv(place, args);
        let invocation = format!("{PROGRAM} {}", argv.join(" "));
        let mut command = Command::new(PROGRAM);
        command
            .args(&argv)
            .env("LG_HOSTNAME", &self.identity.host)
            .env("LG_USERNAME", &self.identity.user)
            .env_remove("LG_PLACE")
            .env_remove("LG_ENV")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match &self.token {
            Some(token) => command.env("LG_TOKEN", token),
            None => command.env_remove("LG_TOKEN"),
        };
        let (mut child, mut guard) = spawn_group(&mut command).map_err(|e| Err(spawn_error(e)))?;
        let limits = Limits {
            timeout: limit,
            cancel: Some(cancel),
            term_grace: Duration::ZERO,
        };
        let captured = output::capture(&mut child, &mut guard, limits, TOOL_OUTPUT_MAX).await;
        let output = match captured.into_output() {
            Err(Stopped::Cancelled) => {
                return Err(Err(DutError::Other(format!("`{invocation}` interrupted"))))
            }
            Err(Stopped::TimedOut) => {
                return Err(Err(DutError::Unreachable {
                    what: "the labgrid coordinator".into(),
                    address: self.coordinator.clone().unwrap_or_else(|| "default".into()),
                    message: format!("`{invocation}` did not finish within {} s", limit.as_secs()),
                    fix: "is labgrid-coordinator running there (LG_COORDINATOR, [labgrid] \
                          coordinator)?"
                        .into(),
                }))
            }
            Err(Stopped::WaitFailed(e)) => {
                return Err(Err(DutError::Io {
                    doing: format!("running `{invocation}`"),
                    source: e,
                }))
            }
            Ok(output) => output,
        };
        let answer = Answer {
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        if output.status.success() {
            return Ok(answer);
        }
        Err(Ok(Refusal {
            invocation,
            message: last_words(&answer.stderr, &answer.stdout),
        }))
    }
}

/// The error a failed call ends in when the caller has nothing better to say.
pub fn refused(r: Refusal) -> DutError {
    DutError::Other(format!("`{}` failed: {}", r.invocation, r.message))
}

/// Any failed call as a DUT error.
pub fn failure(e: Result<Refusal, DutError>) -> DutError {
    e.map_or_else(|e| e, refused)
}

/// labgrid-client's message: its last `labgrid-client: Error:` line, else the last line of a
/// traceback, else whatever it printed last.
pub fn last_words(stderr: &str, stdout: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .chain(stdout.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("labgrid-client: "))
        .or_else(|| lines.last().copied())
        .unwrap_or("no output")
        .to_string()
}

fn spawn_error(e: std::io::Error) -> DutError {
    if e.kind() == std::io::ErrorKind::NotFound {
        DutError::ToolMissing {
            program: PROGRAM.into(),
            hint: "install labgrid (`pip install labgrid==26.0.1`, e.g. into a venv) and put \
                   its bin directory on PATH"
                .into(),
        }
    } else {
        DutError::StartFailed {
            program: PROGRAM.into(),
            message: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_names_the_coordinator_and_place_only_when_known() {
        let client = Client {
            coordinator: Some("127.0.0.1:20408".into()),
            identity: Identity {
                host: "h".into(),
                user: "u".into(),
            },
            token: None,
        };
        assert_eq!(
            client.argv(Some("p1"), &["power", "on"]),
            ["-x", "127.0.0.1:20408", "-p", "p1", "power", "on"]
        );
        let bare = Client {
            coordinator: None,
            ..client
        };
        assert_eq!(bare.argv(None, &["who"]), ["who"]);
        assert_eq!(bare.identity.owner(), "h/u");
    }

    #[test]
    fn identities_differ_per_call_and_name_the_process() {
        let a = Identity::fresh();
        std::thread::sleep(Duration::from_millis(2));
        let b = Identity::fresh();
        assert_ne!(a, b);
        assert!(a
            .user
            .starts_with(&format!("fwfix-{}-", std::process::id())));
    }

    #[test]
    fn the_last_words_are_labgrids_error_line() {
        let stderr =
            "Traceback\n  File x\nlabgrid-client: Error: Place p1 is already acquired by h/u.\n";
        assert_eq!(
            last_words(stderr, ""),
            "Error: Place p1 is already acquired by h/u."
        );
        assert_eq!(last_words("a\nValueError: boom\n", ""), "ValueError: boom");
        assert_eq!(last_words("", ""), "no output");
    }
}
