//! Reading a file a person named (a board or profile file, a patch, a log to triage) so that any
//! path gets a bounded answer. A configuration file or a patch must be a regular file, read up to
//! a cap: a FIFO is refused before it is opened (opening one for reading blocks until a writer
//! comes, where no signal handler can end the wait), and so is a device (`/dev/zero` never ends)
//! or a directory. A log to triage may also be a stream (`fwfix triage /dev/stdin`, a FIFO, a
//! device), opened so that it never waits for a writer; its reader bounds how much it takes. It
//! must not interpret what it reads.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a named file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is {kind}, not a regular file", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    /// The file holds more than `cap` bytes; `head` is its first `cap` bytes, for a location.
    #[error("{} is larger than {cap} bytes", path.display())]
    TooLarge {
        path: PathBuf,
        cap: u64,
        head: Vec<u8>,
    },
}

/// What a file that is not a regular one is, as a person would call it.
pub fn non_regular_kind(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

/// The metadata of `path` (links followed) when it is a regular file.
pub fn regular(path: &Path) -> Result<Metadata, InputError> {
    let meta = std::fs::metadata(path).map_err(|source| InputError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    match non_regular_kind(&meta) {
        None => Ok(meta),
        Some(kind) => Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind,
        }),
    }
}

/// The whole of the regular file at `path`, at most `cap` bytes of it.
pub fn read_regular(path: &Path, cap: u64) -> Result<Vec<u8>, InputError> {
    let io_error = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    regular(path)?;
    // Checked again on the open file: the path may have been replaced by a FIFO meanwhile, and
    // O_NONBLOCK keeps even that open from waiting for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(io_error)?;
    if let Some(kind) = non_regular_kind(&file.metadata().map_err(io_error)?) {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind,
        });
    }
    let mut bytes = Vec::new();
    File::take(file, cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > cap {
        bytes.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            cap,
            head: bytes,
        });
    }
    Ok(bytes)
}

/// A log to read as a stream: a regular file, a pipe or FIFO, or a device, but not a directory.
/// The open never waits for a FIFO's writer (a FIFO nobody writes to reads as empty); once open,
/// reads wait for data as usual.
pub fn open_stream(path: &Path) -> Result<File, InputError> {
    let io_error = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(io_error)?;
    let meta = file.metadata().map_err(io_error)?;
    if meta.is_dir() {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind: "a directory",
        });
    }
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = fcntl(&file, FcntlArg::F_GETFL).map_err(|e| io_error(e.into()))?;
    let blocking = OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK;
    fcntl(&file, FcntlArg::F_SETFL(blocking)).map_err(|e| io_error(e.into()))?;
    Ok(file)
}

/// Standard input as a log stream (`fwfix triage -`): a handle of its own on descriptor 0.
pub fn stdin_stream() -> Result<File, InputError> {
    use std::os::fd::AsFd;
    io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(File::from)
        .map_err(|source| InputError::Io {
            path: PathBuf::from("standard input"),
            source,
        })
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_text(path: &Path, cap: u64) -> Result<String, InputError> {
    String::from_utf8(read_regular(path, cap)?).map_err(|e| InputError::Io {
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_device_and_a_directory_are_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("board.toml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        for (path, kind) in [
            (fifo.as_path(), "a FIFO (named pipe)"),
            (Path::new("/dev/zero"), "a character device"),
            (dir.path(), "a directory"),
        ] {
            match read_regular(path, 100) {
                Err(InputError::NotRegular { kind: k, .. }) => assert_eq!(k, kind),
                other => panic!("{}: {other:?}", path.display()),
            }
        }
    }

    #[test]
    fn a_file_over_the_cap_is_refused_with_its_head() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.toml");
        std::fs::write(&path, "x".repeat(11)).unwrap();
        match read_regular(&path, 10) {
            Err(InputError::TooLarge { cap, head, .. }) => {
                assert_eq!((cap, head.len()), (10, 10));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(read_regular(&path, 11).unwrap().len(), 11);
        assert!(matches!(
            read_regular(&dir.path().join("missing"), 10),
            Err(InputError::Io { .. })
        ));
    }
}
