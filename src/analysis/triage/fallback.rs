//! The learned fallback: a class for a log whose failure lines no rule knows.
//!
//! Rules know the lines of the tools they were written for; a tool triage never met prints its
//! own. When no rule decides a log (the rules say UNKNOWN) but the log has failure-bearing lines
//! (see [`Evidence`]), a small naive Bayes model over the lower-cased words of those lines
//! decides instead, if it is sure enough. It can answer only a failure class or UNKNOWN
//! (abstain): never PASS, which needs a passing verdict a rule recognises. Its reason says the
//! confidence is low and names the words that decided.
//!
//! How sure is enough depends on how many lines back the class. A line backs it when its own
//! known words, read alone, lean to the class rather than to abstaining; two lines with the same
//! known words are one line (a message printed twice is one piece of evidence). Backed by two
//! lines or more, the class needs [`MIN_PROBABILITY`] (70%); backed by one, it needs
//! [`ONE_LINE_PROBABILITY`] (90%), so a single harmless line in words the corpus taught as a
//! failure's (`<err> net_sock: connect failed: Network is unreachable` leans to a flash
//! failure) cannot carry a decision at the lower bar. Both bars were chosen by grouped
//! cross-validation (`cargo run --example triage_model -- cv rounds`, `-- cv trackers`,
//! `-- cv curve`). On the logs of rounds 8 to 9 that no rule spoke on, each read by a model
//! trained without its round (the closest to a first sight), the guard with a 70% bar decides
//! 46 where the plain 90% bar decided 38: 8 more right, none more wrong. Over every round, the
//! net (right less wrong) is flat from 55% to 70% and lower above; below 70% the extra
//! decisions are at least as often wrong as right, so the bar sits at the top of the flat part.
//! Held out by tracker (tools the model never saw) the net is flat from 60% to 90%: the lower
//! bar gains nothing there, and says a few more wrong classes. Without the guard, 70% says 12
//! more right on those logs but 8 more wrong; two backing lines at every bar, a
//! leave-one-line-out check, a margin over UNKNOWN, a cap on each line's weight, or backing
//! words near the log's end each measured worse (many real failures show one failure line).
//!
//! A generic failure line (`Traceback (most recent call last):`, `make: *** Error 2`, `error:
//! unable to connect`) names no tool and no step; when only such lines decided a log and no
//! context line named the step, the rules' class is a guess from one line's words, and the model,
//! reading all the failure-bearing lines, overrules it when it is at least
//! [`GUESS_PROBABILITY`] (95%) sure of another failure class. Its reason says so.
//!
//! The model is data: [`train`] makes it, deterministically, from the labelled logs in
//! `tests/data/triage/real/` (`cargo run --example triage_model -- write` writes
//! `model.tsv` next to this file, which [`BUILT_IN`] includes), and a unit test fails when the
//! committed file is not what the trainer makes of the corpus. [`cross_validate`] measures how
//! the whole pipeline does on logs the model was not trained on (`-- cv`). This module reads no
//! file but the corpus it is asked to read, and overrules no class a line that names what failed
//! decided.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use super::{RuleMatch, Triage, TriageClass, TriageContext, Triager};

/// Failure-bearing lines kept per log, the first ones: the fallback's input stays bounded
/// whatever the log's size.
pub const MAX_EVIDENCE_LINES: usize = 32;

/// Words read per line: the rest of a long line is a message's arguments, not its kind.
const MAX_WORDS_PER_LINE: usize = 40;

/// Words the model keeps: those whose spread over the classes says most (chi-square against
/// the classes' shares). More overfit the corpus without moving the cross-validated figure.
const VOCABULARY: usize = 320;

/// Logs a word must appear in to be kept: a word of one log describes that log, not a kind.
const MIN_LOGS: u32 = 2;

/// Additive smoothing of the word counts.
const ALPHA: f64 = 0.5;

/// Posterior the model's best class needs to decide when at least two distinct lines back it
/// (see the module docs); below it the log stays UNKNOWN.
pub const MIN_PROBABILITY: f64 = 0.7;

/// Posterior the best class needs when one line alone backs it: one line in failure-like words
/// is too often a harmless one (a warning, a retry, a handler being installed).
pub const ONE_LINE_PROBABILITY: f64 = 0.9;

/// Posterior the model's class needs to overrule the rules' guess from a generic failure line
/// ([`Evidence::guess`]). Replayed on the first sight of the last five held-out sets (each
/// triaged by the binary that first measured it; the model trained on the rounds before it),
/// 50 logs were such guesses: at 95% the model overruled 4, all 4 to the label (a flasher's
/// traceback read as the lab's, a package download read as a build); at 90% it overruled 6, 4
/// right and one that had been right; at 98%, 2. On the rounds the rules were tuned on it costs
/// more (their generic lines were written to read those logs), so the bar stays high. On the
/// three held-out sets measured after it came in, it overruled 5 guesses: 3 to the label, 2
/// away.
pub const GUESS_PROBABILITY: f64 = 0.95;

