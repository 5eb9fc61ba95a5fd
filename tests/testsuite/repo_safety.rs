//! Repository safety, against real git repositories built in temporary directories with the `git`
//! command line (as a firmware engineer would make them): snapshots touch nothing, rollback is
//! byte-exact, unsafe patches are refused before anything is written, drifted patches apply with
//! offset and fuzz, worktrees and the fix branch leave the user's checkout alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use fwfix::repo::{
    ensure_excluded, ApplyMethod, ChangeKind, FixBase, Repo, RepoError, Snapshot, UnsafeReason,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::sh;

// ---------------------------------------------------------------------------------------------
// Fixture helper

/// A git repository in a temporary directory, driven by the `git` CLI with a fixed identity and
/// no user or system configuration.
struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

fn git_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Fixture Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_NAME", "Fixture Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
        // `git status` must not refresh the index behind our back while we compare it.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .unwrap_or_else(|e| panic!("the git command line is required for these tests: {e}"))
}

impl Fixture {
    /// `git init` with a `.gitignore` for build outputs and one committed file.
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("fw");
        fs::create_dir(&root).unwrap();
        let f = Fixture { _tmp: tmp, root };
        f.git(&["init", "-q", "-b", "main"]);
        f.write(".gitignore", "build/\n*.o\n");
        f.write("README.md", "firmware\n");
        f.git(&["add", "-A"]);
        f.git(&["commit", "-q", "-m", "initial"]);
        f
    }

    /// A directory next to the repository, outside it.
    fn outside(&self) -> PathBuf {
        self.root.parent().unwrap().to_path_buf()
    }

    fn git(&self, args: &[&str]) -> String {
        let out = git_in(&self.root, args);
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn git_may_fail(&self, args: &[&str]) -> bool {
        git_in(&self.root, args).status.success()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    fn read(&self, rel: &str) -> Vec<u8> {
        fs::read(self.path(rel)).unwrap()
    }

    fn read_text(&self, rel: &str) -> String {
        String::from_utf8(self.read(rel)).unwrap()
    }

    fn set_exec(&self, rel: &str, exec: bool) {
        let p = self.path(rel);
        let mode = if exec { 0o755 } else { 0o644 };
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    }

    fn commit_all(&self, msg: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", msg]);
    }

    fn open(&self) -> Repo {
        Repo::open(&self.root).unwrap()
    }

    fn state(&self) -> RepoState {
        RepoState::capture(&self.root)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File { bytes: Vec<u8>, exec: bool },
    Link(PathBuf),
    Dir,
}

/// Everything a user could notice: every file (ignored ones too) with bytes and mode, every
/// directory, the index entries, the staged diff, the status, HEAD and the branch.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RepoState {
    files: BTreeMap<String, Entry>,
    index: String,
    staged: String,
    status: String,
    head: String,
    branch: String,
}

impl RepoState {
    fn capture(root: &Path) -> RepoState {
        let mut files = BTreeMap::new();
        walk(root, root, &mut files);
        let git = |args: &[&str]| {
            let out = git_in(root, args);
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        RepoState {
            files,
            index: git(&["ls-files", "-s"]),
            staged: git(&["diff", "--cached", "--binary"]),
            status: git(&[
                "status",
                "--porcelain",
                "--untracked-files=all",
                "--ignored=matching",
            ]),
            head: git(&["rev-parse", "HEAD"]),
            branch: git(&["symbolic-ref", "-q", "HEAD"]),
        }
    }

    fn without(mut self, prefix: &str) -> RepoState {
        self.files.retain(|k, _| !k.starts_with(prefix));
        self.status = self
            .status
            .lines()
            .filter(|l| !l.contains(prefix))
            .map(|l| format!("{l}\n"))
            .collect();
        self
    }
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Entry>) {
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel == ".git" {
            continue;
        }
        let meta = fs::symlink_metadata(&path).unwrap();
        if meta.file_type().is_symlink() {
            out.insert(rel, Entry::Link(fs::read_link(&path).unwrap()));
        } else if meta.is_dir() {
            out.insert(rel, Entry::Dir);
            walk(root, &path, out);
        } else {
            let exec = meta.permissions().mode() & 0o100 != 0;
            out.insert(
                rel,
                Entry::File {
                    bytes: fs::read(&path).unwrap(),
                    exec,
                },
            );
        }
    }
}

/// A repository in every state a user's checkout can be in.
fn busy_fixture() -> Fixture {
    let f = Fixture::new();
    f.write("src/main.c", "int main(void)\n{\n    return 0;\n}\n");
    f.write("src/crc.c", numbered(1..=30));
    f.write("src/drv/uart.c", "void uart_init(void) {}\n");
    f.write("scripts/flash.sh", "#!/bin/sh\nexit 0\n");
    f.set_exec("scripts/flash.sh", true);
    f.write("img/logo.bin", [0u8, 1, 2, 255, 0, 10, 13, 0]);
    f.write("doomed.c", "old\n");
    std::os::unix::fs::symlink("src/main.c", f.path("main-link.c")).unwrap();
    f.commit_all("firmware");
    // Modified, not staged.
    f.write("src/main.c", "int main(void)\n{\n    return 1;\n}\n");
    // Staged, then modified again.
    f.write("src/drv/uart.c", "void uart_init(void) { /* staged */ }\n");
    f.git(&["add", "src/drv/uart.c"]);
    f.write(
        "src/drv/uart.c",
        "void uart_init(void) { /* staged, then edited */ }\n",
    );
    // Staged new file.
    f.write("inc/new.h", "#define NEW 1\n");
    f.git(&["add", "inc/new.h"]);
    // Untracked, nested.
    f.write("notes/todo/today.txt", "fix crc\n");
    // Deleted.
    fs::remove_file(f.path("doomed.c")).unwrap();
    // Empty directories, which git does not track.
    fs::create_dir_all(f.path("logs/empty")).unwrap();
    fs::create_dir(f.path("spare")).unwrap();
    // Ignored build outputs.
    f.write("build/fw.elf", [0x7f, b'E', b'L', b'F', 0, 0]);
    f.write("src/crc.o", [1u8, 2, 3]);
    f
}

fn numbered(range: std::ops::RangeInclusive<u32>) -> String {
    range.map(|i| format!("line {i}\n")).collect()
}

// ---------------------------------------------------------------------------------------------
// Opening

#[test]
fn open_refuses_what_it_cannot_work_on() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(matches!(
        Repo::open(tmp.path()),
        Err(RepoError::NotARepository { .. })
    ));

    let bare = tmp.path().join("bare.git");
    fs::create_dir(&bare).unwrap();
    assert!(git_in(&bare, &["init", "-q", "--bare"]).status.success());
    assert!(matches!(Repo::open(&bare), Err(RepoError::Bare { .. })));

    let f = Fixture::new();
    // A subdirectory finds its repository.
    f.write("src/a.c", "a\n");
    assert_eq!(
        Repo::open(&f.path("src"))
            .unwrap()
            .workdir()
            .canonicalize()
            .unwrap(),
        f.root.canonicalize().unwrap()
    );
}

