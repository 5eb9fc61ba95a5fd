//! A run's hold on a labgrid place, from the reservation to the release, and what survives a
//! dead client.
//!
//! 1. A fresh identity (`client::Identity`) and a record of it in `<state>/labgrid/<user>.json`
//!    (board, coordinator, place, token, and the fwfix process that holds it), written before
//!    anything is asked of the coordinator, so nothing fwfix acquires is ever unrecorded.
//! 2. By name: `acquire` is tried until it succeeds, the deadline (`--lock-timeout`) passes, or
//!    the run is cancelled; each new holder is announced (an fwfix run by its record). By tags:
//!    `reserve` (the token goes into the record), `wait` for the allocation under the same
//!    deadline, then `acquire` the reserved place (`-p +`).
//! 3. `env` reads the place's resources (see `resources`).
//! 4. [`Acquired`] releases the place and cancels the reservation when dropped — after a
//!    success, a failure, Ctrl+C, or a panic unwinding — and then removes the record. Only a
//!    kill -9 (or a coordinator gone at that moment) leaves the record behind: [`reclaim`]
//!    (`fwfix boards reclaim`) releases and cancels, as the dead run's own identity, what records
//!    left by processes that are gone on this host still hold.
//!
//! A process-wide table lets the DUT of a job (and of a bisect's steps) find the place its
//! command acquired for the board.

use super::client::{self, Client, Identity};
use super::resources::{self, PlaceResources};
use crate::config::LabgridSpec;
use crate::dut::boards_state::Holder;
use crate::dut::DutError;
use crate::events::{Event, EventSink, Level};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Between two tries of a busy place.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// What fwfix keeps about one acquisition.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlaceRecord {
    pub board: String,
    pub coordinator: Option<String>,
    /// The place's name once known (with tags: once the reservation is allocated).
    pub place: Option<String>,
    pub token: Option<String>,
    pub identity: Identity,
    pub holder: Holder,
}

/// `<state>/labgrid`.
pub fn records_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("labgrid")
}

fn record_path(state_dir: &Path, identity: &Identity) -> PathBuf {
    records_dir(state_dir).join(format!("{}.json", identity.user))
}

