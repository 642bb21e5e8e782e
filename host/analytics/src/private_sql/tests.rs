//! `privq_bound`'s groups accumulator (`Acc` over `UnitColumns`) driven as
//! DataFusion drives it: group numbers out of order and repeated within a batch,
//! several batches, groups emitted early (`EmitTo::First`) as states and as
//! totals, the groups left renumbered and fed again, then the rest. Each emitted
//! group is checked against the in-process engine ([`Plan::totals`]) on the
//! rows that group was fed.

use super::*;
use privq_host::aggregate::{Aggregate, Contribution, Groups, PartialState, Query, UnitRows};
use privq_host::{Epsilon, seeded_rng};
use rand_core::Rng;

const HEADER: [&str; 3] = ["device", "region", "temp"];

/// One row: its unit, region and temperature, as the CSV file holds them.
type Row = [String; 3];

fn plan(limits: Contribution) -> Plan {
    let query = Query::new(
        ["region"],
        [
            ("n", Aggregate::Count),
            ("mean", Aggregate::Mean("temp".into())),
            ("median", Aggregate::quantile("temp", 0.5).unwrap()),
        ],
    );
    Plan::builder(query)
        .privacy_unit("device", limits)
        .bounds("temp", "0:40".parse().unwrap())
        .groups(Groups::Private { delta: 1e-6 })
        .build(Epsilon::new(1, 1).unwrap())
        .unwrap()
}

fn acc(plan: &Plan, key: BoundingKey) -> Acc<UnitColumns> {
    let origin = Origin {
        plan: plan.clone(),
        header: HEADER.map(String::from).into(),
        key,
        max_rows: 1 << 20,
    };
    Acc {
        sh: Arc::new(Shared::new(origin).unwrap()),
        states: UnitColumns::default(),
        bytes: 0,
    }
}

/// The aggregate's arguments for `rows`: the literal, then the fields the
/// reader reads, in its order (as the query passes them).
fn arguments(sh: &Shared, rows: &[&Row]) -> Vec<ArrayRef> {
    let mut out: Vec<ArrayRef> = vec![Arc::new(StringArray::from(vec!["0"; rows.len()]))];
    for h in sh.reader.fields() {
        out.push(Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r[h].as_str()),
        )));
    }
    out
}

/// The rows read and the totals (by key) the in-process engine gives `rows`
/// (one unit's, or none).
fn expected(plan: &Plan, key: &BoundingKey, rows: &[Row]) -> (u64, Vec<GroupTotals>) {
    if rows.is_empty() {
        return (0, Vec::new());
    }
    let mut csv = HEADER.join(",");
    for r in rows {
        csv.push('\n');
        csv.push_str(&r.join(","));
    }
    let table = Table::from_csv(csv.as_bytes(), &plan.columns(), 1 << 20).unwrap();
    let mut t = plan.totals(&table, key);
    t.sort_by(|a, b| a.key.cmp(&b.key));
    (rows.len() as u64, t)
}

/// The rows read, invalid rows and totals (by key) of a finished piece.
fn finished(bytes: &[u8]) -> (u64, u64, Vec<GroupTotals>) {
    let t = PartialTotals::decode(bytes).unwrap();
    let (seen, invalid) = (t.seen(), t.invalid());
    let mut t = t.into_totals().unwrap();
    t.sort_by(|a, b| a.key.cmp(&b.key));
    (seen, invalid, t)
}

/// Feeds `rows` (row, group number) to `a` in `batches` batches, the group
/// numbers as they come; `groups` grows to the largest number seen + 1.
fn feed(
    a: &mut Acc<UnitColumns>,
    rows: &[(Row, usize)],
    batches: usize,
    groups: &mut usize,
    model: &mut Vec<Vec<Row>>,
) {
    let size = rows.len().div_ceil(batches.max(1)).max(1);
    for chunk in rows.chunks(size) {
        let indices: Vec<usize> = chunk.iter().map(|(_, g)| *g).collect();
        *groups = (*groups).max(indices.iter().max().map_or(0, |g| g + 1));
        if model.len() < *groups {
            model.resize(*groups, Vec::new());
        }
        for (r, g) in chunk {
            model[*g].push(r.clone());
        }
        let refs: Vec<&Row> = chunk.iter().map(|(r, _)| r).collect();
        let args = arguments(&a.sh, &refs);
        GroupsAccumulator::update_batch(a, &args, &indices, None, *groups).unwrap();
    }
}