#[test]
fn open_refuses_a_merge_cherry_pick_or_rebase_in_progress() {
    let f = Fixture::new();
    f.write("a.c", "base\n");
    f.commit_all("base");
    f.git(&["checkout", "-q", "-b", "other"]);
    f.write("a.c", "other\n");
    f.commit_all("other");
    f.git(&["checkout", "-q", "main"]);
    f.write("a.c", "main\n");
    f.commit_all("main");

    assert!(!f.git_may_fail(&["merge", "-q", "other"]));
    let err = Repo::open(&f.root).unwrap_err();
    assert!(
        matches!(err, RepoError::OperationInProgress { state: "merge", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("merge is in progress"));
    f.git(&["merge", "--abort"]);

    assert!(!f.git_may_fail(&["cherry-pick", "other"]));
    assert!(matches!(
        Repo::open(&f.root),
        Err(RepoError::OperationInProgress {
            state: "cherry-pick",
            ..
        })
    ));
    f.git(&["cherry-pick", "--abort"]);

    assert!(!f.git_may_fail(&["rebase", "-q", "other"]));
    assert!(matches!(
        Repo::open(&f.root),
        Err(RepoError::OperationInProgress {
            state: "rebase",
            ..
        })
    ));
    f.git(&["rebase", "--abort"]);
    assert!(Repo::open(&f.root).is_ok());
}

#[test]
fn snapshot_needs_a_first_commit() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(git_in(tmp.path(), &["init", "-q"]).status.success());
    fs::write(tmp.path().join("a.c"), "a\n").unwrap();
    let repo = Repo::open(tmp.path()).unwrap();
    let err = repo.snapshot("r1", "base").unwrap_err();
    assert!(matches!(err, RepoError::UnbornHead { .. }), "{err}");
    assert!(err.to_string().contains("first commit"));
}

// ---------------------------------------------------------------------------------------------
// Snapshots

#[test]
fn snapshot_records_everything_and_touches_nothing() {
    let f = busy_fixture();
    let before = f.state();
    let index_bytes = fs::read(f.path(".git/index")).unwrap();
    let repo = f.open();
    let snap = repo.snapshot("run-1", "base").unwrap();

    assert_eq!(f.state(), before);
    assert_eq!(fs::read(f.path(".git/index")).unwrap(), index_bytes);
    assert_eq!(snap.refname, "refs/fwfix/run-1/base");
    assert_eq!(snap.head_ref.as_deref(), Some("refs/heads/main"));
    assert_eq!(snap.empty_dirs, vec!["logs/empty", "spare"]);

    // Stash-shaped: parents are HEAD and the index commit; the message names the run.
    let parents = f.git(&["log", "-1", "--format=%P", &snap.refname]);
    let head = f.git(&["rev-parse", "HEAD"]);
    assert_eq!(
        parents.split_whitespace().collect::<Vec<_>>(),
        vec![head.trim(), snap.index_commit.as_str()]
    );
    assert!(f
        .git(&["log", "-1", "--format=%B", &snap.refname])
        .contains("run-1"));

    let show = |rev: &str| f.git(&["show", rev]);
    let wt = &snap.refname;
    assert!(show(&format!("{wt}:src/main.c")).contains("return 1"));
    assert!(show(&format!("{wt}:src/drv/uart.c")).contains("staged, then edited"));
    assert_eq!(show(&format!("{wt}:notes/todo/today.txt")), "fix crc\n");
    assert!(!f.git_may_fail(&["cat-file", "-e", &format!("{wt}:doomed.c")]));
    assert!(!f.git_may_fail(&["cat-file", "-e", &format!("{wt}:build/fw.elf")]));
    assert!(!f.git_may_fail(&["cat-file", "-e", &format!("{wt}:src/crc.o")]));
    let idx = &snap.index_commit;
    assert!(show(&format!("{idx}:src/drv/uart.c")).contains("/* staged */"));
    assert!(show(&format!("{idx}:src/main.c")).contains("return 0"));
    assert_eq!(show(&format!("{idx}:inc/new.h")), "#define NEW 1\n");
    assert!(f.git_may_fail(&["cat-file", "-e", &format!("{idx}:doomed.c")]));
    let modes = f.git(&["ls-tree", "-r", wt]);
    assert!(modes.contains("100755 blob") && modes.contains("scripts/flash.sh"));
    assert!(modes.contains("120000 blob") && modes.contains("main-link.c"));

    // Reloadable from the ref and from JSON.
    assert_eq!(Snapshot::load(&repo, &snap.refname).unwrap(), snap);
    let json = serde_json::to_string(&snap).unwrap();
    assert_eq!(serde_json::from_str::<Snapshot>(&json).unwrap(), snap);

    // A rollback point is never overwritten.
    assert!(matches!(
        repo.snapshot("run-1", "base"),
        Err(RepoError::SnapshotExists { .. })
    ));
    assert!(matches!(
        repo.snapshot("run/1", "base"),
        Err(RepoError::InvalidName { .. })
    ));
    assert!(matches!(
        Snapshot::load(&repo, "refs/heads/main"),
        Err(RepoError::BadSnapshot { .. })
    ));
}

#[test]
fn snapshot_works_in_a_linked_worktree() {
    let f = Fixture::new();
    let wt = f.outside().join("linked");
    f.git(&["worktree", "add", "-q", wt.to_str().unwrap()]);
    fs::write(wt.join("README.md"), "edited in the worktree\n").unwrap();
    let repo = Repo::open(&wt).unwrap();
    let snap = repo.snapshot("wt-run", "base").unwrap();
    fs::write(wt.join("README.md"), "patched\n").unwrap();
    repo.restore(&snap).unwrap();
    assert_eq!(
        fs::read_to_string(wt.join("README.md")).unwrap(),
        "edited in the worktree\n"
    );
    assert_eq!(f.read_text("README.md"), "firmware\n");
}

// ---------------------------------------------------------------------------------------------
// Restore

const CRC_PATCH: &str = "\
diff --git a/src/crc.c b/src/crc.c
--- a/src/crc.c
+++ b/src/crc.c
@@ -9,7 +9,8 @@
 line 9
 line 10
 line 11
-line 12
+line 12 fixed
+line 12b
 line 13
 line 14
 line 15
";

#[test]
fn restore_after_patch_and_edits_is_byte_exact() {
    let f = busy_fixture();
    let before = f.state();
    let repo = f.open();
    let snap = repo.snapshot("run-1", "base").unwrap();

    // A patch through fwfix, then an agent's edits straight on the tree, then a build.
    repo.apply_patch(CRC_PATCH).unwrap();
    assert!(f.read_text("src/crc.c").contains("line 12 fixed"));
    f.write("src/main.c", "clobbered\n");
    f.write("notes/todo/today.txt", "clobbered\n");
    f.write("gen/deep/er/added.c", "added\n");
    f.write("doomed.c", "back from the dead, different\n");
    fs::remove_file(f.path("scripts/flash.sh")).unwrap();
    fs::remove_file(f.path("img/logo.bin")).unwrap();
    fs::remove_file(f.path("main-link.c")).unwrap();
    f.write("main-link.c", "no longer a link\n");
    f.set_exec("src/crc.c", true);
    // A directory replaced by a file, and a file by a directory.
    fs::remove_dir_all(f.path("src/drv")).unwrap();
    f.write("src/drv", "now a file\n");
    fs::remove_file(f.path("doomed.c")).unwrap();
    f.write("doomed.c/inner.c", "now a directory\n");
    f.git(&["add", "src/main.c", "gen/deep/er/added.c"]);
    fs::remove_dir(f.path("logs/empty")).unwrap();
    f.write("spare/new.c", "added into an empty directory\n");
    f.write("build/new-output.bin", [9u8; 16]);

    let report = repo.restore(&snap).unwrap();
    assert!(report.index_restored);
    assert!(report.removed.contains(&"gen/deep/er/added.c".to_string()));
    assert!(report.written.contains(&"scripts/flash.sh".to_string()));
    assert_eq!(report.dirs_restored, vec!["logs/empty".to_string()]);

    let after = f.state();
    assert_eq!(
        after.files.get("build/new-output.bin"),
        Some(&Entry::File {
            bytes: vec![9u8; 16],
            exec: false
        }),
        "an ignored file made during the run is left alone"
    );
    assert_eq!(after.without("build/new-output.bin"), before);
    assert!(!f.path("gen").exists(), "directories left empty are pruned");

    // Restoring twice changes nothing more.
    assert!(repo.restore(&snap).unwrap().is_noop());
}

#[test]
fn restore_finishes_an_interrupted_restore() {
    let f = busy_fixture();
    let before = f.state();
    let repo = f.open();
    let snap = repo.snapshot("run-1", "base").unwrap();
    f.write("src/main.c", "patched\n");
    f.write("gen/new.c", "patched\n");
    // What an interruption can leave: one file done, a temporary file half-written.
    f.write("src/.fwfix-tmp-4242-main.c", "int ma");
    f.write("gen/new.c", "patched\n");
    repo.restore(&snap).unwrap();
    assert_eq!(f.state(), before);
}

#[test]
fn restore_refuses_when_head_moved_and_touches_nothing() {
    let f = busy_fixture();
    let repo = f.open();
    let snap = repo.snapshot("run-1", "base").unwrap();
    f.write("src/main.c", "patched\n");
    f.git(&[
        "commit",
        "-q",
        "-m",
        "someone committed",
        "--",
        "src/drv/uart.c",
    ]);
    let during = f.state();
    let err = repo.restore(&snap).unwrap_err();
    assert!(matches!(err, RepoError::HeadMoved { .. }), "{err}");
    assert!(!err.is_patch_fault());
    assert!(err.to_string().contains(&snap.refname));
    assert_eq!(f.state(), during);

    // Switching branch at the same commit is a move too.
    f.git(&["reset", "-q", "--soft", "HEAD~1"]);
    f.git(&["checkout", "-q", "-b", "elsewhere"]);
    assert!(matches!(
        repo.restore(&snap),
        Err(RepoError::HeadMoved { .. })
    ));
}

#[test]
fn edits_since_tells_the_runs_own_changes_from_a_persons() {
    let f = busy_fixture();
    let repo = f.open();
    let snap = repo.snapshot("run-1", "base").unwrap();
    let none: &[fwfix::repo::TreeEdit] = &[];
    assert_eq!(repo.edits_since(&snap, None).unwrap(), none);
    // A run killed with its candidate in: the candidate's changes are the run's own.
    repo.apply_patch(CRC_PATCH).unwrap();
    assert_eq!(
        repo.edits_since(&snap, Some(CRC_PATCH.as_bytes())).unwrap(),
        none
    );
    // Killed half-way through rolling it back: the file back as it was is the run's too.
    repo.restore(&snap).unwrap();
    assert_eq!(
        repo.edits_since(&snap, Some(CRC_PATCH.as_bytes())).unwrap(),
        none
    );
    // A person's edit on top of the candidate, a new file and a staged change are not.
    repo.apply_patch(CRC_PATCH).unwrap();
    f.write("src/crc.c", f.read_text("src/crc.c") + "my edit\n");
    f.write("notes/mine.txt", "mine\n");
    f.git(&["add", "src/main.c"]);
    let during = f.state();
    let edits: Vec<String> = repo
        .edits_since(&snap, Some(CRC_PATCH.as_bytes()))
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        edits,
        [
            "notes/mine.txt (new)",
            "src/crc.c (modified)",
            "src/main.c (staged)"
        ]
    );
    assert_eq!(f.state(), during, "only reads");
    // Without the candidate to explain them, its changes are someone's too.
    f.git(&["reset", "-q", "--", "src/main.c"]);
    assert!(repo
        .edits_since(&snap, None)
        .unwrap()
        .iter()
        .any(|e| e.to_string() == "src/crc.c (modified)"));
    // A commit since is a change of HEAD, which nothing may be restored over.
    f.git(&[
        "commit",
        "-q",
        "-m",
        "someone committed",
        "--",
        "src/drv/uart.c",
    ]);
    assert!(matches!(
        repo.edits_since(&snap, None),
        Err(RepoError::HeadMoved { .. })
    ));
}

