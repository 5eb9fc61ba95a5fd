//! The triage prefilter: which lines of a log some rule could claim, found for a whole buffer
//! in one search.
//!
//! Almost every line of a long log is one no rule claims, and running the rule set on each of
//! them was most of triage's time. From each pattern of the set (every regex rule and the
//! diagnostic hint) this module derives, from the pattern's syntax alone, a set of literals one
//! of which every match of the pattern contains; one Aho-Corasick automaton over all the sets,
//! ASCII case folded, then searches the whole buffer, as ripgrep does. A line without a hit
//! cannot match any pattern and is only counted; a line with one is read as before. The buffer
//! is searched in a few stretches side by side, each step of each stretch one load from the
//! automaton's table: a single walk waits for each load before the next, several overlap them.
//! The same literals, each naming the patterns it is a literal of, then tell which patterns a
//! candidate line's segment could match ([`Candidates`]): only those are searched.
//!
//! Completeness is what matters (a candidate too many costs time, one too few loses evidence),
//! and it holds by construction:
//! - a literal is derived only where the syntax guarantees it: the prefixes of a concatenation's
//!   tail, a part of a concatenation every match must go through, the union over every branch of
//!   an alternation; where no finite set is known, every line is a candidate;
//! - literals are compared ASCII case-insensitively, so `(?i)` patterns need no case variants;
//! - rules see a line after its colour codes are removed, which can join the text around an
//!   escape sequence into a word the raw line does not hold, so a line with an escape byte is
//!   always a candidate; the other cleaning (stamps, blanks, carriage returns) only cuts the
//!   line, and a literal in a part is in the whole.
//!
//! The unit tests check the property on every line of the recorded logs and on mutations of them.

use aho_corasick::automaton::Automaton;
use aho_corasick::automaton::StateID;
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, Input, MatchKind, StartKind};
use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{Class, Hir, HirKind};

/// Finds the lines some pattern could match.
#[derive(Debug)]
pub(super) struct Prefilter {
    /// None when some pattern has no literal set: then every line is a candidate.
    automaton: Option<DFA>,
}

/// Stretches of a buffer [`Prefilter::hits`] searches side by side.
const STRETCHES: usize = 4;

/// The escape byte: see the module docs.
const ESCAPE: &[u8] = b"\x1b";

impl Prefilter {
    /// The prefilter of patterns with the literals `of_patterns` (see [`literals_of`]).
    pub fn new(of_patterns: &[Literals]) -> Prefilter {
        let mut literals: Vec<Vec<u8>> = vec![ESCAPE.to_vec()];
        for set in of_patterns {
            match set {
                Some(set) => literals.extend(set.iter().cloned()),
                None => return Prefilter { automaton: None },
            }
        }
        literals.sort();
        literals.dedup();
        let automaton = DFA::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .start_kind(StartKind::Unanchored)
            .prefilter(false)
            .build(&literals)
            .ok();
        Prefilter { automaton }
    }

    /// Whether the prefilter narrows anything (false when every line is a candidate).
    #[cfg(test)]
    pub fn is_effective(&self) -> bool {
        self.automaton.is_some()
    }

    /// Pushes onto `out`, ascending, a position in each line of `lines` (whole lines, each
    /// ending with `\n`) that holds a literal: the line's only position pushed.
    pub fn hits(&self, lines: &[u8], out: &mut Vec<usize>) {
        let Some(dfa) = &self.automaton else {
            let mut start = 0;
            for end in memchr::memchr_iter(b'\n', lines) {
                if end > start {
                    out.push(start);
                }
                start = end + 1;
            }
            return;
        };
        let Ok(start) = dfa.start_state(Anchored::No) else {
            return;
        };
        // Stretches of whole lines, about equal, each walked by its own state.
        let mut at = [0; STRETCHES];
        let mut end = [0; STRETCHES];
        let mut from = 0;
        for k in 0..STRETCHES {
            at[k] = from;
            let want = lines.len() * (k + 1) / STRETCHES;
            from = match lines
                .get(want..)
                .and_then(|rest| memchr::memchr(b'\n', rest))
            {
                Some(nl) if want > from => want + nl + 1,
                _ if k + 1 == STRETCHES => lines.len(),
                _ => from,
            };
            end[k] = from;
        }
        let mut found: [Vec<usize>; STRETCHES] = std::array::from_fn(|_| Vec::new());
        let mut state = [start; STRETCHES];
        // Side by side while every stretch has bytes left, then each alone.
        while (0..STRETCHES).all(|k| at[k] < end[k]) {
            for k in 0..STRETCHES {
                step(
                    dfa,
                    lines,
                    start,
                    &mut state[k],
                    &mut at[k],
                    end[k],
                    &mut found[k],
                );
            }
        }
        for k in 0..STRETCHES {
            while at[k] < end[k] {
                step(
                    dfa,
                    lines,
                    start,
                    &mut state[k],
                    &mut at[k],
                    end[k],
                    &mut found[k],
                );
            }
            out.append(&mut found[k]);
        }
    }

