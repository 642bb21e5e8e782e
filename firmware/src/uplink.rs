//! The device's upload path: every released report goes into a
//! [`privq_core::upload::Outbox`], which is sealed into authenticated upload frames
//! (`docs/upload-frame.md`) and delivered oldest first; a frame leaves the outbox only
//! when the transport reports it acknowledged.
//!
//! When the outbox is full, [`Uplink::queue`] first delivers what is pending and then
//! queues the report; if delivery is not acknowledged the report is refused with
//! [`privq_core::Error::OutboxFull`] (kept by nobody, but never silently: the error
//! reaches the caller, which stops releasing). In QEMU the transport is a text line on
//! semihosting stderr ([`crate::wire::frame_line_head`]) and counts as acknowledged.
//!
//! ```
//! use privq_firmware::uplink::Uplink;
//! use privq_core::upload::{open, DeviceKey, FrameHeader};
//!
//! let key = DeviceKey::new([3; 32]); // a fixed key: tests only
//! let mut up: Uplink<2, 64, 121> = Uplink::new(9, key.clone());
//! let mut got = Vec::new();
//! let mut deliver = |_: &FrameHeader, frame: &[u8]| {
//!     got.push(frame.to_vec());
//!     true
//! };
//! up.queue(0, &[1, 8, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1], &mut deliver)?;
//! up.flush(&mut deliver)?;
//! assert_eq!(open(&got[0], &key).map(|f| f.header.count), Ok(1));
//! # Ok::<(), privq_core::Error>(())
//! ```

use privq_core::Error;
use privq_core::upload::{DeviceKey, FrameHeader, Outbox};

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
/// returns whether the collector acknowledged it.
pub type Deliver<'a> = dyn FnMut(&FrameHeader, &[u8]) -> bool + 'a;

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
    /// one only when `deliver` reports it acknowledged; stops at the first
    /// unacknowledged frame (it stays queued, and the next flush sends the same bytes).
    /// Returns the number of frames delivered.
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
            if !deliver(&front.header, buf.get(..n).ok_or(Error::BufferTooSmall)?) {
                break;
            }
            self.outbox.acknowledge(front.header.sequence)?;
            sent += 1;
            self.delivered += 1;
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

    /// The module example, compiled (the crate has no doctests).
    #[test]
    fn module_example() -> Result<(), Error> {
        let key = DeviceKey::new([3; 32]); // a fixed key: tests only
        let mut up: Uplink<2, 64, 121> = Uplink::new(9, key.clone());
        let mut got = Vec::new();
        let mut deliver = |_: &FrameHeader, frame: &[u8]| {
            got.push(frame.to_vec());
            true
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
            true
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
        let mut up: Uplink<2, 45, 102> = Uplink::new(4, key);
        let mut refuse = |_: &FrameHeader, _: &[u8]| false;
        for q in 0..3u8 {
            up.reserve(0, 13, &mut refuse).unwrap();
            up.queue(0, &report(q), &mut refuse).unwrap();
        }
        // Full (3 × 15 bytes), and the transport acknowledges nothing: refused, and
        // the caller has not charged anything for the report.
        assert_eq!(up.reserve(0, 13, &mut refuse), Err(Error::OutboxFull));
        let mut accept = |_: &FrameHeader, _: &[u8]| true;
        up.reserve(0, 13, &mut accept).unwrap();
        assert_eq!(up.delivered(), 1);
        up.queue(0, &report(3), &mut refuse).unwrap();
    }

    #[test]
    fn unacknowledged_frames_are_resent_with_the_same_bytes() {
        let key = DeviceKey::new([6; 32]);
        let mut up: Uplink<2, 45, 102> = Uplink::new(4, key);
        let mut tries = Vec::new();
        let mut refuse = |_: &FrameHeader, f: &[u8]| {
            tries.push(f.to_vec());
            false
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
            true
        };
        assert_eq!(up.flush(&mut accept), Ok(3));
        assert_eq!(acked[0], tries[0]);
    }
}
