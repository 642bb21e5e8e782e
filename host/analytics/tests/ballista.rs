//! The Parquet aggregation on Apache Ballista in standalone mode (feature
//! `ballista`): the same query and function on a scheduler and an executor
//! that know no campaign must give exactly the in-process intake (and the
//! in-process DataFusion result) for several mechanisms and partitionings;
//! forged `privq_aggregate` payloads are typed errors, never panics.

mod common;

use common::{Dir, assert_same, campaigns, mixed_reports, plan, write_table};
use datafusion::common::DataFusionError;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::PhysicalExtensionCodec;
use privq_analytics::codec::{
    CodecError, MAX_PAYLOAD_LEN, PAYLOAD_TAG, PrivqCodec, decode_campaign, encode_campaign,
};
use privq_analytics::{ballista, query, udaf};
use privq_host::ldp::campaign::{CampaignError, Limits};
use privq_host::ldp::intake::Intake;

#[test]
fn ballista_equals_in_process_and_datafusion_for_mechanisms_and_partitionings() {
    let reports = mixed_reports();
    let dir = Dir::new("ballista-equal");
    let limits = Limits::default();
    let campaigns = campaigns();
    // OUE over three queries, GRR, and SQ Laplace (sums of grid values).
    let chosen = [&campaigns[0], &campaigns[1], &campaigns[4]];
    let work_dirs = || -> std::collections::BTreeSet<_> {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .filter(|n| n.to_string_lossy().starts_with("privq-ballista-"))
            .collect()
    };
    let before = work_dirs();
    for files in [1u64, 3, 7] {
        let table_dir = dir.0.join(format!("t{files}"));
        let rows = (reports.len() as u64).div_ceil(files);
        write_table(&table_dir, &reports, rows);
        assert_eq!(query::parquet_files(&table_dir).unwrap(), files);
        for plan in chosen {
            let name = plan.campaign().mechanism.clone();
            let mut want = Intake::new(plan.clone());
            want.ingest_reports(reports.iter().map(Vec::as_slice));
            assert!(want.stats().accepted >= 400, "{name}");
            for tp in [1, 2] {
                let what = format!("{name}, {files} files, target_partitions {tp}");
                let got =
                    ballista::aggregate_parquet_ballista(&table_dir, plan, &limits, tp).unwrap();
                assert_same(&got, &want, &what);
                // Bit-identical to DataFusion in one process, inputs included.
                let local = query::aggregate_parquet(&table_dir, plan, &limits, tp).unwrap();
                assert_eq!(got.to_state(), local.to_state(), "{what}");
                assert_eq!(got.stats().inputs, files, "{what}");
            }
        }
    }
    // The executors' private work directories are gone.
    assert!(work_dirs().is_subset(&before));
}

fn dferr_codec(e: &DataFusionError) -> Option<&CodecError> {
    match e {
        DataFusionError::External(e) => e.downcast_ref::<CodecError>(),
        _ => None,
    }
}