#[test]
fn a_tree_set_aside_holds_what_changed_since_the_snapshot_and_its_command_applies_it_again() {
    let f = busy_fixture();
    let repo = f.open();
    let snap = repo.snapshot("run-left", "base").unwrap();
    let before = f.state();
    f.write("src/crc.c", f.read_text("src/crc.c") + "someone's edit\n");
    f.write("notes/new.txt", "new\n");
    let during = f.state();
    let left = repo.set_aside(&snap, "left-1", "why\n").unwrap();
    assert_eq!(left, "refs/fwfix/run-left/left-1");
    assert_eq!(f.state(), during, "setting aside only reads the tree");
    assert!(matches!(
        repo.set_aside(&snap, "left-1", "again\n"),
        Err(RepoError::SnapshotExists { .. })
    ));
    // Its diff is what changed since the snapshot, nothing of the person's earlier work.
    let changed = f.git(&["diff-tree", "-r", "--name-only", "--no-commit-id", &left]);
    assert_eq!(changed, "notes/new.txt\nsrc/crc.c\n");
    repo.restore(&snap).unwrap();
    assert_eq!(f.state(), before);
    let back = sh(&fwfix::repo::set_aside_command(&left), &f.root);
    assert!(back.status.success(), "{back:?}");
    assert_eq!(f.state(), during);
    // Applied twice, it refuses and touches nothing.
    let again = sh(&fwfix::repo::set_aside_command(&left), &f.root);
    assert!(!again.status.success());
    assert_eq!(f.state(), during);
    // The run's rollback points go; the tree set aside stays.
    repo.remove_snapshots("run-left").unwrap();
    assert_eq!(
        f.git(&["for-each-ref", "--format=%(refname)", "refs/fwfix/"]),
        format!("{left}\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Patch safety

fn new_file_patch(path: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+pwned\n"
    )
}

#[test]
fn unsafe_paths_are_refused_before_anything_is_touched() {
    let f = busy_fixture();
    let outside = f.outside().join("outside");
    fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, f.path("lib")).unwrap();
    let repo = f.open();
    let before = f.state();

    let cases = [
        ("../escape.c", UnsafeReason::ParentDir),
        ("src/../../escape.c", UnsafeReason::ParentDir),
        ("/tmp/escape.c", UnsafeReason::Absolute),
        (".git/hooks/pre-commit", UnsafeReason::InsideGitDir),
        (".GIT/config", UnsafeReason::InsideGitDir),
        ("sub/.git/config", UnsafeReason::InsideGitDir),
        (
            "lib/evil.c",
            UnsafeReason::ThroughSymlink { link: "lib".into() },
        ),
        ("build/injected.c", UnsafeReason::Ignored),
    ];
    for (path, reason) in cases {
        // A harmless file first: all or nothing means it must not be written either.
        let patch = format!(
            "{}{}",
            new_file_patch("src/harmless.c"),
            new_file_patch(path)
        );
        for result in [
            repo.check_patch_paths(&patch).map(|_| ()),
            repo.apply_patch(&patch).map(|_| ()),
        ] {
            match result {
                Err(RepoError::UnsafePath { path: p, reason: r }) => {
                    assert_eq!((p.as_str(), &r), (path, &reason));
                }
                other => panic!("{path}: expected a refusal, got {other:?}"),
            }
        }
        assert_eq!(f.state(), before, "{path}");
        assert!(!outside.join("evil.c").exists());
    }
    // A link made by the patch itself is no safer a parent.
    let outside_text = outside.to_str().unwrap();
    let link_then_file = format!(
        "diff --git a/lnk b/lnk\nnew file mode 120000\n--- /dev/null\n+++ b/lnk\n@@ -0,0 +1 @@\n+{outside_text}\n\\ No newline at end of file\n{}",
        new_file_patch("lnk/evil.c")
    );
    match repo.apply_patch(&link_then_file) {
        Err(RepoError::UnsafePath {
            path,
            reason: UnsafeReason::ThroughSymlink { link },
        }) => assert_eq!((path.as_str(), link.as_str()), ("lnk/evil.c", "lnk")),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(f.state(), before);
    assert!(!outside.join("evil.c").exists());

    let non_utf8 = b"diff --git a/caf\xe9.c b/caf\xe9.c\n--- a/caf\xe9.c\n+++ b/caf\xe9.c\n@@ -1 +1 @@\n-a\n+b\n";
    let err = repo.apply_patch(&non_utf8[..]).unwrap_err();
    assert!(
        matches!(
            err,
            RepoError::UnsafePath {
                reason: UnsafeReason::NotUtf8,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.error_class(),
        Some(fwfix::machine::ErrorClass::PolicyViolation)
    );
    assert_eq!(f.state(), before);
}

#[test]
fn check_patch_paths_describes_the_changes() {
    let f = busy_fixture();
    let repo = f.open();
    let patch = format!(
        "{CRC_PATCH}{}diff --git a/src/main.c b/src/app.c\nsimilarity index 100%\nrename from src/main.c\nrename to src/app.c\n",
        new_file_patch("src/new.c")
    );
    let changes = repo.check_patch_paths(&patch).unwrap();
    assert_eq!(changes.len(), 3);
    assert_eq!(changes[0].kind, ChangeKind::Modified);
    assert_eq!((changes[0].added_lines, changes[0].removed_lines), (2, 1));
    assert_eq!(changes[1].kind, ChangeKind::Added);
    assert_eq!(changes[1].path(), "src/new.c");
    assert_eq!(changes[2].kind, ChangeKind::Renamed);
    assert_eq!(changes[2].old_path.as_deref(), Some("src/main.c"));
}

// ---------------------------------------------------------------------------------------------
// Applying

#[test]
fn exact_patch_goes_through_libgit2_and_leaves_the_index_alone() {
    let f = busy_fixture();
    let repo = f.open();
    let staged = f.git(&["diff", "--cached"]);
    let patch = format!(
        "{CRC_PATCH}{}diff --git a/scripts/flash.sh b/scripts/flash.sh\nold mode 100755\nnew mode 100644\n",
        new_file_patch("src/gen/new.c")
    );
    let report = repo.apply_patch(&patch).unwrap();
    assert_eq!(report.method, ApplyMethod::Libgit2);
    assert!(report.is_exact());
    assert!(f
        .read_text("src/crc.c")
        .contains("line 12 fixed\nline 12b\n"));
    assert_eq!(f.read_text("src/gen/new.c"), "pwned\n");
    let mode = fs::metadata(f.path("scripts/flash.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o100, 0);
    assert_eq!(f.git(&["diff", "--cached"]), staged);
}

#[test]
fn drifted_patch_applies_with_offset_then_fuzz() {
    let f = busy_fixture();
    let repo = f.open();
    // Five lines were added above the hunk since the patch was made.
    f.write(
        "src/crc.c",
        format!("{}{}", numbered(100..=104), numbered(1..=30)),
    );
    let report = repo.apply_patch(CRC_PATCH).unwrap();
    assert_eq!(report.method, ApplyMethod::Fallback);
    let hunk = &report.files[0].hunks[0];
    assert_eq!(
        (hunk.header.as_str(), hunk.offset, hunk.fuzz),
        ("@@ -9,7 +9,8 @@", 5, 0)
    );
    assert!(f
        .read_text("src/crc.c")
        .contains("line 11\nline 12 fixed\nline 12b\nline 13\n"));

    // Now the outer context lines changed too: only fuzz finds it.
    let drifted = numbered(1..=30)
        .replace("line 9\n", "line nine\n")
        .replace("line 15\n", "line fifteen\n");
    f.write("src/crc.c", &drifted);
    let report = repo.apply_patch(CRC_PATCH).unwrap();
    let hunk = &report.files[0].hunks[0];
    assert_eq!((hunk.offset, hunk.fuzz), (0, 1));
    assert_eq!(
        f.read_text("src/crc.c"),
        drifted.replace("line 12\n", "line 12 fixed\nline 12b\n")
    );
}

#[test]
fn plain_unified_diff_without_git_headers_applies() {
    let f = busy_fixture();
    let repo = f.open();
    let patch =
        "--- src/crc.c\n+++ src/crc.c\n@@ -2,3 +2,3 @@\n line 2\n-line 3\n+line three\n line 4\n";
    repo.apply_patch(patch).unwrap();
    assert!(f
        .read_text("src/crc.c")
        .starts_with("line 1\nline 2\nline three\nline 4\n"));
}

#[test]
fn already_applied_patch_is_refused_not_reversed() {
    let f = busy_fixture();
    let repo = f.open();
    repo.apply_patch(CRC_PATCH).unwrap();
    let once = f.state();
    let err = repo.apply_patch(CRC_PATCH).unwrap_err();
    assert!(matches!(err, RepoError::AlreadyApplied { .. }), "{err}");
    assert!(err.to_string().contains("already applied"));
    assert!(err.is_patch_fault());
    assert_eq!(f.state(), once);

    let new_file = new_file_patch("src/gen/new.c");
    repo.apply_patch(&new_file).unwrap();
    let again = repo.apply_patch(&new_file);
    assert!(
        matches!(again, Err(RepoError::AlreadyApplied { .. })),
        "{again:?}"
    );
}

#[test]
fn a_failing_hunk_writes_nothing_and_names_file_and_hunk() {
    let f = busy_fixture();
    let repo = f.open();
    let before = f.state();
    let patch = format!(
        "{CRC_PATCH}{}--- a/src/crc.c\n+++ b/src/crc.c\n@@ -25,3 +25,3 @@\n line 25\n-no such line\n+whatever\n line 27\n",
        new_file_patch("src/gen/new.c")
    );
    let err = repo.apply_patch(&patch).unwrap_err();
    match &err {
        RepoError::HunkFailed { file, hunk, .. } => {
            assert_eq!(file, "src/crc.c");
            assert_eq!(hunk, "@@ -25,3 +25,3 @@");
        }
        other => panic!("expected a hunk failure, got {other:?}"),
    }
    assert_eq!(
        err.error_class(),
        Some(fwfix::machine::ErrorClass::PatchApplyFailure)
    );
    assert_eq!(f.state(), before);
}

#[test]
fn deletes_renames_and_missing_final_newlines() {
    let f = busy_fixture();
    f.write("src/tail.c", "a\nb");
    f.commit_all("tail");
    let repo = f.open();
    let patch = "\
diff --git a/src/tail.c b/src/tail.c
--- a/src/tail.c
+++ b/src/tail.c
@@ -1,2 +1,2 @@
 a
-b
\\ No newline at end of file
+b
diff --git a/src/crc.c b/src/crc.c
deleted file mode 100644
--- a/src/crc.c
+++ /dev/null
@@ -1,30 +0,0 @@
"
    .to_string()
        + &numbered(1..=30)
            .lines()
            .map(|l| format!("-{l}\n"))
            .collect::<String>()
        + "diff --git a/src/drv/uart.c b/src/drv/serial.c\nsimilarity index 100%\nrename from src/drv/uart.c\nrename to src/drv/serial.c\n";
    repo.apply_patch(&patch).unwrap();
    assert_eq!(f.read_text("src/tail.c"), "a\nb\n");
    assert!(!f.path("src/crc.c").exists());
    assert!(!f.path("src/drv/uart.c").exists());
    assert!(f
        .read_text("src/drv/serial.c")
        .contains("staged, then edited"));

    // The same patch against drifted content goes through the fallback, with the same result.
    let g = busy_fixture();
    g.write("src/tail.c", "a\nb");
    g.commit_all("tail");
    g.write("src/tail.c", "z\na\nb");
    let report = g.open().apply_patch(&patch).unwrap();
    assert_eq!(report.method, ApplyMethod::Fallback);
    assert_eq!(g.read_text("src/tail.c"), "z\na\nb\n");
    assert!(!g.path("src/crc.c").exists());
    assert!(g
        .read_text("src/drv/serial.c")
        .contains("staged, then edited"));
}

// ---------------------------------------------------------------------------------------------
// Diff since a snapshot

#[test]
fn diff_since_round_trips_through_apply() {
    let f = busy_fixture();
    let repo = f.open();
    let snap = repo.snapshot("run-1", "base").unwrap();
    f.write("src/main.c", "int main(void) { return 2; }\n");
    f.write("agent/new/file.c", "new\n");
    f.write("img/logo.bin", [0u8, 0, 0, 1, 2, 3]);
    fs::remove_file(f.path("src/crc.c")).unwrap();
    f.write("build/ignored.o", "not in the diff\n");
    let edited = f.state();

    let diff = repo.diff_since(&snap).unwrap();
    assert!(diff.contains("diff --git a/src/main.c b/src/main.c"));
    assert!(diff.contains("+++ b/agent/new/file.c"));
    assert!(diff.contains("GIT binary patch"));
    assert!(!diff.contains("ignored.o"));

    repo.restore(&snap).unwrap();
    assert_ne!(f.state(), edited);
    repo.apply_patch(&diff).unwrap();
    assert_eq!(f.state(), edited);
}

// ---------------------------------------------------------------------------------------------
// Worktrees and the fix branch

#[test]
fn worktree_flow_leaves_the_users_checkout_alone() {
    let f = busy_fixture();
    let repo = f.open();
    let base = repo.snapshot("run-wt", "base").unwrap();
    let before = f.state();
    let branches = f.git(&["branch", "--list"]);

    let wt_path = f.outside().join("fwfix-wt");
    let wt = repo.add_worktree(&wt_path, &base).unwrap();
    assert_eq!(
        fs::read_to_string(wt_path.join("src/main.c")).unwrap(),
        f.read_text("src/main.c"),
        "the worktree starts from the user's uncommitted tree"
    );
    assert!(wt_path.join("notes/todo/today.txt").exists());
    assert!(!wt_path.join("doomed.c").exists());
    assert!(
        !wt_path.join("build").exists(),
        "ignored files are not carried over"
    );
    assert_eq!(
        git_in(&wt_path, &["rev-parse", "HEAD"]).stdout,
        format!("{}\n", base.commit).into_bytes()
    );
    assert!(!git_in(&wt_path, &["symbolic-ref", "-q", "HEAD"])
        .status
        .success());
    assert_eq!(
        f.git(&["branch", "--list"]),
        branches,
        "no branch left behind"
    );

    // A run inside the worktree: its own rollback point, a patch, the diff, the fix branch.
    let wt_base = wt.snapshot("run-wt", "wt-base").unwrap();
    wt.apply_patch(CRC_PATCH).unwrap();
    let diff = wt.diff_since(&wt_base).unwrap();
    let fix = repo
        .commit_fix("run-wt", &base, &diff, "Fix the CRC\n")
        .unwrap();
    assert_eq!(fix.base, FixBase::Head);
    assert_eq!(f.state(), before, "the user's checkout never moved");

    // Only worktrees fwfix made can be removed by it.
    let theirs = f.outside().join("theirs");
    f.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        theirs.to_str().unwrap(),
    ]);
    assert!(matches!(
        repo.remove_worktree(&theirs),
        Err(RepoError::Worktree { .. })
    ));
    repo.remove_worktree(&wt_path).unwrap();
    assert!(!wt_path.exists());
    assert!(!f.git(&["worktree", "list"]).contains("fwfix-wt"));
    assert!(theirs.exists());
    assert_eq!(f.state(), before);
}

#[test]
fn fix_branch_has_the_runs_head_as_parent_and_only_the_fix() {
    let f = busy_fixture();
    let repo = f.open();
    let base = repo.snapshot("run-fix", "base").unwrap();
    repo.apply_patch(CRC_PATCH).unwrap();
    let diff = repo.diff_since(&base).unwrap();
    let before = f.state();

    let fix = repo
        .commit_fix("run-fix", &base, &diff, "crc: fix line 12\n")
        .unwrap();
    assert_eq!(fix.branch, "fwfix/run-fix");
    assert_eq!(fix.base, FixBase::Head);
    assert_eq!(
        f.git(&["rev-parse", "fwfix/run-fix^"]).trim(),
        base.head.as_str()
    );
    assert_eq!(f.git(&["rev-parse", "fwfix/run-fix"]).trim(), fix.commit);
    let changed = f.git(&["diff", "--name-only", "fwfix/run-fix^", "fwfix/run-fix"]);
    assert_eq!(
        changed, "src/crc.c\n",
        "uncommitted user edits stay out of the fix"
    );
    assert!(f
        .git(&["show", "fwfix/run-fix:src/crc.c"])
        .contains("line 12 fixed"));
    assert_eq!(
        f.git(&["log", "-1", "--format=%B", "fwfix/run-fix"]).trim(),
        "crc: fix line 12"
    );
    assert_eq!(f.state(), before, "branch, HEAD, index and tree untouched");

    assert!(matches!(
        repo.commit_fix("run-fix", &base, &diff, "again"),
        Err(RepoError::BranchExists { .. })
    ));
    // A run stopped right after committing finds its own commit; another fix under the same
    // branch name is not taken for it.
    let found = repo
        .committed_fix("run-fix", &base, &diff)
        .unwrap()
        .unwrap();
    assert_eq!(found.commit, fix.commit);
    assert!(repo
        .committed_fix("run-other", &base, &diff)
        .unwrap()
        .is_none());
    let other = diff.replace("line 12 fixed", "line 12 fixed differently");
    assert!(matches!(
        repo.committed_fix("run-fix", &base, &other),
        Err(RepoError::BranchExists { .. })
    ));
}

#[test]
fn fix_that_needs_uncommitted_changes_is_applied_to_the_snapshot() {
    let f = busy_fixture();
    let repo = f.open();
    let base = repo.snapshot("run-dep", "base").unwrap();
    // The patch edits the line the user changed but never committed.
    let patch = "--- a/src/main.c\n+++ b/src/main.c\n@@ -1,4 +1,4 @@\n int main(void)\n {\n-    return 1;\n+    return 42;\n }\n";
    let prepared = repo.prepare_fix("run-dep", &base, patch).unwrap();
    assert_eq!(prepared.uncommitted, ["src/main.c"]);
    let fix = repo.commit_fix("run-dep", &base, patch, "fix\n").unwrap();
    assert_eq!(fix.base, FixBase::Snapshot);
    assert!(f
        .git(&["show", "fwfix/run-dep:src/main.c"])
        .contains("return 42"));
    // The user's other uncommitted work (staged, modified, untracked, deleted) stays out.
    assert_eq!(
        f.git(&["diff", "--name-only", "fwfix/run-dep^", "fwfix/run-dep"]),
        "src/main.c\n",
        "only the file the fix touches is in the commit"
    );
    assert_eq!(
        f.git(&["rev-parse", "fwfix/run-dep^"]).trim(),
        base.head.as_str()
    );
}

// ---------------------------------------------------------------------------------------------
// .git/info/exclude

#[test]
fn ensure_excluded_writes_info_exclude_once() {
    let f = Fixture::new();
    assert!(ensure_excluded(&f.root, "/.fwfix/").unwrap());
    assert!(ensure_excluded(&f.root, "/.fwfix/").unwrap());
    let exclude = f.read_text(".git/info/exclude");
    assert_eq!(exclude.matches("/.fwfix/").count(), 1);
    assert_eq!(f.read_text(".gitignore"), "build/\n*.o\n");
    f.write(".fwfix/runs/r1/run.json", "{}");
    assert!(!f.git(&["status", "--porcelain"]).contains(".fwfix"));

    // A linked worktree shares the common exclude file.
    let wt = f.outside().join("linked");
    f.git(&["worktree", "add", "-q", wt.to_str().unwrap()]);
    assert!(ensure_excluded(&wt, "/.fwfix/").unwrap());
    assert_eq!(
        f.read_text(".git/info/exclude").matches("/.fwfix/").count(),
        1
    );
    assert!(!wt.join(".git").is_dir());

    let plain = tempfile::tempdir().unwrap();
    assert!(!ensure_excluded(plain.path(), "/.fwfix/").unwrap());
    assert_eq!(fs::read_dir(plain.path()).unwrap().count(), 0);
}

// ---------------------------------------------------------------------------------------------
// Property: any tree, any mutation, restore gives back exactly what was there

#[derive(Debug, Clone, Copy)]
enum FileState {
    Committed,
    Modified,
    Staged,
    StagedThenModified,
    StagedNew,
    Untracked,
    Deleted,
    Ignored,
}

#[derive(Debug, Clone)]
struct GenFile {
    path: String,
    content: Vec<u8>,
    edit: Vec<u8>,
    edit2: Vec<u8>,
    exec: bool,
    state: FileState,
}

#[derive(Debug, Clone)]
enum Mutation {
    Modify(usize, Vec<u8>),
    Delete(usize),
    Chmod(usize),
    Stage(usize),
    Add(String, Vec<u8>),
    BuildOutput(String),
}

fn content() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec("[a-z ]{0,12}", 0..6).prop_map(|lines| lines
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            .into_bytes()),
        prop::collection::vec(any::<u8>(), 0..48),
    ]
}

fn file_state() -> impl Strategy<Value = FileState> {
    prop_oneof![
        Just(FileState::Committed),
        Just(FileState::Modified),
        Just(FileState::Staged),
        Just(FileState::StagedThenModified),
        Just(FileState::StagedNew),
        Just(FileState::Untracked),
        Just(FileState::Deleted),
        Just(FileState::Ignored),
    ]
}

fn gen_file() -> impl Strategy<Value = GenFile> {
    (
        prop::sample::select(vec!["", "src/", "src/drv/", "inc/", "a/b/c/"]),
        0..6u8,
        content(),
        content(),
        content(),
        any::<bool>(),
        file_state(),
    )
        .prop_map(|(dir, n, content, edit, edit2, exec, state)| GenFile {
            path: format!("{dir}f{n}.c"),
            content,
            edit,
            edit2,
            exec,
            state,
        })
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), content()).prop_map(|(i, c)| Mutation::Modify(i, c)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Chmod),
        any::<usize>().prop_map(Mutation::Stage),
        (
            prop::sample::select(vec!["src/", "new/dir/", "a/b/", ""]),
            0..4u8,
            content()
        )
            .prop_map(|(d, n, c)| Mutation::Add(format!("{d}added{n}.c"), c)),
        (0..3u8).prop_map(|n| Mutation::BuildOutput(format!("build/run/out{n}.bin"))),
    ]
}

