//! The rule table and the rules about where a patch goes and how big it is: unsafe paths, the
//! profile's allow and deny globs, the built-in denies, size limits, binary changes and file
//! modes. Assertion rules live in `assertions`, the risk score in `risk`. Pure: it must not look
//! at the file system, only at the paths the patch names.
//!
//! Globs match repository-relative paths the way `.gitignore` patterns do: `*` stays within one
//! directory, `**` crosses directories, and a glob without `/` matches the file name at any depth.

use super::{FileView, Finding, Severity, Stats};
use crate::config::{BuiltinDeny, PolicySpec};
use globset::{GlobBuilder, GlobMatcher};
use std::sync::OnceLock;

/// A policy rule: its stable id (shown in every finding, kept in `review.json`) and what it
/// checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub id: &'static str,
    pub summary: &'static str,
}

/// Every rule, in the order a review runs them.
pub const RULES: &[Rule] = &[
    Rule {
        id: "patch.parse",
        summary: "the patch must be a readable unified diff",
    },
    Rule {
        id: "patch.empty",
        summary: "the patch must change at least one file",
    },
    Rule {
        id: "path.unsafe",
        summary: "no absolute path, no `..`, nothing inside `.git`",
    },
    Rule {
        id: "path.deny",
        summary: "no path matching the profile's `[policy] deny` globs",
    },
    Rule {
        id: "path.deny.builtin.tests",
        summary: "no test sources or test harness, unless `allow_builtin` lifts `tests`",
    },
    Rule {
        id: "path.deny.builtin.linker",
        summary: "no linker scripts, unless `allow_builtin` lifts `linker`",
    },
    Rule {
        id: "path.deny.builtin.startup",
        summary: "no startup code or vector tables, unless `allow_builtin` lifts `startup`",
    },
    Rule {
        id: "path.deny.builtin.vendor",
        summary: "no vendored or third-party code, unless `allow_builtin` lifts `vendor`",
    },
    Rule {
        id: "path.deny.builtin.build",
        summary: "no build-system files, unless `allow_builtin` lifts `build`",
    },
    Rule {
        id: "path.deny.builtin.git",
        summary: "no git metadata files, unless `allow_builtin` lifts `git`",
    },
    Rule {
        id: "path.deny.builtin.ci",
        summary: "no CI configuration, unless `allow_builtin` lifts `ci`",
    },
    Rule {
        id: "path.allow",
        summary: "every path must match one of the profile's `[policy] allow` globs",
    },
    Rule {
        id: "size.max_lines",
        summary: "at most `max_changed_lines` lines added plus removed",
    },
    Rule {
        id: "size.max_files",
        summary: "at most `max_changed_files` files",
    },
    Rule {
        id: "binary",
        summary: "no binary changes",
    },
    Rule {
        id: "file.mode",
        summary: "no symlinks or submodules; a changed executable bit is a warning",
    },
    Rule {
        id: "assert.removed",
        summary: "no assertion removed without an equivalent one re-added, in any file",
    },
    Rule {
        id: "assert.weakened",
        summary: "no assertion loosened, replaced by a constant, or switched off, in any file",
    },
    Rule {
        id: "test.removed",
        summary: "no test taken out of its runner (`RUN_TEST`, `ztest_unit_test`, `ZTEST`)",
    },
    Rule {
        id: "test.disabled",
        summary: "no test turned into an ignore, skip or early pass, no code hidden by `#if 0`",
    },
    Rule {
        id: "test.forged_output",
        summary: "no string added outside test files that reads like a test verdict",
    },
    Rule {
        id: "test.expected_changed",
        summary: "no expected value changed in a test file, even when tests may be edited",
    },
];

/// The table's static id for `id`, if there is such a rule.
pub(crate) fn rule_id(id: &str) -> Option<&'static str> {
    RULES.iter().find(|r| r.id == id).map(|r| r.id)
}

