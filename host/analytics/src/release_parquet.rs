//! `privq sql --output FILE.parquet`: a released table as one Parquet file.
//!
//! The columns are [`Release::columns`]' (post-processing of a release: nothing
//! here reads data or draws noise): group-by columns as UTF-8 text, counts as
//! 64-bit integers, the other estimates and the intervals' bounds as doubles.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use privq_host::aggregate::{Release, ReleasedValues};

use crate::table::TableError;

/// `release` as the bytes of a Parquet file (one row group).
///
/// ```
/// use privq_host::{Epsilon, aggregate::{SqlRequest, Table}};
/// let plan = SqlRequest::new("SELECT region, COUNT(*) AS n FROM t GROUP BY region")?
///     .tables(["t"])
///     .keys("region", ["north", "south"])
///     .build(Epsilon::new(1, 1)?)?;
/// let table = Table::from_csv("region\nnorth\n".as_bytes(), &plan.columns(), 10)?;
/// let (release, _) = plan.release(&table, &mut privq_host::seeded_rng(1))?;
/// let bytes = privq_analytics::release_parquet::to_parquet(&release)?;
/// assert_eq!(&bytes[..4], b"PAR1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_parquet(release: &Release) -> Result<Vec<u8>, TableError> {
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for column in release.columns() {
        let (kind, array): (DataType, ArrayRef) = match column.values {
            ReleasedValues::Text(v) => (DataType::Utf8, Arc::new(StringArray::from(v))),
            ReleasedValues::Int(v) => (DataType::Int64, Arc::new(Int64Array::from(v))),
            ReleasedValues::Float(v) => (DataType::Float64, Arc::new(Float64Array::from(v))),
            _ => {
                return Err(TableError::Parquet(
                    "a released column of an unknown type".into(),
                ));
            }
        };
        fields.push(Field::new(column.name, kind, false));
        arrays.push(array);
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays)?;
    let mut writer = ArrowWriter::try_new(Vec::new(), schema, None)?;
    writer.write(&batch)?;
    Ok(writer.into_inner()?)
}
