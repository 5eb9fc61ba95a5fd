//! The rule set's patterns as its search needs them: whether each matches a segment somewhere,
//! not where or what it captures.
//!
//! Most rules end in `(?P<msg>.+)$`, which keeps a thread of a lazy DFA alive to the end of
//! every line it starts on. Each such thread multiplies the states the rest of the line walks
//! through, so the DFA's states grow with the distinct text of the log's evidence lines, and its
//! transition table no longer stays in the CPU's caches (when the rules shared one automaton,
//! most of the search was waiting on that table). For the search alone, each pattern is
//! rewritten into one that matches a segment (which holds no line break: lines are split at
//! `\n`, segments at `\r`) exactly when the original matches it somewhere:
//! - capture groups are dropped (the search reports no captures);
//! - a tail any suffix satisfies is cut: `.*$` goes, `.+$` becomes one `.`, a trailing
//!   repetition keeps only its minimum, and each branch of a trailing alternation (with the `$`
//!   after it) is cut alike;
//! - so is a head any prefix satisfies, each pattern being searched unanchored: `\S*?X` becomes `X`,
//!   `\S+X` becomes `\SX` (a pattern anchored with `^` keeps its head).
//!
//! Each rule's own regex, which quotes the `msg` group, is compiled from the pattern unchanged.

use regex_syntax::hir::{Class, Hir, HirKind, Look, Repetition};

/// `pattern` parsed as the rule set parses it (bytes, Unicode classes off), rewritten as the
/// module docs say.
pub(super) fn for_set(pattern: &str) -> Result<Hir, Box<regex_syntax::Error>> {
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(pattern)
        .map_err(Box::new)?;
    Ok(cut_head(&cut_tail(&without_captures(&hir))))
}

/// `hir` with every capture group replaced by what it holds.
fn without_captures(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => hir.clone(),
        HirKind::Capture(capture) => without_captures(&capture.sub),
        HirKind::Repetition(repetition) => Hir::repetition(Repetition {
            sub: Box::new(without_captures(&repetition.sub)),
            ..repetition.clone()
        }),
        HirKind::Concat(parts) => Hir::concat(parts.iter().map(without_captures).collect()),
        HirKind::Alternation(branches) => {
            Hir::alternation(branches.iter().map(without_captures).collect())
        }
    }
}

/// `repetition` taken exactly its minimum number of times: `a{2,}` matches where `a{2}` does,
/// and a match of `a{2}` is the start (or the end) of one of `a{2,}`.
fn at_minimum(repetition: &Repetition) -> Hir {
    Hir::repetition(Repetition {
        max: Some(repetition.min),
        ..repetition.clone()
    })
}

/// A pattern that matches a segment somewhere exactly when `hir` does: `hir`'s matches cut
/// short where anything may follow.
fn cut_tail(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Repetition(repetition) if repetition.min == 0 => Hir::empty(),
        HirKind::Repetition(repetition) => at_minimum(repetition),
        HirKind::Alternation(branches) => Hir::alternation(branches.iter().map(cut_tail).collect()),
        HirKind::Concat(parts) => match parts.as_slice() {
            [head @ .., last, end] if is_end(end) => {
                let head = Hir::concat(head.to_vec());
                if let Some(min) = at_least(last) {
                    // `X.*$` (or `X.{n,}$`): in a segment, which holds no line break, `.`
                    // takes every byte there is, so from wherever X ends the rest reaches
                    // the end.
                    return match last.kind() {
                        HirKind::Repetition(repetition) if min > 0 => {
                            Hir::concat(vec![head, at_minimum(repetition)])
                        }
                        _ => cut_tail(&head),
                    };
                }
                // `X(?:A|B)$` is `X(?:A$|B$)`, and `X(?:A)?$` is `X(?:$|A$)`: each branch is
                // cut on its own.
                let branches = match last.kind() {
                    HirKind::Alternation(branches) => branches.clone(),
                    HirKind::Repetition(repetition)
                        if repetition.min == 0 && repetition.max == Some(1) =>
                    {
                        vec![Hir::empty(), (*repetition.sub).clone()]
                    }
                    _ => return hir.clone(),
                };
                let branches: Vec<Hir> = branches
                    .into_iter()
                    .map(|branch| cut_tail(&Hir::concat(vec![branch, end.clone()])))
                    .collect();
                if branches.iter().any(|b| matches!(b.kind(), HirKind::Empty)) {
                    // A branch that matches anywhere makes the whole tail one that does.
                    return cut_tail(&head);
                }
                Hir::concat(vec![head, Hir::alternation(branches)])
            }
            [head @ .., last] if !is_end(last) => {
                let last = cut_tail(last);
                if matches!(last.kind(), HirKind::Empty) {
                    return cut_tail(&Hir::concat(head.to_vec()));
                }
                let mut parts = head.to_vec();
                parts.push(last);
                Hir::concat(parts)
            }
            _ => hir.clone(),
        },
        HirKind::Empty
        | HirKind::Literal(_)
        | HirKind::Class(_)
        | HirKind::Look(_)
        | HirKind::Capture(_) => hir.clone(),
    }
}

