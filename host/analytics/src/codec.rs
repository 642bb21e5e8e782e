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

use crate::udaf::{NAME, campaign_of, privq_aggregate};
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

    /// Appends `privq_aggregate`'s payload to `buf`; `false` for any other
    /// function.
    fn encode_udaf(node: &AggregateUDF, buf: &mut Vec<u8>) -> bool {
        match campaign_of(node) {
            Some(plan) => {
                buf.extend_from_slice(&encode_campaign(plan));
                true
            }
            None => false,
        }
    }

    fn decode_udaf(&self, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        let plan = decode_campaign(buf, &self.limits)?;
        Ok(Arc::new(privq_aggregate(plan, self.limits)))
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
        if name == NAME {
            self.decode_udaf(buf)
        } else {
            self.logical.try_decode_udaf(name, buf)
        }
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        if PrivqCodec::encode_udaf(node, buf) {
            Ok(())
        } else {
            self.logical.try_encode_udaf(node, buf)
        }
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        self.logical.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.logical.try_encode_udf(node, buf)
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
        if name == NAME {
            self.decode_udaf(buf)
        } else {
            self.physical.try_decode_udaf(name, buf)
        }
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        if PrivqCodec::encode_udaf(node, buf) {
            Ok(())
        } else {
            self.physical.try_encode_udaf(node, buf)
        }
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        self.physical.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.physical.try_encode_udf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<WindowUDF>> {
        self.physical.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.physical.try_encode_udwf(node, buf)
    }
}