fn ignored_path(path: &str) -> String {
    format!("{}.o", path.trim_end_matches(".c"))
}

fn build_tree(f: &Fixture, files: &[GenFile]) {
    for g in files {
        let path = match g.state {
            FileState::Ignored => ignored_path(&g.path),
            _ => g.path.clone(),
        };
        match g.state {
            FileState::Untracked | FileState::StagedNew | FileState::Ignored => {}
            _ => {
                f.write(&path, &g.content);
                f.set_exec(&path, g.exec);
            }
        }
    }
    f.git(&["add", "-A"]);
    f.git(&["commit", "-q", "--allow-empty", "-m", "generated"]);
    for g in files {
        match g.state {
            FileState::Committed => {}
            FileState::Modified => {
                f.write(&g.path, &g.edit);
                f.set_exec(&g.path, !g.exec);
            }
            FileState::Staged => {
                f.write(&g.path, &g.edit);
                f.git(&["add", &g.path]);
            }
            FileState::StagedThenModified => {
                f.write(&g.path, &g.edit);
                f.git(&["add", &g.path]);
                f.write(&g.path, &g.edit2);
            }
            FileState::StagedNew => {
                f.write(&g.path, &g.content);
                f.git(&["add", &g.path]);
                f.write(&g.path, &g.edit);
            }
            FileState::Untracked => f.write(&g.path, &g.content),
            FileState::Deleted => fs::remove_file(f.path(&g.path)).unwrap(),
            FileState::Ignored => f.write(&ignored_path(&g.path), &g.content),
        }
    }
}

