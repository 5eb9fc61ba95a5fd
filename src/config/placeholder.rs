//! `{name}` placeholders in configuration strings: finding them and expanding them. Pure string
//! work; which names a given key accepts is decided by the caller.
//!
//! A placeholder is `{` + a lower-case identifier + `}`. Anything else in braces is left alone, so
//! shell text such as `${HOME}` or `awk '{print $1}'` passes through unchanged.

/// Every placeholder in `template`: its byte offset (of the `{`) and its name.
pub fn find(template: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    let mut rest = 0;
    while let Some(open) = template[rest..].find('{').map(|i| rest + i) {
        let after = open + 1;
        let name_len = template[after..]
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(template.len() - after);
        let name = &template[after..after + name_len];
        let closed = template[after + name_len..].starts_with('}');
        if closed && name.starts_with(|c: char| c.is_ascii_lowercase()) {
            found.push((open, name));
            rest = after + name_len + 1;
        } else {
            rest = after;
        }
    }
    found
}

/// `template` with each placeholder named in `values` replaced by its value; placeholders not in
/// `values` stay as they are (load-time validation has already rejected unknown ones).
pub fn expand(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut copied = 0;
    for (offset, name) in find(template) {
        if let Some((_, value)) = values.iter().find(|(n, _)| *n == name) {
            out.push_str(&template[copied..offset]);
            out.push_str(value);
            copied = offset + name.len() + 2;
        }
    }
    out.push_str(&template[copied..]);
    out
}

/// The first placeholder in `template` whose name is not in `known`: its byte offset and name.
pub fn first_unknown<'t>(template: &'t str, known: &[&str]) -> Option<(usize, &'t str)> {
    find(template)
        .into_iter()
        .find(|(_, name)| !known.contains(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_lower_case_identifiers_in_braces_only() {
        assert_eq!(
            find("make BOARD={machine} out/{board}.elf"),
            vec![(11, "machine"), (25, "board")]
        );
        assert_eq!(find("${HOME} {print $1} {} {Board} {9x} {a-b}"), vec![]);
        assert_eq!(find("{{board}}"), vec![(1, "board")]);
        assert_eq!(find("tail {"), vec![]);
    }

    #[test]
    fn expands_known_names_and_keeps_the_rest() {
        let values = [("board", "qemu-mps2-an385"), ("machine", "mps2-an385")];
        assert_eq!(
            expand(
                "make BOARD={machine} build/{machine}/x.elf # {board}",
                &values
            ),
            "make BOARD=mps2-an385 build/mps2-an385/x.elf # qemu-mps2-an385"
        );
        assert_eq!(
            expand("echo ${HOME} {other} é{board}", &values),
            "echo ${HOME} {other} éqemu-mps2-an385"
        );
    }

    #[test]
    fn reports_the_first_unknown_name() {
        assert_eq!(
            first_unknown("{board} {bord} {x}", &["board"]),
            Some((8, "bord"))
        );
        assert_eq!(first_unknown("{elf} {hex}", &["elf", "bin", "hex"]), None);
    }
}