/// Weights are stored as integers of this many parts per unit (natural log), so the committed
/// file round-trips exactly and scores add up the same everywhere.
const SCALE: f64 = 10_000.0;

/// Words named in a reason.
const REASON_WORDS: usize = 3;

/// Rule id of the lines the fallback decided by, in [`Triage::matches`].
pub const FALLBACK_RULE: &str = "fallback.words";

/// The classes the model answers, in precedence order: failures, and UNKNOWN to abstain. The
/// model never says PASS (a pass needs a verdict a rule read), so it is every class of
/// [`TriageClass::PRECEDENCE`] but that one.
const CLASSES: [TriageClass; TriageClass::PRECEDENCE.len() - 1] = {
    let mut classes = [TriageClass::Unknown; TriageClass::PRECEDENCE.len() - 1];
    let (mut from, mut to) = (0, 0);
    while from < TriageClass::PRECEDENCE.len() {
        let class = TriageClass::PRECEDENCE[from];
        if !matches!(class, TriageClass::Pass) {
            classes[to] = class;
            to += 1;
        }
        from += 1;
    }
    classes
};

const N: usize = CLASSES.len();

/// Where UNKNOWN, the model's way to abstain, sits in [`CLASSES`]: last, as in the precedence.
const ABSTAIN: usize = N - 1;
const _: () = assert!(matches!(CLASSES[ABSTAIN], TriageClass::Unknown));

/// The model trained from the corpus, committed as `model.tsv`. An unreadable file (which the
/// unit tests rule out) gives a model that never decides, not a panic.
pub static BUILT_IN: LazyLock<Model> =
    LazyLock::new(|| Model::from_tsv(BUILT_IN_TSV).unwrap_or_default());

/// The committed model's text.
pub const BUILT_IN_TSV: &str = include_str!("model.tsv");

/// The failure-bearing lines of a log (lines with a failure word such as `error`, `failed`,
/// `cannot`, `not found`, `timed out`: see `FAILURE_WORDS` in [`super::rules`]), as triage's
/// prefilter brought them to the rules: 1-based line and text, the first
/// [`MAX_EVIDENCE_LINES`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    pub lines: Vec<(usize, String)>,
    /// A rule that names what it saw claimed a line (a fault a test expected, tests that passed
    /// with no verdict): the rules knew the log, even if they decided nothing.
    pub rules_spoke: bool,
    /// The rules' class is a guess: only generic failure lines decided it (`Error: command
    /// failed`), and no context line named the step. A generic rule's line may name a step
    /// loosely (make's `[flash] Error 1`); it is generic so that a line naming the failure
    /// outranks it, and the model may overrule it too, when it is very sure
    /// ([`GUESS_PROBABILITY`]).
    pub guess: bool,
}

impl Evidence {
    /// The distinct words of the lines: what the model learns from.
    pub fn words(&self) -> BTreeSet<String> {
        self.lines
            .iter()
            .flat_map(|(_, text)| line_words(text))
            .collect()
    }

    /// The distinct words of each line, in order: what the model decides by.
    pub fn line_word_sets(&self) -> Vec<BTreeSet<String>> {
        self.lines
            .iter()
            .map(|(_, text)| line_words(text).collect())
            .collect()
    }
}

/// English function words, sorted: they appear in every kind of line, so any lean they show in
/// the corpus is chance, and a reason that names them explains nothing. Negations (`not`, `no`)
/// are kept: `not found` and `no such` say what failed.
const STOP_WORDS: [&str; 48] = [
    "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "did", "do", "does",
    "for", "from", "had", "has", "have", "he", "if", "in", "into", "is", "it", "its", "me", "my",
    "of", "on", "or", "our", "so", "than", "that", "the", "then", "there", "this", "to", "was",
    "we", "were", "what", "when", "which", "with", "you",
];

/// Lower-cased ASCII words of a line (a letter, then letters, digits or `_`), longer than one
/// letter and not a function word ([`STOP_WORDS`]), the first [`MAX_WORDS_PER_LINE`]. Numbers,
/// addresses and punctuation carry no kind.
fn line_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.len() > 1 && w.as_bytes()[0].is_ascii_alphabetic())
        .take(MAX_WORDS_PER_LINE)
        .map(str::to_ascii_lowercase)
        .filter(|w| STOP_WORDS.binary_search(&w.as_str()).is_err())
}

/// What a model learnt: a log prior per class and a log likelihood per word and class, in
/// [`SCALE`] parts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Model {
    priors: [i64; N],
    weights: BTreeMap<String, [i64; N]>,
}