#[test]
fn codec_round_trips_the_campaign_and_refuses_forged_payloads() {
    let limits = Limits::default();
    let codec = PrivqCodec::new(limits);
    for plan in campaigns() {
        let f = udaf::privq_aggregate(plan.clone(), limits);
        let mut buf = Vec::new();
        LogicalExtensionCodec::try_encode_udaf(&codec, &f, &mut buf).unwrap();
        assert!(buf.starts_with(PAYLOAD_TAG));
        let mut buf2 = Vec::new();
        PhysicalExtensionCodec::try_encode_udaf(&codec, &f, &mut buf2).unwrap();
        assert_eq!(buf, buf2);
        assert_eq!(buf, encode_campaign(&plan));
        let back = LogicalExtensionCodec::try_decode_udaf(&codec, udaf::NAME, &buf).unwrap();
        assert_eq!(udaf::campaign_of(&back), Some(&plan));
        let back = PhysicalExtensionCodec::try_decode_udaf(&codec, udaf::NAME, &buf).unwrap();
        assert_eq!(udaf::campaign_of(&back), Some(&plan));
    }

    let tagged = |json: &str| [PAYLOAD_TAG, json.as_bytes()].concat();
    let forged: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("garbage", (0..200u8).map(|i| i.wrapping_mul(37)).collect()),
        (
            "untagged json",
            br#"{"mechanism":"grr","epsilon":"1","domain":16}"#.to_vec(),
        ),
        ("tag only", PAYLOAD_TAG.to_vec()),
        ("not utf-8", [PAYLOAD_TAG, &[0xff, 0xfe, b'{']].concat()),
        ("not json", tagged("{\"mechanism\":")),
        (
            "unknown field",
            tagged(r#"{"mechanism":"grr","epsilon":"1","domain":16,"x":1}"#),
        ),
        (
            "huge domain",
            tagged(r#"{"mechanism":"grr","epsilon":"1","domain":4000000000}"#),
        ),
        (
            "huge report",
            tagged(r#"{"mechanism":"oue","epsilon":"1","domain":4000000000}"#),
        ),
        (
            "huge query range",
            tagged(r#"{"mechanism":"oue","epsilon":"1","domain":60000,"queries":["0-65535"]}"#),
        ),
        (
            "bad epsilon",
            tagged(r#"{"mechanism":"grr","epsilon":"-1","domain":16}"#),
        ),
        (
            "unknown mechanism",
            tagged(r#"{"mechanism":"x","epsilon":"1","domain":16}"#),
        ),
        (
            "too long",
            [PAYLOAD_TAG, &vec![b' '; MAX_PAYLOAD_LEN]].concat(),
        ),
    ];
    for (what, bytes) in &forged {
        let direct = decode_campaign(bytes, &limits);
        assert!(direct.is_err(), "{what}");
        let l = LogicalExtensionCodec::try_decode_udaf(&codec, udaf::NAME, bytes).unwrap_err();
        let p = PhysicalExtensionCodec::try_decode_udaf(&codec, udaf::NAME, bytes).unwrap_err();
        for e in [&l, &p] {
            assert!(dferr_codec(e).is_some(), "{what}: {e}");
            assert!(e.to_string().contains(udaf::NAME), "{what}: {e}");
        }
    }
    assert!(matches!(
        decode_campaign(&forged[0].1, &limits),
        Err(CodecError::Tag)
    ));
    for i in [7, 8, 9] {
        // Huge domain, report and query range: refused before any state exists.
        assert!(
            matches!(
                decode_campaign(&forged[i].1, &limits),
                Err(CodecError::Campaign(
                    CampaignError::Memory { .. }
                        | CampaignError::ReportTooLong(_)
                        | CampaignError::Parameter(..)
                ))
            ),
            "{}",
            forged[i].0
        );
    }
    assert!(matches!(
        decode_campaign(&forged[12].1, &limits),
        Err(CodecError::TooLong(_))
    ));
    // The decoder's limits decide, not the sender's: a campaign valid under
    // the default limits is refused by a decoder with a smaller cap.
    let big = plan(r#"{"mechanism":"oue","epsilon":"1","domain":64,"queries":["0-2"]}"#);
    let small = Limits { memory_bytes: 1024 };
    let e = PrivqCodec::new(small);
    let err = LogicalExtensionCodec::try_decode_udaf(&e, udaf::NAME, &encode_campaign(&big));
    assert!(matches!(
        err.as_ref().map_err(dferr_codec),
        Err(Some(CodecError::Campaign(CampaignError::Memory { .. })))
    ));
    // Other functions are the wrapped codec's: not decoded as privq's.
    assert!(
        LogicalExtensionCodec::try_decode_udaf(&codec, "sum", &encode_campaign(&big))
            .map_or(true, |f| udaf::campaign_of(&f).is_none())
    );
}
