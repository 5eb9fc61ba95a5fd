//! Just enough of a C lexer for the policy rules: tokens without comments, call arguments split at
//! top-level commas, literals and operators. It reads one line at a time and carries only whether
//! a block comment is open, so it works on the scattered lines of a diff. It must not try to
//! understand C beyond that: no preprocessor, no types, no scopes.

/// One token of a line of C.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    Ident(String),
    /// A number as written, e.g. `0x29B1u`, `1.5f`.
    Num(String),
    /// A string or character literal with its quotes.
    Lit(String),
    Punct(String),
}

impl Tok {
    pub fn text(&self) -> &str {
        match self {
            Tok::Ident(s) | Tok::Num(s) | Tok::Lit(s) | Tok::Punct(s) => s,
        }
    }

    pub fn is_punct(&self, p: &str) -> bool {
        matches!(self, Tok::Punct(s) if s == p)
    }

    pub fn is_ident(&self, name: &str) -> bool {
        matches!(self, Tok::Ident(s) if s == name)
    }

    pub fn is_literal(&self) -> bool {
        matches!(self, Tok::Num(_) | Tok::Lit(_))
    }
}

/// Longest first, so `<<=` is not read as `<` `<=`.
const PUNCTS: &[&str] = &[
    "<<=", ">>=", "...", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "->", "++", "--", "+=",
    "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##",
];

/// Tokens of one line. `in_comment` says whether a `/* ... */` comment is open at the start of the
/// line and is updated for the next one. A line that starts with `* ` is taken as the middle of a
/// block comment whose start the diff does not show.
pub(crate) fn lex(line: &str, in_comment: &mut bool) -> Vec<Tok> {
    let trimmed = line.trim_start();
    if !*in_comment && (trimmed == "*" || trimmed.starts_with("* ") || trimmed.starts_with("*/")) {
        *in_comment = true;
    }
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if *in_comment {
            match find_pair(&chars, i, '*', '/') {
                Some(end) => {
                    *in_comment = false;
                    i = end + 2;
                }
                None => return out,
            }
            continue;
        }
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            return out;
        } else if c == '/' && next == Some('*') {
            *in_comment = true;
            i += 2;
        } else if c == '"' || c == '\'' {
            let end = quoted_end(&chars, i);
            out.push(Tok::Lit(chars[i..end].iter().collect()));
            i = end;
        } else if c.is_ascii_digit() || (c == '.' && next.is_some_and(|n| n.is_ascii_digit())) {
            let end = number_end(&chars, i);
            out.push(Tok::Num(chars[i..end].iter().collect()));
            i = end;
        } else if c.is_alphanumeric() || c == '_' {
            let mut end = i;
            while end < chars.len() && (chars[end].is_alphanumeric() || chars[end] == '_') {
                end += 1;
            }
            out.push(Tok::Ident(chars[i..end].iter().collect()));
            i = end;
        } else {
            let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
            let p = PUNCTS
                .iter()
                .find(|p| rest.starts_with(**p))
                .map_or_else(|| c.to_string(), |p| (*p).to_string());
            i += p.chars().count();
            out.push(Tok::Punct(p));
        }
    }
    out
}

fn find_pair(chars: &[char], from: usize, a: char, b: char) -> Option<usize> {
    (from..chars.len().saturating_sub(1)).find(|&j| chars[j] == a && chars[j + 1] == b)
}

