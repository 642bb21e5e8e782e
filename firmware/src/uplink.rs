//! The device's upload path: every released report goes into a
//! [`privq_core::upload::Outbox`], which is sealed into authenticated upload frames
//! (`docs/src/upload-frame.md`) and delivered oldest first; a frame leaves the outbox when
//! the collector acknowledges it, or when the collector rejected it permanently
//! ([`Delivery::Rejected`]: dropped and counted, [`Uplink::dropped`], so that it cannot
//! block the frames behind it). The collector's answer counts only if its tag verifies
//! under the device key ([`Verdict::delivery`]): a forged `accepted` or `rejected`
//! changes nothing. A transient failure, no answer or a forged one
//! ([`Delivery::NotDelivered`]) keeps the frame for a resend of the same bytes.
//!
//! When the outbox is full, [`Uplink::queue`] first delivers what is pending and then
//! queues the report; if delivery is not acknowledged the report is refused with
//! [`privq_core::Error::OutboxFull`] (kept by nobody, but never silently: the error
//! reaches the caller, which stops releasing). In QEMU the transport is a text line on
//! semihosting stderr ([`crate::wire::frame_line_head`]), which cannot be lost; the
//! host stands in for the collector, so the firmware answers for it as a collector that
//! stored the line would (`accepted`, tagged under the device key) and the device checks
//! that answer like any other.
//!
//! ```
//! use privq_firmware::uplink::Uplink;
//! use privq_core::upload::{open, DeviceKey, FrameHeader, Verdict};
//!
//! let key = DeviceKey::new([3; 32]); // a fixed key: tests only
//! let mut up: Uplink<2, 64, 121> = Uplink::new(9, key.clone());
//! let mut got = Vec::new();
//! // A collector holding the same key stores the frame and answers `accepted`, tagged.
//! let mut deliver = |_: &FrameHeader, frame: &[u8]| {
//!     got.push(frame.to_vec());
//!     Some((Verdict::Accepted, Verdict::Accepted.tag(&key, frame)?))
//! };
//! up.queue(0, &[1, 8, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1], &mut deliver)?;
//! up.flush(&mut deliver)?;
//! assert_eq!(open(&got[0], &key).map(|f| f.header.count), Ok(1));
//! # Ok::<(), privq_core::Error>(())
//! ```

use privq_core::Error;
pub use privq_core::upload::{Delivery, Verdict};
use privq_core::upload::{DeviceKey, FrameHeader, Outbox, TAG_LEN};

/// An [`Outbox`] of `FRAMES` frames and `BYTES` bytes of reports, with its device key:
/// what the firmware needs to turn reports into delivered frames. `BUF` is the size of
/// the stack buffer a frame is written into (at least
/// [`Outbox::MAX_FRAME_LEN`] = 57 + `BYTES`, checked at compile time).
#[derive(Debug)]
pub struct Uplink<const FRAMES: usize, const BYTES: usize, const BUF: usize> {
    outbox: Outbox<FRAMES, BYTES>,
    key: DeviceKey,
    delivered: u32,
}

/// A frame transport: sends one frame (its header, for logging, and its bytes),
/// returns the collector's verdict on it with the verdict's tag
/// ([`Verdict::from_status`] of the frame's status, and its `tag`), or `None` without
/// one (no connection, timeout, `refused`). The uplink acts on a verdict only if the
/// tag verifies ([`Verdict::delivery`]).
pub type Deliver<'a> = dyn FnMut(&FrameHeader, &[u8]) -> Option<(Verdict, [u8; TAG_LEN])> + 'a;

impl<const FRAMES: usize, const BYTES: usize, const BUF: usize> Uplink<FRAMES, BYTES, BUF> {
    /// Refuses, at compile time, a buffer too small for the largest frame.
    const FITS: () = assert!(Outbox::<FRAMES, BYTES>::MAX_FRAME_LEN <= BUF);

