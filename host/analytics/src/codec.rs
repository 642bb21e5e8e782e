//! Carrying `privq_aggregate` across a network: a DataFusion extension codec
//! whose UDAF payload is the campaign (feature `ballista`).
//!
//! A serialized plan names user-defined aggregate functions and may attach
//! bytes to each (`fun_definition` in DataFusion's protobuf plans). For
//! `privq_aggregate` [`PrivqCodec`] attaches [`encode_campaign`]: a tag and
//! the campaign's canonical JSON ([`CampaignPlan::campaign`]). A process that
//! decodes the plan (a Ballista scheduler or executor) rebuilds the function
//! from those bytes with [`decode_campaign`], so it needs no campaign
//! configured in advance and no function registered by name.
//!
//! The bytes come from the network and are untrusted. [`decode_campaign`]
//! bounds their length, checks the tag, parses the JSON (unknown fields are
//! an error) and validates the campaign against the decoder's own [`Limits`]
//! exactly as [`Campaign::validate`] does for a campaign file: a payload can
//! name any campaign the limits allow, never a larger state. Failures are a
//! [`CodecError`], returned to DataFusion as an error (never a panic). The
//! sender chooses no limits: states merged by a decoded function are
//! re-validated against the decoder's.
//!
//! `privq sql --engine ballista` sends two more functions the same way:
//! `privq_bound`, whose payload ([`encode_bound`]) is [`BOUND_TAG`] and a JSON
//! object of the plan's [`PlanSpec`] (its columns, bounds, groups, limits,
//! filter: everything public), the table's header (which column is which) and
//! the secret bounding key, and `privq_trim`, whose payload is [`TRIM_PAYLOAD`].
//! [`decode_bound`] bounds the length ([`MAX_BOUND_PAYLOAD_LEN`]), checks the
//! tag, parses strictly (an unknown field is an error) and rebuilds the plan
//! with [`PlanSpec::build`], the library's own checks (those of a request too:
//! at most 10^6 key combinations, keys trimmed and not empty, bounds only for
//! aggregated columns, no δ without groups); failures are a
//! [`SqlPayloadError`]. The bounding key is as secret as the noise: it goes to
//! the cluster's processes, which read the rows anyway (see
//! [`ballista`](crate::ballista) for whom that trusts).
//!
//! Every other node (tables, file formats, Ballista's shuffle operators,
//! other functions) goes to the wrapped codecs, Ballista's by default.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::{DataFusionError, Result as DfResult, TableReference};
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

use crate::private_sql::{BOUND, Origin, PrivqTrim, TRIM, origin_of, privq_bound, privq_trim};
use crate::udaf::{NAME, campaign_of, privq_aggregate};
use privq_host::aggregate::{AggregateError, BoundingKey, PlanSpec};
use privq_host::ldp::campaign::{Campaign, CampaignError, CampaignPlan, Limits};

/// The first bytes of a `privq_aggregate` payload (format and version).
pub const PAYLOAD_TAG: &[u8] = b"privq-aggregate/1\n";

/// The longest payload decoded. Canonical campaigns are a few hundred bytes;
/// a longer query list is still far below this.
pub const MAX_PAYLOAD_LEN: usize = 64 * 1024;

/// Why a `privq_aggregate` payload was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum CodecError {
    /// Longer than [`MAX_PAYLOAD_LEN`] bytes.
    TooLong(usize),
    /// Does not start with [`PAYLOAD_TAG`] (empty, another format or version).
    Tag,
    /// The campaign JSON is not UTF-8.
    Utf8,
    /// The campaign is not valid JSON, or not valid within the decoder's limits.
    Campaign(CampaignError),
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::TooLong(n) => {
                write!(f, "{NAME} payload of {n} bytes (at most {MAX_PAYLOAD_LEN})")
            }
            CodecError::Tag => write!(f, "{NAME} payload without its format tag"),
            CodecError::Utf8 => write!(f, "{NAME} payload: campaign is not UTF-8"),
            CodecError::Campaign(e) => write!(f, "{NAME} payload: {e}"),
        }
    }
}