/// A pattern that matches a segment somewhere exactly when `hir` does, searched unanchored: a
/// head any prefix satisfies is cut (`\S*?X` matches somewhere exactly when `X` does), unless
/// the pattern is anchored at the start.
fn cut_head(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Repetition(repetition) if repetition.min == 0 => Hir::empty(),
        HirKind::Repetition(repetition) => at_minimum(repetition),
        HirKind::Alternation(branches) => Hir::alternation(branches.iter().map(cut_head).collect()),
        HirKind::Concat(parts) => match parts.split_first() {
            Some((first, rest)) => match first.kind() {
                HirKind::Repetition(repetition) if repetition.min == 0 => {
                    cut_head(&Hir::concat(rest.to_vec()))
                }
                HirKind::Repetition(repetition) => {
                    let mut parts = vec![at_minimum(repetition)];
                    parts.extend_from_slice(rest);
                    Hir::concat(parts)
                }
                _ => hir.clone(),
            },
            None => hir.clone(),
        },
        HirKind::Empty
        | HirKind::Literal(_)
        | HirKind::Class(_)
        | HirKind::Look(_)
        | HirKind::Capture(_) => hir.clone(),
    }
}

/// Whether `hir` is `$` (the end of the text; patterns are not multi-line).
fn is_end(hir: &Hir) -> bool {
    matches!(hir.kind(), HirKind::Look(Look::End))
}

