//! `privq_aggregate(report)`: privq's campaign-checked intake as a DataFusion
//! user-defined aggregate function.
//!
//! | step           | what it does                                                    |
//! |----------------|-----------------------------------------------------------------|
//! | `update_batch` | [`Intake::ingest_reports`] on the batch's `report` values        |
//! | `state`        | the intake as saved-state JSON ([`Intake::to_state`]), Binary    |
//! | `merge_batch`  | [`Intake::from_json`] on each state, then [`Intake::merge`]      |
//! | `evaluate`     | the merged intake as saved-state JSON, Binary                    |
//!
//! Aggregator states are plain counts (and, for SQ Laplace, sums of dyadic
//! grid values), so merging partial states gives exactly the state of one
//! pass over all reports. The evaluated state is a `privq ldp merge` input.
//!
//! The argument may be Binary, LargeBinary or BinaryView (Parquet readers
//! differ). A null report counts as an empty report: rejected as
//! [`RejectReason::Truncated`](privq_host::ldp::decode::RejectReason::Truncated).

use std::hash::{Hash, Hasher};

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

use privq_host::ldp::campaign::{CampaignPlan, Limits};
use privq_host::ldp::intake::Intake;

/// The function's SQL name.
pub const NAME: &str = "privq_aggregate";

/// `privq_aggregate(report)` for reports of `plan`; saved states it merges are
/// re-validated against `limits`.
///
/// ```
/// use privq_analytics::udaf;
/// use privq_host::ldp::campaign::{Campaign, Limits};
/// use privq_host::ldp::fleet::MechanismSpec;
/// use privq_host::Epsilon;
///
/// let spec = MechanismSpec::parse("oue", Epsilon::new(1, 1)?, 16)?;
/// let plan = Campaign::for_spec(&spec).validate(&Limits::default())?;
/// let f = udaf::privq_aggregate(plan.clone(), Limits::default());
/// assert_eq!(f.name(), "privq_aggregate");
/// assert_eq!(udaf::campaign_of(&f), Some(&plan));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn privq_aggregate(plan: CampaignPlan, limits: Limits) -> AggregateUDF {
    AggregateUDF::from(PrivqAggregate {
        // Any binary layout: DataFusion reads Parquet BYTE_ARRAY columns as
        // BinaryView by default, other sources give Binary or LargeBinary.
        signature: Signature::uniform(
            1,
            vec![
                DataType::Binary,
                DataType::LargeBinary,
                DataType::BinaryView,
            ],
            Volatility::Immutable,
        ),
        plan,
        limits,
    })
}

/// The campaign a `privq_aggregate` function collects (`None` for any other
/// aggregate function): what an extension codec sends along with the plan.
pub fn campaign_of(f: &AggregateUDF) -> Option<&CampaignPlan> {
    f.inner().downcast_ref::<PrivqAggregate>().map(|p| &p.plan)
}

/// The function's implementation: a validated campaign and the limits states
/// are re-validated against.
#[derive(Debug, PartialEq, Eq)]
struct PrivqAggregate {
    signature: Signature,
    plan: CampaignPlan,
    limits: Limits,
}

impl Hash for PrivqAggregate {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Fields compared by `eq`; the campaign through its exact report shape.
        self.signature.hash(state);
        self.plan.header().hash(state);
        self.plan.report_len().hash(state);
        self.plan.memory_bytes().hash(state);
        self.limits.memory_bytes.hash(state);
    }
}

impl AggregateUDFImpl for PrivqAggregate {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Binary)
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        Ok(Box::new(IntakeAccumulator {
            intake: Intake::new(self.plan.clone()),
            limits: self.limits,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        let name = format_state_name(args.name, "intake");
        Ok(vec![Field::new(name, DataType::Binary, true).into()])
    }
}

/// The accumulator: one campaign-checked intake.
#[derive(Debug)]
struct IntakeAccumulator {
    intake: Intake,
    limits: Limits,
}

fn exec_err(what: &str, e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("{NAME}: {what}: {e}"))
}

/// Calls `f` with the byte values of a binary array (a null value as empty).
fn with_bytes(a: &ArrayRef, f: impl FnOnce(&mut dyn Iterator<Item = &[u8]>)) -> DfResult<()> {
    if let Some(b) = a.as_binary_opt::<i32>() {
        f(&mut b.iter().map(|v| v.unwrap_or(&[])));
    } else if let Some(b) = a.as_binary_opt::<i64>() {
        f(&mut b.iter().map(|v| v.unwrap_or(&[])));
    } else if let Some(b) = a.as_binary_view_opt() {
        f(&mut b.iter().map(|v| v.unwrap_or(&[])));
    } else {
        return Err(exec_err(
            "argument",
            format!("expected binary, got {}", a.data_type()),
        ));
    }
    Ok(())
}

impl IntakeAccumulator {
    fn serialized(&self) -> DfResult<ScalarValue> {
        let json = serde_json::to_vec(&self.intake.to_state()).map_err(|e| exec_err("state", e))?;
        Ok(ScalarValue::Binary(Some(json)))
    }
}

impl Accumulator for IntakeAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        let reports = values
            .first()
            .ok_or_else(|| exec_err("arguments", "expected one (the report)"))?;
        with_bytes(reports, |it| self.intake.ingest_reports(it))
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        self.serialized()
    }

    fn size(&self) -> usize {
        let counts: usize = self.intake.groups().map(|g| g.counts().len() * 8).sum();
        size_of_val(self) + counts + self.intake.stats().problems.len() * 64
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(vec![self.serialized()?])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        let states = states
            .first()
            .ok_or_else(|| exec_err("states", "expected one column"))?;
        let mut result = Ok(());
        let (intake, limits) = (&mut self.intake, &self.limits);
        with_bytes(states, |it| {
            for s in it {
                // Every partial aggregate has a state: a missing one (null or
                // empty) would drop its rows.
                if s.is_empty() {
                    result = Err(exec_err("state", "missing (null or empty)"));
                    return;
                }
                result = std::str::from_utf8(s)
                    .map_err(|e| exec_err("state", e))
                    .and_then(|text| {
                        Intake::from_json(text, limits).map_err(|e| exec_err("state", e))
                    })
                    .and_then(|other| intake.merge(&other).map_err(|e| exec_err("merge", e)));
                if result.is_err() {
                    return;
                }
            }
        })?;
        result
    }
}