fn shuffle<T>(v: &mut [T], rng: &mut impl Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
}

/// Rows of `units` units (numbered from `first`), `rows` at most per unit:
/// light units in one region, the others spread, few values (identical rows),
/// some outside the bounds.
fn rows_of(first: usize, units: usize, rows: u64, rng: &mut impl Rng) -> Vec<Vec<Row>> {
    const TEMPS: [&str; 8] = ["-3", "0", "1.5", "4", "4", "12.5", "40", "45"];
    (first..first + units)
        .map(|u| {
            (0..1 + rng.next_u64() % rows)
                .map(|_| {
                    let region = if u % 3 == 0 {
                        u as u64 % 5
                    } else {
                        rng.next_u64() % 5
                    };
                    let temp = TEMPS[(rng.next_u64() % TEMPS.len() as u64) as usize];
                    [format!("d{u}"), format!("r{region}"), temp.to_string()]
                })
                .collect()
        })
        .collect()
}

/// Each unit's rows given a group number from `numbers` (in order), all rows
/// shuffled together.
fn numbered(units: Vec<Vec<Row>>, numbers: &[usize], rng: &mut impl Rng) -> Vec<(Row, usize)> {
    let mut out: Vec<(Row, usize)> = units
        .into_iter()
        .zip(numbers)
        .flat_map(|(rows, &g)| rows.into_iter().map(move |r| (r, g)))
        .collect();
    shuffle(&mut out, rng);
    out
}

#[test]
fn groups_emitted_first_and_the_rest_are_those_of_their_own_rows() {
    let mut rng = seeded_rng(61);
    for case in 0..16u64 {
        let limits = Contribution::new(1 + (case % 3) as u32, 1 + (case % 4) as u32).unwrap();
        let p = plan(limits);
        let key = BoundingKey::draw(&mut rng);
        let mut a = acc(&p, key);
        let partial = p.partial(key);
        // The model: each current group's rows, by group number.
        let mut model: Vec<Vec<Row>> = Vec::new();
        let mut groups = 0usize;
        // A finished piece (rows read, invalid rows, totals) against Plan::totals
        // of the rows group `g` was given.
        let check_piece = |piece: &[u8], rows: &[Row], what: &str, g: usize| {
            let (seen, invalid, totals) = finished(piece);
            let (want_seen, want) = expected(&p, &key, rows);
            assert_eq!(
                (seen, invalid),
                (want_seen, 0),
                "case {case}, {what}, group {g}"
            );
            assert_eq!(totals, want, "case {case}, {what}, group {g}");
        };
        let check_states = |states: &ArrayRef, emitted: &[Vec<Row>], what: &str| {
            let states = states.as_binary::<i64>();
            assert_eq!(states.len(), emitted.len(), "case {case}, {what}");
            for (g, rows) in emitted.iter().enumerate() {
                let mut u = UnitRows::default();
                assert!(u.merge_state(&partial, states.value(g)).is_some());
                let mut out = Vec::new();
                u.finish(&partial).encode(&mut out);
                check_piece(&out, rows, what, g);
            }
        };
        let check_totals = |pieces: &ArrayRef, emitted: &[Vec<Row>], what: &str| {
            let pieces = pieces.as_binary::<i64>();
            assert_eq!(pieces.len(), emitted.len(), "case {case}, {what}");
            for (g, rows) in emitted.iter().enumerate() {
                check_piece(pieces.value(g), rows, what, g);
            }
        };

        // Phase 1: units numbered in a shuffled order, rows in three batches.
        let units = 6 + (rng.next_u64() % 10) as usize;
        let mut numbers: Vec<usize> = (0..units).collect();
        shuffle(&mut numbers, &mut rng);
        let rows = numbered(rows_of(0, units, 25, &mut rng), &numbers, &mut rng);
        feed(&mut a, &rows, 3, &mut groups, &mut model);
        assert_eq!(a.states.groups(), groups);

        // The first n1 groups as states; the others renumbered from 0.
        let n1 = (rng.next_u64() % (groups as u64 + 1)) as usize;
        let states = GroupsAccumulator::state(&mut a, EmitTo::First(n1)).unwrap();
        let emitted: Vec<Vec<Row>> = model.drain(..n1).collect();
        check_states(&states[0], &emitted, "state(First(n1))");
        groups -= n1;
        assert_eq!(a.states.groups(), groups, "case {case}");

        // Phase 2: more rows of the groups left (new numbers), of emitted units
        // (new groups) and of new units, in two batches.
        let mut more: Vec<(Row, usize)> = Vec::new();
        for (g, rows) in model.iter().enumerate() {
            if rows.is_empty() || rng.next_u64().is_multiple_of(2) {
                continue;
            }
            let unit = rows[0][0].clone();
            for _ in 0..1 + rng.next_u64() % 6 {
                let region = format!("r{}", rng.next_u64() % 5);
                more.push(([unit.clone(), region, "7".into()], g));
            }
        }
        let fresh = 1 + (rng.next_u64() % 5) as usize;
        let back = emitted.iter().filter(|r| !r.is_empty()).count().min(2);
        let mut numbers: Vec<usize> = (groups..groups + fresh + back).collect();
        shuffle(&mut numbers, &mut rng);
        let mut new_units = rows_of(100, fresh, 12, &mut rng);
        for rows in emitted.iter().filter(|r| !r.is_empty()).take(back) {
            let unit = rows[0][0].clone();
            new_units.push(vec![[unit, "r0".into(), "2".into()]; 2]);
        }
        more.extend(numbered(new_units, &numbers, &mut rng));
        shuffle(&mut more, &mut rng);
        feed(&mut a, &more, 2, &mut groups, &mut model);
        assert_eq!(a.states.groups(), groups, "case {case}");

        // The first n2 groups as totals, then n3 as states, then the rest.
        let n2 = (rng.next_u64() % (groups as u64 + 1)) as usize;
        let totals = GroupsAccumulator::evaluate(&mut a, EmitTo::First(n2)).unwrap();
        let emitted: Vec<Vec<Row>> = model.drain(..n2).collect();
        check_totals(&totals, &emitted, "evaluate(First(n2))");
        let left = groups - n2;
        let n3 = (rng.next_u64() % (left as u64 + 1)) as usize;
        let states = GroupsAccumulator::state(&mut a, EmitTo::First(n3)).unwrap();
        let emitted: Vec<Vec<Row>> = model.drain(..n3).collect();
        check_states(&states[0], &emitted, "state(First(n3))");
        let totals = GroupsAccumulator::evaluate(&mut a, EmitTo::All).unwrap();
        let emitted: Vec<Vec<Row>> = std::mem::take(&mut model);
        check_totals(&totals, &emitted, "evaluate(All)");
        assert_eq!(a.states.groups(), 0, "case {case}");
    }
}

