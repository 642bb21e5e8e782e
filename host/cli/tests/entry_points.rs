//! The `privq` program is a thin front end: for a fixed seed, each command that
//! releases prints byte for byte what its library entry point returns, and the
//! entry point's accountant is bound to the relation the command declares.

use std::path::{Path, PathBuf};
use std::process::Command;

use privq_host::central::ReportNoisyMax;
use privq_host::central::values::{Sampler, ValueBound, ValueNoise};
use privq_host::contract::{Mechanism, Neighbours};
use privq_host::data::{
    BinOutput, CsvColumns, Domain, DomainSource, MemoryCap, Records, write_records, write_rows,
};
use privq_host::query::Workload;
use privq_host::synth::adaptive::MarginalWorkload;
use privq_host::synth::mwem::MwemRequest;
use privq_host::synth::release::{SynthRequest, synthesize};
use privq_host::{Epsilon, Fixed, seeded_rng};

fn inputs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/inputs")
}

fn privq(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_privq"))
        .args(args)
        .current_dir(inputs())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn eps(n: u64, d: u64) -> Epsilon {
    Epsilon::new(n, d).unwrap()
}

fn people_domain() -> Domain {
    Domain::from_json(&std::fs::read_to_string(inputs().join("people-domain.json")).unwrap())
        .unwrap()
}

#[test]
fn synth_adaptive_prints_what_synthesize_returns() {
    let domain = people_domain();
    let text = std::fs::read(inputs().join("people.csv")).unwrap();
    let records = Records::from_csv(&text[..], &domain, &CsvColumns::new()).unwrap();
    let workload = MarginalWorkload::all_k_way(&domain, 3).unwrap();
    let request = SynthRequest::new(eps(1, 1), 1e-9, Neighbours::AddRemove).unwrap();
    let out = synthesize(
        &records,
        &domain,
        &workload,
        &request,
        &mut seeded_rng(21),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(out.accountant.neighbours(), Some(Neighbours::AddRemove));
    let mut want = Vec::new();
    write_rows(&mut want, &domain, &out.rows, BinOutput::Midpoint).unwrap();
    let got = privq(&[
        "synth",
        "--input",
        "people.csv",
        "--domain",
        "people-domain.json",
        "--epsilon",
        "1",
        "--seed",
        "21",
    ]);
    assert_eq!(
        String::from_utf8(got).unwrap(),
        String::from_utf8(want).unwrap()
    );
}

#[test]
fn synth_mwem_prints_what_the_mwem_request_returns() {
    let mut rng = seeded_rng(22);
    let mut run = MwemRequest::new(eps(1, 2))
        .open(
            &inputs().join("binary.csv"),
            Some(DomainSource::BinaryHeader),
            &CsvColumns::new(),
            MemoryCap::default(),
            &mut rng,
        )
        .unwrap();
    let workload = Workload::parities(&run.dataset().domain, 3).unwrap();
    let out = run.release(&workload, &mut rng, &mut |_, _| {}).unwrap();
    assert_eq!(run.accountant().neighbours(), Some(Neighbours::Replace));
    let mut want = Vec::new();
    write_records(
        &mut want,
        &run.dataset().domain,
        &out.cells,
        BinOutput::Midpoint,
    )
    .unwrap();
    let got = privq(&[
        "synth",
        "--mechanism",
        "mwem",
        "--input",
        "binary.csv",
        "--domain",
        "binary",
        "--epsilon",
        "1/2",
        "--seed",
        "22",
    ]);
    assert_eq!(
        String::from_utf8(got).unwrap(),
        String::from_utf8(want).unwrap()
    );
}

#[test]
fn noise_prints_what_value_noise_returns() {
    let text = std::fs::read_to_string(inputs().join("counts.txt")).unwrap();
    let values: Vec<Fixed> = text.lines().map(|l| l.parse().unwrap()).collect();
    let bound = ValueBound::Range {
        lo: Fixed::from_int(0),
        hi: Fixed::from_int(50),
    };
    let noise = ValueNoise::new(eps(1, 2), bound, None, Sampler::Exact)
        .unwrap()
        .with_count(values.len());
    let (released, accountant) = noise
        .release_with_ledger(&values, &mut seeded_rng(23))
        .unwrap();
    assert_eq!(accountant.neighbours(), Some(Neighbours::Replace));
    let want: String = released.iter().map(|v| format!("{v}\n")).collect();
    let got = privq(&[
        "noise",
        "--input",
        "counts.txt",
        "--epsilon",
        "1/2",
        "--range",
        "0,50",
        "--seed",
        "23",
    ]);
    assert_eq!(String::from_utf8(got).unwrap(), want);
}

#[test]
fn top_prints_what_report_noisy_max_returns() {
    let values = ["north", "south", "east", "west"];
    let text = std::fs::read_to_string(inputs().join("people.csv")).unwrap();
    let mut counts = [0u64; 4];
    for line in text.lines().skip(1) {
        let region = line.split(',').nth(2).unwrap();
        counts[values.iter().position(|v| *v == region).unwrap()] += 1;
    }
    // Far below the real gaps, so the winner depends on the noise.
    let mech = ReportNoisyMax::counts(Neighbours::AddRemove, eps(1, 100), 4).unwrap();
    let mut acct = privq_host::accountant::Accountant::pure(eps(1, 100));
    acct.bind(Neighbours::AddRemove);
    let mut rng = seeded_rng(24);
    let want = mech.release(&counts[..], &mut acct, &mut rng).unwrap();
    let got = privq(&[
        "top",
        "--input",
        "people.csv",
        "--column",
        "region",
        "--values",
        "north,south,east,west",
        "--epsilon",
        "1/100",
        "--seed",
        "24",
    ]);
    assert_eq!(
        String::from_utf8(got).unwrap(),
        format!("{}\n", values[want])
    );
}

#[test]
fn pmw_prints_what_the_opened_session_answers() {
    use privq_host::central::pmw::{Answer, PmwConfig, PmwSession};
    use privq_host::data::Dataset;
    use privq_host::query::Query;

    let ds = Dataset::binary_from_header(
        &inputs().join("binary.csv"),
        &CsvColumns::new(),
        MemoryCap::default(),
    )
    .unwrap();
    let params = PmwConfig::practical(eps(1, 1), ds.counts.total(), 0.3).unwrap();
    let (mut session, accountant) =
        PmwSession::open(&ds.counts, params, 10, None, seeded_rng(8)).unwrap();
    assert_eq!(accountant.neighbours(), Some(Neighbours::Replace));
    // pmw-queries.txt: count a1=1 a2=1 / a3=1 / a4=1 a5=0 / a6=1.
    let mut want = String::new();
    for (attrs, values) in [
        (vec![0, 1], vec![1, 1]),
        (vec![2], vec![1]),
        (vec![3, 4], vec![1, 0]),
        (vec![5], vec![1]),
    ] {
        let q = Query::marginal_cell(&ds.domain, &attrs, &values).unwrap();
        want.push_str(&match session.answer(&q).unwrap() {
            Answer::Lazy(v) => format!("{v:.6}\tlazy\n"),
            Answer::Update(v) => format!("{v:.6}\tupdate\n"),
            other => panic!("{other:?}: no failure within 4 queries"),
        });
    }
    let got = privq(&[
        "pmw",
        "--input",
        "binary.csv",
        "--domain",
        "binary",
        "--epsilon",
        "1",
        "--rounds",
        "10",
        "--alpha",
        "0.3",
        "--queries",
        "pmw-queries.txt",
        "--seed",
        "8",
    ]);
    assert_eq!(String::from_utf8(got).unwrap(), want);
}

#[test]
fn conjunctions_cut_prints_what_the_cut_config_releases() {
    use privq_host::conjunctions::{CutConfig, Graph};

    let text = std::fs::read_to_string(inputs().join("edges.csv")).unwrap();
    let edges: Vec<(u32, u32)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let (u, v) = l.split_once(',').unwrap();
            (u.trim().parse().unwrap(), v.trim().parse().unwrap())
        })
        .collect();
    let graph = Graph::new(10, &edges).unwrap();
    let config = CutConfig {
        alpha: 0.5,
        beta: 0.1,
        p: vec![0.5; 10],
        cap: 8,
        rho: None,
        e_max: 40,
        require_tolerance: false,
    };
    let (released, accountant) = config
        .release(&graph, eps(1, 1), &mut seeded_rng(17))
        .unwrap();
    assert_eq!(accountant.neighbours(), Some(Neighbours::AddRemove));
    let mut want = String::from("set,cut_fraction,cut_edges\n");
    for (text, set) in [("0,1,2", 0b111u64), ("5", 1 << 5)] {
        want.push_str(&format!(
            "\"{text}\",{},{}\n",
            released.cut(set),
            released.cut_edges(set)
        ));
    }
    let out = std::env::temp_dir().join(format!("privq-entry-cut-{}.json", std::process::id()));
    let got = privq(&[
        "conjunctions",
        "cut",
        "--edges",
        "edges.csv",
        "--vertices",
        "10",
        "--e-max",
        "40",
        "--epsilon",
        "1",
        "--seed",
        "17",
        "--set",
        "0,1,2",
        "--set",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&out);
    assert_eq!(String::from_utf8(got).unwrap(), want);
}

#[test]
fn distance_release_prints_what_release_synopsis_returns() {
    use privq_host::distance::BoxDomain;
    use privq_host::distance::privacy::Privacy;
    use privq_host::distance::release::{DistanceRequest, release_synopsis};
    let text = std::fs::read_to_string(inputs().join("points.csv")).unwrap();
    let points: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|f| f.parse().unwrap()).collect())
        .collect();
    let domain = BoxDomain::new(vec![0.0, 0.0], vec![1.0, 1.0]).unwrap();
    let request = DistanceRequest::new(domain, Privacy::pure(eps(1, 1)));
    let out = release_synopsis(&points, &request, &mut seeded_rng(13)).unwrap();
    assert_eq!(out.accountant.neighbours(), Some(Neighbours::Replace));
    assert_eq!(out.accountant.neighbours(), Some(request.neighbours()));
    let want = format!("{}\n", out.synopsis.to_json().unwrap());
    let got = privq(&[
        "distance",
        "release",
        "--input",
        "points.csv",
        "--lo",
        "0,0",
        "--hi",
        "1,1",
        "--epsilon",
        "1",
        "--seed",
        "13",
        "--out",
        "-",
    ]);
    assert_eq!(String::from_utf8(got).unwrap(), want);
}