/// The index after the closing quote, or the end of the line for an unterminated literal.
fn quoted_end(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// C numbers: digits, letters (hex digits, suffixes), `.`, and a sign right after an exponent.
fn number_end(chars: &[char], start: usize) -> usize {
    let hex = chars.get(start + 1).is_some_and(|c| matches!(c, 'x' | 'X')) && chars[start] == '0';
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        let exponent = if hex {
            matches!(c, 'p' | 'P')
        } else {
            matches!(c, 'e' | 'E')
        };
        if exponent && chars.get(i + 1).is_some_and(|n| matches!(n, '+' | '-')) {
            i += 2;
        } else if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// The value of a C number literal (`0x10u`, `1.5f`, `017`, `1e3`), for comparing bounds and
/// tolerances. `None` for anything it cannot read with certainty.
pub(crate) fn number_value(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        let digits = hex.trim_end_matches(['u', 'l']);
        return u64::from_str_radix(digits, 16).ok().map(|v| v as f64);
    }
    if let Some(bin) = lower.strip_prefix("0b") {
        let digits = bin.trim_end_matches(['u', 'l']);
        return u64::from_str_radix(digits, 2).ok().map(|v| v as f64);
    }
    let is_float = lower.contains(['.', 'e']);
    if is_float {
        return lower.trim_end_matches(['f', 'l']).parse().ok();
    }
    let digits = lower.trim_end_matches(['u', 'l']);
    if digits.len() > 1 && digits.starts_with('0') {
        return u64::from_str_radix(&digits[1..], 8).ok().map(|v| v as f64);
    }
    digits.parse::<u64>().ok().map(|v| v as f64)
}

/// Where the `(` at `open` is closed, if it is within `toks`.
pub(crate) fn matching_paren(toks: &[Tok], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate().skip(open) {
        if t.is_punct("(") || t.is_punct("[") || t.is_punct("{") {
            depth += 1;
        } else if t.is_punct(")") || t.is_punct("]") || t.is_punct("}") {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// The arguments between `(` and `)` (exclusive), split at top-level commas.
pub(crate) fn split_args(toks: &[Tok]) -> Vec<Vec<Tok>> {
    let mut args = vec![Vec::new()];
    let mut depth = 0usize;
    for t in toks {
        if t.is_punct("(") || t.is_punct("[") || t.is_punct("{") {
            depth += 1;
        } else if t.is_punct(")") || t.is_punct("]") || t.is_punct("}") {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && t.is_punct(",") {
            args.push(Vec::new());
            continue;
        }
        if let Some(last) = args.last_mut() {
            last.push(t.clone());
        }
    }
    if args.len() == 1 && args[0].is_empty() {
        args.clear();
    }
    args
}

/// Tokens as one normalised string, so that spacing never makes two lines differ.
pub(crate) fn join(toks: &[Tok]) -> String {
    toks.iter().map(Tok::text).collect::<Vec<_>>().join(" ")
}

/// The tokens without redundant outer parentheses: `((x == 1))` → `x == 1`.
pub(crate) fn strip_parens(mut toks: &[Tok]) -> &[Tok] {
    while toks.len() >= 2
        && toks[0].is_punct("(")
        && matching_paren(toks, 0) == Some(toks.len() - 1)
    {
        toks = &toks[1..toks.len() - 1];
    }
    toks
}

/// Splits at a top-level binary operator (`||`, `&&`).
pub(crate) fn split_top<'t>(toks: &'t [Tok], op: &str) -> Vec<&'t [Tok]> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, t) in toks.iter().enumerate() {
        if t.is_punct("(") || t.is_punct("[") {
            depth += 1;
        } else if t.is_punct(")") || t.is_punct("]") {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && t.is_punct(op) {
            parts.push(&toks[start..i]);
            start = i + 1;
        }
    }
    parts.push(&toks[start..]);
    parts
}

/// A literal as a comparable key: numbers by value (`0x10` = `16`), others as written.
pub(crate) fn literal_key(t: &Tok) -> String {
    match t {
        Tok::Num(n) => number_value(n).map_or_else(|| n.to_ascii_lowercase(), |v| v.to_string()),
        other => other.text().to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        let mut c = false;
        lex(line, &mut c)
            .iter()
            .map(|t| t.text().to_string())
            .collect()
    }

    #[test]
    fn lexes_numbers_strings_operators_and_drops_comments() {
        assert_eq!(
            texts(r#"x<<=0x1Fu; if (a>=1.5e-3f && s=="a\"b") // no"#),
            vec![
                "x",
                "<<=",
                "0x1Fu",
                ";",
                "if",
                "(",
                "a",
                ">=",
                "1.5e-3f",
                "&&",
                "s",
                "==",
                r#""a\"b""#,
                ")"
            ]
        );
        assert_eq!(texts("a /* b */ c"), vec!["a", "c"]);
        assert_eq!(
            texts("p->CR1 = '\\n';"),
            vec!["p", "->", "CR1", "=", "'\\n'", ";"]
        );
    }

    #[test]
    fn block_comments_span_lines() {
        let mut c = false;
        assert_eq!(lex("x /* start", &mut c).len(), 1);
        assert!(c);
        assert!(lex("assert(0);", &mut c).is_empty());
        assert_eq!(lex("end */ y", &mut c).len(), 1);
        assert!(!c);
        let mut c = false;
        assert!(lex(" * TEST_ASSERT(0) in a doc comment", &mut c).is_empty());
        let mut c = false;
        assert_eq!(lex("*p = 1;", &mut c).len(), 5, "a dereference is code");
    }

    #[test]
    fn number_values() {
        assert_eq!(number_value("0x29B1u"), Some(10673.0));
        assert_eq!(number_value("10673UL"), Some(10673.0));
        assert_eq!(number_value("017"), Some(15.0));
        assert_eq!(number_value("0b101"), Some(5.0));
        assert_eq!(number_value("1.5f"), Some(1.5));
        assert_eq!(number_value("2e2"), Some(200.0));
        assert_eq!(number_value("0"), Some(0.0));
        assert_eq!(number_value("0xZZ"), None);
    }

    #[test]
    fn args_split_at_top_level_commas() {
        let mut c = false;
        let toks = lex("f(a, g(b, c), d[1, 2])", &mut c);
        let close = matching_paren(&toks, 1).unwrap();
        assert_eq!(close, toks.len() - 1);
        let args = split_args(&toks[2..close]);
        let args: Vec<String> = args.iter().map(|a| join(a)).collect();
        assert_eq!(args, vec!["a", "g ( b , c )", "d [ 1 , 2 ]"]);
        assert!(split_args(&[]).is_empty());
    }

    #[test]
    fn parens_and_top_level_splits() {
        let mut c = false;
        let toks = lex("((a || (b && c)) )", &mut c);
        let inner = strip_parens(&toks);
        assert_eq!(join(inner), "a || ( b && c )");
        assert_eq!(split_top(inner, "||").len(), 2);
        assert_eq!(split_top(inner, "&&").len(), 1);
        assert_eq!(literal_key(&Tok::Num("0x10".into())), "16");
    }
}
