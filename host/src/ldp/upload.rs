//! Upload frames on the host (`docs/src/upload-frame.md`): authentication with each
//! device's key, one [`FrameReject`] per rejection class, and the replay key a
//! collector stores so that a resent frame is counted once.
//!
//! Verification is [`privq_core::upload::open`] (framing, then the HMAC-SHA-256 tag in
//! constant time, then the body and every report); this module adds the key lookup,
//! the host's reject names and an owned result.
//!
//! ```
//! use privq_core::upload::{DeviceKey, FrameWriter};
//! use privq_host::ldp::upload::{verify_frame, Admission, FrameReject, SeenFrames};
//!
//! let key = DeviceKey::new([9; 32]); // a fixed key: tests only
//! let mut buf = [0u8; 128];
//! let mut w = FrameWriter::new(&mut buf, 17, 2, 0)?;
//! w.push(&[1, 8, 2, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1])?;
//! let n = w.finish(&key)?;
//! let keys = |device: u64| (device == 17).then(|| key.clone());
//! let frame = verify_frame(&buf[..n], keys)?;
//! assert_eq!((frame.device, frame.epoch, frame.sequence, frame.reports.len()), (17, 2, 0, 1));
//! let mut seen = SeenFrames::default();
//! assert_eq!(seen.admit(&frame), Admission::New);
//! assert_eq!(seen.admit(&frame), Admission::Duplicate); // a retry: acknowledge, count once
//! assert_eq!(verify_frame(&buf[..n], |_| None), Err(FrameReject::UnknownDevice));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;

use privq_core::upload::{self, DeviceKey, FrameError, TAG_LEN};
use serde::{Deserialize, Serialize};

use super::decode::RejectReason;

/// Why an upload frame was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FrameReject {
    /// Shorter than the 25-byte header or than its length field.
    #[error("the frame is truncated")]
    Truncated,
    /// Does not start with `PQUF`.
    #[error("the frame does not start with PQUF")]
    Magic,
    /// Unsupported frame version.
    #[error("the frame has an unsupported version")]
    Version,
    /// Length field below 57 (header and tag).
    #[error("the frame's length field is too small")]
    Length,
    /// Bytes after the length the frame declares.
    #[error("bytes follow the frame")]
    TrailingBytes,
    /// No key is known for the frame's device id.
    #[error("no key is known for the frame's device")]
    UnknownDevice,
    /// The HMAC-SHA-256 tag does not verify.
    #[error("the frame's HMAC-SHA-256 tag does not verify")]
    Mac,
    /// Authenticated, but it holds no report.
    #[error("the frame holds no report")]
    Count,
    /// Authenticated, but the reports do not fill the body exactly.
    #[error("the frame's reports do not fill its body exactly")]
    BodyLength,
    /// Authenticated, but report `index` is malformed (`reason`, as for report files).
    #[error("the frame's report {index} is malformed: {reason}")]
    Report {
        /// Position of the report in the frame.
        index: u16,
        /// The report's rejection class.
        #[source]
        reason: RejectReason,
    },
}

impl FrameReject {
    /// The class of a core [`FrameError`].
    pub fn from_core(e: FrameError) -> FrameReject {
        match e {
            FrameError::Truncated => FrameReject::Truncated,
            FrameError::Magic => FrameReject::Magic,
            FrameError::Version => FrameReject::Version,
            FrameError::Length => FrameReject::Length,
            FrameError::TrailingBytes => FrameReject::TrailingBytes,
            FrameError::Mac => FrameReject::Mac,
            FrameError::Count => FrameReject::Count,
            FrameError::BodyLength => FrameReject::BodyLength,
            FrameError::Report { index, error } => FrameReject::Report {
                index,
                reason: RejectReason::from_core(error),
            },
            // A future core class: not known to come after the tag was verified, so a
            // transient refusal (a collector never tags it, and a device keeps the frame),
            // never a permanent rejection of bytes that may not be authenticated.
            _ => FrameReject::Mac,
        }
    }

    /// A short snake_case name for counters and logs.
    pub fn name(self) -> &'static str {
        match self {
            FrameReject::Truncated => "frame_truncated",
            FrameReject::Magic => "frame_bad_magic",
            FrameReject::Version => "frame_wrong_version",
            FrameReject::Length => "frame_bad_length",
            FrameReject::TrailingBytes => "frame_trailing_bytes",
            FrameReject::UnknownDevice => "frame_unknown_device",
            FrameReject::Mac => "frame_bad_mac",
            FrameReject::Count => "frame_no_report",
            FrameReject::BodyLength => "frame_bad_body_length",
            FrameReject::Report { .. } => "frame_bad_report",
        }
    }
}

/// A verified frame: its header fields, tag and reports (each a wire-format report
/// that passed [`privq_core::report::decode`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedFrame {
    /// The sending device.
    pub device: u64,
    /// The collection epoch of the reports.
    pub epoch: u32,
    /// The device's frame sequence number.
    pub sequence: u32,
    /// The frame's tag (identifies its exact bytes under the device key).
    pub tag: [u8; TAG_LEN],
    /// The reports, in order.
    pub reports: Vec<Vec<u8>>,
}

