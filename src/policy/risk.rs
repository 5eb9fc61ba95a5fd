//! The risk score: how much of what a patch touches can break firmware in ways a unit test on
//! QEMU does not show (timing, hardware state, boot). It never denies a patch; it tells
//! `--approve risky` when to ask a person, and tells that person why. Pure and deterministic: the
//! same diff always gets the same score and the same reasons, in the same order.
//!
//! The score combines the weights of the [`CATEGORIES`] the patch hits, each counted once however
//! often it is hit: `score = 1 - Π(1 - weight)`. One hit scores its weight; more hits approach 1
//! and never exceed it. Weights:
//!
//! | category | weight | what hits it (in changed lines, or in the function a hunk is in) |
//! |---|---|---|
//! | `interrupt` | 0.30 | `*_IRQHandler`, `*_Handler`, `ISR(`, `__attribute__((interrupt))`, `__irq`, `NVIC_*`, `IRQ_CONNECT`, `irq_enable` |
//! | `guarded_path` | 0.30 | a file of a built-in deny family that `allow_builtin` lifted |
//! | `critical_section` | 0.25 | `__disable_irq`, `__enable_irq`, `cpsid`/`cpsie`, `irq_lock`, `taskENTER_CRITICAL`, `__set_PRIMASK`, `__set_BASEPRI` |
//! | `register` | 0.25 | `->CR1`-style register fields, hex addresses ≥ 0x40000000 used as pointers, `HWREG` |
//! | `clock_power` | 0.25 | `SystemInit`, `SystemClock_Config`, `RCC`, `PLL`, `PWR`, `sleep`, `WFI`/`WFE`, low-power modes |
//! | `linker_symbol` | 0.25 | `_estack`, `__bss_start__`, `_sidata`, ... and stack pointer setup (`__set_MSP`) |
//! | `barrier` | 0.20 | `__DMB`, `__DSB`, `__ISB`, `__sync_synchronize`, `atomic_thread_fence`, `"memory"` clobbers |
//! | `dma` | 0.20 | identifiers starting with `dma`/`hdma` or containing `_dma` (any case) |
//! | `volatile` | 0.15 | `volatile` outside inline assembly |
//! | `inline_asm` | 0.15 | `asm`, `__asm`, `__asm__` |
//! | `size` | 0.15 | more than 30 changed lines, or more than 3 files |

use super::clike::{self, Tok};
use super::rules::builtin_match;
use super::{side, FileView, LineKind, Stats};
use crate::config::BuiltinDeny;
use serde::{Deserialize, Serialize};

/// How risky a patch is, in `[0, 1]`, and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Risk {
    pub score: f32,
    /// One line per category hit: the category, its weight, and the first place it was hit.
    pub reasons: Vec<String>,
}

/// A kind of change that makes a patch riskier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Category {
    pub name: &'static str,
    pub weight: f32,
    pub what: &'static str,
}

/// Every category, in the order reasons are listed.
pub const CATEGORIES: &[Category] = &[
    Category {
        name: "interrupt",
        weight: 0.30,
        what: "interrupt handler or interrupt setup",
    },
    Category {
        name: "guarded_path",
        weight: 0.30,
        what: "file a built-in deny guards, lifted by allow_builtin",
    },
    Category {
        name: "critical_section",
        weight: 0.25,
        what: "critical section or interrupt masking",
    },
    Category {
        name: "register",
        weight: 0.25,
        what: "memory-mapped register access",
    },
    Category {
        name: "clock_power",
        weight: 0.25,
        what: "clock, power or sleep setup",
    },
    Category {
        name: "linker_symbol",
        weight: 0.25,
        what: "linker symbol or stack setup",
    },
    Category {
        name: "barrier",
        weight: 0.20,
        what: "memory barrier",
    },
    Category {
        name: "dma",
        weight: 0.20,
        what: "DMA",
    },
    Category {
        name: "volatile",
        weight: 0.15,
        what: "volatile object",
    },
    Category {
        name: "inline_asm",
        weight: 0.15,
        what: "inline assembly",
    },
    Category {
        name: "size",
        weight: 0.15,
        what: "large patch",
    },
];