fn store(path: &Path, record: &PlaceRecord) -> Result<(), DutError> {
    let io = |source| DutError::Io {
        doing: format!("writing {}", path.display()),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let text = serde_json::to_vec_pretty(record).map_err(|e| io(std::io::Error::other(e)))?;
    crate::rundir::write_atomic(path, &text).map_err(io)
}

/// Every record in the state directory (unreadable files are skipped).
pub fn records(state_dir: &Path) -> Vec<(PathBuf, PlaceRecord)> {
    let Ok(entries) = std::fs::read_dir(records_dir(state_dir)) else {
        return Vec::new();
    };
    let mut found: Vec<(PathBuf, PlaceRecord)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter_map(|p| {
            let record = serde_json::from_slice(&std::fs::read(&p).ok()?).ok()?;
            Some((p, record))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// A place this process holds. Dropping it releases the place and cancels the reservation.
#[derive(Debug)]
pub struct Acquired {
    client: Client,
    place: String,
    resources: PlaceResources,
    record: PathBuf,
}

static HELD: Mutex<Vec<(String, Weak<Acquired>)>> = Mutex::new(Vec::new());

/// The place this process holds for `board`, if any.
pub fn held(board: &str) -> Option<Arc<Acquired>> {
    let held = HELD.lock().ok()?;
    held.iter()
        .filter(|(b, _)| b == board)
        .find_map(|(_, w)| w.upgrade())
}

impl Acquired {
    pub fn place(&self) -> &str {
        &self.place
    }

    pub fn resources(&self) -> &PlaceResources {
        &self.resources
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Where the coordinator listens (labgrid's default when none is configured), for the
    /// watch that notices it going away.
    pub fn coordinator_address(&self) -> String {
        self.client
            .coordinator
            .clone()
            .unwrap_or_else(|| "127.0.0.1:20408".into())
    }

    /// One line for the report's notes.
    pub fn note(&self, waited: Duration) -> String {
        format!(
            "acquired labgrid place {} as {} after {:.1} s",
            self.place,
            self.client.identity.owner(),
            waited.as_secs_f64()
        )
    }
}

impl Drop for Acquired {
    fn drop(&mut self) {
        let client = self.client.clone();
        let place = self.place.clone();
        let record = self.record.clone();
        // Drop cannot await and may run inside the runtime: the release gets a runtime of its
        // own on a thread of its own, and the drop waits for it.
        let done = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            if rt.block_on(give_back(&client, Some(&place))) {
                let _ = std::fs::remove_file(&record);
            }
        });
        let _ = done.join();
    }
}

/// Releases `place` (when acquired) and cancels the reservation, as `client`'s identity; true
/// when nothing is held any more.
async fn give_back(client: &Client, place: Option<&str>) -> bool {
    let never = CancellationToken::new();
    let mut free = true;
    if let Some(place) = place {
        free = match client.call(Some(place), &["release"], &never).await {
            Ok(_) => true,
            // Not (or no longer) ours: nothing to give back.
            Err(Ok(r)) => r.message.contains("not acquired"),
            Err(Err(_)) => false,
        };
    }
    if let Some(token) = &client.token {
        let cancelled = client
            .call(None, &["cancel-reservation", token], &never)
            .await;
        free &= match cancelled {
            Ok(_) => true,
            Err(Ok(_)) => true,
            Err(Err(_)) => false,
        };
    }
    free
}

/// How a wait for a place ended badly.
fn wait_over(what: &str, waited: Duration, timeout: Duration, last: &str) -> DutError {
    DutError::Other(format!(
        "labgrid {what} is busy ({last}); gave up after waiting {} s (--lock-timeout {} s)",
        waited.as_secs(),
        timeout.as_secs()
    ))
}

/// Takes the place `spec` names (or one matching its tags) for `holder`'s run of `board`,
/// waiting up to `timeout` while others hold it.
pub async fn acquire(
    spec: &LabgridSpec,
    board: &str,
    state_dir: &Path,
    holder: Holder,
    timeout: Duration,
    cancel: &CancellationToken,
    events: &dyn EventSink,
) -> Result<(Arc<Acquired>, Duration), DutError> {
    let started = Instant::now();
    let identity = Identity::fresh();
    let mut client = Client {
        coordinator: crate::config::host::labgrid_coordinator().or(spec.coordinator.clone()),
        identity: identity.clone(),
        token: None,
    };
    let path = record_path(state_dir, &identity);
    let mut record = PlaceRecord {
        board: board.to_string(),
        coordinator: client.coordinator.clone(),
        place: spec.place.clone(),
        token: None,
        identity,
        holder,
    };
    store(&path, &record)?;
    let result = take(
        spec,
        &mut client,
        &mut record,
        &path,
        state_dir,
        timeout,
        cancel,
        events,
    )
    .await;
    let place = match result {
        Ok(place) => place,
        Err(e) => {
            if give_back(&client, None).await {
                let _ = std::fs::remove_file(&path);
            }
            return Err(e);
        }
    };
    // From here the guard gives the place back on every path.
    let pending = Acquired {
        client: client.clone(),
        place: place.clone(),
        resources: PlaceResources {
            place: place.clone(),
            resources: Vec::new(),
        },
        record: path,
    };
    let env = client
        .call(Some(&place), &["env"], cancel)
        .await
        .map_err(client::failure)?;
    let resources = resources::parse_env(&env.stdout).map_err(DutError::Other)?;
    let mut pending = pending;
    pending.resources = resources;
    let acquired = Arc::new(pending);
    if let Ok(mut held) = HELD.lock() {
        held.retain(|(_, w)| w.strong_count() > 0);
        held.push((board.to_string(), Arc::downgrade(&acquired)));
    }
    Ok((acquired, started.elapsed()))
}

/// Step 2 of the module outline; returns the place's name.
#[allow(clippy::too_many_arguments)]
async fn take(
    spec: &LabgridSpec,
    client: &mut Client,
    record: &mut PlaceRecord,
    path: &Path,
    state_dir: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
    events: &dyn EventSink,
) -> Result<String, DutError> {
    let started = Instant::now();
    let deadline = started + timeout;
    if spec.place.is_none() {
        let mut args = vec!["reserve", "--shell"];
        args.extend(spec.tags.iter().map(String::as_str));
        let out = client
            .call(None, &args, cancel)
            .await
            .map_err(client::failure)?;
        let token = out
            .stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix("export LG_TOKEN="))
            .map(|t| t.trim().to_string())
            .ok_or_else(|| {
                DutError::Other(format!(
                    "`labgrid-client reserve` printed no token: {}",
                    out.stdout.trim()
                ))
            })?;
        client.token = Some(token.clone());
        record.token = Some(token.clone());
        store(path, record)?;
        events.emit(&Event::Message {
            level: Level::Info,
            text: format!(
                "waiting for a labgrid place with {} (reservation {token}, up to {} s)",
                spec.tags.join(" "),
                timeout.as_secs()
            ),
        });
        let wait_args = ["wait", token.as_str()];
        let left = deadline.saturating_duration_since(Instant::now());
        match client.call_within(None, &wait_args, left, cancel).await {
            Ok(_) => {}
            Err(Ok(r)) => return Err(client::refused(r)),
            Err(Err(DutError::Unreachable { .. })) => {
                return Err(wait_over(
                    &format!("places with {}", spec.tags.join(" ")),
                    started.elapsed(),
                    timeout,
                    "no place was allocated to the reservation",
                ))
            }
            Err(Err(e)) => return Err(e),
        }
        client
            .call(Some("+"), &["acquire"], cancel)
            .await
            .map_err(client::failure)?;
        let env = client
            .call(Some("+"), &["env"], cancel)
            .await
            .map_err(client::failure)?;
        let place = resources::parse_env(&env.stdout)
            .map_err(DutError::Other)?
            .place;
        record.place = Some(place.clone());
        store(path, record)?;
        return Ok(place);
    }
    let place = spec.place.clone().unwrap_or_default();
    let mut announced: Option<String> = None;
    loop {
        let refusal = match client.call(Some(&place), &["acquire"], cancel).await {
            Ok(_) => return Ok(place),
            Err(Err(e)) => return Err(e),
            Err(Ok(r)) => r,
        };
        let Some(owner) = holder_in(&refusal.message) else {
            return Err(client::refused(refusal));
        };
        let who = describe_owner(state_dir, &owner);
        if Instant::now() >= deadline {
            return Err(wait_over(
                &format!("place {place}"),
                started.elapsed(),
                timeout,
                &format!("acquired by {who}"),
            ));
        }
        if announced.as_deref() != Some(&who) {
            events.emit(&Event::Message {
                level: Level::Info,
                text: format!(
                    "labgrid place {place} is acquired by {who}; waiting up to {} s \
                     (--lock-timeout)",
                    timeout.as_secs()
                ),
            });
            announced = Some(who);
        }
        let pause = RETRY_PAUSE.min(deadline.saturating_duration_since(Instant::now()));
        tokio::select! {
            _ = cancel.cancelled() => {
                return Err(DutError::Other(format!("stopped waiting for labgrid place {place}: cancelled")));
            }
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

/// The owner (`HOST/USER`) labgrid names when it refuses a place already acquired; shown while
/// waiting, never used to decide anything.
fn holder_in(message: &str) -> Option<String> {
    let rest = message.split("already acquired by ").nth(1)?;
    let owner = rest.split_whitespace().next()?.trim_end_matches(['.', ',']);
    Some(owner.to_string())
}

/// An owner as a person wants to read it: an fwfix run by its record, anyone else as labgrid
/// names them.
fn describe_owner(state_dir: &Path, owner: &str) -> String {
    records(state_dir)
        .into_iter()
        .find(|(_, r)| r.identity.owner() == owner)
        .map(|(_, r)| format!("{owner}, {}", r.holder.describe()))
        .unwrap_or_else(|| owner.to_string())
}

/// What `fwfix boards reclaim` did with one record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Reclaimed {
    pub board: String,
    pub place: Option<String>,
    pub owner: String,
    pub holder: String,
    /// `released`, `in use` (its process is alive, or on another host), or `failed: ...`.
    pub outcome: String,
}

/// Releases and cancels what fwfix runs whose process is gone left acquired, as their own
/// identities, and forgets their records; runs still alive, and runs on other hosts, are left
/// alone.
pub async fn reclaim(state_dir: &Path, cancel: &CancellationToken) -> Vec<Reclaimed> {
    let mut done = Vec::new();
    for (path, record) in records(state_dir) {
        let mut row = Reclaimed {
            board: record.board.clone(),
            place: record.place.clone(),
            owner: record.identity.owner(),
            holder: record.holder.describe(),
            outcome: "in use".into(),
        };
        if record.holder.known_gone() {
            let client = Client {
                coordinator: record.coordinator.clone(),
                identity: record.identity.clone(),
                token: record.token.clone(),
            };
            row.outcome = if cancel.is_cancelled() {
                "failed: interrupted".into()
            } else if give_back(&client, record.place.as_deref()).await {
                let _ = std::fs::remove_file(&path);
                "released".into()
            } else {
                format!(
                    "failed: the coordinator ({}) did not answer; the record is kept",
                    record.coordinator.as_deref().unwrap_or("labgrid's default")
                )
            };
        }
        done.push(row);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_read_from_labgrids_refusal() {
        assert_eq!(
            holder_in(
                "Error: Place p1 is already acquired by h1/u1. To work simultaneously, u1 can \
                 execute 'labgrid-client -p p1 allow h2/u2' on h1."
            )
            .as_deref(),
            Some("h1/u1")
        );
        assert_eq!(holder_in("Error: place p9 does not exist"), None);
    }

    #[test]
    fn records_are_named_by_the_run_identity_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let identity = Identity {
            host: "h".into(),
            user: "fwfix-1-a".into(),
        };
        let record = PlaceRecord {
            board: "farm".into(),
            coordinator: Some("127.0.0.1:1".into()),
            place: Some("p1".into()),
            token: None,
            identity: identity.clone(),
            holder: Holder::this_process("r1", "test"),
        };
        let path = record_path(dir.path(), &identity);
        store(&path, &record).unwrap();
        assert!(path.ends_with("labgrid/fwfix-1-a.json"));
        assert_eq!(records(dir.path()), vec![(path, record)]);
        assert!(describe_owner(dir.path(), "h/fwfix-1-a")
            .starts_with("h/fwfix-1-a, run r1 (fwfix test, pid"));
        assert_eq!(describe_owner(dir.path(), "x/y"), "x/y");
    }
}
