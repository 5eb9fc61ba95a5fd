//! Getting ready to flash: the `[flash] command` line with `{elf}`, `{bin}`, `{hex}` expanded
//! (shell-quoted), the `.bin` and `.hex` it asks for (made by `arm-none-eabi-objcopy` when it is
//! installed, else written from the ELF's loadable segments), and what a flasher's output line
//! says about its progress. Running the flasher, and capturing the console meanwhile, is the
//! session's; the gdb method's command file is `gdb`'s.

use super::image;
use crate::config::placeholder;
use crate::dut::DutError;
use crate::process::output::{self, Limits, Stopped, TOOL_OUTPUT_MAX};
use regex::Regex;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

/// The objcopy that knows Arm ELF files, as Debian's gcc-arm-none-eabi installs it.
const OBJCOPY: &str = "arm-none-eabi-objcopy";
/// objcopy converts a firmware image in milliseconds; minutes mean it is stuck.
const OBJCOPY_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether a flash command uses `{name}`.
pub fn uses(command: &str, name: &str) -> bool {
    placeholder::find(command).iter().any(|(_, n)| *n == name)
}

/// Quotes a path for `sh -c`: single quotes, with any single quote closed, escaped, reopened.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The command with its placeholders replaced by quoted paths.
pub fn expand(command: &str, elf: &Path, bin: Option<&Path>, hex: Option<&Path>) -> String {
    let quoted = |p: Option<&Path>| p.map(|p| shell_quote(&p.to_string_lossy()));
    let (elf, bin, hex) = (quoted(Some(elf)), quoted(bin), quoted(hex));
    let mut values = Vec::new();
    for (name, value) in [("elf", &elf), ("bin", &bin), ("hex", &hex)] {
        if let Some(value) = value {
            values.push((name, value.as_str()));
        }
    }
    placeholder::expand(command, &values)
}

/// The `.bin` and `.hex` made for a flash command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Artifacts {
    pub bin: Option<PathBuf>,
    pub hex: Option<PathBuf>,
    /// How they were made, for flash.log.
    pub how: String,
}

/// Writes `<dir>/image.bin` and/or `<dir>/image.hex` from `elf`.
pub async fn prepare(
    elf: &Path,
    dir: &Path,
    want_bin: bool,
    want_hex: bool,
) -> Result<Artifacts, DutError> {
    let mut out = Artifacts::default();
    if !want_bin && !want_hex {
        return Ok(out);
    }
    let wanted = [(want_bin, "binary", "bin"), (want_hex, "ihex", "hex")];
    let mut objcopy_missing = false;
    for (want, format, ext) in wanted {
        if !want {
            continue;
        }
        let path = dir.join(format!("image.{ext}"));
        if !objcopy_missing {
            match objcopy(elf, format, &path).await {
                Ok(()) => {
                    out.how = format!("made with {OBJCOPY}");
                    set(&mut out, ext, path);
                    continue;
                }
                Err(Objcopy::Missing) => objcopy_missing = true,
                Err(Objcopy::Failed(message)) => {
                    return Err(flash_error(format!(
                        "{OBJCOPY} could not make {} from {}: {message}",
                        path.display(),
                        elf.display()
                    )))
                }
            }
        }
        write_ourselves(elf, ext, &path).await?;
        out.how = format!(
            "written by fwfix from the ELF's loadable segments ({OBJCOPY} is not installed)"
        );
        set(&mut out, ext, path);
    }
    Ok(out)
}

fn set(out: &mut Artifacts, ext: &str, path: PathBuf) {
    if ext == "bin" {
        out.bin = Some(path);
    } else {
        out.hex = Some(path);
    }
}

fn flash_error(message: String) -> DutError {
    DutError::Flash {
        method: "command".into(),
        message,
        log: String::new(),
    }
}

enum Objcopy {
    Missing,
    Failed(String),
}