/// Every Arrow text type reads as the same texts, without a cast to 32-bit
/// offsets (which fails past 2 GiB of one batch's text), and `privq_trim` gives
/// them trimmed with 64-bit offsets.
#[test]
fn text_columns_of_every_type_read_alike() {
    use datafusion::arrow::array::{DictionaryArray, LargeStringArray, StringViewArray};
    use datafusion::arrow::datatypes::Int32Type;
    let values = [
        Some("a"),
        None,
        Some(" b "),
        Some("a unit text longer than twelve bytes "),
        Some(""),
        Some("a"),
    ];
    let columns: Vec<(ArrayRef, DataType)> = vec![
        (Arc::new(StringArray::from(values.to_vec())), DataType::Utf8),
        (
            Arc::new(LargeStringArray::from(values.to_vec())),
            DataType::LargeUtf8,
        ),
        (
            Arc::new(StringViewArray::from(values.to_vec())),
            DataType::Utf8View,
        ),
        (
            Arc::new(
                values
                    .iter()
                    .copied()
                    .collect::<DictionaryArray<Int32Type>>(),
            ),
            DataType::LargeUtf8,
        ),
    ];
    for (a, read_as) in columns {
        let texts = column_text(&a).unwrap();
        let read = match &texts {
            Texts::Utf8(_) => DataType::Utf8,
            Texts::Large(_) => DataType::LargeUtf8,
            Texts::View(_) => DataType::Utf8View,
        };
        assert_eq!(read, read_as, "{}", a.data_type());
        assert_eq!(
            texts.iter().collect::<Vec<_>>(),
            values,
            "{}",
            a.data_type()
        );
        let ColumnarValue::Array(t) = trim(&[ColumnarValue::Array(a.clone())]).unwrap() else {
            panic!("privq_trim returns an array");
        };
        let t = t.as_string::<i64>();
        let want: Vec<Option<&str>> = values.iter().map(|v| v.map(str::trim)).collect();
        assert_eq!(t.iter().collect::<Vec<_>>(), want, "{}", a.data_type());
    }
}