/// `privq fairness` spends no privacy budget: its entry points return no
/// accountant (there is no relation to bind), and the mapping is deterministic.
#[test]
fn fairness_em_prints_what_exponential_returns() {
    use privq_host::dx::FiniteMetric;
    use privq_host::fairness::LIPSCHITZ_SCALE;
    use privq_host::fairness::release::{EmRequest, Individuals, exponential};
    // The CLI's number format (`num` in main.rs).
    let num = |x: f64| {
        if x == 0.0 || !x.is_finite() || (1e-4..1e15).contains(&x.abs()) {
            format!("{x}")
        } else {
            format!("{x:e}")
        }
    };
    let text = std::fs::read_to_string(inputs().join("individuals.csv")).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let points: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| vec![r[4].parse().unwrap(), r[5].parse().unwrap()])
        .collect();
    let people = Individuals {
        ids: rows.iter().map(|r| r[0].to_string()).collect(),
        groups: rows.iter().map(|r| r[1].to_string()).collect(),
        weights: None,
        losses: vec![vec![]; rows.len()],
        metric: FiniteMetric::weighted_l1(&points, &[0.1, 0.02]).unwrap(),
    };
    let out = exponential(&people, &EmRequest::new(LIPSCHITZ_SCALE)).unwrap();
    assert!(out.report.lipschitz);
    let mut want = format!("id,{}\n", people.ids.join(","));
    for (x, id) in people.ids.iter().enumerate() {
        let row: Vec<String> = out.mapping.row(x).iter().map(|&p| num(p)).collect();
        want.push_str(&format!("{id},{}\n", row.join(",")));
    }
    let got = privq(&[
        "fairness",
        "em",
        "--individuals",
        "individuals.csv",
        "--features",
        "score:0.1,age:0.02",
        "--out",
        "-",
    ]);
    assert_eq!(String::from_utf8(got).unwrap(), want);
}