async fn objcopy(elf: &Path, format: &str, out: &Path) -> Result<(), Objcopy> {
    let mut command = tokio::process::Command::new(OBJCOPY);
    command
        .args(["-O", format])
        .arg(elf)
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (mut child, mut guard) = match crate::process::spawn_group(&mut command) {
        Ok(spawned) => spawned,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Objcopy::Missing),
        Err(e) => return Err(Objcopy::Failed(e.to_string())),
    };
    let limits = Limits {
        timeout: OBJCOPY_TIMEOUT,
        cancel: None,
        term_grace: Duration::ZERO,
    };
    let captured = output::capture(&mut child, &mut guard, limits, TOOL_OUTPUT_MAX).await;
    match captured.into_output() {
        Err(Stopped::WaitFailed(e)) => Err(Objcopy::Failed(e.to_string())),
        Err(_) => Err(Objcopy::Failed(format!(
            "no result within {} s",
            OBJCOPY_TIMEOUT.as_secs()
        ))),
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(Objcopy::Failed(format!(
            "{}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))),
    }
}

async fn write_ourselves(elf: &Path, ext: &str, out: &Path) -> Result<(), DutError> {
    let bytes = tokio::fs::read(elf).await.map_err(|source| DutError::Io {
        doing: format!("reading {}", elf.display()),
        source,
    })?;
    let bad = |e: image::ImageError| flash_error(format!("{}: {e}", elf.display()));
    let segments = image::segments(&bytes).map_err(bad)?;
    let contents = if ext == "bin" {
        image::flat_binary(&segments).map_err(bad)?
    } else {
        image::intel_hex(&segments, image::entry_point(&bytes)).into_bytes()
    };
    tokio::fs::write(out, contents)
        .await
        .map_err(|source| DutError::Io {
            doing: format!("writing {}", out.display()),
            source,
        })
}

fn re(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// What a flasher's output line says: the phase (`connect`, `erase`, `program`, `verify`,
/// `reset`, `run`, or `flash` when it does not tell) and a percentage when it shows one.
pub fn progress(line: &str) -> (&'static str, Option<u8>) {
    static PERCENT: OnceLock<Option<Regex>> = OnceLock::new();
    let lower = line.to_ascii_lowercase();
    let phase = if lower.contains("@@fwfix:started@@") {
        "run"
    } else if lower.contains("eras") {
        "erase"
    } else if lower.contains("verif") || lower.contains("compare") {
        "verify"
    } else if [
        "program",
        "writ",
        "download",
        "loading section",
        "load size",
        "transfer rate",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        "program"
    } else if lower.contains("reset") {
        "reset"
    } else if ["connect", "target remote", "remote debugging", "found"]
        .iter()
        .any(|w| lower.contains(w))
    {
        "connect"
    } else {
        "flash"
    };
    let percent = re(&PERCENT, r"(\d{1,3})(?:\.\d+)?\s*%")
        .and_then(|r| r.captures_iter(line).last())
        .and_then(|c| c[1].parse::<u8>().ok())
        .filter(|p| *p <= 100);
    (phase, percent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_used() {
        let c = "st-flash --reset write {bin} 0x08000000";
        assert!(uses(c, "bin"));
        assert!(!uses(c, "hex"));
    }

    #[test]
    fn expansion_quotes_paths() {
        let got = expand(
            "tool {elf} {bin} {hex}",
            Path::new("/r/my fw.elf"),
            Some(Path::new("/r/it's.bin")),
            Some(Path::new("/r/image.hex")),
        );
        assert_eq!(got, r"tool '/r/my fw.elf' '/r/it'\''s.bin' '/r/image.hex'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn progress_phases_and_percentages() {
        assert_eq!(progress("Erasing sector 3"), ("erase", None));
        assert_eq!(
            progress("Flash written and verified! jolly good!"),
            ("verify", None)
        );
        assert_eq!(
            progress("Loading section .text, size 0x900 lma 0x0"),
            ("program", None)
        );
        assert_eq!(progress("[=====     ] 45%"), ("flash", Some(45)));
        assert_eq!(
            progress("Programming 12.5% then 99.9 %"),
            ("program", Some(99))
        );
        assert_eq!(progress("@@fwfix:started@@"), ("run", None));
        assert_eq!(
            progress("Remote debugging using 127.0.0.1:3333"),
            ("connect", None)
        );
        assert_eq!(progress("odd 250%"), ("flash", None));
    }

    #[tokio::test]
    async fn nothing_is_made_when_nothing_is_asked() {
        let dir = tempfile::tempdir().unwrap();
        let a = prepare(Path::new("missing.elf"), dir.path(), false, false)
            .await
            .unwrap();
        assert_eq!(a, Artifacts::default());
    }
}