/// The least number of bytes `hir` takes when it repeats, without bound, a class of every byte
/// but the line break (or of every byte): `.*`, `.+`, `(?s:.){2,}`.
fn at_least(hir: &Hir) -> Option<u32> {
    let HirKind::Repetition(repetition) = hir.kind() else {
        return None;
    };
    let HirKind::Class(Class::Bytes(bytes)) = repetition.sub.kind() else {
        return None;
    };
    if repetition.max.is_some() {
        return None;
    }
    let taken: usize = bytes
        .ranges()
        .iter()
        .map(|r| usize::from(r.end()) - usize::from(r.start()) + 1)
        .sum();
    let takes_break = bytes
        .ranges()
        .iter()
        .any(|r| r.start() <= b'\n' && b'\n' <= r.end());
    (taken == 256 || (taken == 255 && !takes_break)).then_some(repetition.min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use regex_automata::meta;
    use regex_automata::util::syntax;
    use std::sync::LazyLock;

    fn plain(pattern: &str) -> Hir {
        regex_syntax::ParserBuilder::new()
            .unicode(false)
            .utf8(false)
            .build()
            .parse(pattern)
            .map(|hir| without_captures(&hir))
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
    }

    fn rewritten(pattern: &str) -> Hir {
        for_set(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"))
    }

    #[test]
    fn a_tail_that_reaches_the_end_is_cut() {
        assert_eq!(rewritten(r"^Error: (?P<msg>.+)$"), plain(r"^Error: ."));
        assert_eq!(
            rewritten(r"^ninja: error: (?P<msg>.*)$"),
            plain(r"^ninja: error: ")
        );
        assert_eq!(rewritten(r"(?s)foo.*$"), plain(r"foo"));
        assert_eq!(rewritten(r"a(?P<msg>b\w*|c+)"), plain(r"a(?:b|c)"));
        assert_eq!(rewritten(r"x(?P<msg>y.*)$"), plain(r"xy"));
        assert_eq!(rewritten(r"x.{3,}$"), plain(r"x.{3}"));
        assert_eq!(rewritten(r"(?:a|b.*)$"), plain(r"(?:a$|b)"));
        assert_eq!(rewritten(r"x(?::.*)?$"), plain(r"x(?:$|:)"));
    }

    #[test]
    fn a_head_any_prefix_satisfies_is_cut_unless_anchored() {
        assert_eq!(rewritten(r"\S*?:\d+:x"), plain(r":\d+:x"));
        assert_eq!(
            rewritten(r"(?P<msg>\S+ -- lockup)$"),
            plain(r"\S -- lockup$")
        );
        assert_eq!(rewritten(r"(?P<msg>a|.*b)"), plain(r"a|b"));
        assert_eq!(rewritten(r"^\S+x"), plain(r"^\S+x"));
    }

    #[test]
    fn a_tail_that_must_end_the_line_is_kept() {
        for pattern in [r"^OK$", r"foo\s*$", r"a.*b", r"\bx\S*y$"] {
            assert_eq!(rewritten(pattern), plain(pattern), "{pattern}");
        }
    }

    /// Every rule's pattern, unchanged and rewritten, each compiled on its own.
    static PAIRS: LazyLock<Vec<(&'static str, meta::Regex, meta::Regex)>> = LazyLock::new(|| {
        let build = |hir: &Hir| {
            meta::Builder::new()
                .syntax(syntax::Config::new().unicode(false).utf8(false))
                .build_from_hir(hir)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        super::super::rules::RULES
            .iter()
            .filter_map(|rule| match rule.matcher {
                super::super::rules::Matcher::Regex(p) => {
                    Some((p, build(&plain(p)), build(&rewritten(p))))
                }
                super::super::rules::Matcher::Diagnostic { .. } => None,
            })
            .collect()
    });

    /// Each pattern with the bytes that make it a pattern taken out: mostly the text it matches.
    static LITERAL_TEXT: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
        PAIRS
            .iter()
            .map(|(pattern, _, _)| {
                let pattern = pattern
                    .replace("(?P<msg>", "")
                    .replace("(?:", "")
                    .replace("(?i)", "");
                pattern
                    .bytes()
                    .filter(|b| !br"\()[]{}^$*+?|".contains(b))
                    .collect()
            })
            .collect()
    });

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// On any segment (no line break), each rewritten pattern matches exactly when the
        /// rule's own does: built from pieces of the patterns' text, so they often match.
        #[test]
        fn a_rewritten_pattern_matches_the_segments_its_rule_does(
            pieces in proptest::collection::vec((any::<usize>(), any::<usize>(), 0..12usize), 0..6),
            noise in proptest::collection::vec(any::<u8>(), 0..8),
        ) {
            let mut segment = Vec::new();
            for (i, (pick, at, len)) in pieces.iter().enumerate() {
                let source = &LITERAL_TEXT[pick % LITERAL_TEXT.len()];
                let at = at % (source.len() + 1);
                segment.extend_from_slice(&source[at..(at + len).min(source.len())]);
                segment.extend(noise.get(i).copied());
            }
            segment.retain(|&b| b != b'\n' && b != b'\r');
            for (pattern, own, set) in PAIRS.iter() {
                prop_assert_eq!(
                    own.is_match(&segment),
                    set.is_match(&segment),
                    "{} on {}", pattern, String::from_utf8_lossy(&segment)
                );
            }
        }
    }
}