    /// An empty uplink for `device`, frames numbered from 0.
    pub fn new(device: u64, key: DeviceKey) -> Self {
        Self::resume(device, key, 0)
    }

    /// An empty uplink for `device` whose first frame gets `first_sequence` (the
    /// persisted counter of [`privq_core::upload_counters::UploadCounters`]).
    pub fn resume(device: u64, key: DeviceKey, first_sequence: u32) -> Self {
        let () = Self::FITS;
        Uplink {
            outbox: Outbox::new(device, first_sequence),
            key,
            delivered: 0,
        }
    }

    /// The outbox (pending frames, free bytes).
    pub fn outbox(&self) -> &Outbox<FRAMES, BYTES> {
        &self.outbox
    }

    /// Frames delivered and acknowledged so far.
    pub fn delivered(&self) -> u32 {
        self.delivered
    }

    /// Frames dropped after a permanent rejection (their reports are lost, their ε
    /// stays charged): a number for the device to report.
    pub fn dropped(&self) -> u32 {
        self.outbox.dropped()
    }

    /// Queues `report` of epoch `epoch`. If the outbox is full, seals and delivers
    /// what is pending first (the report then starts a new frame of the same epoch).
    /// [`Error::OutboxFull`] if it still does not fit (delivery not acknowledged).
    pub fn queue(
        &mut self,
        epoch: u32,
        report: &[u8],
        deliver: &mut Deliver<'_>,
    ) -> Result<(), Error> {
        match self.outbox.push(epoch, report) {
            Err(Error::OutboxFull) => {
                self.flush(deliver)?;
                self.outbox.push(epoch, report)
            }
            other => other,
        }
    }

    /// Makes room for one report of `len` bytes of epoch `epoch`, delivering pending
    /// frames if the outbox has none; [`Error::OutboxFull`] if delivery is not
    /// acknowledged. After `Ok`, [`queue`](Self::queue) of such a report cannot fail
    /// for lack of room: call this before charging the ledger for the report.
    pub fn reserve(
        &mut self,
        epoch: u32,
        len: usize,
        deliver: &mut Deliver<'_>,
    ) -> Result<(), Error> {
        if self.outbox.has_room(epoch, len) {
            return Ok(());
        }
        self.flush(deliver)?;
        if self.outbox.has_room(epoch, len) {
            Ok(())
        } else {
            Err(Error::OutboxFull)
        }
    }

    /// Seals the open frame and delivers pending frames oldest first, removing each
    /// one when `deliver` reports it acknowledged, dropping (and counting) each one
    /// rejected permanently; stops at the first frame not delivered (it stays
    /// queued, and the next flush sends the same bytes). Returns the number of frames
    /// acknowledged.
    pub fn flush(&mut self, deliver: &mut Deliver<'_>) -> Result<u32, Error> {
        // A full set of frame slots cannot take the seal: deliver first, then seal.
        let mut sent = 0;
        if self.outbox.seal().is_err() {
            sent = self.deliver_pending(deliver)?;
            self.outbox.seal()?;
        }
        Ok(sent + self.deliver_pending(deliver)?)
    }