impl std::error::Error for CodecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CodecError::Campaign(e) => Some(e),
            _ => None,
        }
    }
}

impl From<CodecError> for DataFusionError {
    fn from(e: CodecError) -> DataFusionError {
        DataFusionError::External(Box::new(e))
    }
}

/// The payload of `privq_aggregate` for `plan`: [`PAYLOAD_TAG`], then the
/// canonical campaign JSON.
pub fn encode_campaign(plan: &CampaignPlan) -> Vec<u8> {
    let mut out = PAYLOAD_TAG.to_vec();
    // A `Campaign` is strings, integers and lists: serializing cannot fail.
    serde_json::to_writer(&mut out, plan.campaign()).unwrap_or_default();
    out
}

/// The campaign of a payload, validated against `limits` (see the module
/// documentation for what is checked).
///
/// ```
/// use privq_analytics::codec::{decode_campaign, encode_campaign, CodecError};
/// use privq_host::ldp::campaign::{Campaign, Limits};
/// use privq_host::ldp::fleet::MechanismSpec;
/// use privq_host::Epsilon;
///
/// let spec = MechanismSpec::parse("olh", Epsilon::new(1, 1)?, 64)?;
/// let plan = Campaign::for_spec(&spec).validate(&Limits::default())?;
/// let bytes = encode_campaign(&plan);
/// assert_eq!(decode_campaign(&bytes, &Limits::default())?, plan);
/// assert!(matches!(decode_campaign(b"\x00garbage", &Limits::default()), Err(CodecError::Tag)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn decode_campaign(bytes: &[u8], limits: &Limits) -> Result<CampaignPlan, CodecError> {
    if bytes.len() > MAX_PAYLOAD_LEN {
        return Err(CodecError::TooLong(bytes.len()));
    }
    let json = bytes.strip_prefix(PAYLOAD_TAG).ok_or(CodecError::Tag)?;
    let text = std::str::from_utf8(json).map_err(|_| CodecError::Utf8)?;
    Campaign::from_json(text)
        .and_then(|c| c.validate(limits))
        .map_err(CodecError::Campaign)
}

/// The first bytes of a `privq_bound` payload (format and version).
pub const BOUND_TAG: &[u8] = b"privq-sql-bound/1\n";

/// The whole payload of `privq_trim` (format and version; the function has
/// no parameters).
pub const TRIM_PAYLOAD: &[u8] = b"privq-sql-trim/1";

/// The longest `privq_bound` payload decoded (16 MiB, Ballista's default gRPC
/// message limit): a plan with more public keys than fit is refused.
pub const MAX_BOUND_PAYLOAD_LEN: usize = 16 << 20;

/// Why a `privq_bound` or `privq_trim` payload was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum SqlPayloadError {
    /// Longer than [`MAX_BOUND_PAYLOAD_LEN`] bytes.
    TooLong(usize),
    /// Does not start with [`BOUND_TAG`] (or is not [`TRIM_PAYLOAD`]).
    Tag,
    /// Not the JSON object of the format: malformed, truncated, a field
    /// missing, unknown or of the wrong type.
    Json(serde_json::Error),
    /// The plan it describes is refused, as [`PlanSpec::build`] refuses it, or
    /// its header does not hold the plan's columns.
    Plan(AggregateError),
    /// The function could not be encoded (not expected).
    Encode(serde_json::Error),
}

impl fmt::Display for SqlPayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqlPayloadError::TooLong(n) => write!(
                f,
                "{BOUND} payload of {n} bytes (at most {MAX_BOUND_PAYLOAD_LEN})"
            ),
            SqlPayloadError::Tag => write!(f, "{BOUND}/{TRIM} payload without its format tag"),
            SqlPayloadError::Json(e) => write!(f, "{BOUND} payload: {e}"),
            SqlPayloadError::Plan(e) => write!(f, "{BOUND} payload: {e}"),
            SqlPayloadError::Encode(e) => write!(f, "{BOUND}: cannot encode: {e}"),
        }
    }
}

