//! The upload-frame verifier (`privq_core::upload::open`, host `verify_frame`).
//! The first byte chooses raw bytes (the checks before the tag) or bytes re-tagged
//! under the device key (the checks behind the tag: count, body, reports).
#![no_main]

use libfuzzer_sys::fuzz_target;
use privq_core::report::decode;
use privq_core::upload::{FrameError, open, peek_header};
use privq_fuzz::{key_of, retag};
use privq_host::ldp::upload::verify_frame;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let key = key_of(1);
    let bytes = if mode & 1 == 1 {
        retag(rest, &key)
    } else {
        rest.to_vec()
    };
    let opened = open(&bytes, &key);
    let host = verify_frame(&bytes, |_| Some(key.clone()));
    assert_eq!(opened.is_ok(), host.is_ok());
    if mode & 1 == 1 && peek_header(&bytes).is_ok() {
        assert_ne!(
            opened.err(),
            Some(FrameError::Mac),
            "a re-tagged frame verifies"
        );
    }
    if let Ok(f) = opened {
        let reports: Vec<&[u8]> = f.reports().collect();
        assert_eq!(reports.len(), usize::from(f.header.count));
        assert!(reports.iter().all(|r| decode(r).is_ok()));
        let v = host.expect("host agrees");
        assert_eq!(
            v.reports,
            reports.iter().map(|r| r.to_vec()).collect::<Vec<_>>()
        );
        assert_eq!(
            v.replay_key(),
            (f.header.device, f.header.epoch, f.header.sequence)
        );
    }
});