    fn deliver_pending(&mut self, deliver: &mut Deliver<'_>) -> Result<u32, Error> {
        let mut buf = [0u8; BUF];
        let mut sent = 0;
        while let Some(front) = self.outbox.front() {
            let n = self
                .outbox
                .write_front(&self.key, &mut buf)?
                .ok_or(Error::NotPending)?;
            let frame = buf.get(..n).ok_or(Error::BufferTooSmall)?;
            let delivery = match deliver(&front.header, frame) {
                Some((verdict, tag)) => verdict.delivery(&self.key, frame, &tag),
                None => Delivery::NotDelivered,
            };
            match delivery {
                Delivery::Acknowledged => {
                    self.outbox.acknowledge(front.header.sequence)?;
                    sent += 1;
                    self.delivered += 1;
                }
                Delivery::Rejected => self.outbox.reject(front.header.sequence)?,
                Delivery::NotDelivered => break,
            }
        }
        Ok(sent)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use privq_core::upload::open;
    use std::vec::Vec;

    fn report(q: u8) -> [u8; 13] {
        [1, 8, q, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1]
    }

    type Answer = Option<(Verdict, [u8; TAG_LEN])>;
    type Forgery<'a> = &'a dyn Fn(&[u8]) -> Answer;

    /// A collector's answer `verdict` on `frame`, tagged under `key`.
    fn answer(key: &DeviceKey, frame: &[u8], verdict: Verdict) -> Answer {
        Some((verdict, verdict.tag(key, frame)?))
    }

    /// The module example, compiled (the crate has no doctests).
    #[test]
    fn module_example() -> Result<(), Error> {
        let key = DeviceKey::new([3; 32]); // a fixed key: tests only
        let mut up: Uplink<2, 64, 121> = Uplink::new(9, key.clone());
        let mut got = Vec::new();
        let mut deliver = |_: &FrameHeader, frame: &[u8]| {
            got.push(frame.to_vec());
            Some((Verdict::Accepted, Verdict::Accepted.tag(&key, frame)?))
        };
        up.queue(0, &[1, 8, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1], &mut deliver)?;
        up.flush(&mut deliver)?;
        assert_eq!(open(&got[0], &key).map(|f| f.header.count), Ok(1));
        Ok(())
    }

    #[test]
    fn full_outbox_delivers_then_queues_and_nothing_is_lost() {
        let key = DeviceKey::new([5; 32]);
        let mut up: Uplink<2, 45, 102> = Uplink::new(4, key.clone());
        let mut frames = Vec::new();
        let mut deliver = |_: &FrameHeader, f: &[u8]| {
            frames.push(f.to_vec());
            answer(&key, f, Verdict::Accepted)
        };
        for q in 0..10u8 {
            up.queue(u32::from(q / 4), &report(q), &mut deliver)
                .unwrap();
        }
        up.flush(&mut deliver).unwrap();
        let mut seen = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            let f = open(f, &key).unwrap();
            assert_eq!(f.header.sequence, i as u32, "numbered in order");
            for r in f.reports() {
                assert_eq!(u32::from(r[2] / 4), f.header.epoch);
                seen.push(r[2]);
            }
        }
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        assert_eq!(up.delivered() as usize, frames.len());
    }

    #[test]
    fn reserve_delivers_to_make_room_and_refuses_without_an_acknowledgement() {
        let key = DeviceKey::new([7; 32]);
        let mut up: Uplink<2, 45, 102> = Uplink::new(4, key.clone());
        let mut refuse = |_: &FrameHeader, _: &[u8]| None;
        for q in 0..3u8 {
            up.reserve(0, 13, &mut refuse).unwrap();
            up.queue(0, &report(q), &mut refuse).unwrap();
        }
        // Full (3 × 15 bytes), and the transport acknowledges nothing: refused, and
        // the caller has not charged anything for the report.
        assert_eq!(up.reserve(0, 13, &mut refuse), Err(Error::OutboxFull));
        let mut accept = |_: &FrameHeader, f: &[u8]| answer(&key, f, Verdict::Accepted);
        up.reserve(0, 13, &mut accept).unwrap();
        assert_eq!(up.delivered(), 1);
        up.queue(0, &report(3), &mut refuse).unwrap();
    }