/// The model's answer for a log.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub class: TriageClass,
    /// The best class's posterior among the classes the model knows.
    pub probability: f64,
    /// The log's words that favour the class most, strongest first.
    pub words: Vec<String>,
    /// Distinct lines whose own words lean to the class rather than to abstaining.
    pub backing_lines: usize,
}

/// A committed model file that does not parse.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("model line {line}: {problem}")]
    Line { line: usize, problem: String },
}

/// What an example is trained as: a pass is no failure the model may name, so it teaches
/// abstaining.
fn target(label: TriageClass) -> usize {
    let class = match label {
        TriageClass::Pass => TriageClass::Unknown,
        other => other,
    };
    CLASSES.iter().position(|&c| c == class).unwrap_or(ABSTAIN)
}

/// Trains a model on (words of a log, its label), deterministically: the same examples give
/// the same model, byte for byte in [`Model::to_tsv`]. Logs without words teach nothing.
pub fn train(examples: &[(BTreeSet<String>, TriageClass)]) -> Model {
    let mut logs = [0u32; N];
    let mut counts: BTreeMap<&str, [u32; N]> = BTreeMap::new();
    for (words, label) in examples.iter().filter(|(w, _)| !w.is_empty()) {
        let c = target(*label);
        logs[c] += 1;
        for word in words {
            counts.entry(word.as_str()).or_insert([0; N])[c] += 1;
        }
    }
    let total: u32 = logs.iter().sum();
    if total == 0 {
        return Model::default();
    }
    let share: Vec<f64> = logs
        .iter()
        .map(|&n| f64::from(n) / f64::from(total))
        .collect();
    let mut scored: Vec<(f64, &str)> = counts
        .iter()
        .filter_map(|(word, by_class)| {
            let n: u32 = by_class.iter().sum();
            (n >= MIN_LOGS).then(|| {
                let chi2 = by_class
                    .iter()
                    .zip(&share)
                    .filter(|(_, &s)| s > 0.0)
                    .map(|(&k, &s)| {
                        let expected = f64::from(n) * s;
                        (f64::from(k) - expected).powi(2) / expected
                    })
                    .sum::<f64>();
                (chi2, *word)
            })
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.truncate(VOCABULARY);
    let kept: Vec<&str> = scored.iter().map(|(_, w)| *w).collect();
    let mut in_class = [0u32; N];
    for word in &kept {
        for (c, k) in counts[word].iter().enumerate() {
            in_class[c] += k;
        }
    }
    let fixed = |x: f64| (x * SCALE).round() as i64;
    let vocabulary = kept.len() as f64;
    let mut priors = [0i64; N];
    for (c, &n) in logs.iter().enumerate() {
        // A class no log taught can never win.
        priors[c] = if n == 0 {
            fixed(-1000.0)
        } else {
            fixed((f64::from(n) / f64::from(total)).ln())
        };
    }
    let weights = kept
        .iter()
        .map(|word| {
            let mut w = [0i64; N];
            for (c, slot) in w.iter_mut().enumerate() {
                let k = f64::from(counts[word][c]);
                *slot = fixed(((k + ALPHA) / (f64::from(in_class[c]) + ALPHA * vocabulary)).ln());
            }
            (word.to_string(), w)
        })
        .collect();
    Model { priors, weights }
}

impl Model {
    /// The class the words of a log's lines (one set per line) show, or None when the model
    /// abstains: no word it knows, UNKNOWN as its best class, or a best class below
    /// [`MIN_PROBABILITY`] (below [`ONE_LINE_PROBABILITY`] when one line alone backs it).
    pub fn decide(&self, lines: &[BTreeSet<String>]) -> Option<Decision> {
        self.decide_at(lines, MIN_PROBABILITY)
    }

    /// [`Model::decide`] with `bar` in place of [`MIN_PROBABILITY`], to measure other bars.
    pub fn decide_at(&self, lines: &[BTreeSet<String>], bar: f64) -> Option<Decision> {
        let words: BTreeSet<&String> = lines.iter().flatten().collect();
        let known: Vec<(&String, &[i64; N])> = words
            .into_iter()
            .filter_map(|w| self.weights.get_key_value(w))
            .collect();
        if known.is_empty() {
            return None;
        }
        let mut scores = self.priors;
        for (_, w) in &known {
            for (s, x) in scores.iter_mut().zip(w.iter()) {
                *s += x;
            }
        }
        // Ties go to the stronger class, first in CLASSES.
        let best = (0..N).fold(0, |b, c| if scores[c] > scores[b] { c } else { b });
        let class = CLASSES[best];
        let spread: f64 = scores
            .iter()
            .map(|&s| ((s - scores[best]) as f64 / SCALE).exp())
            .sum();
        let probability = 1.0 / spread;
        if class == TriageClass::Unknown || probability < bar {
            return None;
        }
        let backing_lines = self.backing_lines(lines, best);
        if backing_lines < 2 && probability < ONE_LINE_PROBABILITY {
            return None;
        }
        let mut favour: Vec<(i64, &String)> = known
            .iter()
            .map(|(word, w)| {
                let rival = (0..N).filter(|&c| c != best).map(|c| w[c]).max();
                (w[best] - rival.unwrap_or(0), *word)
            })
            .filter(|(margin, _)| *margin > 0)
            .collect();
        favour.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        Some(Decision {
            class,
            probability,
            words: favour
                .into_iter()
                .take(REASON_WORDS)
                .map(|(_, w)| w.clone())
                .collect(),
            backing_lines,
        })
    }

    /// Distinct lines (by the words of theirs the model knows) whose own words lean to class
    /// `best` rather than to abstaining (UNKNOWN).
    fn backing_lines(&self, lines: &[BTreeSet<String>], best: usize) -> usize {
        let backing: BTreeSet<Vec<&String>> = lines
            .iter()
            .filter_map(|line| {
                let known: Vec<(&String, &[i64; N])> = line
                    .iter()
                    .filter_map(|w| self.weights.get_key_value(w))
                    .collect();
                let lean: i64 = known.iter().map(|(_, w)| w[best] - w[ABSTAIN]).sum();
                (lean > 0).then(|| known.into_iter().map(|(word, _)| word).collect())
            })
            .collect();
        backing.len()
    }

    /// The model as the committed file holds it: a `class` header, a `prior` row, then one row
    /// per word, tab-separated, weights in [`SCALE`] parts.
    pub fn to_tsv(&self) -> String {
        let mut out = String::from(
            "# triage's learned fallback (see fallback.rs): naive Bayes weights, ln x 10000.\n\
             # Generated from tests/data/triage/real/ by `cargo run --example triage_model -- write`; do not edit.\n",
        );
        let row = |name: &str, values: &[i64; N]| {
            let cells: Vec<String> = values.iter().map(i64::to_string).collect();
            format!("{name}\t{}\n", cells.join("\t"))
        };
        let names: Vec<&str> = CLASSES.iter().map(|c| c.name()).collect();
        out.push_str(&format!("class\t{}\n", names.join("\t")));
        out.push_str(&row("prior", &self.priors));
        for (word, w) in &self.weights {
            out.push_str(&row(word, w));
        }
        out
    }

    /// Reads what [`Model::to_tsv`] wrote.
    pub fn from_tsv(text: &str) -> Result<Model, ModelError> {
        let mut model = Model::default();
        let mut header = false;
        for (at, line) in text.lines().enumerate() {
            let bad = |problem: &str| ModelError::Line {
                line: at + 1,
                problem: problem.to_string(),
            };
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let mut cells = line.split('\t');
            let name = cells.next().unwrap_or_default();
            let rest: Vec<&str> = cells.collect();
            if name == "class" {
                let expected: Vec<&str> = CLASSES.iter().map(|c| c.name()).collect();
                if rest != expected {
                    return Err(bad("the classes are not the ones this build knows"));
                }
                header = true;
                continue;
            }
            if !header {
                return Err(bad("no class header before the weights"));
            }
            let values: Vec<i64> = rest
                .iter()
                .map(|v| v.parse::<i64>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad("a weight is not an integer"))?;
            let values: [i64; N] = values
                .try_into()
                .map_err(|_| bad("wrong number of weights"))?;
            if name == "prior" {
                model.priors = values;
            } else {
                model.weights.insert(name.to_string(), values);
            }
        }
        Ok(model)
    }
}

/// The rules' triage, or the model's class when the rules found nothing, or only guessed from a
/// generic line, and the model is sure: then the lines are the evidence lines holding a deciding
/// word, and the reason says the confidence is low and which words decided.
pub fn apply(triage: Triage, evidence: &Evidence, model: &Model) -> Triage {
    apply_at(triage, evidence, model, MIN_PROBABILITY)
}

/// Whether the fallback may read a log: the rules left it UNKNOWN, no rule that names what it
/// saw claimed a line, and it has failure-bearing lines.
fn open_to_fallback(triage: &Triage, evidence: &Evidence) -> bool {
    triage.class == TriageClass::Unknown && !evidence.rules_spoke && !evidence.lines.is_empty()
}

/// The bar the model's class must reach on a log: `bar` where no rule spoke, the stricter
/// [`GUESS_PROBABILITY`] where the rules' class is a generic line's guess, none where the rules
/// named what they saw.
fn bar_for(triage: &Triage, evidence: &Evidence, bar: f64) -> Option<f64> {
    if open_to_fallback(triage, evidence) {
        Some(bar)
    } else if evidence.guess && !evidence.lines.is_empty() {
        Some(bar.max(GUESS_PROBABILITY))
    } else {
        None
    }
}

/// [`apply`] with `bar` in place of [`MIN_PROBABILITY`].
fn apply_at(mut triage: Triage, evidence: &Evidence, model: &Model, bar: f64) -> Triage {
    let Some(bar) = bar_for(&triage, evidence, bar) else {
        return triage;
    };
    let Some(decision) = model.decide_at(&evidence.line_word_sets(), bar) else {
        return triage;
    };
    if decision.class == triage.class {
        return triage;
    }
    let deciding: Vec<&(usize, String)> = evidence
        .lines
        .iter()
        .filter(|(_, text)| line_words(text).any(|w| decision.words.contains(&w)))
        .collect();
    let Some((_, first)) = deciding.first() else {
        return triage;
    };
    let known = if triage.class == TriageClass::Unknown {
        "no rule knows these lines".to_string()
    } else {
        format!(
            "a generic failure line read as {}, but no line names what failed",
            triage.class
        )
    };
    triage.reason = format!(
        "{first} (low confidence: {known}; the words {} read as {} in the logs triage learnt \
         from, p={:.2})",
        decision
            .words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(", "),
        decision.class,
        decision.probability
    );
    triage.class = decision.class;
    triage.lines = deciding.iter().map(|(line, _)| *line).collect();
    triage
        .matches
        .extend(deciding.iter().map(|(line, text)| RuleMatch {
            rule_id: FALLBACK_RULE.to_string(),
            class: decision.class,
            line: *line,
            text: text.clone(),
        }));
    triage.matches.sort_by_key(|m| m.line);
    triage
}

/// One labelled log of a corpus, as the rules read it.
#[derive(Debug, Clone)]
pub struct CorpusLog {
    pub name: String,
    pub label: TriageClass,
    /// Where it was copied from: the cross-validation folds go by it.
    pub address: String,
    /// The round it came in (the last `# Round N: ...` comment above its index line; `1-3`
    /// before any): each round was collected and labelled by a different person.
    pub round: String,
    /// The rules' triage, before the fallback.
    pub rules: Triage,
    pub evidence: Evidence,
}

/// A corpus that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("cannot read {}: {source}", file.display())]
    Io {
        file: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}:{line}: {problem}", file.display())]
    Index {
        file: PathBuf,
        line: usize,
        problem: String,
    },
}

/// Reads a corpus directory in the layout of `tests/data/triage/real/` (an `index.tsv` of name,
/// label and address, and `<name>.log`) and triages each log with the rules alone.
pub fn read_corpus(dir: &Path) -> Result<Vec<CorpusLog>, CorpusError> {
    let index = dir.join("index.tsv");
    let text = std::fs::read_to_string(&index).map_err(|source| CorpusError::Io {
        file: index.clone(),
        source,
    })?;
    let mut logs = Vec::new();
    let mut round = String::from("1-3");
    for (at, row) in text.lines().enumerate() {
        if let Some(comment) = row.strip_prefix("# Round ") {
            round = comment
                .split(|c: char| c == ':' || c.is_whitespace())
                .next()
                .unwrap_or_default()
                .to_string();
            continue;
        }
        if row.starts_with('#') || row.trim().is_empty() {
            continue;
        }
        let bad = |problem: String| CorpusError::Index {
            file: index.clone(),
            line: at + 1,
            problem,
        };
        let [name, label, address] = row.split('\t').collect::<Vec<_>>()[..] else {
            return Err(bad("not three tab-separated fields".into()));
        };
        let label = TriageClass::PRECEDENCE
            .into_iter()
            .find(|c| c.name() == label)
            .ok_or_else(|| bad(format!("unknown label {label}")))?;
        let file = dir.join(format!("{name}.log"));
        let bytes = std::fs::read(&file).map_err(|source| CorpusError::Io {
            file: file.clone(),
            source,
        })?;
        let mut triager = Triager::new(TriageContext::default());
        triager.push_text(&bytes);
        let (rules, evidence) = triager.finish_rules();
        logs.push(CorpusLog {
            name: name.to_string(),
            label,
            address: address.to_string(),
            round: round.clone(),
            rules,
            evidence,
        });
    }
    Ok(logs)
}

/// The model trained on every log of `logs`.
pub fn train_on(logs: &[CorpusLog]) -> Model {
    let examples: Vec<(BTreeSet<String>, TriageClass)> = logs
        .iter()
        .map(|log| (log.evidence.words(), log.label))
        .collect();
    train(&examples)
}

/// How the pipeline did on a corpus, each log read by a model that was not trained on it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CrossValidation {
    pub folds: usize,
    pub logs: usize,
    /// Logs the rules alone get right.
    pub rules_correct: usize,
    /// Logs the rules with the fallback get right.
    pub correct: usize,
    /// Logs the fallback decided, and of them those it got right.
    pub decided: usize,
    pub decided_correct: usize,
}

