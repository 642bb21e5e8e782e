//! `privq serve upload`: relays the upload frames a device printed (`privq-frame`
//! lines, `docs/src/report-format.md`) to a running collector, the way a gateway between
//! serial-attached devices and `privq serve` would.
//!
//! Every input is read and every frame line decoded before anything is sent, so a
//! malformed line (or one longer than [`MAX_LINE`]) fails the run with nothing
//! uploaded. Frames go in batches of at
//! most [`MAX_BATCH_FRAMES`] frames and [`MAX_BATCH_BYTES`]; a batch whose request
//! fails (connection error, a 5xx or 408 answer) is resent, which is safe because
//! the collector acknowledges a resent frame as `duplicate` and counts it once.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use privq_collector::client::Client;
use privq_collector::http::{MAX_BATCH_BYTES, MAX_BATCH_FRAMES, push_batch};
use privq_core::upload::peek_header;
use privq_host::ldp::intake::Outcome;

use super::CliError;

/// Options of `privq serve upload`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Example:
  privq serve upload --server 127.0.0.1:8080 device-17.log

Lines other than `privq-frame … hex=…` are skipped. Prints one line per frame that was
not acknowledged (on standard error) and a summary (on standard output).
Exit codes: 0 if every frame was acknowledged (accepted, or a duplicate of an accepted
frame), 3 if the collector rejected or refused some, 4 if the input holds no frame line,
2 if an input is malformed (nothing is sent) or the collector could not be reached.
Files are read whole before sending: relay a live serial port by rotating its log.")]
pub struct UploadArgs {
    /// The collector's address.
    #[arg(long, value_name = "ADDR")]
    pub server: SocketAddr,
    /// Files of device output (`-`: standard input).
    #[arg(value_name = "FILE", required = true)]
    pub input: Vec<PathBuf>,
    /// Seconds a request may take in all (at most a day).
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub timeout: u64,
    /// Times a batch is sent before giving up when the request fails.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub attempts: u32,
}

/// The longest frame a batch entry holds (its length is a u16).
const MAX_FRAME: usize = u16::MAX as usize;

/// The longest line read: a frame line of the longest frame, with room for its
/// other fields and a logger's prefix.
const MAX_LINE: u64 = 2 * MAX_FRAME as u64 + 4096;

/// One frame line of the input.
struct Line {
    /// `file:line`, for messages.
    at: String,
    frame: Vec<u8>,
}

/// The frame of a `privq-frame` line (after any prefix a logger added, such as a
/// timestamp), or `None` for any other line.
fn frame_of(line: &str) -> Option<Result<Vec<u8>, String>> {
    let at = line.find("privq-frame ")?;
    let rest = line.get(at + "privq-frame ".len()..).unwrap_or_default();
    let Some(hex) = rest.split_whitespace().find_map(|t| t.strip_prefix("hex=")) else {
        return Some(Err("a privq-frame line without hex=".into()));
    };
    if hex.len() % 2 != 0 || hex.len() > 2 * MAX_FRAME {
        return Some(Err(format!(
            "hex= of {} digits is not a frame of whole bytes up to {MAX_FRAME}",
            hex.len()
        )));
    }
    let digit = |b: u8| char::from(b).to_digit(16);
    let bytes: Option<Vec<u8>> = hex
        .as_bytes()
        .chunks(2)
        .map(|pair| match pair {
            [hi, lo] => Some(u8::try_from(digit(*hi)? << 4 | digit(*lo)?).ok()?),
            _ => None,
        })
        .collect();
    Some(bytes.ok_or_else(|| "hex= holds a character that is not a hex digit".into()))
}

fn read_lines(path: &Path, stdin: &mut dyn BufRead, out: &mut Vec<Line>) -> Result<(), CliError> {
    let mut file;
    let reader: &mut dyn BufRead = if path.as_os_str() == "-" {
        stdin
    } else {
        file = BufReader::new(std::fs::File::open(path).map_err(|e| CliError::file(path, e))?);
        &mut file
    };
    let mut buf = Vec::new();
    let mut number = 0;
    loop {
        buf.clear();
        let n = (&mut *reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut buf)
            .map_err(|e| CliError::file(path, e))?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        if buf.len() as u64 == MAX_LINE && buf.last() != Some(&b'\n') {
            return Err(CliError::Run(
                format!(
                    "{}:{number}: a line longer than {MAX_LINE} bytes; nothing was uploaded",
                    path.display()
                )
                .into(),
            ));
        }
        let text = String::from_utf8_lossy(&buf);
        let at = format!("{}:{number}", path.display());
        match frame_of(text.trim_end()) {
            None => {}
            Some(Ok(frame)) => out.push(Line { at, frame }),
            Some(Err(why)) => {
                return Err(CliError::Run(
                    format!("{at}: {why}; nothing was uploaded").into(),
                ));
            }
        }
    }
}