/// Applies mutations the way a patch, an agent or a build would; returns the build outputs made.
fn mutate(f: &Fixture, files: &[GenFile], mutations: &[Mutation]) -> Vec<(String, Vec<u8>)> {
    let mut outputs = Vec::new();
    let live: Vec<&GenFile> = files
        .iter()
        .filter(|g| !matches!(g.state, FileState::Ignored))
        .collect();
    let pick = |i: usize| live.get(i % live.len().max(1)).map(|g| g.path.clone());
    for m in mutations {
        match m {
            Mutation::Modify(i, c) => {
                if let Some(p) = pick(*i) {
                    f.write(&p, c);
                }
            }
            Mutation::Delete(i) => {
                if let Some(p) = pick(*i) {
                    let _ = fs::remove_file(f.path(&p));
                }
            }
            Mutation::Chmod(i) => {
                if let Some(p) = pick(*i).filter(|p| f.path(p).exists()) {
                    let exec = fs::metadata(f.path(&p)).unwrap().permissions().mode() & 0o100 != 0;
                    f.set_exec(&p, !exec);
                }
            }
            Mutation::Stage(i) => {
                if let Some(p) = pick(*i) {
                    f.git_may_fail(&["add", "-A", "--", &p]);
                }
            }
            Mutation::Add(p, c) => {
                if !f.path(p).exists() && !f.path(&ignored_path(p)).exists() {
                    f.write(p, c);
                }
            }
            Mutation::BuildOutput(p) => {
                let bytes = p.as_bytes().to_vec();
                f.write(p, &bytes);
                outputs.push((p.clone(), bytes));
            }
        }
    }
    outputs
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn restore_gives_back_exactly_what_was_there(
        files in prop::collection::vec(gen_file(), 1..10),
        mutations in prop::collection::vec(mutation(), 1..8),
    ) {
        // One entry per path, and no file where another needs a directory.
        let mut seen = std::collections::BTreeSet::new();
        let files: Vec<GenFile> = files.into_iter().filter(|g| seen.insert(g.path.clone())).collect();
        let f = Fixture::new();
        build_tree(&f, &files);
        let before = f.state();
        let repo = f.open();
        let snap = repo.snapshot("prop", "base").unwrap();
        prop_assert_eq!(&f.state(), &before);

        let outputs = mutate(&f, &files, &mutations);
        repo.restore(&snap).unwrap();
        let after = f.state();
        for (path, bytes) in &outputs {
            prop_assert_eq!(
                after.files.get(path),
                Some(&Entry::File { bytes: bytes.clone(), exec: false })
            );
        }
        prop_assert_eq!(after.without("build"), before);
        prop_assert!(repo.restore(&snap).unwrap().is_noop());
    }
}