/// Which of `folds` folds a log falls in: FNV-1a of its address, so a thread's logs stay
/// together and the folds do not depend on the corpus's order.
pub fn fold_of(address: &str, folds: usize) -> usize {
    let hash = address.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % folds.max(1) as u64) as usize
}

/// k-fold cross-validation of the whole pipeline: for each fold, the model is trained on the
/// other folds and the fold's logs are triaged with it.
pub fn cross_validate(logs: &[CorpusLog], folds: usize) -> CrossValidation {
    let folds = folds.max(2);
    let mut cv = CrossValidation {
        folds,
        logs: logs.len(),
        ..CrossValidation::default()
    };
    for fold in 0..folds {
        let (held, training): (Vec<&CorpusLog>, Vec<&CorpusLog>) = logs
            .iter()
            .partition(|log| fold_of(&log.address, folds) == fold);
        let examples: Vec<(BTreeSet<String>, TriageClass)> = training
            .iter()
            .map(|log| (log.evidence.words(), log.label))
            .collect();
        let model = train(&examples);
        for log in held {
            let triage = apply(log.rules.clone(), &log.evidence, &model);
            cv.rules_correct += usize::from(log.rules.class == log.label);
            cv.correct += usize::from(triage.class == log.label);
            if triage.class != log.rules.class {
                cv.decided += 1;
                cv.decided_correct += usize::from(triage.class == log.label);
            }
        }
    }
    cv
}