    /// Whether some pattern could match somewhere in `line`.
    pub fn is_candidate(&self, line: &[u8]) -> bool {
        match &self.automaton {
            Some(dfa) => dfa
                .try_find(&Input::new(line).earliest(true))
                .is_ok_and(|m| m.is_some()),
            None => true,
        }
    }
}

/// Which patterns could match a segment: each pattern's own literals (as the prefilter derives
/// them), searched all at once, each hit naming the patterns it is a literal of.
#[derive(Debug)]
pub(super) struct Candidates {
    automaton: aho_corasick::AhoCorasick,
    /// For each literal of `automaton`, the patterns it is a literal of, ascending.
    of_literal: Vec<Vec<u32>>,
    /// Patterns with no finite literal set: candidates of every segment.
    always: Vec<u32>,
}

impl Candidates {
    /// The candidates of patterns with the literals `of_patterns` (see [`literals_of`]).
    #[expect(
        clippy::expect_used,
        reason = "the patterns are constants; the unit tests build their candidates"
    )]
    pub fn new(of_patterns: &[Literals]) -> Candidates {
        let mut index: std::collections::HashMap<Vec<u8>, usize> = Default::default();
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut of_literal: Vec<Vec<u32>> = Vec::new();
        let mut always = Vec::new();
        for (pattern, set) in (0u32..).zip(of_patterns) {
            let Some(set) = set else {
                always.push(pattern);
                continue;
            };
            for literal in set {
                let at = *index.entry(literal.clone()).or_insert_with_key(|literal| {
                    literals.push(literal.clone());
                    of_literal.push(Vec::new());
                    literals.len() - 1
                });
                if of_literal[at].last() != Some(&pattern) {
                    of_literal[at].push(pattern);
                }
            }
        }
        let automaton = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(aho_corasick::MatchKind::Standard)
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(&literals)
            .expect("the triage patterns' literals build an automaton");
        Candidates {
            automaton,
            of_literal,
            always,
        }
    }

    /// Puts into `out` the patterns that could match `segment`, ascending, once each.
    pub fn of(&self, segment: &[u8], out: &mut Vec<u32>) {
        out.clear();
        out.extend_from_slice(&self.always);
        for hit in self.automaton.find_overlapping_iter(segment) {
            out.extend_from_slice(&self.of_literal[hit.pattern().as_usize()]);
        }
        out.sort_unstable();
        out.dedup();
    }
}

/// One byte of a stretch's walk: a hit records its position and jumps to the next line.
#[inline(always)]
fn step(
    dfa: &DFA,
    lines: &[u8],
    start: StateID,
    state: &mut StateID,
    at: &mut usize,
    end: usize,
    found: &mut Vec<usize>,
) {
    *state = dfa.next_state(Anchored::No, *state, lines[*at]);
    *at += 1;
    if dfa.is_special(*state) && dfa.is_match(*state) {
        found.push(*at - 1);
        *at = next_line(lines, *at - 1, end);
        *state = start;
    }
}

/// Where the line after the one holding `at` starts, or `end`.
fn next_line(lines: &[u8], at: usize, end: usize) -> usize {
    memchr::memchr(b'\n', &lines[at..end]).map_or(end, |nl| at + nl + 1)
}

/// Longest literal searched for: see [`literals_of`].
const LITERAL_BYTES: usize = 8;

/// One pattern's literals as searched for, or None when it has no finite set: one of them is in
/// every match.
pub(super) type Literals = Option<Vec<Vec<u8>>>;