impl VerifiedFrame {
    /// The replay key `(device, epoch, sequence)`.
    pub fn replay_key(&self) -> (u64, u32, u32) {
        (self.device, self.epoch, self.sequence)
    }
}

/// Verifies one frame with the key `keys` gives for its device id
/// ([`FrameReject::UnknownDevice`] if none). The device id is read before
/// authentication only to choose the key. Never panics.
pub fn verify_frame(
    bytes: &[u8],
    keys: impl FnOnce(u64) -> Option<DeviceKey>,
) -> Result<VerifiedFrame, FrameReject> {
    let header = upload::peek_header(bytes).map_err(FrameReject::from_core)?;
    let key = keys(header.device).ok_or(FrameReject::UnknownDevice)?;
    let frame = upload::open(bytes, &key).map_err(FrameReject::from_core)?;
    let mut tag = [0u8; TAG_LEN];
    tag.copy_from_slice(&bytes[bytes.len() - TAG_LEN..]);
    Ok(VerifiedFrame {
        device: frame.header.device,
        epoch: frame.header.epoch,
        sequence: frame.header.sequence,
        tag,
        reports: frame.reports().map(<[u8]>::to_vec).collect(),
    })
}

/// What a collector does with a verified frame, given the frames it has accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// A new replay key: count its reports, acknowledge.
    New,
    /// The same key and the same tag (a retry of an accepted frame): acknowledge again,
    /// count nothing.
    Duplicate,
    /// The same key with another tag: a device bug or a replay of a reused counter;
    /// count nothing, do not acknowledge.
    Conflict,
}

/// The replay keys of accepted frames with their tags (in memory; a collector
/// persists the same map).
#[derive(Debug, Clone, Default)]
pub struct SeenFrames {
    seen: HashMap<(u64, u32, u32), [u8; TAG_LEN]>,
}

impl SeenFrames {
    /// Classifies `frame` and records it if new.
    pub fn admit(&mut self, frame: &VerifiedFrame) -> Admission {
        match self.seen.get(&frame.replay_key()) {
            Some(t) if *t == frame.tag => Admission::Duplicate,
            Some(_) => Admission::Conflict,
            None => {
                self.seen.insert(frame.replay_key(), frame.tag);
                Admission::New
            }
        }
    }

    /// Accepted frames.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether no frame was accepted.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use privq_core::upload::{FrameWriter, Outbox};
    use proptest::prelude::*;

    fn key() -> DeviceKey {
        DeviceKey::new([0x42; 32])
    }

    /// A valid frame of device 5 with `reports` OUE-style SQ-bit reports.
    fn frame(reports: u8, sequence: u32) -> Vec<u8> {
        let mut buf = vec![0u8; 1024];
        let mut w = FrameWriter::new(&mut buf, 5, 1, sequence).unwrap();
        for q in 0..reports {
            w.push(&[1, 8, q, 0, 1, 0, 1, 0, 0, 0, 0, 0, q % 2])
                .unwrap();
        }
        let n = w.finish(&key()).unwrap();
        buf.truncate(n);
        buf
    }

    fn keys(device: u64) -> Option<DeviceKey> {
        (device == 5).then(key)
    }

    #[test]
    fn valid_frames_verify_and_classes_map() {
        let f = frame(3, 9);
        let v = verify_frame(&f, keys).unwrap();
        assert_eq!(v.replay_key(), (5, 1, 9));
        assert_eq!(v.reports.len(), 3);
        assert_eq!(verify_frame(&f[..20], keys), Err(FrameReject::Truncated));
        let mut bad = f.clone();
        bad[40] ^= 1;
        assert_eq!(verify_frame(&bad, keys), Err(FrameReject::Mac));
        assert_eq!(
            verify_frame(&f, |_| Some(DeviceKey::new([0; 32]))),
            Err(FrameReject::Mac)
        );
        assert_eq!(
            FrameReject::from_core(FrameError::Report {
                index: 2,
                error: privq_core::Error::ReportLength
            }),
            FrameReject::Report {
                index: 2,
                reason: RejectReason::Length
            }
        );
        assert_eq!(FrameReject::Mac.name(), "frame_bad_mac");
    }

    #[test]
    fn replay_keys_admit_once_and_flag_conflicts() {
        let mut seen = SeenFrames::default();
        let a = verify_frame(&frame(1, 0), keys).unwrap();
        let b = verify_frame(&frame(2, 0), keys).unwrap(); // same key, other bytes
        let c = verify_frame(&frame(1, 1), keys).unwrap();
        assert_eq!(seen.admit(&a), Admission::New);
        assert_eq!(seen.admit(&a), Admission::Duplicate);
        assert_eq!(seen.admit(&b), Admission::Conflict);
        assert_eq!(seen.admit(&c), Admission::New);
        assert_eq!(seen.len(), 2);
    }