/// Batches of frame lines: at most `MAX_BATCH_FRAMES` frames and `MAX_BATCH_BYTES`
/// (each entry is a u16 length and the frame).
fn batches(lines: &[Line]) -> Vec<(std::ops::Range<usize>, Vec<u8>)> {
    let mut out = Vec::new();
    let (mut start, mut body) = (0, Vec::new());
    for (i, l) in lines.iter().enumerate() {
        let full =
            i - start == MAX_BATCH_FRAMES || body.len() + 2 + l.frame.len() > MAX_BATCH_BYTES;
        if full {
            out.push((start..i, std::mem::take(&mut body)));
            start = i;
        }
        // frame_of keeps every frame within MAX_FRAME, so this cannot fail.
        let _ = push_batch(&mut body, &l.frame);
    }
    if start < lines.len() {
        out.push((start..lines.len(), body));
    }
    out
}

/// Posts `body` until the collector answers with statuses, up to `attempts` times.
fn post(
    client: &mut Client,
    body: &[u8],
    frames: usize,
    attempts: u32,
    stderr: &mut dyn Write,
) -> Result<Vec<serde_json::Value>, CliError> {
    let mut last = String::new();
    for attempt in 0..attempts.max(1) {
        if attempt > 0 {
            writeln!(stderr, "privq serve upload: {last}; resending").map_err(CliError::Io)?;
            std::thread::sleep(Duration::from_millis(100 << attempt.min(6)));
        }
        match client.post("/v1/frames", body) {
            Ok((200, answer)) => {
                let results = serde_json::from_slice::<serde_json::Value>(&answer)
                    .ok()
                    .and_then(|v| v.get("results")?.as_array().cloned())
                    .filter(|r| r.len() == frames)
                    .ok_or_else(|| {
                        CliError::Run(
                            format!("the collector's answer does not hold {frames} statuses")
                                .into(),
                        )
                    })?;
                return Ok(results);
            }
            // 408: the body reached the collector too slowly; nothing was stored.
            Ok((code, _)) if code >= 500 || code == 408 => {
                last = format!("the collector answered {code}");
            }
            Ok((code, answer)) => {
                let message = serde_json::from_slice::<serde_json::Value>(&answer)
                    .ok()
                    .and_then(|v| Some(v.get("error")?.as_str()?.to_string()))
                    .unwrap_or_default();
                return Err(CliError::Run(
                    format!("the collector refused the batch ({code}): {message}").into(),
                ));
            }
            Err(e) => last = format!("no answer from the collector: {e}"),
        }
    }
    Err(CliError::Run(
        format!("{last}, after {attempts} attempts").into(),
    ))
}

/// Whether an acknowledgement names `frame`'s replay key (device, epoch, sequence):
/// statuses are matched to frames by position, so this catches a collector that
/// answers in another order.
fn names_its_frame(status: &serde_json::Value, frame: &[u8]) -> bool {
    let Ok(h) = peek_header(frame) else {
        return false;
    };
    let number = |k: &str| status.get(k).and_then(serde_json::Value::as_u64);
    number("device") == Some(h.device)
        && number("epoch") == Some(u64::from(h.epoch))
        && number("sequence") == Some(u64::from(h.sequence))
}

