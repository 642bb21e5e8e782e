//! The replay-key counters a device keeps across reboots (`docs/src/upload-frame.md`,
//! "Reboots").
//!
//! The collector's replay key is (device, epoch, sequence). The device's
//! `Outbox` (`crate::upload`, feature `upload`) lives in RAM, so a reboot loses its sequence
//! counter; [`UploadCounters`] keeps the next collection epoch and the next sequence
//! number in a [`LedgerStore`] beside the privacy ledger and hands out epochs
//! **write-ahead**: [`begin_epoch`](UploadCounters::begin_epoch) persists
//! "next epoch = e + 1" before it returns epoch `e`. A reboot therefore resumes at an
//! epoch that no frame has carried, whatever was lost, and (device, epoch, sequence)
//! never repeats.
//!
//! The record is 41 bytes (the ledger store's record size): magic `PQUC`, version 1,
//! next epoch (u32 LE), next sequence (u32 LE), zero padding, CRC-32 of bytes 0..37
//! at 37..41. A record that fails a check, or a next epoch past `u32::MAX`, is
//! [`Error::CountersCorrupted`]: the device uploads nothing (fail closed, as the
//! ledger does); only a never-written store (`load` = `None`, first boot) starts at 0.
//!
//! ```
//! use privq_core::ledger::MemoryStore;
//! use privq_core::upload_counters::UploadCounters;
//!
//! let mut c = UploadCounters::open(MemoryStore::new())?; // first boot
//! assert_eq!(c.begin_epoch(0)?, 0);
//! assert_eq!(c.begin_epoch(3)?, 1); // three frames sealed in epoch 0
//! // Reboot: the RAM outbox is gone; the store is not.
//! let mut c = UploadCounters::open(c.into_store())?;
//! assert_eq!((c.next_epoch(), c.next_sequence()), (2, 3));
//! assert_eq!(c.begin_epoch(3)?, 2);
//! # Ok::<(), privq_core::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::ledger::{LEDGER_RECORD_LEN, LedgerStore, crc32, storage_error};

const MAGIC: [u8; 4] = *b"PQUC";
const VERSION: u8 = 1;
const BODY_LEN: usize = LEDGER_RECORD_LEN - 4;

/// A device's next collection epoch and next frame sequence number, persisted.
///
/// Flash cost (thumbv6m, measured by `tools/device-sizes.sh`): part of the upload frame's
/// about 2.5 KB (see [`Outbox`](crate::upload::Outbox)); its flash store is the ledger's code.
#[derive(Debug)]
pub struct UploadCounters<S: LedgerStore> {
    store: S,
    next_epoch: u32,
    next_sequence: u32,
}

fn encode(next_epoch: u32, next_sequence: u32) -> [u8; LEDGER_RECORD_LEN] {
    let mut r = [0u8; LEDGER_RECORD_LEN];
    let fields: [&[u8]; 4] = [
        &MAGIC,
        &[VERSION],
        &next_epoch.to_le_bytes(),
        &next_sequence.to_le_bytes(),
    ];
    let mut at = 0;
    for f in fields {
        for &b in f {
            if let Some(slot) = r.get_mut(at) {
                *slot = b;
            }
            at += 1;
        }
    }
    let crc = crc32(r.get(..BODY_LEN).unwrap_or(&[])).to_le_bytes();
    if let Some(tail) = r.get_mut(BODY_LEN..) {
        tail.copy_from_slice(&crc);
    }
    r
}

fn word(r: &[u8; LEDGER_RECORD_LEN], at: usize) -> Option<u32> {
    let b = r.get(at..at + 4)?;
    Some(u32::from_le_bytes([
        *b.first()?,
        *b.get(1)?,
        *b.get(2)?,
        *b.get(3)?,
    ]))
}

fn decode(r: &[u8; LEDGER_RECORD_LEN]) -> Option<(u32, u32)> {
    let crc = word(r, BODY_LEN)?;
    let ok = r.get(..4) == Some(&MAGIC[..])
        && r.get(4) == Some(&VERSION)
        && r.get(13..BODY_LEN)?.iter().all(|&b| b == 0)
        && crc == crc32(r.get(..BODY_LEN)?);
    ok.then_some(())?;
    Some((word(r, 5)?, word(r, 9)?))
}