/// The rule that guards a built-in deny family.
pub fn builtin_rule(family: BuiltinDeny) -> &'static str {
    match family {
        BuiltinDeny::Tests => "path.deny.builtin.tests",
        BuiltinDeny::Linker => "path.deny.builtin.linker",
        BuiltinDeny::Startup => "path.deny.builtin.startup",
        BuiltinDeny::Vendor => "path.deny.builtin.vendor",
        BuiltinDeny::Build => "path.deny.builtin.build",
        BuiltinDeny::Git => "path.deny.builtin.git",
        BuiltinDeny::Ci => "path.deny.builtin.ci",
    }
}

/// The globs of a built-in deny family. They err on the side of denying: a path that looks like a
/// test, a startup file or vendored code is treated as one.
pub fn builtin_globs(family: BuiltinDeny) -> &'static [&'static str] {
    match family {
        BuiltinDeny::Tests => &[
            "**/tests/**",
            "**/test/**",
            "**/test_*.{c,h,cc,cpp}",
            "**/*_test.{c,h,cc,cpp}",
            "**/[Uu]nity*",
            "**/[Uu]nity*/**",
            "**/ztest*",
            "harness/**",
            "**/testcase.yaml",
        ],
        BuiltinDeny::Linker => &[
            "**/*.ld",
            "**/*.lds",
            "**/*.ld.in",
            "**/*.lds.S",
            "**/*.icf",
            "**/*.sct",
        ],
        BuiltinDeny::Startup => &["**/startup*.{c,s,S,asm}", "**/vectors*.{c,s,S,asm}"],
        BuiltinDeny::Vendor => &[
            "**/vendor/**",
            "**/third_party/**",
            "**/third-party/**",
            "**/Third_Party/**",
            "**/CMSIS/**",
            "**/HAL/**",
            "**/*_HAL_Driver/**",
            "**/modules/hal/**",
        ],
        BuiltinDeny::Build => &[
            "**/Makefile",
            "**/makefile",
            "**/GNUmakefile",
            "**/*.mk",
            "**/CMakeLists.txt",
            "**/*.cmake",
            "**/west.yml",
            "**/Kconfig*",
            "**/prj.conf",
            "**/meson.build",
            "**/SConstruct",
            "**/SConscript",
            "**/platformio.ini",
        ],
        BuiltinDeny::Git => &[
            ".git/**",
            "**/.git/**",
            "**/.git",
            "**/.gitmodules",
            "**/.gitattributes",
            "**/.gitignore",
        ],
        BuiltinDeny::Ci => &[
            ".github/**",
            "**/.gitlab-ci.yml",
            ".gitlab/**",
            "**/Jenkinsfile",
            ".ci/**",
            ".circleci/**",
            ".buildkite/**",
            "**/.travis.yml",
            "**/azure-pipelines.yml",
        ],
    }
}

/// A compiled glob with the text it came from, for messages.
pub(crate) struct Glob {
    pub text: String,
    matcher: GlobMatcher,
}

impl Glob {
    pub fn new(text: &str) -> Result<Glob, globset::Error> {
        // `.gitignore` semantics: a glob without `/` names a file at any depth.
        let pattern = if text.contains('/') {
            text.to_string()
        } else {
            format!("**/{text}")
        };
        let matcher = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .build()?
            .compile_matcher();
        Ok(Glob {
            text: text.to_string(),
            matcher,
        })
    }

    pub fn is_match(&self, path: &str) -> bool {
        self.matcher.is_match(path)
    }
}

/// The first glob of `family` that matches `path`.
pub(crate) fn builtin_match(family: BuiltinDeny, path: &str) -> Option<&'static str> {
    // Compiled once per process: every review matches every path against all of them.
    static COMPILED: OnceLock<Vec<(BuiltinDeny, &'static str, Glob)>> = OnceLock::new();
    let compiled = COMPILED.get_or_init(|| {
        BuiltinDeny::ALL
            .into_iter()
            .flat_map(|f| builtin_globs(f).iter().map(move |g| (f, *g)))
            .filter_map(|(f, g)| Glob::new(g).ok().map(|compiled| (f, g, compiled)))
            .collect()
    });
    compiled
        .iter()
        .find(|(f, _, g)| *f == family && g.is_match(path))
        .map(|(_, text, _)| *text)
}