/// What the held-out groups of a grouped cross-validation are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// The corpus's rounds ([`CorpusLog::round`]), each collected by a different person: the
    /// closest the tuning set comes to a set nobody tuning has seen.
    Round,
    /// The tracker a log was copied from (`owner/repo` of its address): a tool's own words stay
    /// on one side.
    Tracker,
}

impl Grouping {
    /// The group a log is held out with.
    pub fn of(self, log: &CorpusLog) -> String {
        match self {
            Grouping::Round => log.round.clone(),
            Grouping::Tracker => {
                let path = log
                    .address
                    .split("://")
                    .nth(1)
                    .unwrap_or(&log.address)
                    .to_ascii_lowercase();
                path.split('/').take(3).collect::<Vec<_>>().join("/")
            }
        }
    }
}

/// One held-out group of a grouped cross-validation: the pipeline's figure on it, the model's
/// alone, as if no rule had spoken on any of its logs (the case of a log whose tool the rules
/// never met, which is where the fallback matters on a set nobody tuned on), and the model's on
/// the logs no rule spoke on (its own case: held out by round, the closest to a first sight).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupFigure {
    pub group: String,
    pub cv: CrossValidation,
    /// Logs the model alone gets right, abstaining counted as UNKNOWN.
    pub alone_correct: usize,
    /// Logs the model alone decided, and of them those it got right.
    pub alone_decided: usize,
    pub alone_decided_correct: usize,
    /// Logs the fallback may read (the rules left them UNKNOWN and no rule spoke), those it
    /// decided and those it got right: right less wrong is what it adds there.
    pub no_rule: usize,
    pub no_rule_decided: usize,
    pub no_rule_correct: usize,
}