const LARGE_LINES: usize = 30;
const LARGE_FILES: usize = 3;
/// Peripheral and system address space on Cortex-M starts here.
const PERIPHERAL_BASE: f64 = 0x4000_0000 as f64;

const LINKER_SYMBOLS: &[&str] = &[
    "_estack",
    "_sidata",
    "_sdata",
    "_edata",
    "_sbss",
    "_ebss",
    "_etext",
    "__etext",
    "__bss_start__",
    "__bss_end__",
    "__data_start__",
    "__data_end__",
    "__end__",
    "__StackTop",
    "__StackLimit",
    "__HeapBase",
    "__HeapLimit",
    "__heap_start__",
    "__heap_end__",
    "_Min_Stack_Size",
    "_Min_Heap_Size",
    "__set_MSP",
    "__set_PSP",
    "__set_MSPLIM",
    "__set_PSPLIM",
];

const CRITICAL: &[&str] = &[
    "__disable_irq",
    "__enable_irq",
    "__disable_fault_irq",
    "__enable_fault_irq",
    "__set_PRIMASK",
    "__set_BASEPRI",
    "__set_BASEPRI_MAX",
    "__set_FAULTMASK",
    "irq_lock",
    "irq_unlock",
    "k_spin_lock",
    "k_spin_unlock",
    "portDISABLE_INTERRUPTS",
    "portENABLE_INTERRUPTS",
];

const BARRIERS: &[&str] = &[
    "__DMB",
    "__DSB",
    "__ISB",
    "__sync_synchronize",
    "atomic_thread_fence",
    "atomic_signal_fence",
    "__COMPILER_BARRIER",
    "compiler_barrier",
    "barrier_dmem_fence_full",
    "barrier_dsync_fence_full",
    "barrier_isync_fence_full",
];

const CLOCK_POWER: &[&str] = &[
    "SystemInit",
    "SystemClock_Config",
    "SystemCoreClockUpdate",
    "SystemCoreClock",
    "PWR",
    "RCC",
    "sleep",
    "__WFI",
    "__WFE",
    "WFI",
    "WFE",
    "k_cpu_idle",
    "pm_state_force",
];

const INTERRUPT: &[&str] = &[
    "ISR",
    "__irq",
    "__interrupt",
    "IRQ_CONNECT",
    "IRQ_DIRECT_CONNECT",
    "irq_enable",
    "irq_disable",
    "irq_connect_dynamic",
];