/// Compiles the profile's globs; one that does not compile (only possible for a spec built in
/// code, the config loader checks them) is a finding, never a panic or a silent skip.
fn compile(globs: &[String], key: &str, findings: &mut Vec<Finding>) -> Vec<Glob> {
    let mut out = Vec::new();
    for text in globs {
        match Glob::new(text) {
            Ok(g) => out.push(g),
            Err(e) => findings.push(Finding {
                rule: if key == "allow" {
                    "path.allow"
                } else {
                    "path.deny"
                },
                severity: Severity::Deny,
                path: None,
                line: None,
                message: format!("[policy] {key} glob `{text}` is not valid: {}", e.kind()),
            }),
        }
    }
    out
}

pub(crate) fn check_paths(files: &[FileView], spec: &PolicySpec, findings: &mut Vec<Finding>) {
    let allow = compile(&spec.allow, "allow", findings);
    let deny = compile(&spec.deny, "deny", findings);
    for file in files {
        for path in &file.paths {
            check_path(path, &allow, &deny, spec, findings);
        }
    }
}

fn check_path(
    path: &str,
    allow: &[Glob],
    deny: &[Glob],
    spec: &PolicySpec,
    findings: &mut Vec<Finding>,
) {
    let mut push = |rule: &'static str, severity: Severity, message: String| {
        findings.push(Finding {
            rule,
            severity,
            path: Some(path.to_string()),
            line: None,
            message,
        });
    };
    if let Some(why) = unsafe_reason(path) {
        push("path.unsafe", Severity::Deny, format!("`{path}` {why}"));
    }
    if let Some(g) = deny.iter().find(|g| g.is_match(path)) {
        push(
            "path.deny",
            Severity::Deny,
            format!("`{path}` matches the profile's deny glob `{}`", g.text),
        );
    }
    let mut lifted = Vec::new();
    for family in BuiltinDeny::ALL {
        let Some(glob) = builtin_match(family, path) else {
            continue;
        };
        if spec.allow_builtin.contains(&family) {
            lifted.push(family.name());
            push(
                builtin_rule(family),
                Severity::Warn,
                format!(
                    "`{path}` matches built-in deny `{glob}` ({}), lifted by allow_builtin",
                    family.name()
                ),
            );
        } else {
            push(
                builtin_rule(family),
                Severity::Deny,
                format!(
                    "`{path}` matches built-in deny `{glob}`; add \"{}\" to [policy] \
                     allow_builtin to permit it",
                    family.name()
                ),
            );
        }
    }
    if !allow.iter().any(|g| g.is_match(path)) {
        let globs: Vec<&str> = allow.iter().map(|g| g.text.as_str()).collect();
        let mut message = if globs.is_empty() {
            format!("`{path}` is not allowed: [policy] allow is empty")
        } else {
            format!(
                "`{path}` matches none of the allow globs ({})",
                globs.join(", ")
            )
        };
        if !lifted.is_empty() {
            message.push_str("; allow_builtin lifts a built-in deny but does not allow a path");
        }
        push("path.allow", Severity::Deny, message);
    }
}

/// What makes a path unsafe to patch whatever the profile says.
fn unsafe_reason(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("is empty");
    }
    if path.starts_with('/') || path.starts_with('\\') {
        return Some("is absolute");
    }
    let components: Vec<&str> = path.split(['/', '\\']).collect();
    if components.contains(&"..") {
        return Some("leaves the repository through `..`");
    }
    if components.iter().any(|c| {
        c.trim_end_matches(['.', ' ']).eq_ignore_ascii_case(".git")
            || c.eq_ignore_ascii_case("git~1")
    }) {
        return Some("is inside a `.git` directory");
    }
    None
}

