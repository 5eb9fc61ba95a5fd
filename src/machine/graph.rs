//! Renders the transition table as a Mermaid state diagram or a Graphviz graph. Both come from
//! [`edges`], which asks the transition function itself, so the picture cannot drift from the code.

use super::state::State;
use super::transition::edges;
use std::fmt::Write;

/// A Mermaid `stateDiagram-v2` of every legal edge.
pub fn mermaid() -> String {
    let mut out = String::from("stateDiagram-v2\n    [*] --> IDLE\n");
    for e in edges() {
        let _ = writeln!(out, "    {} --> {}: {}", e.from, e.to, e.label);
    }
    for s in terminal_states() {
        let _ = writeln!(out, "    {s} --> [*]");
    }
    out
}

/// A Graphviz digraph of every legal edge.
pub fn dot() -> String {
    let mut out = String::from("digraph fwfix {\n    rankdir=TB;\n    node [shape=box];\n");
    for s in terminal_states() {
        let _ = writeln!(out, "    {s} [shape=doublecircle];");
    }
    for e in edges() {
        let _ = writeln!(out, "    {} -> {} [label=\"{}\"];", e.from, e.to, e.label);
    }
    out.push_str("}\n");
    out
}

fn terminal_states() -> impl Iterator<Item = State> {
    State::ALL.into_iter().filter(|s| s.is_terminal())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mermaid_has_every_edge_once() {
        let m = mermaid();
        assert!(m.starts_with("stateDiagram-v2\n"));
        for e in edges() {
            let line = format!("    {} --> {}: ", e.from, e.to);
            assert_eq!(m.matches(&line).count(), 1, "{line}");
        }
        assert!(m.contains("    BUILD_RUN --> ERROR_RECOVERY: error\n"));
        assert!(m.contains("    CONVERGENCE_CHECK --> TEST_SETUP: run again\n"));
        assert!(m.contains("    SUCCESS --> [*]\n"));
    }

    #[test]
    fn dot_is_a_digraph_with_every_edge() {
        let d = dot();
        assert!(d.starts_with("digraph fwfix {"));
        assert!(d.trim_end().ends_with('}'));
        assert_eq!(d.matches(" -> ").count(), edges().len());
    }
}
