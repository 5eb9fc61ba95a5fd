//! Renders events: progress on a terminal, or JSON lines with `--json`; the final summary table.
