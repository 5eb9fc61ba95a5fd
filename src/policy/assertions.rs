//! Rules that keep a patch from making a failing test pass by checking less: assertions removed or
//! loosened (in any file: a firmware `configASSERT` counts as much as a Unity one), tests taken
//! out of their runner or switched off, and expected values changed in test files. Pure: it reads
//! the patch's lines through `clike` and must not guess beyond what the lines say.
//!
//! How a file is judged:
//! 1. Each hunk is read twice, as the original (context and removed lines) and as the result
//!    (context and added lines). Assertion calls are found in both, spanning lines when their
//!    arguments do, and kept when a changed line is part of them.
//! 2. An assertion that reappears identically (spacing and comments aside) anywhere in the file's
//!    result is unchanged: moved, re-indented or re-commented.
//! 3. The others are paired within their hunk (same macro first). An unpaired original is
//!    `assert.removed`; a pair is compared for the loosening shapes, and in a test file for a
//!    changed literal (`test.expected_changed`).

use super::clike::{self, Tok};
use super::{side, FileView, Finding, LineKind, Severity, SideTok};
use crate::config::BuiltinDeny;
use std::collections::BTreeMap;

/// At most this many findings of one rule for one file; the rest are counted in one more.
const MAX_PER_FILE: usize = 5;

/// What an assertion macro checks, as far as loosening goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Two values are equal. `width` is the bit width the macro compares (`HEX8` → 8);
    /// `count` the argument that limits how much is compared (array length, `STRING_LEN`).
    Equal {
        width: Option<u32>,
        count: Option<usize>,
    },
    NotEqual,
    /// Equal within a tolerance held by argument `delta`.
    Within {
        delta: usize,
    },
    /// `zassert_between_inclusive(value, lower, upper)`.
    Between,
    /// Greater/less than. `threshold` is the argument a Unity macro compares against.
    Ordering {
        strict: bool,
        less: bool,
        threshold: Option<usize>,
    },
    /// A condition holds (`negated`: does not hold).
    Truth {
        negated: bool,
    },
    Other,
}

/// How to read an assertion macro: what it checks and how many of its arguments are the check
/// (the rest is a message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    kind: Kind,
    /// `None`: every argument, less the last one for a Unity `_MESSAGE` macro.
    checked: Option<usize>,
}

pub(crate) fn is_assertion(name: &str) -> bool {
    let upper = name
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    name.starts_with("assert")
        || ["zassert", "zexpect", "zassume"]
            .iter()
            .any(|p| name.starts_with(p))
        || matches!(name, "configASSERT" | "static_assert" | "_Static_assert")
        || (upper && (name.contains("ASSERT") || name.starts_with("EXPECT_")))
}

fn classify(name: &str) -> Shape {
    if let Some(rest) = name.strip_prefix("TEST_ASSERT") {
        return unity(rest);
    }
    for prefix in ["zassert_", "zexpect_", "zassume_"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            return zephyr(rest);
        }
    }
    for prefix in ["ASSERT_", "EXPECT_"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            if let Some(shape) = gtest(rest) {
                return shape;
            }
        }
    }
    Shape {
        kind: Kind::Truth { negated: false },
        checked: Some(1),
    }
}

/// `rest` follows `TEST_ASSERT`: `_EQUAL_HEX32_MESSAGE`, `_FLOAT_WITHIN`, `` (plain).
fn unity(rest: &str) -> Shape {
    let base = rest.strip_suffix("_MESSAGE").unwrap_or(rest);
    let array = base.contains("_ARRAY") || base.contains("_MEMORY") || base.contains("STRING_LEN");
    let kind = if base.contains("_WITHIN") {
        Kind::Within { delta: 0 }
    } else if base.starts_with("_NOT_EQUAL") {
        Kind::NotEqual
    } else if base.starts_with("_EQUAL") || base.starts_with("_EACH_EQUAL") {
        let stem = base.trim_end_matches("_ARRAY");
        let digits = stem.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        Kind::Equal {
            width: stem[digits..].parse().ok(),
            count: (array || base.starts_with("_EACH_EQUAL")).then_some(2),
        }
    } else if base.contains("GREATER_") || base.contains("LESS_") {
        Kind::Ordering {
            strict: base.contains("_THAN"),
            less: base.contains("LESS_"),
            threshold: Some(0),
        }
    } else if base.is_empty() || base == "_TRUE" {
        Kind::Truth { negated: false }
    } else if base == "_FALSE" || base == "_UNLESS" {
        Kind::Truth { negated: true }
    } else {
        Kind::Other
    };
    Shape {
        kind,
        checked: None,
    }
}

/// `rest` follows `zassert_`: `equal`, `within`, ... Extra arguments are the message.
fn zephyr(rest: &str) -> Shape {
    let (kind, checked) = match rest {
        "true" => (Kind::Truth { negated: false }, 1),
        "false" => (Kind::Truth { negated: true }, 1),
        "equal" | "equal_ptr" | "str_equal" => (
            Kind::Equal {
                width: None,
                count: None,
            },
            2,
        ),
        "mem_equal" | "mem_equal__" => (
            Kind::Equal {
                width: None,
                count: Some(2),
            },
            3,
        ),
        "not_equal" => (Kind::NotEqual, 2),
        "within" => (Kind::Within { delta: 2 }, 3),
        "between_inclusive" => (Kind::Between, 3),
        "unreachable" => (Kind::Other, 0),
        _ => (Kind::Other, 1),
    };
    Shape {
        kind,
        checked: Some(checked),
    }
}