    #[test]
    fn unacknowledged_frames_are_resent_with_the_same_bytes() {
        let key = DeviceKey::new([6; 32]);
        let mut up: Uplink<2, 45, 102> = Uplink::new(4, key.clone());
        let mut tries = Vec::new();
        let mut refuse = |_: &FrameHeader, f: &[u8]| {
            tries.push(f.to_vec());
            None
        };
        for q in 0..3 {
            up.queue(q, &report(q as u8), &mut refuse).unwrap();
        }
        assert_eq!(up.flush(&mut refuse), Err(Error::OutboxFull));
        assert_eq!(up.queue(9, &report(9), &mut refuse), Err(Error::OutboxFull));
        assert!(
            tries.windows(2).all(|w| w[0] == w[1]),
            "same bytes each time"
        );
        let mut acked = Vec::new();
        let mut accept = |_: &FrameHeader, f: &[u8]| {
            acked.push(f.to_vec());
            answer(&key, f, Verdict::Duplicate)
        };
        assert_eq!(up.flush(&mut accept), Ok(3));
        assert_eq!(acked[0], tries[0]);
    }

    #[test]
    fn a_permanently_rejected_frame_is_dropped_and_does_not_block_the_rest() {
        let key = DeviceKey::new([8; 32]);
        let mut up: Uplink<2, 45, 102> = Uplink::new(4, key.clone());
        // The collector rejects sequence 0 for good (say, budget_exceeded) and
        // accepts the rest.
        let mut got = Vec::new();
        let mut collector = |h: &FrameHeader, f: &[u8]| {
            if h.sequence == 0 {
                answer(&key, f, Verdict::Rejected)
            } else {
                got.push(f.to_vec());
                answer(&key, f, Verdict::Accepted)
            }
        };
        for q in 0..6u8 {
            up.queue(u32::from(q / 2), &report(q), &mut collector)
                .unwrap();
        }
        up.flush(&mut collector).unwrap();
        assert_eq!(up.dropped(), 1);
        assert_eq!(
            up.outbox().pending(),
            0,
            "nothing stuck behind the rejected frame"
        );
        assert_eq!(up.delivered() as usize, got.len());
        let seqs: Vec<u32> = got
            .iter()
            .map(|f| open(f, &key).unwrap().header.sequence)
            .collect();
        assert_eq!(seqs, std::vec![1, 2, 3]);
    }

    /// An attacker on the path answers for the collector: without the device key its
    /// `accepted` or `rejected` verifies for no frame, so nothing is removed, dropped
    /// or counted, and every flush sends the same bytes again.
    #[test]
    fn a_forged_verdict_changes_nothing_on_the_device() {
        let key = DeviceKey::new([4; 32]);
        let attacker = DeviceKey::new([5; 32]);
        let mut up: Uplink<2, 45, 102> = Uplink::new(4, key.clone());
        let mut none = |_: &FrameHeader, _: &[u8]| None;
        for epoch in 0..2 {
            up.queue(epoch, &report(epoch as u8), &mut none).unwrap();
        }
        let mut sent: Vec<Vec<u8>> = Vec::new();
        let forgeries: [Forgery<'_>; 4] = [
            &|f| answer(&attacker, f, Verdict::Accepted),
            &|f| answer(&attacker, f, Verdict::Rejected),
            // The device key's tag, but of another verdict:
            &|f| Some((Verdict::Accepted, answer(&key, f, Verdict::Rejected)?.1)),
            // ... or of another frame (the first one sent):
            &|_| answer(&key, &[7; 64], Verdict::Accepted),
        ];
        for forge in forgeries {
            let mut deliver = |_: &FrameHeader, f: &[u8]| {
                sent.push(f.to_vec());
                forge(f)
            };
            assert_eq!(up.flush(&mut deliver), Ok(0));
            assert_eq!(
                (up.delivered(), up.dropped(), up.outbox().pending()),
                (0, 0, 2)
            );
        }
        assert!(
            sent.windows(2).all(|w| w[0] == w[1]),
            "the same bytes each time"
        );
        let mut honest = |_: &FrameHeader, f: &[u8]| answer(&key, f, Verdict::Accepted);
        assert_eq!(up.flush(&mut honest), Ok(2));
        assert_eq!(
            (up.delivered(), up.dropped(), up.outbox().pending()),
            (2, 0, 0)
        );
    }
}