impl std::error::Error for SqlPayloadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SqlPayloadError::Json(e) | SqlPayloadError::Encode(e) => Some(e),
            SqlPayloadError::Plan(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SqlPayloadError> for DataFusionError {
    fn from(e: SqlPayloadError) -> DataFusionError {
        DataFusionError::External(Box::new(e))
    }
}

/// The JSON object after [`BOUND_TAG`].
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BoundPayload {
    /// The plan, as built (public).
    plan: PlanSpec,
    /// The table's header as the row reader sees it (public: column names).
    header: Vec<String>,
    /// The bounding key (secret).
    key: [u8; 16],
    /// The row cap.
    max_rows: u64,
}

/// What a `privq_bound` payload describes: the plan, the header, the bounding
/// key and the row cap. Its `Debug` shows no key.
pub struct BoundSpec {
    /// The plan, validated.
    pub plan: privq_host::aggregate::Plan,
    /// The table's header.
    pub header: Vec<String>,
    /// The bounding key.
    pub key: BoundingKey,
    /// The row cap.
    pub max_rows: u64,
}

impl fmt::Debug for BoundSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundSpec")
            .field("header", &self.header)
            .field("max_rows", &self.max_rows)
            .finish_non_exhaustive()
    }
}

/// The payload of `privq_bound`: [`BOUND_TAG`], then the JSON object.
pub fn encode_bound(spec: &BoundSpec) -> Result<Vec<u8>, SqlPayloadError> {
    let payload = BoundPayload {
        plan: spec.plan.spec(),
        header: spec.header.clone(),
        key: spec.key.to_bytes(),
        max_rows: spec.max_rows,
    };
    let mut out = BOUND_TAG.to_vec();
    serde_json::to_writer(&mut out, &payload).map_err(SqlPayloadError::Encode)?;
    Ok(out)
}

/// The plan, header, key and cap of a `privq_bound` payload, checked (see the
/// module documentation): the plan rebuilt by [`PlanSpec::build`], and the
/// header checked to hold its columns once each.
pub fn decode_bound(bytes: &[u8]) -> Result<BoundSpec, SqlPayloadError> {
    if bytes.len() > MAX_BOUND_PAYLOAD_LEN {
        return Err(SqlPayloadError::TooLong(bytes.len()));
    }
    let json = bytes.strip_prefix(BOUND_TAG).ok_or(SqlPayloadError::Tag)?;
    let p: BoundPayload = serde_json::from_slice(json).map_err(SqlPayloadError::Json)?;
    let plan = p.plan.build().map_err(SqlPayloadError::Plan)?;
    privq_host::aggregate::RowReader::new(&p.header, &plan.columns())
        .map_err(SqlPayloadError::Plan)?;
    Ok(BoundSpec {
        plan,
        header: p.header,
        key: BoundingKey::from_bytes(p.key),
        max_rows: p.max_rows,
    })
}

/// A logical and physical extension codec that carries `privq_aggregate`'s
/// campaign in the function's payload and passes everything else to the
/// wrapped codecs.
#[derive(Debug, Clone)]
pub struct PrivqCodec {
    limits: Limits,
    logical: Arc<dyn LogicalExtensionCodec>,
    physical: Arc<dyn PhysicalExtensionCodec>,
}

impl PrivqCodec {
    /// Wraps Ballista's own codecs; decoded campaigns are validated against
    /// `limits`.
    pub fn new(limits: Limits) -> PrivqCodec {
        PrivqCodec::wrapping(
            limits,
            Arc::new(ballista_core::serde::BallistaLogicalExtensionCodec::default()),
            Arc::new(ballista_core::serde::BallistaPhysicalExtensionCodec::default()),
        )
    }

    /// Wraps the given codecs.
    pub fn wrapping(
        limits: Limits,
        logical: Arc<dyn LogicalExtensionCodec>,
        physical: Arc<dyn PhysicalExtensionCodec>,
    ) -> PrivqCodec {
        PrivqCodec {
            limits,
            logical,
            physical,
        }
    }

