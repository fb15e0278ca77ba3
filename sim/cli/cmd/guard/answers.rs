//! Answers written to stdout on a thread of its own, in blocks, so writing them costs the
//! answering thread only a hand-over.

use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use anyhow::{Context, Result, anyhow};

use crate::out::BrokenPipe;

/// Answers are handed over once a block holds this many bytes. Each hand-over can wake the
/// writer, which costs the answering thread a few microseconds on a virtual machine: 256 KiB
/// blocks make that about 100 times for a 200,000-line stream instead of 400.
pub const BLOCK: usize = 1 << 18;

enum Out {
    Write(Vec<u8>),
    Flush,
}

/// The answering side of the writing thread.
pub struct Answers {
    tx: Option<SyncSender<Out>>,
    /// Emptied blocks coming back.
    spares: Receiver<Vec<u8>>,
    writer: Option<JoinHandle<Result<()>>>,
}

fn io(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        BrokenPipe.into()
    } else {
        anyhow::Error::new(e).context("writing stdout")
    }
}

impl Answers {
    pub fn spawn() -> Result<Answers> {
        // Two blocks wait at most: memory stays bounded when stdout is slow.
        let (tx, rx) = sync_channel(2);
        let (spare, spares) = sync_channel(4);
        let writer = std::thread::Builder::new()
            .name("guard-stdout".into())
            .spawn(move || write_blocks(&rx, &spare))
            .context("starting the stdout writer")?;
        Ok(Answers {
            tx: Some(tx),
            spares,
            writer: Some(writer),
        })
    }

    /// A buffer for the next answers.
    pub fn block(&self) -> Vec<u8> {
        self.spares
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(2 * BLOCK))
    }

    /// Hands `buf`'s answers over (if any), leaving it empty.
    pub fn send(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let full = std::mem::replace(buf, self.block());
        self.put(Out::Write(full))
    }

    /// Hands `buf`'s answers over and has everything written so far flushed: the input has
    /// nothing more yet, and a coprocess is waiting for its answer.
    pub fn flush(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        self.send(buf)?;
        self.put(Out::Flush)
    }

    fn put(&mut self, out: Out) -> Result<()> {
        let sent = self.tx.as_ref().map(|tx| tx.send(out).is_ok());
        if sent == Some(true) {
            return Ok(());
        }
        // The writer stopped on an error: that error is the answer.
        self.finish(Vec::new())
            .and(Err(anyhow!("the stdout writer stopped")))
    }

    /// Writes `buf`'s answers and everything before them, flushes, and waits for the writer.
    pub fn finish(&mut self, mut buf: Vec<u8>) -> Result<()> {
        if !buf.is_empty()
            && let Some(tx) = &self.tx
        {
            let _ = tx.send(Out::Write(std::mem::take(&mut buf)));
        }
        self.tx = None;
        match self.writer.take() {
            Some(w) => w
                .join()
                .unwrap_or_else(|_| Err(anyhow!("the stdout writer panicked"))),
            None => Ok(()),
        }
    }
}

fn write_blocks(rx: &Receiver<Out>, spare: &SyncSender<Vec<u8>>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for msg in rx {
        match msg {
            Out::Write(mut block) => {
                out.write_all(&block).map_err(io)?;
                block.clear();
                if block.capacity() <= 4 * BLOCK {
                    let _ = spare.try_send(block);
                }
            }
            Out::Flush => out.flush().map_err(io)?,
        }
    }
    out.flush().map_err(io)
}