/// A CRLF source file committed as such: `-text` and `core.autocrlf=false` set in the repository
/// itself, so git converts nothing whatever the machine's own configuration says.
fn crlf_fixture() -> Fixture {
    let f = Fixture::new();
    f.git(&["config", "core.autocrlf", "false"]);
    f.git(&["config", "core.eol", "crlf"]);
    f.write(".gitattributes", "*.c -text\n");
    f.write(
        "src/uart.c",
        "#include \"uart.h\"\r\n\r\nint uart_init(void)\r\n{\r\n    return 1;\r\n}\r\n",
    );
    f.commit_all("a Windows checkout's source");
    f
}

const LF_PATCH: &str = "--- a/src/uart.c\n+++ b/src/uart.c\n@@ -3,4 +3,5 @@\n int uart_init(void)\n {\n-    return 1;\n+    UART0->CTRL = 1;\n+    return 0;\n }\n";

/// Regression: an LF patch (as models and agents write them) on a CRLF file failed with "lines
/// were not found" and no word about line endings.
#[test]
fn an_lf_patch_applies_to_a_crlf_file_and_the_file_keeps_its_crlf_endings() {
    let f = crlf_fixture();
    let repo = f.open();
    let report = repo.apply_patch(LF_PATCH).unwrap();
    assert_eq!(report.method, ApplyMethod::Fallback);
    assert_eq!(report.line_endings_adapted(), ["src/uart.c"]);
    assert!(!report.is_exact());
    assert_eq!(
        f.read_text("src/uart.c"),
        "#include \"uart.h\"\r\n\r\nint uart_init(void)\r\n{\r\n    UART0->CTRL = 1;\r\n    return 0;\r\n}\r\n"
    );
    // git sees only the two changed lines, not a whole-file line-ending rewrite.
    let stat = f.git(&["diff", "--numstat", "--", "src/uart.c"]);
    assert_eq!(
        stat.split_whitespace().take(2).collect::<Vec<_>>(),
        ["2", "1"]
    );
}

