//! Host noise: how many of an emulator's or flasher's own lines (not the firmware's UART) reach
//! console.log and memory. A guest that hammers unmapped memory makes QEMU report every access;
//! such floods repeat one shape of line (the same text with other numbers). Each shape keeps its
//! first lines, then one line per second with a count of the ones left out, so a flood costs a
//! few kilobytes a minute while every distinct message still shows. UART lines never pass through
//! here. Pure: the time is an input.

use std::collections::HashMap;

/// Lines of one shape kept before the limiting starts.
const FIRST_KEPT: u32 = 10;
/// After that, one line of a shape per this many milliseconds.
const INTERVAL_MS: u64 = 1000;
/// Shapes tracked one by one; past this many, new shapes share one budget.
const MAX_SHAPES: usize = 256;

#[derive(Debug, Default)]
struct ShapeState {
    seen: u32,
    last_kept_ms: u64,
    left_out: u64,
    /// The first line left out since the last one kept, quoted in the summary.
    example: Option<String>,
}

/// Decides which host lines are kept.
#[derive(Debug, Default)]
pub struct HostFilter {
    shapes: HashMap<String, ShapeState>,
    overflow: ShapeState,
}

/// The text that stands for lines left out: `fwfix: left out 1234 more host lines like: ...`.
fn summary(count: u64, example: &str) -> String {
    format!("fwfix: left out {count} more host lines like: {example}")
}

/// A line's shape: its text with every run of digits (hex included after `0x`) as `#`.
pub fn shape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            let hex = c == '0' && matches!(chars.peek(), Some('x' | 'X'));
            if hex {
                chars.next();
            }
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || (hex && d.is_ascii_hexdigit()))
            {
                chars.next();
            }
            out.push('#');
        } else {
            out.push(c);
        }
    }
    out
}

impl HostFilter {
    pub fn new() -> Self {
        Self::default()
    }

    /// The lines to keep for a host line seen at `t_ms`: none (left out), the line, or a summary
    /// of the lines left out before it and then the line.
    pub fn admit(&mut self, line: &str, t_ms: u64) -> Vec<String> {
        let key = shape(line);
        let tracked = self.shapes.len() < MAX_SHAPES || self.shapes.contains_key(&key);
        let state = if tracked {
            self.shapes.entry(key).or_default()
        } else {
            &mut self.overflow
        };
        state.seen = state.seen.saturating_add(1);
        if state.seen <= FIRST_KEPT {
            state.last_kept_ms = t_ms;
            return vec![line.to_string()];
        }
        if t_ms.saturating_sub(state.last_kept_ms) < INTERVAL_MS {
            state.left_out += 1;
            state.example.get_or_insert_with(|| line.to_string());
            return Vec::new();
        }
        state.last_kept_ms = t_ms;
        let mut out = Vec::new();
        if state.left_out > 0 {
            let example = state.example.take().unwrap_or_default();
            out.push(summary(state.left_out, &example));
            state.left_out = 0;
        }
        out.push(line.to_string());
        out
    }

    /// Summaries of the lines left out since each shape's last kept line, at the end of a run.
    pub fn finish(&mut self) -> Vec<String> {
        let mut out: Vec<String> = self
            .shapes
            .values_mut()
            .chain(std::iter::once(&mut self.overflow))
            .filter(|s| s.left_out > 0)
            .map(|s| summary(s.left_out, s.example.as_deref().unwrap_or_default()))
            .collect();
        out.sort();
        self.shapes.clear();
        self.overflow = ShapeState::default();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_hide_numbers() {
        assert_eq!(
            shape("Invalid read at addr 0x4000F00C, size 4, region '(null)'"),
            "Invalid read at addr #, size #, region '(null)'"
        );
        assert_eq!(shape("tick 12 of 0x10"), "tick # of #");
        assert_eq!(shape("no numbers"), "no numbers");
        assert_eq!(shape("R00=0000ab12"), "R#=#ab#");
    }

    #[test]
    fn a_flood_keeps_its_first_lines_then_one_a_second_with_a_count() {
        let mut f = HostFilter::new();
        let mut kept = Vec::new();
        // 10,000 lines over 5 seconds.
        for i in 0..10_000u64 {
            kept.extend(f.admit(&format!("Invalid read at addr 0x{i:X}, size 4"), i / 2));
        }
        kept.extend(f.finish());
        assert!(kept.len() < 30, "{} lines kept", kept.len());
        assert_eq!(kept[0], "Invalid read at addr 0x0, size 4");
        assert!(kept[10].starts_with("fwfix: left out "), "{}", kept[10]);
        let left_out: u64 = kept
            .iter()
            .filter_map(|l| l.strip_prefix("fwfix: left out "))
            .filter_map(|l| l.split(' ').next()?.parse::<u64>().ok())
            .sum();
        let plain = kept.iter().filter(|l| !l.starts_with("fwfix:")).count() as u64;
        assert_eq!(left_out + plain, 10_000);
    }

    #[test]
    fn distinct_messages_all_show() {
        let mut f = HostFilter::new();
        let lines = [
            "semihosting: hello",
            "Timer with period zero, disabling",
            "other",
        ];
        for (t, l) in lines.iter().enumerate() {
            assert_eq!(f.admit(l, t as u64), vec![l.to_string()]);
        }
        assert!(f.finish().is_empty());
    }

    #[test]
    fn too_many_shapes_share_one_budget() {
        let mut f = HostFilter::new();
        let mut kept = 0;
        for i in 0..(MAX_SHAPES + 100) {
            // Letters, not digits: each line its own shape.
            let name: String = format!("{i:x}")
                .chars()
                .filter_map(|c| c.to_digit(16))
                .map(|d| char::from(b'g' + d as u8))
                .collect();
            kept += f.admit(&format!("shape {name}"), 0).len();
        }
        assert_eq!(kept, MAX_SHAPES + FIRST_KEPT as usize);
        assert_eq!(f.finish().len(), 1);
    }
}
