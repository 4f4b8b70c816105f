//! One terminal's process: a real shell on a real pseudo-terminal (`portable-pty`), its
//! input written by a thread of its own (a full pty never blocks the host), its output
//! read by another and handed to the host as it comes, bounded in time and size by the
//! host.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc;

use portable_pty::{native_pty_system, ChildKiller, CommandBuilder, MasterPty, PtySize};

/// A shell with OSC 633 shell integration: the prompt reports the last command's exit code
/// and the working directory, and `PS0` the command line as it starts (bash 4.4 and later).
const BASH: &str = "/bin/bash";
const PS0: &str = "\\e]633;E;$(fc -ln -0 2>/dev/null)\\a\\e]633;C\\a";
const PROMPT_COMMAND: &str = "printf '\\033]633;D;%s\\007\\033]633;P;Cwd=%s\\007' \"$?\" \"$PWD\"";

/// The running process of a terminal, as the host holds it.
pub struct Pty {
    input: mpsc::Sender<Vec<u8>>,
    master: Box<dyn MasterPty + Send>,
    killer: Box<dyn ChildKiller + Send + Sync>,
}

impl std::fmt::Debug for Pty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pty")
    }
}

/// What the output thread is handed: the stream to read, and the child to wait for.
pub struct Output {
    pub reader: Box<dyn Read + Send>,
    pub child: Box<dyn portable_pty::Child + Send + Sync>,
}

/// Why a terminal could not start.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SpawnError(String);

fn failed(what: &str, error: impl std::fmt::Display) -> SpawnError {
    SpawnError(format!("{what}: {error}"))
}

impl Pty {
    /// Starts the shell in `cwd` on a `cols` × `rows` pty: bash with shell integration where
    /// there is one, else `/bin/sh` without it.
    pub fn spawn(cwd: &Path, cols: u16, rows: u16) -> Result<(Pty, Output), SpawnError> {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|e| failed("opening a pty", e))?;
        let mut command = if Path::new(BASH).exists() {
            let mut bash = CommandBuilder::new(BASH);
            bash.args(["--noprofile", "--norc", "--noediting", "-i"]);
            bash
        } else {
            let mut sh = CommandBuilder::new("/bin/sh");
            sh.arg("-i");
            sh
        };
        // The shell gets none of the host's environment (its credentials among it): a
        // search path, a home, a terminal type and a prompt.
        command.env_clear();
        if Path::new(BASH).exists() {
            command.env("PS0", PS0);
            command.env("PROMPT_COMMAND", PROMPT_COMMAND);
        }
        command.env("PATH", "/usr/local/bin:/usr/bin:/bin");
        command.env("HOME", cwd);
        command.env("LANG", "C.UTF-8");
        command.env("PS1", "$ ");
        command.env("TERM", "xterm-256color");
        command.env("HISTFILE", "/dev/null");
        command.cwd(cwd);
        let child = pair
            .slave
            .spawn_command(command)
            .map_err(|e| failed("starting the shell", e))?;
        // The slave end belongs to the shell now: the host keeps only the master, so the
        // reader sees the end of the stream once the shell (and its children) exit.
        drop(pair.slave);
        let reader = pair
            .master
            .try_clone_reader()
            .map_err(|e| failed("reading the pty", e))?;
        let writer = pair
            .master
            .take_writer()
            .map_err(|e| failed("writing the pty", e))?;
        let (input, queue) = mpsc::channel::<Vec<u8>>();
        std::thread::Builder::new()
            .name("ahpspec-pty-input".into())
            .spawn(move || write_input(writer, queue))
            .map_err(|e| failed("starting the input thread", e))?;
        let killer = child.clone_killer();
        Ok((
            Pty {
                input,
                master: pair.master,
                killer,
            },
            Output { reader, child },
        ))
    }

    /// Queues `data` for the process's input.
    pub fn write(&self, data: &str) {
        // A closed queue means the process is gone; the terminal says so by its lifecycle.
        let _ = self.input.send(data.as_bytes().to_vec());
    }

    /// Tells the kernel (and so the process, with SIGWINCH) the new size.
    pub fn resize(&self, cols: u16, rows: u16) {
        let _ = self.master.resize(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        });
    }

    /// Ends the process (its output thread then reads the end of the stream).
    pub fn kill(&mut self) {
        let _ = self.killer.kill();
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The input thread: writes each queued chunk until the queue or the pty closes.
fn write_input(mut writer: Box<dyn Write + Send>, queue: mpsc::Receiver<Vec<u8>>) {
    while let Ok(chunk) = queue.recv() {
        if writer
            .write_all(&chunk)
            .and_then(|()| writer.flush())
            .is_err()
        {
            break;
        }
    }
}

/// Text from a byte stream read in chunks: complete UTF-8 characters are handed on, a
/// character cut at a chunk's end waits for the rest, and bytes that are no UTF-8 become
/// U+FFFD.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    carry: Vec<u8>,
}

impl Utf8Stream {
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.carry.extend_from_slice(bytes);
        let cut = match std::str::from_utf8(&self.carry) {
            Ok(_) => self.carry.len(),
            Err(error) if error.error_len().is_none() => error.valid_up_to(),
            Err(_) => self.carry.len(),
        };
        let rest = self.carry.split_off(cut);
        let text = String::from_utf8_lossy(&self.carry).into_owned();
        self.carry = rest;
        text
    }
}

/// How the process ended: its exit code, when it had one.
pub fn exit_code(child: &mut Box<dyn portable_pty::Child + Send + Sync>) -> Option<i64> {
    match child.wait() {
        Ok(status) => Some(i64::from(status.exit_code())),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_cut_between_chunks_wait_for_their_rest() {
        let mut stream = Utf8Stream::default();
        let smile = "🙂".as_bytes();
        assert_eq!(stream.push(&[b'a', smile[0], smile[1]]), "a");
        assert_eq!(stream.push(&smile[2..]), "🙂");
        assert_eq!(stream.push(&[0xff, b'b']), "\u{fffd}b");
    }
}