#[test]
fn an_lf_patch_that_does_not_fit_a_crlf_file_says_the_line_endings_differ() {
    let f = crlf_fixture();
    let repo = f.open();
    let err = repo
        .apply_patch(LF_PATCH.replace("-    return 1;", "-    return 2;"))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("line endings differ: the file has CRLF, the patch LF"),
        "{err}"
    );
    assert_eq!(f.git(&["status", "--porcelain"]), "");
}

/// A Windows-style checkout: `core.autocrlf=true`, so git keeps LF in its objects and CRLF in
/// the tree. A person's work there is bytes git would rewrite if asked to write them back (a
/// CRLF file it stored as LF, a line they saved with LF alone among CRLF ones, a staged version
/// that differs from the tree's): the snapshot must give back those bytes, not git's checkout
/// of them.
#[test]
fn restore_in_an_autocrlf_checkout_gives_back_the_bytes_not_a_checkout_of_them() {
    let f = autocrlf_fixture();
    // The person's work: a staged change, then a line saved with LF alone on top of it; a
    // modified file; a new file with CRLF endings.
    f.write("src/crc.c", "int crc(void)\r\n{\r\n    return 7;\r\n}\r\n");
    f.git(&["add", "src/crc.c"]);
    f.write("src/crc.c", "int crc(void)\r\n{\n    return 8;\r\n}\r\n");
    f.write(
        "src/uart.c",
        "int uart_init(void)\r\n{\r\n    return 2;\r\n}\r\n",
    );
    f.write("src/new.c", "int added(void);\r\n");
    let before = f.state();
    let repo = f.open();
    let snap = repo.snapshot("run-1", "base").unwrap();
    assert_eq!(f.state(), before, "the snapshot touched the tree");

    repo.apply_patch(
        "--- a/src/uart.c\n+++ b/src/uart.c\n@@ -1,4 +1,4 @@\n int uart_init(void)\n {\n-    return 2;\n+    return 3;\n }\n",
    )
    .unwrap();
    assert_eq!(
        f.read_text("src/uart.c"),
        "int uart_init(void)\r\n{\r\n    return 3;\r\n}\r\n",
        "the patched file keeps the tree's CRLF endings"
    );
    f.write("src/new.c", "clobbered\n");
    f.git(&["add", "-A"]);

    repo.restore(&snap).unwrap();
    assert_eq!(f.state(), before);
    assert!(repo.restore(&snap).unwrap().is_noop());
}