impl<S: LedgerStore> UploadCounters<S> {
    /// Reads the counters at boot: `(0, 0)` from a never-written store.
    /// [`Error::Storage`] if the store fails, [`Error::CountersCorrupted`] if the
    /// record fails its checks.
    pub fn open(mut store: S) -> Result<Self> {
        let (next_epoch, next_sequence) = match store.load().map_err(storage_error::<S>)? {
            None => (0, 0),
            Some(r) => decode(&r).ok_or(Error::CountersCorrupted)?,
        };
        Ok(UploadCounters {
            store,
            next_epoch,
            next_sequence,
        })
    }

    /// The epoch [`begin_epoch`](Self::begin_epoch) will hand out next.
    pub fn next_epoch(&self) -> u32 {
        self.next_epoch
    }

    /// The sequence number the outbox should number its next frame with (the last
    /// one saved; the epoch alone already keeps the replay keys of two boots apart).
    pub fn next_sequence(&self) -> u32 {
        self.next_sequence
    }

    /// Takes the next epoch and persists "next epoch = it + 1" together with the
    /// outbox's `next_sequence` **before** returning it: call it before any report
    /// of the epoch enters the outbox. [`Error::Storage`] (nothing handed out) if
    /// the store fails; [`Error::CountersCorrupted`] once every epoch is used.
    pub fn begin_epoch(&mut self, next_sequence: u32) -> Result<u32> {
        let epoch = self.next_epoch;
        let after = epoch.checked_add(1).ok_or(Error::CountersCorrupted)?;
        self.store
            .store(&encode(after, next_sequence))
            .map_err(storage_error::<S>)?;
        self.next_epoch = after;
        self.next_sequence = next_sequence;
        Ok(epoch)
    }

    /// Gives the store back.
    pub fn into_store(self) -> S {
        self.store
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::StorageKind;
    use crate::ledger::MemoryStore;

    #[test]
    fn epochs_never_repeat_across_reboots() {
        let mut store = MemoryStore::new();
        let mut used = [false; 64];
        for boot in 0..8u32 {
            let mut c = UploadCounters::open(store).unwrap();
            // Each boot uses a few epochs, some not at all (a crash right after boot).
            for _ in 0..boot % 4 {
                let e = c.begin_epoch(boot * 10).unwrap() as usize;
                assert!(!used[e], "epoch {e} handed out twice");
                used[e] = true;
            }
            store = c.into_store();
        }
        assert_eq!(used.iter().filter(|&&u| u).count(), 12);
    }

    #[test]
    fn a_failed_write_hands_out_nothing() {
        let mut c = UploadCounters::open(MemoryStore::new()).unwrap();
        assert_eq!(c.begin_epoch(0), Ok(0));
        let mut store = c.into_store();
        store.set_failing(true);
        assert_eq!(
            UploadCounters::open(store.clone()).err(),
            Some(Error::Storage(StorageKind::Unspecified))
        );
        let mut c = UploadCounters {
            store,
            next_epoch: 1,
            next_sequence: 0,
        };
        assert_eq!(
            c.begin_epoch(5),
            Err(Error::Storage(StorageKind::Unspecified))
        );
        assert_eq!(c.next_epoch(), 1, "not consumed");
    }

    #[test]
    fn damaged_or_exhausted_records_fail_closed() {
        let good = encode(7, 9);
        assert_eq!(decode(&good), Some((7, 9)));
        for i in 0..LEDGER_RECORD_LEN {
            let mut bad = good;
            bad[i] ^= 0x10;
            let c = UploadCounters::open(MemoryStore::with_record(bad));
            assert_eq!(c.err(), Some(Error::CountersCorrupted), "byte {i}");
        }
        let erased = [0xff; LEDGER_RECORD_LEN];
        assert_eq!(
            UploadCounters::open(MemoryStore::with_record(erased)).err(),
            Some(Error::CountersCorrupted)
        );
        let mut last = UploadCounters::open(MemoryStore::with_record(encode(u32::MAX, 0))).unwrap();
        assert_eq!(last.begin_epoch(0), Err(Error::CountersCorrupted));
    }
}
