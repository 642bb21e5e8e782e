extern crate std;

use super::*;
use std::vec::Vec;

/// A binary-RR report at ε = 1/2 with query `q` and bit `b` (13 bytes).
fn rr(q: u8, b: u8) -> [u8; 13] {
    [1, 1, q, 0, 1, 0, 2, 0, 2, 0, 0, 0, b]
}

fn key() -> DeviceKey {
    DeviceKey::new(*b"0123456789abcdef0123456789abcdef")
}

fn hex(bytes: &[u8]) -> std::string::String {
    bytes.iter().map(|b| std::format!("{b:02x}")).collect()
}

#[test]
fn rfc4231_test_case_2() {
    // RFC 4231 §4.3: key "Jefe", data "what do ya want for nothing?". Our keys are
    // 32 bytes; HMAC pads shorter keys with zeros (RFC 2104 §2), so "Jefe" and
    // "Jefe" followed by 28 zero bytes are the same HMAC key.
    let mut k = [0u8; 32];
    k[..4].copy_from_slice(b"Jefe");
    assert_eq!(
        hex(&tag(&DeviceKey::new(k), b"what do ya want for nothing?")),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
}

#[test]
fn rfc4231_test_case_1() {
    // RFC 4231 §4.2: key 0x0b × 20 (zero-padded to our 32 bytes, the same HMAC key).
    let mut k = [0u8; 32];
    k[..20].fill(0x0b);
    assert_eq!(
        hex(&tag(&DeviceKey::new(k), b"Hi There")),
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
    );
}

#[test]
fn rfc4231_test_case_1_with_a_32_byte_key() {
    // Data "Hi There" (RFC 4231 §4.2), key 0x0b × 32 (instead of × 20); the
    // expected value was computed independently with
    // `openssl dgst -sha256 -mac HMAC -macopt hexkey:0b…0b` (32 bytes).
    assert_eq!(
        hex(&tag(&DeviceKey::new([0x0b; 32]), b"Hi There")),
        "198a607eb44bfbc69903a0f1cf2bbdc5ba0aa3f3d9ae3c1c7a3b1696a0b68cf7"
    );
}

/// The frame of `known_frame_layout`, byte by byte.
fn known_frame() -> Vec<u8> {
    let mut buf = [0u8; 128];
    let mut w = FrameWriter::new(&mut buf, 0x0102_0304_0506_0708, 7, 0x0a0b_0c0d).unwrap();
    w.push(&rr(3, 1)).unwrap();
    let n = w.finish(&key()).unwrap();
    buf[..n].to_vec()
}

#[test]
fn known_frame_layout_and_tag() {
    let f = known_frame();
    assert_eq!(f.len(), FRAME_OVERHEAD + 2 + 13);
    assert_eq!(
        hex(&f[..FRAME_HEADER_LEN + 15]),
        std::concat!(
            "50515546",         // "PQUF"
            "01",               // version
            "4800",             // length 72
            "0807060504030201", // device
            "07000000",         // epoch
            "0d0c0b0a",         // sequence
            "0100",             // count
            "0d00",             // report length 13
            "01010300010002000200000001"
        )
    );
    // The tag, computed independently over the 40 bytes above:
    // python3 -c 'import hmac, hashlib; print(hmac.new(b"0123456789abcdef0123456789abcdef",
    //   bytes.fromhex("<the hex above>"), hashlib.sha256).hexdigest())'
    assert_eq!(
        hex(&f[FRAME_HEADER_LEN + 15..]),
        "73756d211aa72a58a21c8e2e22c34beaa6c88e8912b8d8f5985597285f19fa7a"
    );
    let frame = open(&f, &key()).unwrap();
    assert_eq!(
        frame.header,
        FrameHeader {
            device: 0x0102_0304_0506_0708,
            epoch: 7,
            sequence: 0x0a0b_0c0d,
            count: 1
        }
    );
    assert_eq!(frame.reports().collect::<Vec<_>>(), [&rr(3, 1)[..]]);
}

/// Re-tags `f` (its length field and tag) so that it authenticates: the
/// post-MAC checks see exactly these bytes.
fn retag(mut f: Vec<u8>) -> Vec<u8> {
    let len = f.len() + TAG_LEN;
    f[5..7].copy_from_slice(&(len as u16).to_le_bytes());
    let t = tag(&key(), &f);
    f.extend_from_slice(&t);
    f
}

#[test]
fn each_hostile_class_has_its_error() {
    let good = known_frame();
    let k = key();
    assert_eq!(open(&good[..10], &k), Err(FrameError::Truncated));
    assert_eq!(
        open(&good[..good.len() - 1], &k),
        Err(FrameError::Truncated)
    );
    let mut long = good.clone();
    long.push(0);
    assert_eq!(open(&long, &k), Err(FrameError::TrailingBytes));
    let mut m = good.clone();
    m[0] = b'X';
    assert_eq!(open(&m, &k), Err(FrameError::Magic));
    let mut v = good.clone();
    v[4] = 2;
    assert_eq!(open(&v, &k), Err(FrameError::Version));
    let mut l = good.clone();
    l[5..7].copy_from_slice(&56u16.to_le_bytes());
    assert_eq!(open(&l, &k), Err(FrameError::Length));
    assert_eq!(open(&good, &DeviceKey::new([0; 32])), Err(FrameError::Mac));
    for i in [7, 15, 19, 23, 25, 40, good.len() - 1] {
        let mut c = good.clone();
        c[i] ^= 0x80;
        assert_eq!(open(&c, &k), Err(FrameError::Mac), "byte {i}");
    }
    // Authenticated but malformed bodies.
    let body = &good[..good.len() - TAG_LEN];
    let mut zero = body.to_vec();
    zero[23..25].copy_from_slice(&0u16.to_le_bytes());
    assert_eq!(open(&retag(zero), &k), Err(FrameError::Count));
    let mut two = body.to_vec();
    two[23..25].copy_from_slice(&2u16.to_le_bytes());
    assert_eq!(open(&retag(two), &k), Err(FrameError::BodyLength));
    let mut extra = body.to_vec();
    extra.push(0);
    assert_eq!(open(&retag(extra), &k), Err(FrameError::BodyLength));
    let mut over = body.to_vec();
    over[25..27].copy_from_slice(&14u16.to_le_bytes());
    assert_eq!(open(&retag(over), &k), Err(FrameError::BodyLength));
    let mut bad = body.to_vec();
    bad[25 + 2 + 12] = 7; // RR bit must be 0 or 1
    assert_eq!(
        open(&retag(bad), &k),
        Err(FrameError::Report {
            index: 0,
            error: Error::ReportValueOutOfRange
        })
    );
    let mut second = body.to_vec();
    second[23..25].copy_from_slice(&2u16.to_le_bytes());
    second.extend_from_slice(&12u16.to_le_bytes());
    second.extend_from_slice(&rr(0, 0)[..12]);
    assert_eq!(
        open(&retag(second), &k),
        Err(FrameError::Report {
            index: 1,
            error: Error::ReportLength
        })
    );
}

#[test]
fn outbox_frames_by_epoch_and_retries_identically() {
    let k = key();
    let mut ob: Outbox<3, 64> = Outbox::new(5, 100);
    ob.push(0, &rr(0, 1)).unwrap();
    ob.push(0, &rr(1, 0)).unwrap();
    assert_eq!(ob.pending(), 0);
    ob.push(1, &rr(2, 1)).unwrap(); // another epoch: seals epoch 0
    assert_eq!(ob.pending(), 1);
    ob.seal().unwrap();
    assert_eq!(ob.pending(), 2);
    let mut a = [0u8; Outbox::<3, 64>::MAX_FRAME_LEN];
    let mut b = [0u8; Outbox::<3, 64>::MAX_FRAME_LEN];
    let n = ob.write_front(&k, &mut a).unwrap().unwrap();
    let m = ob.write_front(&k, &mut b).unwrap().unwrap();
    assert_eq!(a[..n], b[..m], "a retry resends the same bytes");
    let f = open(&a[..n], &k).unwrap();
    assert_eq!(
        (f.header.epoch, f.header.sequence, f.header.count),
        (0, 100, 2)
    );
    assert_eq!(
        f.reports().collect::<Vec<_>>(),
        [&rr(0, 1)[..], &rr(1, 0)[..]]
    );
    assert_eq!(ob.acknowledge(101), Err(Error::NotPending));
    assert_eq!(ob.pending(), 2);
    ob.acknowledge(100).unwrap();
    assert_eq!(ob.acknowledge(100), Err(Error::NotPending), "repeated ack");
    let n = ob.write_front(&k, &mut a).unwrap().unwrap();
    let f = open(&a[..n], &k).unwrap();
    assert_eq!(
        (f.header.epoch, f.header.sequence, f.header.count),
        (1, 101, 1)
    );
    assert_eq!(f.reports().collect::<Vec<_>>(), [&rr(2, 1)[..]]);
    ob.acknowledge(101).unwrap();
    assert_eq!(ob.write_front(&k, &mut a), Ok(None));
    assert_eq!(ob.free_bytes(), 64);
}

#[test]
fn a_full_outbox_refuses_and_keeps_everything() {
    let mut ob: Outbox<2, 45> = Outbox::new(1, 0);
    // 15 bytes per report: three fit in 45 bytes.
    ob.push(0, &rr(0, 0)).unwrap();
    ob.push(1, &rr(1, 0)).unwrap();
    ob.push(2, &rr(2, 0)).unwrap();
    assert_eq!(ob.pending(), 2);
    assert_eq!(
        ob.push(2, &rr(3, 0)),
        Err(Error::OutboxFull),
        "no bytes left"
    );
    assert_eq!(ob.acknowledge(0), Ok(()));
    assert_eq!(ob.push(3, &rr(3, 0)), Ok(())); // seals epoch 2 as sequence 2
    assert_eq!(
        ob.push(4, &rr(4, 0)),
        Err(Error::OutboxFull),
        "no frame slot"
    );
    assert_eq!(ob.seal(), Err(Error::OutboxFull));
    assert_eq!(ob.unsealed_reports(), 1);
    assert_eq!(ob.pending(), 2);
    let mut buf = [0u8; 128];
    let mut seen = Vec::new();
    while let Some(n) = ob.write_front(&key(), &mut buf).unwrap() {
        let f = open(&buf[..n], &key()).unwrap();
        seen.push((f.header.epoch, f.header.sequence));
        ob.acknowledge(f.header.sequence).unwrap();
        ob.seal().unwrap();
    }
    assert_eq!(seen, [(1, 1), (2, 2), (3, 3)], "nothing lost, in order");
    assert_eq!(ob.push(0, &[1; 5]), Err(Error::ReportTruncated));
    assert_eq!(ob.push(0, &[2; 13]), Err(Error::ReportVersion));
}

#[test]
fn has_room_predicts_push() {
    // Every push of a 13- or 20-byte report over a mix of epochs and acks:
    // `has_room` says yes exactly when `push` succeeds.
    let mut ob: Outbox<2, 60> = Outbox::new(1, 0);
    let mut long = [0u8; 20];
    long[..13].copy_from_slice(&rr(0, 0));
    for step in 0u32..400 {
        let epoch = (step / 3) % 4;
        let report: &[u8] = if step % 5 == 0 { &long } else { &rr(1, 1) };
        let room = ob.has_room(epoch, report.len());
        assert_eq!(room, ob.push(epoch, report).is_ok(), "step {step}");
        if step % 7 == 0 {
            if let Some(f) = ob.front() {
                ob.acknowledge(f.header.sequence).unwrap();
            }
        }
    }
    assert!(!ob.has_room(0, usize::MAX));
}

#[test]
fn sequence_numbers_never_wrap() {
    let mut ob: Outbox<4, 64> = Outbox::new(1, u32::MAX);
    ob.push(0, &rr(0, 0)).unwrap();
    ob.seal().unwrap();
    assert_eq!(ob.next_sequence(), None);
    ob.push(1, &rr(0, 0)).unwrap();
    assert_eq!(ob.seal(), Err(Error::SequenceExhausted));
    assert_eq!(ob.push(2, &rr(0, 0)), Err(Error::SequenceExhausted));
    assert_eq!(ob.unsealed_reports(), 1);
}

#[test]
fn writer_errors() {
    let mut small = [0u8; 56];
    assert_eq!(
        FrameWriter::new(&mut small, 0, 0, 0).err(),
        Some(Error::BufferTooSmall)
    );
    let mut buf = [0u8; 70];
    let w = FrameWriter::new(&mut buf, 0, 0, 0).unwrap();
    assert_eq!(w.finish(&key()), Err(Error::EmptyFrame));
    let mut w = FrameWriter::new(&mut buf, 0, 0, 0).unwrap();
    assert_eq!(w.push(&rr(0, 0)), Err(Error::BufferTooSmall)); // needs 72
    let mut tiny = [0u8; 80];
    let mut out = [0u8; 10];
    let mut ob: Outbox<1, 16> = Outbox::new(0, 0);
    ob.push(0, &rr(0, 0)).unwrap();
    ob.seal().unwrap();
    assert_eq!(ob.write_front(&key(), &mut out), Err(Error::BufferTooSmall));
    assert!(ob.write_front(&key(), &mut tiny).unwrap().is_some());
    assert_eq!(std::format!("{:?}", key()), "DeviceKey(..)");
}

#[test]
fn a_rejected_front_frame_is_dropped_counted_and_unblocks_the_rest() {
    let mut ob: Outbox<3, 64> = Outbox::new(7, 0);
    for e in 0..3 {
        ob.push(e, &rr(e as u8, 1)).unwrap();
    }
    ob.seal().unwrap();
    assert_eq!(ob.pending(), 3);
    assert_eq!(ob.reject(1), Err(Error::NotPending), "only the front frame");
    ob.reject(0).unwrap();
    assert_eq!((ob.pending(), ob.dropped()), (2, 1));
    // The next frame is now in front, with its own bytes intact.
    let mut buf = [0u8; 128];
    let n = ob.write_front(&key(), &mut buf).unwrap().unwrap();
    let f = open(&buf[..n], &key()).unwrap();
    assert_eq!(
        (f.header.sequence, f.reports().next()),
        (1, Some(&rr(1, 1)[..]))
    );
    ob.acknowledge(1).unwrap();
    assert_eq!((ob.pending(), ob.dropped()), (1, 1));
}

#[test]
fn tag_equals_the_hmac_crate_at_every_padding_boundary() {
    // `tag` runs on sha2's compression function alone; the `hmac` crate is the reference.
    // Lengths 0..=200 cover empty input, 55/56/64 bytes (one or two padding blocks) and
    // several blocks.
    let key = DeviceKey::new(core::array::from_fn(|i| (i as u8).wrapping_mul(29)));
    let data: [u8; 200] = core::array::from_fn(|i| (i as u8).wrapping_mul(7) ^ 0x5a);
    for n in 0..=data.len() {
        let mut mac = key.mac();
        mac.update(&data[..n]);
        let want: [u8; TAG_LEN] = mac.finalize().into_bytes().into();
        assert_eq!(tag(&key, &data[..n]), want, "{n} bytes");
    }
}

#[test]
fn verdict_tags_match_an_independent_hmac() {
    // python3 -c 'import hmac, hashlib; k = b"0123456789abcdef0123456789abcdef";
    //   t = bytes.fromhex("73756d21…fa7a"); print(hmac.new(k, b"PQUS" + bytes([1, code])
    //   + t, hashlib.sha256).hexdigest())'   (t: the known frame's tag)
    let f = known_frame();
    let expected = [
        (
            Verdict::Accepted,
            "82026b9b605a5c90ef6d78697563a8da51f4d20686a330902e451fe6c5bd5478",
        ),
        (
            Verdict::Duplicate,
            "722faf109827fdeafb45b0c923000b2f19256e5e5fc814d84b8ee1c0a29fa292",
        ),
        (
            Verdict::Rejected,
            "33efed9a34d28da72db1e04c8c2a58d2680ed0c2154b46cd075b6ca8142019c6",
        ),
    ];
    for (verdict, want) in expected {
        assert_eq!(hex(&verdict.tag(&key(), &f).unwrap()), want, "{verdict:?}");
    }
    assert_eq!(Verdict::Accepted.tag(&key(), &f[..TAG_LEN - 1]), None);
}

#[test]
fn only_an_authenticated_verdict_acknowledges_or_drops_a_frame() {
    let f = known_frame();
    let other_key = DeviceKey::new([9; 32]);
    let mut next = f.clone();
    next[19] ^= 1; // another sequence number: another frame (re-tagged)
    let next = retag(next[..next.len() - TAG_LEN].to_vec());
    for (verdict, delivery) in [
        (Verdict::Accepted, Delivery::Acknowledged),
        (Verdict::Duplicate, Delivery::Acknowledged),
        (Verdict::Rejected, Delivery::Rejected),
    ] {
        let good = verdict.tag(&key(), &f).unwrap();
        assert_eq!(verdict.delivery(&key(), &f, &good), delivery);
        // Forged: under another key, for another frame, another verdict's tag, one bit off.
        let forged = [
            verdict.tag(&other_key, &f).unwrap(),
            verdict.tag(&key(), &next).unwrap(),
            {
                let mut t = good;
                t[31] ^= 0x80;
                t
            },
            [0; TAG_LEN],
        ];
        for t in forged {
            assert_eq!(verdict.delivery(&key(), &f, &t), Delivery::NotDelivered);
        }
        for other in [Verdict::Accepted, Verdict::Duplicate, Verdict::Rejected] {
            if other != verdict {
                assert_eq!(other.delivery(&key(), &f, &good), Delivery::NotDelivered);
            }
        }
        assert_eq!(
            verdict.delivery(&key(), &f[..10], &good),
            Delivery::NotDelivered
        );
    }
    assert_eq!(Verdict::from_status("accepted"), Some(Verdict::Accepted));
    assert_eq!(Verdict::from_status("duplicate"), Some(Verdict::Duplicate));
    assert_eq!(Verdict::from_status("rejected"), Some(Verdict::Rejected));
    assert_eq!(Verdict::from_status("refused"), None);
    assert_eq!(Verdict::from_status("busy"), None);
}