/// A Windows-style checkout (`core.autocrlf=true`) of two committed CRLF sources, which git
/// stores with LF.
fn autocrlf_fixture() -> Fixture {
    let f = Fixture::new();
    f.git(&["config", "core.autocrlf", "true"]);
    f.git(&["config", "core.safecrlf", "false"]);
    f.write(
        "src/uart.c",
        "int uart_init(void)\r\n{\r\n    return 1;\r\n}\r\n",
    );
    f.write("src/crc.c", "int crc(void)\r\n{\r\n    return 0;\r\n}\r\n");
    f.commit_all("a Windows checkout's sources");
    f
}

/// As in a checkout made long before the run: every tracked file older than the index, so none
/// is racily clean and git trusts its stat data.
fn age_checkout(f: &Fixture) {
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    for file in f.git(&["ls-files"]).lines() {
        let file = fs::File::options().write(true).open(f.path(file)).unwrap();
        file.set_modified(long_ago).unwrap();
    }
    f.git(&["update-index", "-q", "--refresh"]);
}

/// Regression: in a checkout made long before the run, a file git calls clean holds CRLF bytes
/// while its blob holds LF (git converted it on the way out or on the way in). The snapshot took
/// the blob for the bytes, so a rollback after a patch to that file wrote it back with LF: every
/// line of the person's file changed. Each way git converts is tried: `core.autocrlf=true`, an
/// `eol=crlf` attribute (tracked, or in `info/attributes`), and `core.autocrlf=input` (a CRLF
/// file added, stored as LF, left CRLF).
#[test]
fn a_clean_file_git_converted_gets_its_own_bytes_back_after_a_patch() {
    let original = "int uart_init(void)\r\n{\r\n    return 1;\r\n}\r\n";
    for how in ["autocrlf", "attribute", "info", "input"] {
        let f = Fixture::new();
        match how {
            "autocrlf" => f.git(&["config", "core.autocrlf", "true"]),
            "attribute" => {
                f.write(".gitattributes", "*.c text eol=crlf\n");
                f.git(&["config", "core.autocrlf", "false"])
            }
            "info" => {
                f.write(".git/info/attributes", "*.c text eol=crlf\n");
                f.git(&["config", "core.autocrlf", "false"])
            }
            _ => f.git(&["config", "core.autocrlf", "input"]),
        };
        f.git(&["config", "core.safecrlf", "false"]);
        f.write("src/uart.c", original);
        f.commit_all("a Windows checkout's source");
        if how != "input" {
            // Out of git's objects again, as a clone or a checkout writes it.
            fs::remove_file(f.path("src/uart.c")).unwrap();
            f.git(&["checkout", "--", "src/uart.c"]);
        }
        assert_eq!(
            f.read_text("src/uart.c"),
            original,
            "{how}: checked out with CRLF"
        );
        assert_eq!(
            f.git(&["cat-file", "-p", "HEAD:src/uart.c"]),
            original.replace("\r\n", "\n"),
            "{how}: stored with LF"
        );
        age_checkout(&f);
        assert_eq!(f.git(&["status", "--porcelain"]), "", "{how}: clean");
        let before = f.state();

        let repo = f.open();
        let snap = repo.snapshot("run-1", "base").unwrap();
        repo.apply_patch(
            "--- a/src/uart.c\n+++ b/src/uart.c\n@@ -1,4 +1,4 @@\n int uart_init(void)\n {\n-    return 1;\n+    return 0;\n }\n",
        )
        .unwrap();
        assert_ne!(f.read_text("src/uart.c"), original, "{how}: patched");
        repo.restore(&snap).unwrap();
        assert_eq!(
            f.read_text("src/uart.c"),
            original,
            "{how}: bytes given back"
        );
        assert_eq!(f.state(), before, "{how}");
    }
}

/// In a CRLF checkout of LF blobs, a fix that needs the person's uncommitted line is built on
/// the snapshot, which holds the files' CRLF bytes: the fix commit stores what `git add` would
/// (LF), so it changes only the fix's lines, and only the file with uncommitted work is named
/// as such, not every file git converted.
#[test]
fn a_fix_built_on_a_crlf_snapshot_commits_what_git_would_store() {
    let f = autocrlf_fixture();
    for file in ["src/uart.c", "src/crc.c"] {
        fs::remove_file(f.path(file)).unwrap();
    }
    f.git(&["checkout", "--", "src"]);
    age_checkout(&f);
    // The person's uncommitted line, which the fix edits.
    f.write(
        "src/uart.c",
        "int uart_init(void)\r\n{\r\n    return 2;\r\n}\r\n",
    );
    let repo = f.open();
    let base = repo.snapshot("run-crlf", "base").unwrap();
    let patch = "--- a/src/uart.c\n+++ b/src/uart.c\n@@ -1,4 +1,4 @@\n int uart_init(void)\n {\n-    return 2;\n+    return 3;\n }\n";
    let prepared = repo.prepare_fix("run-crlf", &base, patch).unwrap();
    assert_eq!(prepared.uncommitted, ["src/uart.c"]);
    let fix = repo.commit_fix("run-crlf", &base, patch, "fix\n").unwrap();
    assert_eq!(fix.base, FixBase::Snapshot);
    assert_eq!(
        f.git(&["show", "fwfix/run-crlf:src/uart.c"]),
        "int uart_init(void)\n{\n    return 3;\n}\n",
        "stored with LF, as git add stores it"
    );
    assert_eq!(
        f.git(&["diff", "--numstat", "fwfix/run-crlf^", "fwfix/run-crlf"]),
        "1\t1\tsrc/uart.c\n"
    );
}

/// Regression: a hunk with no context (`@@ -2,0 +3 @@`, as a model adding an include writes
/// it) matched a CRLF file byte for byte and wrote its LF line among the CRLF ones.
#[test]
fn an_lf_line_added_with_no_context_to_a_crlf_file_gets_crlf() {
    let f = crlf_fixture();
    let repo = f.open();
    let report = repo
        .apply_patch("--- a/src/uart.c\n+++ b/src/uart.c\n@@ -1,0 +2 @@\n+#include <stdint.h>\n")
        .unwrap();
    assert_eq!(report.line_endings_adapted(), ["src/uart.c"]);
    assert_eq!(
        f.read_text("src/uart.c"),
        "#include \"uart.h\"\r\n#include <stdint.h>\r\n\r\nint uart_init(void)\r\n{\r\n    return 1;\r\n}\r\n"
    );
}
