//! The device ledger: budget refusal, persistence, corruption and storage faults.

use privq_core::ledger::{LEDGER_RECORD_LEN, Ledger, MemoryStore};
use privq_core::local::{BinaryRr, Grr, QueryId};
use privq_core::{Epsilon, Error, StorageKind};
use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

fn e(n: u64, d: u64) -> Epsilon {
    Epsilon::new(n, d).unwrap()
}

#[test]
fn refuses_the_release_that_would_exceed_the_cap() {
    let mut rng = ChaCha12Rng::seed_from_u64(1);
    let mut ledger = Ledger::open(MemoryStore::new(), e(1, 1)).unwrap();
    let third = BinaryRr::new(e(1, 3)).unwrap();
    let mut buf = [0u8; 16];
    for q in 0..3 {
        assert_eq!(
            ledger.release(&third, &true, QueryId(q), &mut rng, &mut buf),
            Ok(13)
        );
    }
    // Exactly 1 spent (1/3 · 3 with exact rationals: no rounding leaves a sliver).
    assert_eq!((ledger.spent().num(), ledger.spent().den()), (1, 1));
    let before = buf;
    assert_eq!(
        ledger.release(&third, &true, QueryId(3), &mut rng, &mut buf),
        Err(Error::BudgetExhausted)
    );
    assert_eq!(buf, before, "a refused release writes nothing");
    assert!(!ledger.can_spend(e(1, 1_000_000)));
}

#[test]
fn refusal_is_exact_at_the_boundary() {
    let mut ledger = Ledger::open(MemoryStore::new(), e(7, 10)).unwrap();
    ledger.debit(e(1, 2)).unwrap();
    assert_eq!(ledger.debit(e(201, 1000)), Err(Error::BudgetExhausted));
    ledger.debit(e(1, 5)).unwrap(); // exactly 7/10
    assert_eq!(ledger.debit(e(1, 65535)), Err(Error::BudgetExhausted));
}

#[test]
fn invalid_input_and_small_buffers_cost_nothing() {
    let mut rng = ChaCha12Rng::seed_from_u64(2);
    let mut ledger = Ledger::open(MemoryStore::new(), e(1, 1)).unwrap();
    let grr = Grr::new(e(1, 1), 10).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(
        ledger.release(&grr, &10, QueryId(0), &mut rng, &mut buf),
        Err(Error::ItemOutOfDomain)
    );
    assert_eq!(
        ledger.release(&grr, &1, QueryId(0), &mut rng, &mut buf[..5]),
        Err(Error::BufferTooSmall)
    );
    assert_eq!(ledger.spent().num(), 0);
    assert_eq!(
        ledger.release(&grr, &1, QueryId(0), &mut rng, &mut buf),
        Ok(13)
    );
}

#[test]
fn survives_reboot_and_keeps_the_lower_cap() {
    let mut ledger = Ledger::open(MemoryStore::new(), e(2, 1)).unwrap();
    ledger.debit(e(3, 2)).unwrap();
    let store = ledger.into_store();
    // Reboot with a larger configured cap: the stored cap (2) still applies.
    let mut again = Ledger::open(store, e(10, 1)).unwrap();
    assert_eq!(again.cap(), e(2, 1));
    assert_eq!((again.spent().num(), again.spent().den()), (3, 2));
    assert_eq!(again.debit(e(1, 1)), Err(Error::BudgetExhausted));
    again.debit(e(1, 2)).unwrap();
}

#[test]
fn any_corrupted_byte_refuses_everything() {
    let mut ledger = Ledger::open(MemoryStore::new(), e(1, 1)).unwrap();
    ledger.debit(e(1, 4)).unwrap();
    let good = ledger.store().record().unwrap();
    let mut rng = ChaCha12Rng::seed_from_u64(3);
    let rr = BinaryRr::new(e(1, 100)).unwrap();
    for i in 0..LEDGER_RECORD_LEN {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = good;
            bad[i] ^= flip;
            let mut l = Ledger::open(MemoryStore::with_record(bad), e(1, 1)).unwrap();
            assert!(l.is_corrupted(), "byte {i} flip {flip:#x}");
            let mut buf = [0u8; 13];
            assert_eq!(
                l.release(&rr, &true, QueryId(0), &mut rng, &mut buf),
                Err(Error::LedgerCorrupted)
            );
            assert!(!l.can_spend(e(1, 1000)));
        }
    }
    // Erased flash presented as a record (all 0xFF) is corruption, not a fresh device.
    let l = Ledger::open(MemoryStore::with_record([0xff; LEDGER_RECORD_LEN]), e(1, 1)).unwrap();
    assert!(l.is_corrupted());
}

#[test]
fn storage_faults_fail_closed() {
    let mut store = MemoryStore::new();
    store.set_failing(true);
    assert_eq!(
        Ledger::open(store, e(1, 1)).unwrap_err(),
        Error::Storage(StorageKind::Unspecified)
    );

    let mut ledger = Ledger::open(MemoryStore::new(), e(1, 1)).unwrap();
    ledger.store_mut().set_failing(true);
    let rr = BinaryRr::new(e(1, 2)).unwrap();
    let mut rng = ChaCha12Rng::seed_from_u64(4);
    let mut buf = [0u8; 13];
    // The write fails: no report, and the ε counts as spent (fail closed).
    assert_eq!(
        ledger.release(&rr, &true, QueryId(0), &mut rng, &mut buf),
        Err(Error::Storage(StorageKind::Unspecified))
    );
    assert_eq!(buf, [0u8; 13]);
    assert_eq!((ledger.spent().num(), ledger.spent().den()), (1, 2));
    ledger.store_mut().set_failing(false);
    ledger.debit(e(1, 2)).unwrap();
    assert_eq!(ledger.debit(e(1, 2)), Err(Error::BudgetExhausted));
}