/// The literals of each of `patterns` (compiled as the rule set compiles them: bytes, Unicode
/// classes off), derived once for [`Prefilter`] and [`Candidates`] alike, cut to
/// [`LITERAL_BYTES`]. A match holds every prefix of a literal it holds. Shorter literals make a
/// smaller automaton, whose table stays in the CPU's cache (598 literals of up to 60 bytes
/// become 358 of up to 8: 12% less time searching), and past 8 bytes hardly a line holds one
/// but not the other.
pub(super) fn literals_of(patterns: &[&str]) -> Vec<Literals> {
    patterns
        .iter()
        .map(|pattern| {
            let mut set = pattern_literals(pattern)?;
            for literal in &mut set {
                literal.truncate(LITERAL_BYTES);
            }
            set.sort();
            set.dedup();
            Some(set)
        })
        .collect()
}

/// The literals of one pattern, lower case, or None when it has no finite set (or does not
/// parse, which the rule table's own tests rule out).
fn pattern_literals(pattern: &str) -> Option<Vec<Vec<u8>>> {
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()?;
    let mut set = required(&fold(&hir))?;
    for literal in &mut set {
        literal.make_ascii_lowercase();
    }
    // A match inside one line holds no line break (rules see a line cut at its carriage
    // returns too), so a literal with one is never what a line's match contains.
    set.retain(|l| !l.contains(&b'\n') && !l.contains(&b'\r'));
    Some(set)
}

/// Literals one of which every match of `hir` contains, or None when no finite set is known.
fn required(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => None,
        HirKind::Literal(_) | HirKind::Class(_) => prefixes(hir),
        HirKind::Capture(capture) => required(&capture.sub),
        HirKind::Repetition(repetition) => {
            if repetition.min == 0 {
                None
            } else {
                required(&repetition.sub)
            }
        }
        HirKind::Concat(parts) => {
            let mut best = None;
            for (i, part) in parts.iter().enumerate() {
                // Every match of the concatenation holds a match of each part, and a match of
                // the parts from `i` on, which starts with one of their prefixes.
                best = better(best, prefixes(&Hir::concat(parts[i..].to_vec())));
                best = better(best, required(part));
            }
            best
        }
        HirKind::Alternation(branches) => {
            let mut union = Vec::new();
            for branch in branches {
                union.extend(required(branch)?);
            }
            better(Some(union), prefixes(hir))
        }
    }
}

/// The literals every match of `hir` starts with, when finite and none of them empty.
fn prefixes(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(hir);
    let literals = seq.literals()?;
    if literals.iter().any(|l| l.as_bytes().is_empty()) {
        return None;
    }
    Some(literals.iter().map(|l| l.as_bytes().to_vec()).collect())
}

/// The set that narrows more: longer shortest literal (up to a length past which it hardly
/// matters), then fewer literals.
fn better(a: Option<Vec<Vec<u8>>>, b: Option<Vec<Vec<u8>>>) -> Option<Vec<Vec<u8>>> {
    let score = |set: &Vec<Vec<u8>>| {
        let shortest = set.iter().map(Vec::len).min().unwrap_or(0).min(8);
        (shortest, usize::MAX - set.len())
    };
    match (a, b) {
        (Some(a), Some(b)) => Some(if score(&b) > score(&a) { b } else { a }),
        (a, None) => a,
        (None, b) => b,
    }
}

/// `hir` with its literals in lower case and each class that is one letter in either case
/// (what `(?i)` makes of a letter) replaced by that letter: literals are compared
/// case-insensitively, so the extraction need not spell out every case variant.
fn fold(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => hir.clone(),
        HirKind::Literal(literal) => Hir::literal(literal.0.to_ascii_lowercase()),
        HirKind::Class(class) => match one_letter(class) {
            Some(letter) => Hir::literal([letter]),
            None => hir.clone(),
        },
        HirKind::Capture(capture) => {
            let mut capture = capture.clone();
            capture.sub = Box::new(fold(&capture.sub));
            Hir::capture(capture)
        }
        HirKind::Repetition(repetition) => {
            let mut repetition = repetition.clone();
            repetition.sub = Box::new(fold(&repetition.sub));
            Hir::repetition(repetition)
        }
        HirKind::Concat(parts) => Hir::concat(parts.iter().map(fold).collect()),
        HirKind::Alternation(branches) => Hir::alternation(branches.iter().map(fold).collect()),
    }
}