    /// The limits decoded campaigns (and the states their functions merge)
    /// are validated against.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Appends `privq_aggregate`'s or `privq_bound`'s payload to `buf`;
    /// `false` for any other function.
    fn encode_udaf(node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<bool> {
        if let Some(plan) = campaign_of(node) {
            buf.extend_from_slice(&encode_campaign(plan));
            return Ok(true);
        }
        if let Some(o) = origin_of(node) {
            buf.extend_from_slice(&encode_bound(&BoundSpec {
                plan: o.plan.clone(),
                header: o.header.clone(),
                key: o.key,
                max_rows: o.max_rows,
            })?);
            return Ok(true);
        }
        Ok(false)
    }

    fn decode_udaf(&self, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        let plan = decode_campaign(buf, &self.limits)?;
        Ok(Arc::new(privq_aggregate(plan, self.limits)))
    }

    fn decode_bound_udaf(buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        let s = decode_bound(buf)?;
        let f = privq_bound(Origin {
            plan: s.plan,
            header: s.header,
            key: s.key,
            max_rows: s.max_rows,
        })
        .map_err(SqlPayloadError::Plan)?;
        Ok(Arc::new(f))
    }

    fn decode_trim(buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        if buf != TRIM_PAYLOAD {
            return Err(SqlPayloadError::Tag.into());
        }
        Ok(Arc::new(privq_trim()))
    }

    /// Appends `privq_trim`'s payload; `false` for any other function.
    fn encode_trim(node: &ScalarUDF, buf: &mut Vec<u8>) -> bool {
        if node.inner().downcast_ref::<PrivqTrim>().is_some() {
            buf.extend_from_slice(TRIM_PAYLOAD);
            true
        } else {
            false
        }
    }
}

impl LogicalExtensionCodec for PrivqCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> DfResult<Extension> {
        self.logical.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DfResult<()> {
        self.logical.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn TableProvider>> {
        self.logical
            .try_decode_table_provider(buf, table_ref, schema, ctx)
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        self.logical.try_encode_table_provider(table_ref, node, buf)
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn FileFormatFactory>> {
        self.logical.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> DfResult<()> {
        self.logical.try_encode_file_format(buf, node)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        match name {
            NAME => self.decode_udaf(buf),
            BOUND => PrivqCodec::decode_bound_udaf(buf),
            _ => self.logical.try_decode_udaf(name, buf),
        }
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        if PrivqCodec::encode_udaf(node, buf)? {
            Ok(())
        } else {
            self.logical.try_encode_udaf(node, buf)
        }
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        if name == TRIM {
            PrivqCodec::decode_trim(buf)
        } else {
            self.logical.try_decode_udf(name, buf)
        }
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        if PrivqCodec::encode_trim(node, buf) {
            Ok(())
        } else {
            self.logical.try_encode_udf(node, buf)
        }
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<WindowUDF>> {
        self.logical.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.logical.try_encode_udwf(node, buf)
    }
}

impl PhysicalExtensionCodec for PrivqCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.physical.try_decode(buf, inputs, ctx, proto_converter)
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<()> {
        self.physical.try_encode(node, buf, proto_converter)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        match name {
            NAME => self.decode_udaf(buf),
            BOUND => PrivqCodec::decode_bound_udaf(buf),
            _ => self.physical.try_decode_udaf(name, buf),
        }
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        if PrivqCodec::encode_udaf(node, buf)? {
            Ok(())
        } else {
            self.physical.try_encode_udaf(node, buf)
        }
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        if name == TRIM {
            PrivqCodec::decode_trim(buf)
        } else {
            self.physical.try_decode_udf(name, buf)
        }
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        if PrivqCodec::encode_trim(node, buf) {
            Ok(())
        } else {
            self.physical.try_encode_udf(node, buf)
        }
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<WindowUDF>> {
        self.physical.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.physical.try_encode_udwf(node, buf)
    }
}