/// The categories one token hits. `toks[i]` is the token; its neighbours give context.
fn hits(toks: &[Tok], i: usize) -> Vec<&'static str> {
    let mut out = Vec::new();
    let prev = |k: usize| i.checked_sub(k).and_then(|j| toks.get(j));
    match &toks[i] {
        Tok::Ident(id) => {
            let s = id.as_str();
            let lower = s.to_ascii_lowercase();
            let interrupt_attr =
                s == "interrupt" && toks[..i].iter().any(|t| t.is_ident("__attribute__"));
            if s.ends_with("_IRQHandler")
                || (s.ends_with("_Handler") && s.starts_with(|c: char| c.is_ascii_uppercase()))
                || s.starts_with("NVIC_")
                || INTERRUPT.contains(&s)
                || interrupt_attr
            {
                out.push("interrupt");
            }
            if CRITICAL.contains(&s)
                || s.starts_with("taskENTER_CRITICAL")
                || s.starts_with("taskEXIT_CRITICAL")
                || lower.contains("critical_section")
            {
                out.push("critical_section");
            }
            if matches!(s, "HWREG" | "HWREG32" | "__REG" | "REG32")
                || (prev(1).is_some_and(|p| p.is_punct("->")) && is_register_field(s))
            {
                out.push("register");
            }
            if CLOCK_POWER.contains(&s)
                || s.starts_with("RCC_")
                || s.contains("_RCC_")
                || s.starts_with("PLL")
                || s.contains("_PLL")
                || s.starts_with("PWR_")
                || s.contains("_PWR_")
                || s.starts_with("HAL_PWR")
                || [
                    "deepsleep",
                    "sleepdeep",
                    "deep_sleep",
                    "sleepmode",
                    "sleep_mode",
                    "stopmode",
                ]
                .iter()
                .any(|w| lower.contains(w))
            {
                out.push("clock_power");
            }
            if LINKER_SYMBOLS.contains(&s) {
                out.push("linker_symbol");
            }
            if BARRIERS.contains(&s) {
                out.push("barrier");
            }
            if lower.starts_with("dma") || lower.starts_with("hdma") || lower.contains("_dma") {
                out.push("dma");
            }
            let in_asm = prev(1).is_some_and(|p| is_asm(p.text()));
            if s == "volatile" && !in_asm {
                out.push("volatile");
            }
            if is_asm(s) {
                out.push("inline_asm");
            }
        }
        Tok::Num(n) if peripheral_pointer(toks, i, n) => out.push("register"),
        Tok::Lit(text) => {
            let asm = toks[..i].iter().any(|t| is_asm(t.text()));
            let lower = text.to_ascii_lowercase();
            if asm
                && ["dmb", "dsb", "isb", "\"memory\""]
                    .iter()
                    .any(|w| lower.contains(w))
            {
                out.push("barrier");
            }
            if asm && (lower.contains("cpsid") || lower.contains("cpsie")) {
                out.push("critical_section");
            }
            if asm && (lower.contains("wfi") || lower.contains("wfe")) {
                out.push("clock_power");
            }
        }
        _ => {}
    }
    out
}

fn is_asm(s: &str) -> bool {
    matches!(s, "asm" | "__asm" | "__asm__")
}