/// `privq`'s number format (`num` in the CLI): plain, or scientific outside
/// [1e-4, 1e15).
fn cli_num(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 || !x.is_finite() || (1e-4..1e15).contains(&a) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

#[test]
fn knorm_prints_what_knorm_release_returns() {
    use privq_host::knorm::release::{KnormMechanism, KnormRequest, release};
    use privq_host::knorm::{Body, NikmOptions};

    let read = |name: &str| -> Vec<u64> {
        std::fs::read_to_string(inputs().join(name))
            .unwrap()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect()
    };
    let cases: [(&[&str], Body, &str, KnormRequest, u64); 4] = [
        (
            &[
                "--body",
                "identity:3",
                "--counts",
                "counts.txt",
                "--epsilon",
                "1",
            ],
            Body::identity(3).unwrap(),
            "counts.txt",
            KnormRequest::new(
                eps(1, 1),
                Neighbours::AddRemove,
                KnormMechanism::KNorm { steps: None },
            ),
            7,
        ),
        (
            &[
                "--body",
                "identity:3",
                "--counts",
                "counts.txt",
                "--epsilon",
                "1",
                "--mechanism",
                "nikm",
                "--neighbours",
                "replace",
            ],
            Body::identity(3).unwrap(),
            "counts.txt",
            KnormRequest::new(
                eps(1, 1),
                Neighbours::Replace,
                KnormMechanism::Nikm(NikmOptions::default()),
            ),
            9,
        ),
        (
            &[
                "--body",
                "hypercube:3",
                "--counts",
                "counts8.txt",
                "--epsilon",
                "1/2",
                "--mechanism",
                "laplace",
            ],
            Body::hypercube(3).unwrap(),
            "counts8.txt",
            KnormRequest::new(eps(1, 2), Neighbours::AddRemove, KnormMechanism::Laplace),
            8,
        ),
        (
            &[
                "--body",
                "hypercube:3",
                "--counts",
                "counts8.txt",
                "--epsilon",
                "1/2",
                "--neighbours",
                "replace",
            ],
            Body::hypercube(3).unwrap(),
            "counts8.txt",
            KnormRequest::new(
                eps(1, 2),
                Neighbours::Replace,
                KnormMechanism::KNorm { steps: None },
            ),
            10,
        ),
    ];
    for (argv, body, counts, request, seed) in cases {
        let out = release(
            body,
            &read(counts),
            &request,
            &mut seeded_rng(seed),
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(out.accountant.neighbours(), Some(request.neighbours()));
        assert_eq!(out.accountant.ledger().len(), 1);
        let mut want = String::from("query,answer\n");
        for (i, a) in out.answers.iter().enumerate() {
            want.push_str(&format!("{i},{}\n", cli_num(*a)));
        }
        let seed = seed.to_string();
        let got = privq(&[&["knorm"], argv, &["--seed", &seed]].concat());
        assert_eq!(String::from_utf8(got).unwrap(), want, "{argv:?}");
    }
}

#[test]
fn dx_prints_what_dx_release_returns() {
    use privq_host::dx::release::{DxRequest, NEIGHBOURS, Strategy, release};
    use privq_host::dx::{FiniteMetric, Queries};

    let text = std::fs::read_to_string(inputs().join("universe.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("x,y,n,value"));
    let (mut points, mut counts, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for line in lines {
        let f: Vec<f64> = line.split(',').map(|t| t.parse().unwrap()).collect();
        points.push(vec![f[0], f[1]]);
        counts.push(f[2] as u64);
        values.push(f[3]);
    }
    let cases = [
        (
            FiniteMetric::euclidean(&points, 1.0).unwrap(),
            DxRequest::new(Strategy::Psa),
            vec!["--seed", "11"],
        ),
        (
            FiniteMetric::blowfish(&points, 1.0, 4.0).unwrap(),
            DxRequest::new(Strategy::S2).budget(Some(eps(5, 1))),
            vec![
                "--metric",
                "blowfish",
                "--threshold",
                "4",
                "--strategy",
                "s2",
                "--budget",
                "5",
                "--seed",
                "12",
            ],
        ),
    ];
    for (metric, request, extra) in cases {
        let seed: u64 = extra.last().unwrap().parse().unwrap();
        let queries = Queries::new(vec![values.clone()]).unwrap();
        let out = release(&metric, queries, &counts, &request, &mut seeded_rng(seed)).unwrap();
        assert_eq!(NEIGHBOURS, Neighbours::Replace);
        assert_eq!(out.accountant.neighbours(), Some(Neighbours::Replace));
        assert_eq!(out.accountant.ledger().len(), 1);
        let mut want = String::from("query,answer,noise_scale,baseline_scale,improvement\n");
        for (k, a) in out.answers.iter().enumerate() {
            let s = out.mechanism.scale(k);
            let base = out.baseline_scale;
            let improvement = if s > 0.0 { base / s } else { f64::INFINITY };
            want.push_str(&format!(
                "{k},{},{},{},{}\n",
                cli_num(*a),
                cli_num(s),
                cli_num(base),
                cli_num(improvement)
            ));
        }
        let argv = [
            &[
                "dx",
                "--universe",
                "universe.csv",
                "--coords",
                "x,y",
                "--counts",
                "n",
                "--epsilon",
                "1",
                "--query-column",
                "value",
            ][..],
            &extra[..],
        ]
        .concat();
        let got = privq(&argv);
        assert_eq!(String::from_utf8(got).unwrap(), want, "{argv:?}");
    }
}