/// Runs `privq serve upload`.
pub fn upload(
    args: &UploadArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let mut lines = Vec::new();
    for path in &args.input {
        read_lines(path, stdin, &mut lines)?;
    }
    let mut client = Client::new(args.server, Duration::from_secs(args.timeout.max(1)));
    let (mut accepted, mut reports, mut duplicate, mut rejected, mut refused) = (0, 0, 0, 0, 0);
    for (range, body) in batches(&lines) {
        let sent = &lines[range];
        let results = post(&mut client, &body, sent.len(), args.attempts, stderr).map_err(|e| {
            CliError::Run(
                format!("{e} ({accepted} frames accepted and {duplicate} duplicates before)")
                    .into(),
            )
        })?;
        for (line, status) in sent.iter().zip(&results) {
            let field = |k: &str| status.get(k).and_then(serde_json::Value::as_str);
            let acknowledged = matches!(field("status"), Some("accepted" | "duplicate"));
            if acknowledged && !names_its_frame(status, &line.frame) {
                return Err(CliError::Run(
                    format!(
                        "{}: the collector acknowledged another replay key than this frame's \
                         ({status}); {accepted} frames accepted and {duplicate} duplicates before",
                        line.at
                    )
                    .into(),
                ));
            }
            match field("status") {
                Some("accepted") => {
                    accepted += 1;
                    reports += status
                        .get("reports")
                        .and_then(serde_json::Value::as_u64)
                        .unwrap_or(0);
                }
                Some("duplicate") => duplicate += 1,
                other => {
                    if other == Some("refused") {
                        refused += 1;
                    } else {
                        rejected += 1;
                    }
                    let who = peek_header(&line.frame).map_or(String::new(), |h| {
                        format!(
                            " device {} epoch {} sequence {}",
                            h.device, h.epoch, h.sequence
                        )
                    });
                    writeln!(
                        stderr,
                        "privq serve upload: {}{who}: {} {} ({})",
                        line.at,
                        other.unwrap_or("?"),
                        field("reason").unwrap_or("?").escape_debug(),
                        field("detail").unwrap_or("").escape_debug()
                    )
                    .map_err(CliError::Io)?;
                }
            }
        }
    }
    writeln!(
        stdout,
        "uploaded {} frames to {}: {accepted} accepted ({reports} reports), {duplicate} duplicate, \
         {rejected} rejected, {refused} refused",
        lines.len(),
        args.server
    )
    .map_err(CliError::Io)?;
    if lines.is_empty() {
        writeln!(
            stderr,
            "privq serve upload: no privq-frame line in the input (is it a device's output?)"
        )
        .map_err(CliError::Io)?;
        return Err(CliError::Outcome(Outcome::NothingUsable));
    }
    if rejected + refused > 0 {
        return Err(CliError::Outcome(Outcome::Rejected));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_lines_decode_and_other_lines_are_skipped() {
        assert_eq!(frame_of("privq-report query=1 hex=00"), None);
        assert_eq!(
            frame_of("[12:00:01] privq-frame device=2 hex=0a").unwrap(),
            Ok(vec![10])
        );
        assert!(frame_of("privq-frame hex=+f+f").unwrap().is_err());
        assert_eq!(
            frame_of("privq-frame fleet=1 device=2 epoch=0 seq=0 hex=5051ff").unwrap(),
            Ok(vec![0x50, 0x51, 0xff])
        );
        assert!(frame_of("privq-frame device=2").unwrap().is_err());
        assert!(frame_of("privq-frame hex=505").unwrap().is_err());
        assert!(frame_of("privq-frame hex=50zz").unwrap().is_err());
        let long = format!("privq-frame hex={}", "00".repeat(MAX_FRAME + 1));
        assert!(frame_of(&long).unwrap().is_err());
    }

    #[test]
    fn an_acknowledgement_must_name_its_frame() {
        use privq_core::upload::{DeviceKey, FrameWriter};
        let mut frame = vec![0u8; 128];
        let mut w = FrameWriter::new(&mut frame, 7, 1, 2).unwrap();
        w.push(&[1, 8, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 1]).unwrap();
        let n = w.finish(&DeviceKey::new([3; 32])).unwrap();
        frame.truncate(n);
        let status = |device: u64| serde_json::json!({"status": "accepted", "device": device, "epoch": 1, "sequence": 2});
        assert!(names_its_frame(&status(7), &frame));
        assert!(!names_its_frame(&status(8), &frame));
        assert!(!names_its_frame(&status(7), &frame[..10]));
    }

    #[test]
    fn batches_respect_the_frame_and_byte_limits() {
        let line = |n: usize| Line {
            at: "x".into(),
            frame: vec![0; n],
        };
        let many: Vec<Line> = (0..MAX_BATCH_FRAMES + 5).map(|_| line(10)).collect();
        let b = batches(&many);
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].0.len(), b[1].0.len()), (MAX_BATCH_FRAMES, 5));
        let big: Vec<Line> = (0..40).map(|_| line(MAX_FRAME)).collect();
        let b = batches(&big);
        assert_eq!(b.len(), 3, "15 frames of 64 KiB per MiB");
        assert!(b.iter().all(|(_, body)| body.len() <= MAX_BATCH_BYTES));
        assert_eq!(b.iter().map(|(r, _)| r.len()).sum::<usize>(), 40);
    }
}