/// CMSIS register fields are upper case: `CR1`, `SR`, `BSRR`, `AHB1ENR`.
fn is_register_field(s: &str) -> bool {
    s.len() >= 2
        && s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// A hex literal at or above the peripheral base that the line uses as an address: after a
/// pointer cast `*)`, or on a line that says `volatile` or names a `*_BASE`/`*_ADDR`.
fn peripheral_pointer(toks: &[Tok], i: usize, n: &str) -> bool {
    let hex = n.len() > 2 && n[..2].eq_ignore_ascii_case("0x");
    if !hex || clike::number_value(n).is_none_or(|v| v < PERIPHERAL_BASE) {
        return false;
    }
    let cast = toks[..i]
        .windows(2)
        .any(|w| w[0].is_punct("*") && w[1].is_punct(")"));
    let named = toks.iter().any(|t| match t {
        Tok::Ident(s) => s == "volatile" || s.ends_with("_BASE") || s.ends_with("_ADDR"),
        _ => false,
    });
    cast || named
}

/// Scores the patch. Binary files have no lines to read; their paths still count.
pub(crate) fn score(files: &[FileView], stats: &Stats) -> Risk {
    let mut first: Vec<Option<String>> = vec![None; CATEGORIES.len()];
    let mut note = |name: &str, place: String| {
        if let Some(i) = CATEGORIES.iter().position(|c| c.name == name) {
            first[i].get_or_insert(place);
        }
    };
    for file in files {
        for family in BuiltinDeny::ALL {
            if file
                .paths
                .iter()
                .any(|p| builtin_match(family, p).is_some())
            {
                note(
                    "guarded_path",
                    format!("`{}` ({})", file.path, family.name()),
                );
            }
        }
        for hunk in &file.hunks {
            let first_change = hunk
                .lines
                .iter()
                .find(|l| l.kind != LineKind::Context)
                .map_or(0, |l| l.line);
            let mut c = false;
            let heading = clike::lex(&hunk.heading, &mut c);
            for i in 0..heading.len() {
                for name in hits(&heading, i) {
                    note(
                        name,
                        format!("inside `{}` at {}:{first_change}", hunk.heading, file.path),
                    );
                }
            }
            for changed in [LineKind::Removed, LineKind::Added] {
                let toks = side(&hunk.lines, changed);
                // Hits are judged per line, so context from other lines cannot leak in.
                let mut start = 0;
                while start < toks.len() {
                    let line = toks[start].line;
                    let end = toks[start..]
                        .iter()
                        .position(|t| t.line != line)
                        .map_or(toks.len(), |n| start + n);
                    let diff_line = &hunk.lines[line];
                    if diff_line.kind == changed {
                        let line_toks: Vec<Tok> =
                            toks[start..end].iter().map(|t| t.tok.clone()).collect();
                        for i in 0..line_toks.len() {
                            for name in hits(&line_toks, i) {
                                note(
                                    name,
                                    format!(
                                        "`{}` at {}:{}",
                                        line_toks[i].text(),
                                        file.path,
                                        diff_line.line
                                    ),
                                );
                            }
                        }
                    }
                    start = end;
                }
            }
        }
    }
    let lines = stats.added + stats.removed;
    if lines > LARGE_LINES || stats.files > LARGE_FILES {
        note(
            "size",
            format!("{lines} changed lines in {} files", stats.files),
        );
    }
    let mut keep = 1.0f32;
    let mut reasons = Vec::new();
    for (category, place) in CATEGORIES.iter().zip(first) {
        if let Some(place) = place {
            keep *= 1.0 - category.weight;
            reasons.push(format!(
                "{} (+{:.2}): {}: {place}",
                category.name, category.weight, category.what
            ));
        }
    }
    // Rounded so that the score reads the same in review.json as in the terminal.
    let score = ((1.0 - keep) * 1000.0).round() / 1000.0;
    Risk {
        score: score.clamp(0.0, 1.0),
        reasons,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::testing::*;
    use super::super::{evaluate, Review};
    use super::*;
    use crate::config::PolicySpec;

    fn open() -> PolicySpec {
        let mut s = spec();
        s.allow = vec!["**".into()];
        s
    }

    fn risk(lines: &[&str]) -> Risk {
        evaluate(&diff("src/drv.c", &[], lines), &open()).risk
    }

    fn categories(r: &Risk) -> Vec<&str> {
        r.reasons
            .iter()
            .map(|r| r.split(' ').next().unwrap())
            .collect()
    }

    #[test]
    fn each_category_is_recognised() {
        let cases: &[(&str, &str)] = &[
            ("void USART1_IRQHandler(void) {", "interrupt"),
            ("void HardFault_Handler(void)", "interrupt"),
            ("ISR(TIMER1_COMPA_vect) {", "interrupt"),
            ("void __attribute__((interrupt)) tick(void);", "interrupt"),
            ("NVIC_EnableIRQ(USART1_IRQn);", "interrupt"),
            ("__disable_irq();", "critical_section"),
            ("taskENTER_CRITICAL();", "critical_section"),
            ("__asm volatile (\"cpsid i\");", "critical_section"),
            ("USART1->CR1 |= 1;", "register"),
            ("*(volatile uint32_t *)0x40011004 = c;", "register"),
            ("#define UART0_BASE 0x40004000u", "register"),
            ("SystemClock_Config();", "clock_power"),
            ("RCC->AHB1ENR |= RCC_AHB1ENR_GPIOAEN;", "clock_power"),
            ("__HAL_RCC_GPIOA_CLK_ENABLE();", "clock_power"),
            ("while (!PLL_ready()) {}", "clock_power"),
            ("__WFI();", "clock_power"),
            ("SCB->SCR |= SCB_SCR_SLEEPDEEP_Msk;", "clock_power"),
            ("extern uint32_t _estack;", "linker_symbol"),
            (
                "for (p = &__bss_start__; p < &__bss_end__; p++)",
                "linker_symbol",
            ),
            ("__DSB();", "barrier"),
            ("__asm__ volatile (\"\" ::: \"memory\");", "barrier"),
            ("HAL_DMA_Start(&hdma, src, dst, n);", "dma"),
            ("dma_config(chan, &cfg);", "dma"),
            ("static volatile int ready;", "volatile"),
            ("__asm(\"nop\");", "inline_asm"),
        ];
        for (line, category) in cases {
            let r = risk(&[line]);
            assert!(categories(&r).contains(category), "{line}: {:?}", r.reasons);
            assert!(r.score > 0.0 && r.score <= 1.0, "{line}");
        }
    }

    #[test]
    fn plain_code_carries_no_risk() {
        for line in [
            "uint16_t crc = 0xFFFFu;",
            "value = ((value >> 1) & 0x55555555u) | ((value & 0x55555555u) << 1);",
            "TEST_ASSERT_EQUAL_HEX32(0xCBF43926, crc32(in, 9));",
            "/* USART1_IRQHandler is not touched here */",
            "p->len = n;",
            "k_sleep(K_MSEC(10));",
        ] {
            let r = risk(&[line]);
            assert_eq!(r, Risk::default(), "{line}");
        }
    }

    #[test]
    fn a_hunk_inside_a_handler_is_risky() {
        let d = "--- a/src/uart.c\n+++ b/src/uart.c\n@@ -40,2 +40,2 @@ void USART1_IRQHandler(void)\n {\n-    n++;\n+    n += 2;\n";
        let r = evaluate(d, &open()).risk;
        assert_eq!(categories(&r), vec!["interrupt"]);
        assert!(r.reasons[0].contains("inside `void USART1_IRQHandler(void)` at src/uart.c:41"));
    }

    #[test]
    fn score_combines_categories_once_each_and_stays_in_bounds() {
        let one = risk(&["__disable_irq();"]);
        assert_eq!(one.score, 0.25);
        let twice = risk(&["__disable_irq();", "__enable_irq();"]);
        assert_eq!(twice.score, 0.25, "a category counts once");
        let two = risk(&["__disable_irq();", "__DSB();"]);
        assert!(
            (two.score - 0.4).abs() < 1e-6,
            "1 - 0.75 * 0.8: {}",
            two.score
        );
        let everything: Vec<String> = (0..40)
            .map(|i| {
                format!(
                    "USART{i}->CR1 = 1; __disable_irq(); __DSB(); _estack; SystemInit(); \
                     DMA1->x; volatile int v; __asm(\"\"); ISR(x);"
                )
            })
            .collect();
        let refs: Vec<&str> = everything.iter().map(String::as_str).collect();
        let all = risk(&refs);
        assert!(all.score > 0.9 && all.score <= 1.0, "{}", all.score);
        assert!(categories(&all).contains(&"size"));
        let again = risk(&refs);
        assert_eq!(all, again, "deterministic");
    }

    #[test]
    fn reasons_name_the_place_and_weight() {
        let r = risk(&["x = 1;", "USART1->CR1 |= 1;"]);
        assert_eq!(
            r.reasons,
            vec!["register (+0.25): memory-mapped register access: `CR1` at src/drv.c:12"]
        );
    }

    #[test]
    fn lifted_guarded_paths_add_risk() {
        let mut s = open();
        s.allow_builtin = vec![BuiltinDeny::Linker];
        let r: Review = evaluate(&diff("boards/link.ld", &["a"], &["b"]), &s);
        assert_eq!(categories(&r.risk), vec!["guarded_path"]);
        assert_eq!(r.risk.score, 0.3);
    }

    #[test]
    fn weights_are_in_range() {
        for c in CATEGORIES {
            assert!(c.weight > 0.0 && c.weight < 1.0, "{}", c.name);
        }
    }
}
