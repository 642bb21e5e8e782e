//! The host's report-file loaders: the frame reader (`ldp::frames`), campaign
//! intake with resynchronisation (`ldp::intake`), and the JSON loaders of
//! campaigns and saved intake state. The first byte chooses the campaign.
#![no_main]

use libfuzzer_sys::fuzz_target;
use privq_host::ldp::campaign::{Campaign, Limits};
use privq_host::ldp::frames::frames;
use privq_host::ldp::intake::Intake;
use privq_host::ldp::postprocess::PostProcess;

const CAMPAIGNS: [&str; 6] = [
    r#"{"mechanism": "grr", "epsilon": "1/2", "domain": 10, "queries": [0]}"#,
    r#"{"mechanism": "oue", "epsilon": "2", "domain": 300, "queries": [0, "1-3"]}"#,
    r#"{"mechanism": "olh", "epsilon": "1/2", "domain": 10, "queries": [0]}"#,
    r#"{"mechanism": "hr", "epsilon": "2", "domain": 300, "queries": [0]}"#,
    r#"{"mechanism": "rr", "epsilon": "1/2", "queries": [0]}"#,
    r#"{"mechanism": "1bitmean", "epsilon": "1/2", "bound": 10, "queries": [0]}"#,
];

fuzz_target!(|data: &[u8]| {
    let Some((&which, file)) = data.split_first() else {
        return;
    };
    // Small limits: a state or campaign may declare its full allowance of counters,
    // which the intake then allocates (bounded by design, but slow to fuzz at 64 MiB).
    let limits = Limits::from_mib(1);
    let text = CAMPAIGNS[usize::from(which) % CAMPAIGNS.len()];
    let plan = Campaign::from_json(text)
        .and_then(|c| c.validate(&limits))
        .expect("the fixed campaigns are valid");
    let mut intake = Intake::new(plan);
    intake.ingest_slice("fuzz", file);
    let _ = intake.estimates(0.95, PostProcess::None);
    let _ = intake.outcome();
    if let Ok(it) = frames(file) {
        for _ in it {}
    }
    if let Ok(text) = std::str::from_utf8(file) {
        if let Ok(c) = Campaign::from_json(text) {
            let _ = c.validate(&limits);
        }
        if let Ok(state) = Intake::from_json(text, &limits) {
            let _ = state.estimates(0.95, PostProcess::None);
            let mut merged = state.clone();
            let _ = merged.merge(&state);
        }
    }
});