    #[test]
    fn outbox_retries_are_duplicates_not_new_frames() {
        let mut ob: Outbox<2, 64> = Outbox::new(5, 0);
        ob.push(1, &[1, 8, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1])
            .unwrap();
        ob.seal().unwrap();
        let mut seen = SeenFrames::default();
        let mut buf = [0u8; 128];
        for expected in [Admission::New, Admission::Duplicate, Admission::Duplicate] {
            let n = ob.write_front(&key(), &mut buf).unwrap().unwrap();
            let v = verify_frame(&buf[..n], keys).unwrap();
            assert_eq!(seen.admit(&v), expected);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Flipping any non-empty set of bits of a valid frame makes it fail, never panic.
        #[test]
        fn corrupted_frames_are_rejected(
            reports in 1u8..6,
            flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        ) {
            let good = frame(reports, 3);
            let mut bad = good.clone();
            for (at, mask) in &flips {
                let i = at.index(bad.len());
                bad[i] ^= mask;
            }
            prop_assume!(bad != good); // two flips of the same byte may cancel
            prop_assert!(verify_frame(&bad, keys).is_err());
        }

        /// Truncating or extending a valid frame makes it fail.
        #[test]
        fn resized_frames_are_rejected(
            reports in 1u8..6,
            cut in any::<prop::sample::Index>(),
            extra in proptest::collection::vec(any::<u8>(), 1..40),
        ) {
            let good = frame(reports, 3);
            let short = &good[..cut.index(good.len())];
            prop_assert!(verify_frame(short, keys).is_err());
            let mut long = good.clone();
            long.extend_from_slice(&extra);
            prop_assert_eq!(verify_frame(&long, keys), Err(FrameReject::TrailingBytes));
        }

        /// Any sequence of pushes, seals and (acknowledged or lost) sends: every report
        /// the outbox accepted comes out exactly once, in order, in a frame of its epoch,
        /// with sequence numbers 0, 1, 2, …; a refused push changes nothing.
        #[test]
        fn the_outbox_loses_nothing(
            ops in proptest::collection::vec((0u8..4, 0u32..3, any::<bool>()), 1..80),
        ) {
            let mut ob: Outbox<3, 60> = Outbox::new(5, 0);
            let mut accepted = Vec::new();
            let mut delivered = Vec::new();
            let mut next_seq = 0u32;
            let mut buf = [0u8; 128];
            let mut q = 0u8;
            let mut send = |ob: &mut Outbox<3, 60>, ack: bool, delivered: &mut Vec<(u32, Vec<u8>)>,
                            next_seq: &mut u32| {
                if let Some(n) = ob.write_front(&key(), &mut buf).unwrap() {
                    let v = verify_frame(&buf[..n], keys).unwrap();
                    if ack {
                        assert_eq!(v.sequence, *next_seq);
                        *next_seq += 1;
                        ob.acknowledge(v.sequence).unwrap();
                        delivered.extend(v.reports.into_iter().map(|r| (v.epoch, r)));
                    }
                }
            };
            for (op, epoch, ack) in ops {
                match op {
                    0 | 1 => {
                        q = q.wrapping_add(1);
                        let r = [1, 8, q, 0, 1, 0, 1, 0, 0, 0, 0, 0, q % 2];
                        let (pending, free) = (ob.pending(), ob.free_bytes());
                        match ob.push(epoch, &r) {
                            Ok(()) => accepted.push((epoch, r.to_vec())),
                            Err(e) => {
                                prop_assert_eq!(e, privq_core::Error::OutboxFull);
                                prop_assert_eq!((ob.pending(), ob.free_bytes()), (pending, free));
                            }
                        }
                    }
                    2 => { let _ = ob.seal(); }
                    _ => send(&mut ob, ack, &mut delivered, &mut next_seq),
                }
            }
            while ob.pending() > 0 || ob.unsealed_reports() > 0 {
                let _ = ob.seal();
                send(&mut ob, true, &mut delivered, &mut next_seq);
            }
            prop_assert_eq!(delivered, accepted);
        }

        /// Arbitrary bytes (also with a correct magic, version and length) never panic
        /// and never verify; arbitrary bodies with a correct tag never panic.
        #[test]
        fn arbitrary_bytes_are_rejected(mut bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let any_key = |_| Some(key());
            prop_assert!(verify_frame(&bytes, any_key).is_err());
            if bytes.len() >= 57 {
                let len = bytes.len() as u16;
                bytes[..5].copy_from_slice(b"PQUF\x01");
                bytes[5..7].copy_from_slice(&len.to_le_bytes());
                prop_assert_eq!(verify_frame(&bytes, any_key), Err(FrameReject::Mac));
                let split = bytes.len() - TAG_LEN;
                let t = upload::tag(&key(), &bytes[..split]);
                bytes[split..].copy_from_slice(&t);
                let _ = verify_frame(&bytes, any_key); // authenticated garbage: any outcome, no panic
            }
        }
    }
}