/// googletest-style `ASSERT_EQ`, `EXPECT_NEAR`, ... as used by host-side firmware tests.
fn gtest(rest: &str) -> Option<Shape> {
    let ordering = |strict, less| Kind::Ordering {
        strict,
        less,
        threshold: None,
    };
    let (kind, checked) = match rest {
        "EQ" | "STREQ" | "FLOAT_EQ" | "DOUBLE_EQ" => (
            Kind::Equal {
                width: None,
                count: None,
            },
            2,
        ),
        "NE" | "STRNE" => (Kind::NotEqual, 2),
        "LT" => (ordering(true, true), 2),
        "LE" => (ordering(false, true), 2),
        "GT" => (ordering(true, false), 2),
        "GE" => (ordering(false, false), 2),
        "NEAR" => (Kind::Within { delta: 2 }, 3),
        "TRUE" => (Kind::Truth { negated: false }, 1),
        "FALSE" => (Kind::Truth { negated: true }, 1),
        _ => return None,
    };
    Some(Shape {
        kind,
        checked: Some(checked),
    })
}

/// A call of an assertion (or test registration) macro on one side of a hunk.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    args: Vec<Vec<Tok>>,
    /// Tokens joined: equal keys mean the same check.
    key: String,
    /// The source line the call starts on, for messages.
    source: String,
    line: u32,
    hunk: usize,
    touched: bool,
}

impl Call {
    fn shape(&self) -> Shape {
        classify(&self.name)
    }

    /// The arguments that make the check (no message).
    fn checked(&self) -> &[Vec<Tok>] {
        let n = match self.shape().checked {
            Some(n) => n,
            None if self.name.ends_with("_MESSAGE") => self.args.len().saturating_sub(1),
            None => self.args.len(),
        };
        &self.args[..n.min(self.args.len())]
    }

    fn arg(&self, i: usize) -> Option<&[Tok]> {
        self.checked().get(i).map(Vec::as_slice)
    }

    fn literals(&self) -> Vec<String> {
        let mut lits: Vec<String> = self
            .checked()
            .iter()
            .flatten()
            .filter(|t| t.is_literal())
            .map(clike::literal_key)
            .collect();
        lits.sort();
        lits
    }
}

/// Calls of macros `wanted` names on one side of hunk `hunk`. A call whose name follows another
/// identifier (`void assert_param(...)`, `#define assert(x)`) is a declaration, not a check.
fn calls(
    toks: &[SideTok],
    lines: &[super::DiffLine],
    changed: LineKind,
    hunk: usize,
    wanted: fn(&str) -> bool,
) -> Vec<Call> {
    let plain: Vec<Tok> = toks.iter().map(|t| t.tok.clone()).collect();
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let Tok::Ident(name) = &t.tok else { continue };
        if !wanted(name) || !plain.get(i + 1).is_some_and(|n| n.is_punct("(")) {
            continue;
        }
        let declared = i > 0
            && matches!(&plain[i - 1], Tok::Ident(prev) if !matches!(prev.as_str(), "return" | "else" | "do"));
        if declared {
            continue;
        }
        let close = clike::matching_paren(&plain, i + 1).unwrap_or(plain.len());
        let end = close.min(plain.len().saturating_sub(1));
        let touched = toks[i..=end].iter().any(|s| lines[s.line].kind == changed);
        let args = clike::split_args(&plain[i + 2..close.min(plain.len())]);
        let line = &lines[t.line];
        out.push(Call {
            name: name.clone(),
            key: clike::join(&plain[i..=end]),
            args,
            source: short(line.text.trim()),
            line: line.line,
            hunk,
            touched,
        });
    }
    out
}

fn short(text: &str) -> String {
    const MAX: usize = 100;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}...")
    }
}

fn is_registration(name: &str) -> bool {
    matches!(
        name,
        "RUN_TEST"
            | "ztest_unit_test"
            | "ztest_user_unit_test"
            | "ZTEST"
            | "ZTEST_F"
            | "ZTEST_USER"
            | "ZTEST_USER_F"
    )
}

/// Which test a registration names: the function for Unity (not the line number after it), the
/// suite and the test for `ZTEST`.
fn registration_key(call: &Call) -> String {
    let n = if call.name.starts_with("ZTEST") { 2 } else { 1 };
    call.args
        .iter()
        .take(n)
        .map(|a| clike::join(a))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn is_test_file(file: &FileView) -> bool {
    file.paths
        .iter()
        .any(|p| super::rules::builtin_match(BuiltinDeny::Tests, p).is_some())
}

pub(crate) fn check(files: &[FileView], findings: &mut Vec<Finding>) {
    for file in files {
        check_file(file, findings);
    }
}

fn check_file(file: &FileView, findings: &mut Vec<Finding>) {
    let test_file = is_test_file(file);
    let mut olds = Vec::new();
    let mut news = Vec::new();
    let mut old_regs = Vec::new();
    let mut new_regs = Vec::new();
    let mut push = |rule: &'static str, line: Option<u32>, message: String| {
        findings.push(Finding {
            rule,
            severity: Severity::Deny,
            path: Some(file.path.clone()),
            line,
            message,
        });
    };
    for (h, hunk) in file.hunks.iter().enumerate() {
        let old = side(&hunk.lines, LineKind::Removed);
        let new = side(&hunk.lines, LineKind::Added);
        let touched = |c: &Call| c.touched;
        olds.extend(
            calls(&old, &hunk.lines, LineKind::Removed, h, is_assertion)
                .into_iter()
                .filter(touched),
        );
        news.extend(
            calls(&new, &hunk.lines, LineKind::Added, h, is_assertion)
                .into_iter()
                .filter(touched),
        );
        old_regs.extend(
            calls(&old, &hunk.lines, LineKind::Removed, h, is_registration)
                .into_iter()
                .filter(touched),
        );
        new_regs.extend(calls(
            &new,
            &hunk.lines,
            LineKind::Added,
            h,
            is_registration,
        ));
        switched_off(&new, &hunk.lines, test_file, &mut push);
        if !test_file {
            forged_output(&new, &hunk.lines, &mut push);
        }
        if test_file {
            expected_definitions(&hunk.lines, &mut push);
        }
    }

    for reg in &old_regs {
        let key = registration_key(reg);
        if !new_regs.iter().any(|n| registration_key(n) == key) {
            push(
                "test.removed",
                Some(reg.line),
                format!(
                    "test `{key}` is no longer registered: `{}` removed",
                    reg.source
                ),
            );
        }
    }

    // Unchanged checks: the same key on both sides, anywhere in the file.
    let mut new_left: Vec<Option<Call>> = news.into_iter().map(Some).collect();
    let mut old_left = Vec::new();
    for o in olds {
        let same = new_left
            .iter()
            .position(|n| n.as_ref().is_some_and(|n| n.key == o.key));
        match same {
            Some(i) => new_left[i] = None,
            None => old_left.push(o),
        }
    }

    for o in old_left {
        let partner = pick_partner(&o, &new_left).and_then(|i| new_left[i].take());
        let Some(n) = partner else {
            push(
                "assert.removed",
                Some(o.line),
                format!("assertion removed: `{}`", o.source),
            );
            continue;
        };
        if let Some(why) = weakened(&o, &n) {
            push(
                "assert.weakened",
                Some(n.line),
                format!(
                    "assertion weakened: `{}` became `{}`: {why}",
                    o.source, n.source
                ),
            );
        }
        if test_file && o.literals() != n.literals() {
            push(
                "test.expected_changed",
                Some(n.line),
                format!(
                    "expected value changed in a test: `{}` became `{}`",
                    o.source, n.source
                ),
            );
        }
    }
}