pub(crate) fn check_size(stats: &Stats, spec: &PolicySpec, findings: &mut Vec<Finding>) {
    let lines = stats.added + stats.removed;
    if lines > spec.max_changed_lines as usize {
        findings.push(Finding {
            rule: "size.max_lines",
            severity: Severity::Deny,
            path: None,
            line: None,
            message: format!(
                "{lines} changed lines ({} added, {} removed), more than max_changed_lines = {}",
                stats.added, stats.removed, spec.max_changed_lines
            ),
        });
    }
    if stats.files > spec.max_changed_files as usize {
        findings.push(Finding {
            rule: "size.max_files",
            severity: Severity::Deny,
            path: None,
            line: None,
            message: format!(
                "{} files changed, more than max_changed_files = {}",
                stats.files, spec.max_changed_files
            ),
        });
    }
}

const MODE_SYMLINK: u32 = 0o120000;
const MODE_GITLINK: u32 = 0o160000;
const MODE_TYPE_MASK: u32 = 0o170000;

/// Binary changes and file modes: what a reviewer cannot read in the diff.
pub(crate) fn check_files(files: &[FileView], findings: &mut Vec<Finding>) {
    for file in files {
        let p = file.patch;
        if p.binary {
            findings.push(Finding {
                rule: "binary",
                severity: Severity::Deny,
                path: Some(file.path.clone()),
                line: None,
                message: format!("`{}` is a binary change", file.path),
            });
        }
        let special = [p.old_mode, p.new_mode]
            .into_iter()
            .flatten()
            .find(|m| matches!(m & MODE_TYPE_MASK, MODE_SYMLINK | MODE_GITLINK));
        if let Some(mode) = special {
            let what = if mode & MODE_TYPE_MASK == MODE_SYMLINK {
                "a symlink"
            } else {
                "a submodule"
            };
            findings.push(Finding {
                rule: "file.mode",
                severity: Severity::Deny,
                path: Some(file.path.clone()),
                line: None,
                message: format!("`{}` is {what} (mode {mode:o})", file.path),
            });
        } else if let (Some(old), Some(new)) = (p.old_mode, p.new_mode) {
            if (old & 0o111) != (new & 0o111) {
                findings.push(Finding {
                    rule: "file.mode",
                    severity: Severity::Warn,
                    path: Some(file.path.clone()),
                    line: None,
                    message: format!("`{}` changes mode from {old:o} to {new:o}", file.path),
                });
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::testing::*;
    use super::super::{evaluate, Verdict};
    use super::*;

    fn deny_rules(path: &str, spec: &PolicySpec) -> Vec<&'static str> {
        let r = evaluate(&diff(path, &["a = 1;"], &["a = 2;"]), spec);
        r.denials().map(|f| f.rule).collect()
    }

    #[test]
    fn every_builtin_glob_compiles_and_every_rule_id_is_unique() {
        for family in BuiltinDeny::ALL {
            for g in builtin_globs(family) {
                assert!(Glob::new(g).is_ok(), "{g}");
            }
            assert!(rule_id(builtin_rule(family)).is_some());
        }
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }

    #[test]
    fn allow_globs_decide_what_may_be_touched() {
        let mut s = spec();
        assert!(deny_rules("src/crc.c", &s).is_empty());
        assert!(deny_rules("src/drivers/uart.c", &s).is_empty());
        assert_eq!(deny_rules("lib/crc.c", &s), vec!["path.allow"]);
        s.allow = vec!["src/*.c".into()];
        assert!(deny_rules("src/crc.c", &s).is_empty());
        assert_eq!(
            deny_rules("src/drivers/uart.c", &s),
            vec!["path.allow"],
            "`*` stays within one directory"
        );
        s.allow = vec!["*.c".into()];
        assert!(
            deny_rules("lib/deep/crc.c", &s).is_empty(),
            "no `/`: any depth"
        );
        s.allow = vec![];
        let r = evaluate(&diff("src/crc.c", &["a;"], &["b;"]), &s);
        assert!(r.findings[0].message.contains("allow is empty"));
    }

    #[test]
    fn profile_deny_globs_win_over_allow() {
        let mut s = spec();
        s.deny = vec!["src/generated/**".into(), "secrets.h".into()];
        assert_eq!(deny_rules("src/generated/regs.c", &s), vec!["path.deny"]);
        assert_eq!(deny_rules("src/cfg/secrets.h", &s), vec!["path.deny"]);
        assert!(deny_rules("src/crc.c", &s).is_empty());
    }

    #[test]
    fn each_builtin_family_denies_its_paths_even_inside_allow() {
        let mut s = spec();
        s.allow = vec!["**".into()];
        let cases = [
            ("tests/test_crc.c", "path.deny.builtin.tests"),
            ("test/main.c", "path.deny.builtin.tests"),
            ("src/test_uart.c", "path.deny.builtin.tests"),
            ("src/uart_test.c", "path.deny.builtin.tests"),
            ("lib/unity/unity.c", "path.deny.builtin.tests"),
            ("src/unity_config.h", "path.deny.builtin.tests"),
            ("harness/unity.h", "path.deny.builtin.tests"),
            ("boards/mps2/link.ld", "path.deny.builtin.linker"),
            ("STM32F401.lds", "path.deny.builtin.linker"),
            ("cfg/flash.icf", "path.deny.builtin.linker"),
            ("keil/app.sct", "path.deny.builtin.linker"),
            ("platform/startup.c", "path.deny.builtin.startup"),
            ("src/startup_stm32f401xe.s", "path.deny.builtin.startup"),
            ("src/vectors.S", "path.deny.builtin.startup"),
            ("vendor/lib/x.c", "path.deny.builtin.vendor"),
            ("third_party/fatfs/ff.c", "path.deny.builtin.vendor"),
            (
                "Drivers/CMSIS/Include/core_cm4.h",
                "path.deny.builtin.vendor",
            ),
            ("lib/HAL/gpio.c", "path.deny.builtin.vendor"),
            (
                "Drivers/STM32F4xx_HAL_Driver/Src/a.c",
                "path.deny.builtin.vendor",
            ),
            ("Makefile", "path.deny.builtin.build"),
            ("src/Makefile", "path.deny.builtin.build"),
            ("mk/rules.mk", "path.deny.builtin.build"),
            ("CMakeLists.txt", "path.deny.builtin.build"),
            ("cmake/arm.cmake", "path.deny.builtin.build"),
            ("west.yml", "path.deny.builtin.build"),
            ("Kconfig.defconfig", "path.deny.builtin.build"),
            ("app/prj.conf", "path.deny.builtin.build"),
            (".gitmodules", "path.deny.builtin.git"),
            (".github/workflows/ci.yml", "path.deny.builtin.ci"),
            (".gitlab-ci.yml", "path.deny.builtin.ci"),
            ("Jenkinsfile", "path.deny.builtin.ci"),
            (".ci/run.sh", "path.deny.builtin.ci"),
        ];
        for (path, rule) in cases {
            assert_eq!(deny_rules(path, &s), vec![rule], "{path}");
        }
        for ok in [
            "src/crc.c",
            "src/latest.c",
            "src/contest.c",
            "src/hal_uart.c",
        ] {
            assert!(deny_rules(ok, &s).is_empty(), "{ok}");
        }
    }

    #[test]
    fn a_lifted_builtin_deny_warns_and_still_needs_allow() {
        let mut s = spec();
        s.allow_builtin = vec![BuiltinDeny::Startup];
        assert_eq!(deny_rules("platform/startup.c", &s), vec!["path.allow"]);
        s.allow.push("platform/**".into());
        let r = evaluate(&diff("platform/startup.c", &["a;"], &["b;"]), &s);
        assert_eq!(r.verdict, Verdict::Allow);
        assert_eq!(rules_of(&r), vec!["path.deny.builtin.startup"]);
        assert_eq!(r.findings[0].severity, Severity::Warn);
        assert!(r.findings[0].message.contains("lifted"));
        assert_eq!(
            deny_rules("platform/link.ld", &s),
            vec!["path.deny.builtin.linker"],
            "lifting one family lifts only that one"
        );
    }

    #[test]
    fn unsafe_paths_are_denied_whatever_the_profile_says() {
        let mut s = spec();
        s.allow = vec!["**".into()];
        s.allow_builtin = BuiltinDeny::ALL.to_vec();
        assert_eq!(deny_rules("src/../../etc/x", &s), vec!["path.unsafe"]);
        assert_eq!(deny_rules(".git/hooks/pre-commit", &s), vec!["path.unsafe"]);
        assert_eq!(deny_rules("sub/.GIT/config", &s), vec!["path.unsafe"]);
        assert!(deny_rules(".gitmodules", &s).is_empty());
    }

    #[test]
    fn renames_are_checked_on_both_sides() {
        let d = "diff --git a/src/a.c b/tests/a.c\nsimilarity index 100%\nrename from src/a.c\nrename to tests/a.c\n";
        let r = evaluate(d, &spec());
        let denied: Vec<_> = r.denials().map(|f| f.path.clone().unwrap()).collect();
        assert!(denied.iter().all(|p| p == "tests/a.c"), "{denied:?}");
        assert!(!denied.is_empty());
    }

    #[test]
    fn size_limits() {
        let mut s = spec();
        s.max_changed_lines = 2;
        let r = evaluate(&diff("src/a.c", &["a;", "b;"], &["c;"]), &s);
        assert_eq!(rules_of(&r), vec!["size.max_lines"]);
        assert!(r.findings[0].message.contains("3 changed lines"));
        let r = evaluate(&diff("src/a.c", &["a;"], &["c;"]), &s);
        assert!(r.findings.is_empty());

        let mut s = spec();
        s.max_changed_files = 2;
        let three: String = ["src/a.c", "src/b.c", "src/c.c"]
            .iter()
            .map(|p| diff(p, &["a;"], &["b;"]))
            .collect();
        let r = evaluate(&three, &s);
        assert_eq!(rules_of(&r), vec!["size.max_files"]);
        s.max_changed_files = 3;
        assert!(evaluate(&three, &s).findings.is_empty());
    }

    #[test]
    fn binary_changes_are_denied_git_and_plain() {
        let git = "diff --git a/src/logo.bin b/src/logo.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\nKcmZ?wa{vGU0RR91\n\nliteral 0\nHcmV?d00001\n\n";
        let r = evaluate(git, &spec());
        assert_eq!(rules_of(&r), vec!["binary"]);
        let plain = "diff --git a/src/fw.bin b/src/fw.bin\nindex 1..2 100644\nBinary files a/src/fw.bin and b/src/fw.bin differ\n";
        assert_eq!(rules_of(&evaluate(plain, &spec())), vec!["binary"]);
        let bare = "Binary files a/src/fw.bin and b/src/fw.bin differ\n";
        assert_eq!(rules_of(&evaluate(bare, &spec())), vec!["binary"]);
    }

    #[test]
    fn symlinks_and_submodules_are_denied_mode_changes_warn() {
        let link = "diff --git a/src/l b/src/l\nnew file mode 120000\n--- /dev/null\n+++ b/src/l\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n";
        let r = evaluate(link, &spec());
        assert_eq!(rules_of(&r), vec!["file.mode"]);
        assert_eq!(r.verdict, Verdict::Deny);
        let exec = "diff --git a/src/run.sh b/src/run.sh\nold mode 100644\nnew mode 100755\n";
        let r = evaluate(exec, &spec());
        assert_eq!(rules_of(&r), vec!["file.mode"]);
        assert_eq!(r.verdict, Verdict::Allow);
        assert_eq!(r.findings[0].severity, Severity::Warn);
    }
}