/// Grouped cross-validation: each group held out in turn, the model trained on the others and
/// deciding at `bar` ([`MIN_PROBABILITY`] for the built-in behaviour). Groups come sorted by
/// name; the tracker grouping pools its many small groups into `folds` folds by a hash of the
/// tracker (a round is a group of its own).
pub fn cross_validate_grouped(
    logs: &[CorpusLog],
    grouping: Grouping,
    folds: usize,
    bar: f64,
) -> Vec<GroupFigure> {
    let group_of = |log: &CorpusLog| match grouping {
        Grouping::Round => grouping.of(log),
        Grouping::Tracker => format!("fold {}", fold_of(&grouping.of(log), folds.max(2))),
    };
    let groups: BTreeSet<String> = logs.iter().map(group_of).collect();
    groups
        .into_iter()
        .map(|group| {
            let (held, training): (Vec<&CorpusLog>, Vec<&CorpusLog>) =
                logs.iter().partition(|log| group_of(log) == group);
            let examples: Vec<(BTreeSet<String>, TriageClass)> = training
                .iter()
                .map(|log| (log.evidence.words(), log.label))
                .collect();
            let model = train(&examples);
            let mut figure = GroupFigure {
                group,
                cv: CrossValidation {
                    folds: 1,
                    logs: held.len(),
                    ..CrossValidation::default()
                },
                ..GroupFigure::default()
            };
            for log in held {
                let triage = apply_at(log.rules.clone(), &log.evidence, &model, bar);
                let right = usize::from(triage.class == log.label);
                figure.cv.rules_correct += usize::from(log.rules.class == log.label);
                figure.cv.correct += right;
                if triage.class != log.rules.class {
                    figure.cv.decided += 1;
                    figure.cv.decided_correct += right;
                }
                if open_to_fallback(&log.rules, &log.evidence) {
                    figure.no_rule += 1;
                    if triage.class != log.rules.class {
                        figure.no_rule_decided += 1;
                        figure.no_rule_correct += right;
                    }
                }
                let alone = model
                    .decide_at(&log.evidence.line_word_sets(), bar)
                    .map_or(TriageClass::Unknown, |d| d.class);
                figure.alone_correct += usize::from(alone == log.label);
                if alone != TriageClass::Unknown {
                    figure.alone_decided += 1;
                    figure.alone_decided_correct += usize::from(alone == log.label);
                }
            }
            figure
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> BTreeSet<String> {
        line_words(text).collect()
    }

    fn toy() -> Model {
        let mut examples = Vec::new();
        for _ in 0..5 {
            examples.push((
                words("uploader: cannot open target, upload failed"),
                TriageClass::FlashError,
            ));
            examples.push((
                words("mytool: required program not found"),
                TriageClass::ToolMissing,
            ));
            examples.push((
                words("warning: timeout=0 failed to load calibration"),
                TriageClass::Unknown,
            ));
        }
        train(&examples)
    }

    #[test]
    fn words_are_lower_cased_and_skip_numbers_and_single_letters() {
        assert_eq!(
            line_words("E: Upload FAILED at 0x0800 (x) err_code=7").collect::<Vec<_>>(),
            ["upload", "failed", "err_code"]
        );
    }

    #[test]
    fn function_words_are_sorted_and_never_read() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            line_words("It appears to be working until the update failed").collect::<Vec<_>>(),
            ["appears", "working", "until", "update", "failed"]
        );
    }

    #[test]
    fn the_model_names_the_class_and_the_words_that_decided() {
        let decision = toy()
            .decide(&[words("flashing: upload failed, cannot open target")])
            .unwrap();
        assert_eq!(decision.class, TriageClass::FlashError);
        assert!(decision.probability >= MIN_PROBABILITY);
        let said = words("flashing: upload failed, cannot open target");
        assert!(!decision.words.is_empty(), "{decision:?}");
        assert!(
            decision.words.iter().all(|w| said.contains(w)),
            "{decision:?}"
        );
    }

    #[test]
    fn the_model_abstains_on_unknown_words_and_on_what_it_learnt_as_no_verdict() {
        let model = toy();
        assert_eq!(model.decide(&[words("zzz qqq")]), None);
        assert_eq!(
            model.decide(&[words("timeout=0 calibration warning")]),
            None
        );
    }

    #[test]
    fn one_line_decides_only_at_the_one_line_bar() {
        let model = toy();
        // Read alone, each line leans to a flash failure, but by less than 90%.
        let upload = words("flashing: upload stalled");
        let target = words("target not responding");
        assert_eq!(model.decide(std::slice::from_ref(&upload)), None);
        assert_eq!(model.decide_at(std::slice::from_ref(&target), 0.5), None);
        // A line printed twice is one line.
        assert_eq!(model.decide(&[upload.clone(), upload.clone()]), None);
        let decision = model.decide(&[upload, target]).unwrap();
        assert_eq!(decision.class, TriageClass::FlashError);
        assert!(decision.probability < ONE_LINE_PROBABILITY, "{decision:?}");
        assert_eq!(decision.backing_lines, 2);
    }

    #[test]
    fn lines_that_lean_to_abstaining_back_nothing() {
        // Each line reads as the warning the toy learnt as no verdict; together their flash
        // words tip the balance, but no line backs the class.
        let lines = [
            words("upload failed: timeout"),
            words("target failed: timeout"),
        ];
        assert_eq!(toy().decide_at(&lines, 0.5), None);
    }

    /// Failure-bearing lines that are no failure (see `harmless_lines_are_not_evidence` in the
    /// triage tests): the built-in model leaves each undecided, alone or printed again.
    #[test]
    fn the_built_in_model_leaves_a_harmless_line_undecided_even_repeated() {
        for line in [
            "<err> net_sock: connect failed: Network is unreachable",
            "nsh: hello: open failed: 2",
            "Error: 3 retries left",
            "W (706) cpu_start: failed to load RF calibration data, falling back to full calibration",
            "TRACE +0.001 command op=0x0a data len=4 wait_response=1 timeout=3.000 data=0020f43f",
            "[INFO] Connection timeout set to 5 s",
            "Taking exception 16 [Semihosting call] on CPU 0",
            "...taking pending nonsecure exception 15",
            "-- Could NOT find Doxygen (missing: DOXYGEN_EXECUTABLE)",
            "arm-none-eabi-gcc -c src/error_handler.c -o build/error_handler.o",
            "    1 - test_foo (Failed)",
            "FAIL",
        ] {
            assert_eq!(BUILT_IN.decide(&[words(line)]), None, "{line}");
            assert_eq!(BUILT_IN.decide(&[words(line), words(line)]), None, "{line}");
        }
    }

    /// A firmware's own exception dump, in a shape no rule knows: no line of it is enough, the
    /// lines together are.
    #[test]
    fn the_built_in_model_decides_a_failure_its_lines_back_together() {
        let lines = [
            "[12:01:03.114] - Exception Entry--->>>",
            "[12:01:03.115] - Exception code: 5",
            "[12:01:03.115] - Exception PC: 0x0801a2c4",
        ]
        .map(words);
        let decision = BUILT_IN.decide(&lines).unwrap();
        assert_eq!(decision.class, TriageClass::Crash, "{decision:?}");
        assert!(decision.backing_lines >= 2, "{decision:?}");
        for line in &lines {
            assert_eq!(
                BUILT_IN.decide(std::slice::from_ref(line)),
                None,
                "{line:?}"
            );
        }
    }

    #[test]
    fn a_pass_teaches_abstaining_so_the_model_never_says_pass() {
        let model = train(&[(words("0 failures all good"), TriageClass::Pass)]);
        assert_eq!(model.decide(&[words("0 failures all good")]), None);
    }

    #[test]
    fn training_is_deterministic_and_the_file_round_trips() {
        let model = toy();
        assert_eq!(model.to_tsv(), toy().to_tsv());
        assert_eq!(Model::from_tsv(&model.to_tsv()).unwrap(), model);
    }

    #[test]
    fn a_bad_model_file_is_an_error_not_a_panic() {
        assert!(Model::from_tsv("prior\t1").is_err());
        assert!(Model::from_tsv("class\tPASS\nprior\t1").is_err());
    }

    #[test]
    fn the_built_in_model_parses_and_stays_small() {
        let model = Model::from_tsv(BUILT_IN_TSV).unwrap();
        assert!(!model.weights.is_empty());
        assert!(model.weights.len() * N <= 4000);
    }

    #[test]
    fn the_fallback_leaves_a_decided_log_alone_and_an_empty_one_unknown() {
        let decided = super::super::classify("foo.c:1:2: error: bar", &TriageContext::default());
        let evidence = Evidence {
            lines: vec![(1, "upload failed".into())],
            rules_spoke: false,
            guess: false,
        };
        assert_eq!(apply(decided.clone(), &evidence, &toy()), decided);
        let nothing = super::super::classify("", &TriageContext::default());
        assert_eq!(
            apply(nothing.clone(), &Evidence::default(), &toy()).class,
            TriageClass::Unknown
        );
    }

    /// A generic line's guess is overruled only when the model is very sure of another class,
    /// and a class the rules named (no guess) never is.
    #[test]
    fn the_fallback_overrules_a_guess_only_above_its_bar() {
        let guessed = Triage {
            class: TriageClass::BuildError,
            lines: vec![2],
            reason: "Error 1 (low confidence: a generic failure line)".into(),
            matches: Vec::new(),
        };
        let evidence = |guess| Evidence {
            lines: vec![
                (1, "uploader: cannot open target".into()),
                (2, "upload failed".into()),
            ],
            rules_spoke: false,
            guess,
        };
        let overruled = apply(guessed.clone(), &evidence(true), &toy());
        assert_eq!(overruled.class, TriageClass::FlashError, "{overruled:?}");
        assert!(
            overruled
                .reason
                .contains("a generic failure line read as BUILD_ERROR"),
            "{}",
            overruled.reason
        );
        assert_eq!(overruled.lines.first(), Some(&1));
        assert_eq!(apply(guessed.clone(), &evidence(false), &toy()), guessed);
        let sure = toy()
            .decide_at(&evidence(true).line_word_sets(), 0.0)
            .map(|d| d.probability)
            .unwrap_or(0.0);
        assert!(sure >= GUESS_PROBABILITY, "{sure}");
        assert_eq!(
            apply_at(
                guessed.clone(),
                &evidence(true),
                &toy(),
                sure.min(1.0) + 0.001
            ),
            guessed
        );
    }

    #[test]
    fn trackers_group_by_owner_and_repository() {
        let log = |address: &str| CorpusLog {
            name: "x".into(),
            label: TriageClass::Unknown,
            address: address.into(),
            round: "5".into(),
            rules: super::super::classify("", &TriageContext::default()),
            evidence: Evidence::default(),
        };
        let issue = log("https://github.com/Zephyrproject-RTOS/zephyr/issues/1");
        let pull = log("https://github.com/zephyrproject-rtos/zephyr/pull/2");
        assert_eq!(Grouping::Tracker.of(&issue), Grouping::Tracker.of(&pull));
        assert_eq!(Grouping::Round.of(&issue), "5");
    }

    #[test]
    fn folds_follow_the_address() {
        assert_eq!(fold_of("https://a/1", 5), fold_of("https://a/1", 5));
        assert!(fold_of("https://a/1", 5) < 5);
    }
}