/// The lower-case letter a class of exactly that letter's two cases stands for.
fn one_letter(class: &Class) -> Option<u8> {
    let bytes: Vec<u8> = match class {
        Class::Bytes(bytes) => bytes
            .ranges()
            .iter()
            .flat_map(|r| r.start()..=r.end())
            .take(3)
            .collect(),
        Class::Unicode(unicode) => unicode
            .ranges()
            .iter()
            .flat_map(|r| r.start()..=r.end())
            .take(3)
            .map(|c| u8::try_from(u32::from(c)).unwrap_or(0))
            .collect(),
    };
    match bytes[..] {
        [upper, lower] if upper.is_ascii_uppercase() && upper.to_ascii_lowercase() == lower => {
            Some(lower)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literals(pattern: &str) -> Vec<String> {
        pattern_literals(pattern)
            .unwrap_or_default()
            .into_iter()
            .map(|l| String::from_utf8_lossy(&l).into_owned())
            .collect()
    }

    #[test]
    fn a_concatenation_gives_its_longest_required_literal() {
        assert_eq!(literals(r"^ninja: error: (?P<msg>.+)$"), ["ninja: error: "]);
        assert_eq!(
            literals(r"(?P<msg>\S+ -- clearing lockup after double fault)$"),
            [" -- clearing lockup after double fault"]
        );
    }

    #[test]
    fn case_insensitive_letters_fold_to_one_literal() {
        assert_eq!(
            literals(r"(?i)context before hard ?fault"),
            ["context before hard"]
        );
    }

    #[test]
    fn an_alternation_needs_a_literal_in_every_branch() {
        let mut got = literals(r"(?P<msg>Load failed|Error writing data to flash)$");
        got.sort();
        assert_eq!(got, ["error writing data to flash", "load failed"]);
        assert!(pattern_literals(r"^(?:\w+|Load failed)$").is_none());
    }

    #[test]
    fn a_pattern_without_literals_makes_every_line_a_candidate() {
        let prefilter = Prefilter::new(&literals_of(&[r"^\w+$", "abc"]));
        assert!(!prefilter.is_effective());
        assert!(prefilter.is_candidate(b"xyz"));
        let mut hits = Vec::new();
        prefilter.hits(b"xyz\n\nabc\n", &mut hits);
        assert_eq!(hits, [0, 5]);
    }

    #[test]
    fn finds_literals_in_either_case_and_escape_bytes() {
        let prefilter = Prefilter::new(&literals_of(&["(?i)abort", "Boom"]));
        assert!(prefilter.is_effective());
        assert!(prefilter.is_candidate(b"x ABORT y"));
        assert!(prefilter.is_candidate(b"boom"));
        assert!(prefilter.is_candidate(b"Bo\x1b[0mom"));
        assert!(!prefilter.is_candidate(b"bom abor"));
    }

    #[test]
    fn finds_one_position_in_each_line_with_a_literal_in_every_stretch() {
        let prefilter = Prefilter::new(&literals_of(&["(?i)abort", "Boom"]));
        let lines: Vec<&[u8]> = vec![
            b"a",
            b"boom boom",
            b"",
            b"x ABORT",
            b"nothing",
            b"xboo",
            b"m",
        ];
        for repeat in [1, 2, 3, 5, 8] {
            let text: Vec<u8> = lines
                .repeat(repeat)
                .iter()
                .flat_map(|l| [*l, b"\n"].concat())
                .collect();
            let mut hits = Vec::new();
            prefilter.hits(&text, &mut hits);
            let mut want = Vec::new();
            let mut start = 0;
            for end in memchr::memchr_iter(b'\n', &text) {
                if prefilter.is_candidate(&text[start..end]) {
                    want.push(start..end);
                }
                start = end + 1;
            }
            assert_eq!(hits.len(), want.len(), "{repeat}");
            for (hit, line) in hits.iter().zip(&want) {
                assert!(line.contains(hit), "{repeat}: {hit} in {line:?}");
            }
        }
    }
}