/// The added assertion in the same hunk that most likely replaces `old`: the same macro, then
/// the same kind of check, then any.
fn pick_partner(old: &Call, news: &[Option<Call>]) -> Option<usize> {
    let same_hunk = |n: &&Call| n.hunk == old.hunk;
    let candidates: Vec<(usize, &Call)> = news
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.as_ref().filter(same_hunk).map(|n| (i, n)))
        .collect();
    let kind = std::mem::discriminant(&old.shape().kind);
    candidates
        .iter()
        .find(|(_, n)| n.name == old.name)
        .or_else(|| {
            candidates
                .iter()
                .find(|(_, n)| std::mem::discriminant(&n.shape().kind) == kind)
        })
        .or_else(|| candidates.first())
        .map(|(i, _)| *i)
}

/// Why `new` checks less than `old`, if it does.
fn weakened(old: &Call, new: &Call) -> Option<String> {
    if always_passes(new) && !always_passes(old) {
        return Some("it can no longer fail".into());
    }
    let (ok, nk) = (old.shape().kind, new.shape().kind);
    match (ok, nk) {
        (
            Kind::Equal {
                width: ow,
                count: oc,
            },
            Kind::Equal {
                width: nw,
                count: nc,
            },
        ) => {
            if let (Some(o), Some(n)) = (ow, nw) {
                if n < o {
                    return Some(format!("it compares {n} bits instead of {o}"));
                }
            }
            match (oc, nc) {
                (None, Some(_)) => Some("it now compares only part of the value".into()),
                (Some(o), Some(n)) => grew(old.arg(o), new.arg(n), Bound::Lower, "length"),
                _ => None,
            }
        }
        (Kind::Equal { .. }, Kind::Truth { negated: false }) if exact_condition(new) => None,
        (Kind::Equal { .. }, _) => Some(format!(
            "the exact comparison `{}` became `{}`",
            old.name, new.name
        )),
        (Kind::Within { delta: od }, Kind::Within { delta: nd }) => {
            grew(old.arg(od), new.arg(nd), Bound::Upper, "tolerance")
        }
        (Kind::Within { .. } | Kind::Between, Kind::Equal { .. }) => None,
        (Kind::Between, Kind::Between) => grew(old.arg(1), new.arg(1), Bound::Lower, "lower bound")
            .or_else(|| grew(old.arg(2), new.arg(2), Bound::Upper, "upper bound")),
        (Kind::Within { .. } | Kind::Between, _) => Some(format!(
            "the bounded comparison `{}` became `{}`",
            old.name, new.name
        )),
        (
            Kind::Ordering {
                strict: os,
                less: ol,
                threshold: ot,
            },
            Kind::Ordering {
                strict: ns,
                less: nl,
                threshold: nt,
            },
        ) if ol == nl => {
            if os && !ns {
                return Some(format!(
                    "the strict comparison `{}` became `{}`",
                    old.name, new.name
                ));
            }
            match (ot, nt) {
                (Some(o), Some(n)) => {
                    let bound = if ol { Bound::Upper } else { Bound::Lower };
                    grew(old.arg(o), new.arg(n), bound, "threshold")
                }
                _ => None,
            }
        }
        (Kind::Ordering { .. }, Kind::NotEqual | Kind::Other) => Some(format!(
            "the ordering check `{}` became `{}`",
            old.name, new.name
        )),
        (Kind::Truth { negated: on }, Kind::Truth { negated: nn }) if on == nn => {
            match (old.arg(0), new.arg(0)) {
                (Some(o), Some(n)) => looser_condition(o, n),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Which way a bound loosens: an upper bound (tolerance, `x < N`) by growing, a lower bound
/// (length compared, `x > N`) by shrinking.
#[derive(Clone, Copy)]
enum Bound {
    Upper,
    Lower,
}

/// Whether a numeric bound moved the loose way; a bound that is not a plain number and changed is
/// reported too, since nothing shows it did not.
fn grew(old: Option<&[Tok]>, new: Option<&[Tok]>, bound: Bound, what: &str) -> Option<String> {
    let (old, new) = (old?, new?);
    let (ot, nt) = (clike::join(old), clike::join(new));
    if ot == nt {
        return None;
    }
    match (single_number(old), single_number(new)) {
        (Some(o), Some(n)) => {
            let looser = match bound {
                Bound::Upper => n > o,
                Bound::Lower => n < o,
            };
            looser.then(|| format!("the {what} went from {ot} to {nt}"))
        }
        _ => Some(format!("the {what} changed from `{ot}` to `{nt}`")),
    }
}

fn single_number(toks: &[Tok]) -> Option<f64> {
    match clike::strip_parens(toks) {
        [Tok::Num(n)] => clike::number_value(n),
        [Tok::Punct(m), Tok::Num(n)] if m == "-" => clike::number_value(n).map(|v| -v),
        _ => None,
    }
}

/// `TEST_ASSERT_TRUE(a == b)` checks as much as `TEST_ASSERT_EQUAL(a, b)`.
fn exact_condition(call: &Call) -> bool {
    call.arg(0).is_some_and(|c| {
        let c = clike::strip_parens(c);
        c.iter().any(|t| t.is_punct("==")) && !c.iter().any(|t| t.is_punct("||"))
    })
}

/// A check whose outcome no longer depends on the code under test.
fn always_passes(call: &Call) -> bool {
    match call.shape().kind {
        Kind::Truth { negated } => call
            .arg(0)
            .is_some_and(|c| constant_truth(c).is_some_and(|v| v.is_none_or(|v| v != negated))),
        Kind::Equal { .. } => same_args(call.arg(0), call.arg(1)),
        Kind::Within { .. } => same_args(call.arg(1), call.arg(2)),
        Kind::NotEqual => match (call.arg(0), call.arg(1)) {
            (Some(a), Some(b)) => {
                let lit = |t: &[Tok]| match clike::strip_parens(t) {
                    [t] if t.is_literal() => Some(clike::literal_key(t)),
                    _ => None,
                };
                matches!((lit(a), lit(b)), (Some(x), Some(y)) if x != y)
            }
            _ => false,
        },
        Kind::Between | Kind::Ordering { .. } | Kind::Other => false,
    }
}

fn same_args(a: Option<&[Tok]>, b: Option<&[Tok]>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) if !a.is_empty() => {
            let (a, b) = (clike::strip_parens(a), clike::strip_parens(b));
            let key = |t: &[Tok]| t.iter().map(clike::literal_key).collect::<Vec<_>>();
            key(a) == key(b)
        }
        _ => false,
    }
}

/// `Some(Some(v))`: a constant with a known value; `Some(None)`: a constant expression (no
/// identifier in it) whose value is not worked out; `None`: depends on the program.
fn constant_truth(toks: &[Tok]) -> Option<Option<bool>> {
    let toks = clike::strip_parens(toks);
    let ors = clike::split_top(toks, "||");
    if ors.len() > 1 {
        let parts: Vec<_> = ors.iter().map(|p| constant_truth(p)).collect();
        if parts.contains(&Some(Some(true))) {
            return Some(Some(true));
        }
        return parts.iter().all(Option::is_some).then_some(None);
    }
    let ands = clike::split_top(toks, "&&");
    if ands.len() > 1 {
        let parts: Vec<_> = ands.iter().map(|p| constant_truth(p)).collect();
        if parts.contains(&Some(Some(false))) {
            return Some(Some(false));
        }
        return parts.iter().all(Option::is_some).then_some(None);
    }
    match toks {
        [Tok::Num(n)] => return Some(clike::number_value(n).map(|v| v != 0.0)),
        [Tok::Ident(i)] if matches!(i.as_str(), "true" | "TRUE") => return Some(Some(true)),
        [Tok::Ident(i)] if matches!(i.as_str(), "false" | "FALSE") => return Some(Some(false)),
        [Tok::Punct(not), rest @ ..] if not == "!" => {
            return constant_truth(rest).map(|v| v.map(|b| !b));
        }
        _ => {}
    }
    let identifier_free = !toks.is_empty()
        && toks.iter().all(|t| match t {
            Tok::Ident(i) => matches!(i.as_str(), "true" | "false" | "TRUE" | "FALSE"),
            _ => true,
        });
    identifier_free.then_some(None)
}

const COMPARISONS: &[&str] = &["==", "!=", "<=", ">=", "<", ">"];

/// A condition that accepts more than before: an alternative added with `||`, a conjunct
/// dropped, a comparison loosened, a numeric bound moved outwards.
fn looser_condition(old: &[Tok], new: &[Tok]) -> Option<String> {
    let count = |t: &[Tok], op: &str| t.iter().filter(|x| x.is_punct(op)).count();
    if count(new, "||") > count(old, "||") {
        return Some("an alternative was added with `||`".into());
    }
    if count(new, "&&") < count(old, "&&") {
        return Some("a condition joined with `&&` was dropped".into());
    }
    let ops = |t: &[Tok]| -> Vec<String> {
        t.iter()
            .filter(|x| COMPARISONS.iter().any(|c| x.is_punct(c)))
            .map(|x| x.text().to_string())
            .collect()
    };
    let (oo, no) = (ops(old), ops(new));
    if oo.len() == no.len() {
        if let Some((o, n)) = oo.iter().zip(&no).find(|(o, n)| looser_op(o, n)) {
            return Some(format!("`{o}` became `{n}`"));
        }
    } else if count(new, "==") < count(old, "==") {
        return Some("an `==` comparison was dropped".into());
    }
    widened_bound(old, new)
}

fn looser_op(old: &str, new: &str) -> bool {
    matches!(
        (old, new),
        ("==", "!=" | "<=" | ">=" | "<" | ">")
            | ("<", "<=" | "!=")
            | (">", ">=" | "!=")
            | ("<=", "!=")
            | (">=", "!=")
    )
}

/// `x < 64` → `x < 128`: one comparison, the same on both sides but for a numeric bound.
fn widened_bound(old: &[Tok], new: &[Tok]) -> Option<String> {
    let split = |t: &[Tok]| -> Option<(Vec<Tok>, String, Vec<Tok>)> {
        let t = clike::strip_parens(t);
        let at = t
            .iter()
            .position(|x| COMPARISONS.iter().any(|c| x.is_punct(c)))?;
        Some((
            t[..at].to_vec(),
            t[at].text().to_string(),
            t[at + 1..].to_vec(),
        ))
    };
    let (ol, oop, or) = split(old)?;
    let (nl, nop, nr) = split(new)?;
    if oop != nop || matches!(oop.as_str(), "==" | "!=") {
        return None;
    }
    // `x < N` bounds from above; `N < x` from below.
    let upper = matches!(oop.as_str(), "<" | "<=");
    if clike::join(&ol) == clike::join(&nl) {
        let bound = if upper { Bound::Upper } else { Bound::Lower };
        grew(Some(&or), Some(&nr), bound, "bound")
    } else if clike::join(&or) == clike::join(&nr) {
        let bound = if upper { Bound::Lower } else { Bound::Upper };
        grew(Some(&ol), Some(&nl), bound, "bound")
    } else {
        None
    }
}

/// Added lines that stop tests or assertions from running at all.
fn switched_off(
    new: &[SideTok],
    lines: &[super::DiffLine],
    test_file: bool,
    push: &mut impl FnMut(&'static str, Option<u32>, String),
) {
    let added = |s: &SideTok| lines[s.line].kind == LineKind::Added;
    for (i, s) in new.iter().enumerate() {
        if !added(s) {
            continue;
        }
        let line = &lines[s.line];
        let next = |k: usize| new.get(i + k).map(|t| &t.tok);
        let at = Some(line.line);
        match &s.tok {
            Tok::Ident(name)
                if matches!(
                    name.as_str(),
                    "TEST_IGNORE"
                        | "TEST_IGNORE_MESSAGE"
                        | "TEST_PASS"
                        | "TEST_PASS_MESSAGE"
                        | "ztest_test_skip"
                        | "ztest_test_pass"
                        | "GTEST_SKIP"
                ) && next(1).is_some_and(|t| t.is_punct("(")) =>
            {
                push(
                    "test.disabled",
                    at,
                    format!("`{name}` added: the test stops checking there"),
                );
            }
            Tok::Punct(hash) if hash == "#" => {
                let directive = next(1).map(Tok::text).unwrap_or_default();
                let target = next(2).map(Tok::text).unwrap_or_default();
                let hides = directive == "if" && matches!(target, "0" | "false");
                if hides && (test_file || assertion_after(new, i)) {
                    push(
                        "test.disabled",
                        at,
                        format!("`#if {target}` added: the code under it is no longer built"),
                    );
                }
                let redefines = (directive == "define" && target == "NDEBUG")
                    || (matches!(directive, "define" | "undef") && is_assertion(target));
                if redefines {
                    push(
                        "assert.weakened",
                        at,
                        format!("`#{directive} {target}` added: it changes what assertions check"),
                    );
                }
            }
            Tok::Ident(flag) if flag == "DNDEBUG" && i > 0 && new[i - 1].tok.is_punct("-") => {
                push(
                    "assert.weakened",
                    at,
                    "`-DNDEBUG` added: it switches off assert()".into(),
                );
            }
            _ => {}
        }
    }
}

/// What Unity and ztest print for a verdict. Firmware code has no business printing these: a
/// patch that does would make the result parser report tests that never ran.
const VERDICT_MARKERS: &[&str] = &[
    ":PASS",
    ":FAIL",
    ":IGNORE",
    " Failures ",
    "PROJECT EXECUTION SUCCESSFUL",
    "PROJECT EXECUTION FAILED",
    "SUITE PASS",
    "SUITE FAIL",
    "PASS - test_",
    "FAIL - test_",
];

/// An added string literal, outside the test sources, that contains a verdict marker.
fn forged_output(
    new: &[SideTok],
    lines: &[super::DiffLine],
    push: &mut impl FnMut(&'static str, Option<u32>, String),
) {
    for s in new {
        let line = &lines[s.line];
        if line.kind != LineKind::Added {
            continue;
        }
        if let Tok::Lit(text) = &s.tok {
            if let Some(marker) = VERDICT_MARKERS.iter().find(|m| text.contains(**m)) {
                push(
                    "test.forged_output",
                    Some(line.line),
                    format!(
                        "string {} reads like a test verdict (`{}`): test results must come \
                         from the tests",
                        short(text),
                        marker.trim()
                    ),
                );
            }
        }
    }
}

fn assertion_after(new: &[SideTok], from: usize) -> bool {
    new[from..]
        .iter()
        .any(|s| matches!(&s.tok, Tok::Ident(n) if is_assertion(n)))
}

/// In a test file, a changed literal on a line that defines an expected value
/// (`#define EXPECTED_CRC 0x29B1`, `const uint32_t want = 5;`): the same line with other literals.
fn expected_definitions(
    lines: &[super::DiffLine],
    push: &mut impl FnMut(&'static str, Option<u32>, String),
) {
    let read = |l: &super::DiffLine| -> Option<(String, Vec<String>)> {
        let mut c = false;
        let toks = clike::lex(&l.text, &mut c);
        let names_expected = toks.iter().any(|t| match t {
            Tok::Ident(i) => {
                let lower = i.to_ascii_lowercase();
                ["expect", "golden", "want", "reference"]
                    .iter()
                    .any(|w| lower.contains(w))
            }
            _ => false,
        });
        let asserts = toks
            .iter()
            .any(|t| matches!(t, Tok::Ident(i) if is_assertion(i)));
        if !names_expected || asserts || !toks.iter().any(Tok::is_literal) {
            return None;
        }
        let shape: Vec<&str> = toks
            .iter()
            .map(|t| if t.is_literal() { "#" } else { t.text() })
            .collect();
        let lits = toks
            .iter()
            .filter(|t| t.is_literal())
            .map(clike::literal_key)
            .collect();
        Some((shape.join(" "), lits))
    };
    let removed: Vec<(String, Vec<String>, &super::DiffLine)> = lines
        .iter()
        .filter(|l| l.kind == LineKind::Removed)
        .filter_map(|l| read(l).map(|(s, v)| (s, v, l)))
        .collect();
    let mut added: Vec<Option<(String, Vec<String>, &super::DiffLine)>> = lines
        .iter()
        .filter(|l| l.kind == LineKind::Added)
        .filter_map(|l| read(l).map(|(s, v)| Some((s, v, l))))
        .collect();
    for (shape, lits, old) in removed {
        let same = added
            .iter()
            .position(|a| a.as_ref().is_some_and(|(s, _, _)| *s == shape));
        let Some((_, new_lits, new)) = same.and_then(|i| added[i].take()) else {
            continue;
        };
        if new_lits != lits {
            push(
                "test.expected_changed",
                Some(new.line),
                format!(
                    "expected value changed in a test: `{}` became `{}`",
                    short(old.text.trim()),
                    short(new.text.trim())
                ),
            );
        }
    }
}

/// Keeps the first few findings of each rule for each file and counts the rest in one more, so
/// that deleting a test file does not bury the review under a hundred identical lines.
pub(crate) fn cap_per_file(findings: Vec<Finding>) -> Vec<Finding> {
    let mut seen: BTreeMap<(&'static str, Option<String>), usize> = BTreeMap::new();
    let mut out = Vec::new();
    for f in findings {
        let n = seen.entry((f.rule, f.path.clone())).or_default();
        *n += 1;
        if *n <= MAX_PER_FILE {
            out.push(f);
        }
    }
    for ((rule, path), n) in seen {
        if n > MAX_PER_FILE {
            let severity = out
                .iter()
                .find(|f| f.rule == rule && f.path == path)
                .map_or(Severity::Deny, |f| f.severity);
            out.push(Finding {
                rule,
                severity,
                path,
                line: None,
                message: format!("{} more findings like the ones above", n - MAX_PER_FILE),
            });
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::testing::*;
    use super::super::{evaluate, Review, Verdict};
    use super::*;
    use crate::config::PolicySpec;

    /// A spec under which the paths in these tests are allowed, so only assertion rules speak.
    fn open() -> PolicySpec {
        let mut s = spec();
        s.allow = vec!["**".into()];
        s.allow_builtin = vec![BuiltinDeny::Tests];
        s
    }

    fn review(path: &str, old: &[&str], new: &[&str]) -> Review {
        evaluate(&diff(path, old, new), &open())
    }

    /// The assertion rules' findings (the lifted-tests warning left out).
    fn found(path: &str, old: &[&str], new: &[&str]) -> Vec<&'static str> {
        review(path, old, new).denials().map(|f| f.rule).collect()
    }

    const T: &str = "tests/test_crc.c";
    const S: &str = "src/crc.c";

    #[test]
    fn recognises_assertion_macros() {
        for yes in [
            "assert",
            "assert_param",
            "TEST_ASSERT",
            "TEST_ASSERT_EQUAL_HEX32",
            "zassert_equal",
            "zexpect_true",
            "configASSERT",
            "ASSERT",
            "__ASSERT",
            "BUILD_ASSERT",
            "ASSERT_EQ",
            "EXPECT_NEAR",
            "static_assert",
        ] {
            assert!(is_assertion(yes), "{yes}");
        }
        for no in [
            "printf",
            "TEST_IGNORE",
            "RUN_TEST",
            "Assert",
            "my_assert_count",
        ] {
            assert!(!is_assertion(no), "{no}");
        }
    }

    #[test]
    fn removed_assertions_are_denied_in_any_file() {
        let a = "    TEST_ASSERT_EQUAL_HEX16(0x29B1, crc16(in, 9));";
        assert_eq!(found(T, &[a], &[]), vec!["assert.removed"]);
        assert_eq!(
            found(S, &["    configASSERT(len <= MAX);"], &["    (void)len;"]),
            vec!["assert.removed"]
        );
        assert_eq!(
            found(
                S,
                &["    assert(p != NULL);"],
                &["    // assert(p != NULL);"]
            ),
            vec!["assert.removed"],
            "commented out is removed"
        );
        let r = review(T, &[a], &[]);
        let f = r.denials().next().unwrap();
        assert_eq!(f.line, Some(11));
        assert!(
            f.message.contains("TEST_ASSERT_EQUAL_HEX16(0x29B1"),
            "{}",
            f.message
        );
    }

    #[test]
    fn re_added_equivalent_assertions_are_fine() {
        let a = "    TEST_ASSERT_EQUAL_HEX16(0x29B1, crc16(in, 9));";
        let b = "        TEST_ASSERT_EQUAL_HEX16( 0x29B1,crc16(in, 9) ); /* moved */";
        assert!(found(T, &[a], &[b]).is_empty());
        assert!(
            found(T, &[a, "x = 1;"], &["x = 2;", a]).is_empty(),
            "moved below another line"
        );
        let msg_old = "TEST_ASSERT_EQUAL_MESSAGE(3, n, \"count\");";
        let msg_new = "TEST_ASSERT_EQUAL_MESSAGE(3, n, \"element count\");";
        assert!(found(T, &[msg_old], &[msg_new]).is_empty(), "message only");
        assert!(
            found(T, &["assert(x == 1);"], &["assert(1 == x);"]).is_empty(),
            "operands swapped"
        );
    }

    #[test]
    fn a_check_replaced_by_a_constant_is_weakened() {
        for new in [
            "TEST_ASSERT_TRUE(1);",
            "TEST_ASSERT(true);",
            "TEST_ASSERT_EQUAL(crc, crc);",
            "TEST_ASSERT_EQUAL(1, 1);",
            "TEST_ASSERT_TRUE(crc == 0x29B1 || 1);",
            "TEST_ASSERT_FALSE(0);",
            "zassert_true(1, \"ok\");",
        ] {
            assert!(
                found(S, &["TEST_ASSERT_EQUAL(0x29B1, crc);"], &[new]).contains(&"assert.weakened"),
                "{new}"
            );
        }
        assert_eq!(
            found(S, &["assert(ptr != NULL);"], &["assert(!0);"]),
            vec!["assert.weakened"]
        );
        assert!(
            found(S, &["assert(ptr != NULL);"], &["assert(0);"]).is_empty(),
            "a check that always fails is not weaker"
        );
    }

    #[test]
    fn widened_tolerances_and_ranges_are_weakened() {
        assert_eq!(
            found(
                S,
                &["TEST_ASSERT_FLOAT_WITHIN(0.01f, 3.3f, v);"],
                &["TEST_ASSERT_FLOAT_WITHIN(0.5f, 3.3f, v);"]
            ),
            vec!["assert.weakened"]
        );
        assert!(found(
            S,
            &["TEST_ASSERT_INT_WITHIN(5, 100, t);"],
            &["TEST_ASSERT_INT_WITHIN(2, 100, t);"]
        )
        .is_empty());
        assert_eq!(
            found(
                S,
                &["zassert_within(t, 100, 5, \"temp\");"],
                &["zassert_within(t, 100, 50, \"temp\");"]
            ),
            vec!["assert.weakened"]
        );
        assert_eq!(
            found(
                S,
                &["zassert_between_inclusive(v, 10, 20);"],
                &["zassert_between_inclusive(v, 0, 20);"]
            ),
            vec!["assert.weakened"]
        );
        assert_eq!(
            found(
                S,
                &["TEST_ASSERT_EQUAL_INT(100, t);"],
                &["TEST_ASSERT_INT_WITHIN(3, 100, t);"]
            ),
            vec!["assert.weakened"],
            "exact became approximate"
        );
        assert!(found(
            S,
            &["TEST_ASSERT_INT_WITHIN(3, 100, t);"],
            &["TEST_ASSERT_EQUAL_INT(100, t);"]
        )
        .is_empty());
        assert_eq!(
            found(
                S,
                &["configASSERT(len < 64);"],
                &["configASSERT(len < 128);"]
            ),
            vec!["assert.weakened"]
        );
        assert!(found(
            S,
            &["configASSERT(len < 64);"],
            &["configASSERT(len < 32);"]
        )
        .is_empty());
        assert_eq!(
            found(S, &["assert(n > 10);"], &["assert(n > 2);"]),
            vec!["assert.weakened"]
        );
        assert_eq!(
            found(
                S,
                &["TEST_ASSERT_LESS_THAN(100, ms);"],
                &["TEST_ASSERT_LESS_THAN(500, ms);"]
            ),
            vec!["assert.weakened"]
        );
    }

    #[test]
    fn loosened_comparisons_are_weakened() {
        for (old, new) in [
            ("assert(a == b);", "assert(a != b);"),
            ("assert(a == b);", "assert(a >= b);"),
            ("assert(a < b);", "assert(a <= b);"),
            ("assert(a && b);", "assert(a || b);"),
            ("assert(a == 1 && b == 2);", "assert(a == 1);"),
            ("TEST_ASSERT_EQUAL(a, b);", "TEST_ASSERT_NOT_EQUAL(a, b);"),
            (
                "TEST_ASSERT_EQUAL(a, b);",
                "TEST_ASSERT_GREATER_OR_EQUAL(a, b);",
            ),
            (
                "TEST_ASSERT_GREATER_THAN(a, b);",
                "TEST_ASSERT_GREATER_OR_EQUAL(a, b);",
            ),
            (
                "TEST_ASSERT_EQUAL_HEX32(x, y);",
                "TEST_ASSERT_EQUAL_HEX8(x, y);",
            ),
            (
                "TEST_ASSERT_EQUAL_STRING(e, s);",
                "TEST_ASSERT_EQUAL_STRING_LEN(e, s, 2);",
            ),
            (
                "TEST_ASSERT_EQUAL_UINT8_ARRAY(e, a, 16);",
                "TEST_ASSERT_EQUAL_UINT8_ARRAY(e, a, 4);",
            ),
            (
                "zassert_equal(a, b, \"x\");",
                "zassert_not_equal(a, b, \"x\");",
            ),
            ("ASSERT_LT(a, b);", "ASSERT_LE(a, b);"),
        ] {
            assert_eq!(
                found(S, &[old], &[new]),
                vec!["assert.weakened"],
                "{old} -> {new}"
            );
        }
        for (old, new) in [
            ("assert(a <= b);", "assert(a < b);"),
            ("TEST_ASSERT_TRUE(1);", "TEST_ASSERT_EQUAL(1, x);"),
            ("TEST_ASSERT_EQUAL(a, b);", "TEST_ASSERT_TRUE(a == b);"),
            (
                "TEST_ASSERT_EQUAL_HEX8(x, y);",
                "TEST_ASSERT_EQUAL_HEX32(x, y);",
            ),
            ("assert(a);", "assert(a && b);"),
        ] {
            assert!(found(S, &[old], &[new]).is_empty(), "{old} -> {new}");
        }
    }

    #[test]
    fn changed_expected_values_in_test_files() {
        let old = "    TEST_ASSERT_EQUAL_HEX16(0x29B1, crc16(in, 9));";
        let new = "    TEST_ASSERT_EQUAL_HEX16(0x0000, crc16(in, 9));";
        assert_eq!(found(T, &[old], &[new]), vec!["test.expected_changed"]);
        assert!(found(S, &[old], &[new]).is_empty(), "not a test file");
        assert!(
            found(
                T,
                &[old],
                &["    TEST_ASSERT_EQUAL_HEX16(10673, crc16(in, 9));"]
            )
            .is_empty(),
            "the same value written differently"
        );
        assert_eq!(
            found(
                T,
                &["#define EXPECTED_CRC 0xCBF43926u"],
                &["#define EXPECTED_CRC 0x00000000u"]
            ),
            vec!["test.expected_changed"]
        );
        assert_eq!(
            found(
                T,
                &["static const char want[] = \"hello\";"],
                &["static const char want[] = \"help\";"]
            ),
            vec!["test.expected_changed"]
        );
        assert_eq!(
            found(
                "tests/test_crc.c",
                &[
                    "    TEST_ASSERT_EQUAL_HEX32(0xCBF43926,",
                    "        crc32(in, 9));"
                ],
                &[
                    "    TEST_ASSERT_EQUAL_HEX32(0x00000000,",
                    "        crc32(in, 9));"
                ]
            ),
            vec!["test.expected_changed"],
            "a call over two lines"
        );
    }

    #[test]
    fn expected_change_is_denied_even_when_tests_may_be_edited() {
        let r = review(
            T,
            &["TEST_ASSERT_EQUAL(3, n);"],
            &["TEST_ASSERT_EQUAL(4, n);"],
        );
        assert_eq!(r.verdict, Verdict::Deny);
        assert!(rules_of(&r).contains(&"path.deny.builtin.tests"));
        assert!(rules_of(&r).contains(&"test.expected_changed"));
    }

    #[test]
    fn only_a_continuation_line_changed() {
        let d = "--- a/tests/t.c\n+++ b/tests/t.c\n@@ -1,2 +1,2 @@\n     TEST_ASSERT_EQUAL_HEX32(\n-        0xCBF43926, crc);\n+        0x1, crc);\n";
        let r = evaluate(d, &open());
        assert_eq!(
            r.denials().map(|f| f.rule).collect::<Vec<_>>(),
            vec!["test.expected_changed"]
        );
    }

    #[test]
    fn tests_taken_out_of_the_runner_or_switched_off() {
        assert_eq!(
            found(T, &["    RUN_TEST(test_crc16_known_vector, 21);"], &[]),
            vec!["test.removed"]
        );
        assert!(
            found(
                T,
                &["    RUN_TEST(test_crc16_known_vector, 21);"],
                &["    RUN_TEST(test_crc16_known_vector, 22);"]
            )
            .is_empty(),
            "the line argument moves with the file"
        );
        assert_eq!(
            found(
                T,
                &["ZTEST(crc, test_crc16)"],
                &["static void old_crc16(void)"]
            ),
            vec!["test.removed"]
        );
        assert_eq!(
            found(T, &[], &["    TEST_IGNORE();"]),
            vec!["test.disabled"]
        );
        assert_eq!(
            found(S, &[], &["    ztest_test_skip();"]),
            vec!["test.disabled"]
        );
        assert_eq!(found(T, &[], &["#if 0"]), vec!["test.disabled"]);
        assert!(
            found(S, &[], &["#if 0"]).is_empty(),
            "no assertion under it"
        );
        assert_eq!(
            found(S, &[], &["#if 0", "    configASSERT(x);"]),
            vec!["test.disabled"]
        );
    }

    #[test]
    fn switching_assertions_off_is_weakened() {
        assert_eq!(found(S, &[], &["#define NDEBUG"]), vec!["assert.weakened"]);
        assert_eq!(found(S, &[], &["#undef assert"]), vec!["assert.weakened"]);
        assert_eq!(
            found(S, &[], &["#define configASSERT(x) ((void)0)"]),
            vec!["assert.weakened"]
        );
        assert_eq!(
            found("src/flags.txt", &[], &["CFLAGS += -O2 -DNDEBUG"]),
            vec!["assert.weakened"]
        );
        assert!(found(S, &[], &["#undef NDEBUG"]).is_empty());
    }

    #[test]
    fn printing_a_verdict_from_firmware_code_is_forged_output() {
        assert_eq!(
            found(
                S,
                &[],
                &["    puts(\"test_crc.c:21:test_crc16_known_vector:PASS\");"]
            ),
            vec!["test.forged_output"]
        );
        assert_eq!(
            found(
                S,
                &[],
                &["    printf(\"6 Tests 0 Failures 0 Ignored\\n\");"]
            ),
            vec!["test.forged_output"]
        );
        assert!(found(S, &[], &["    puts(\"PASSWORD:\");"]).is_empty());
        assert!(
            found(T, &[], &["    puts(\"x:PASS\");"]).is_empty(),
            "a test file may print what it likes"
        );
    }

    #[test]
    fn declarations_are_not_checks() {
        assert!(found(
            S,
            &["void assert_param(uint8_t *file, uint32_t line)"],
            &["void assert_param(const char *file, uint32_t line)"]
        )
        .is_empty());
    }

    #[test]
    fn deleting_a_test_file_is_reported_compactly() {
        let body: Vec<String> = (0..12)
            .map(|i| format!("    TEST_ASSERT_EQUAL({i}, f({i}));"))
            .collect();
        let mut d = format!(
            "diff --git a/{T} b/{T}\ndeleted file mode 100644\n--- a/{T}\n+++ /dev/null\n@@ -1,{} +0,0 @@\n",
            body.len()
        );
        for l in &body {
            d.push_str(&format!("-{l}\n"));
        }
        let r = evaluate(&d, &open());
        let removed: Vec<_> = r
            .findings
            .iter()
            .filter(|f| f.rule == "assert.removed")
            .collect();
        assert_eq!(removed.len(), MAX_PER_FILE + 1);
        assert!(removed[MAX_PER_FILE].message.starts_with("7 more"));
    }
}
