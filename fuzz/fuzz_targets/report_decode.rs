//! The core report decoder (`privq_core::report::decode`) and the host's
//! classification of its errors, on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use privq_core::report::{HEADER_LEN, decode, encode_header};
use privq_host::ldp::aggregate::ReportKind;
use privq_host::ldp::decode::decode_report;

fuzz_target!(|data: &[u8]| {
    let core = decode(data);
    let host = decode_report(data);
    assert_eq!(core.is_ok(), host.is_ok());
    if let Ok(r) = core {
        // A valid header re-encodes (ε reduced) to a header that decodes the same.
        let mut head = [0u8; HEADER_LEN];
        encode_header(&r.header, &mut head).expect("a decoded header is encodable");
        let mut again = data.to_vec();
        again[..HEADER_LEN].copy_from_slice(&head);
        let r2 = decode(&again).expect("re-encoded header decodes");
        assert_eq!(r2, r);
        let _ = ReportKind::of(&r);
    }
});
