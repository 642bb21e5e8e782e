//! A fake I²C temperature sensor that serves a synthetic waveform, for QEMU and tests.
//!
//! Reading `n` is `21.5 °C + 4 sin(2πn/48) + 1.5 sin(2πn/7)`, quantised to 1/128 °C.
//! `sin` comes from micromath (called as `F32Ext::sin(x)`, so host builds do not switch
//! to std's inherent `f32::sin` and compute different values).

use core::convert::Infallible;
use core::f32::consts::PI;

use embedded_hal::i2c::{ErrorType, I2c, Operation, SevenBitAddress};
use micromath::F32Ext;

use crate::sensor::{DEFAULT_ADDRESS, TEMPERATURE_REGISTER};

/// Synthetic temperature of reading `n`, in 1/128 °C units.
pub fn waveform(n: u32) -> i16 {
    let t = n as f32;
    let celsius =
        21.5 + 4.0 * F32Ext::sin(2.0 * PI * t / 48.0) + 1.5 * F32Ext::sin(2.0 * PI * t / 7.0);
    F32Ext::round(celsius * 128.0) as i16
}

/// An I²C bus with one synthetic sensor at [`DEFAULT_ADDRESS`]. Each read of the
/// temperature register returns the next sample of [`waveform`].
///
/// Transfers to other addresses or registers read as zeros (like a pulled-down bus).
#[derive(Debug, Default)]
pub struct SyntheticSensorBus {
    readings: u32,
    register: u8,
}

impl SyntheticSensorBus {
    /// A bus whose first reading is `waveform(0)`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Temperature reads served so far.
    pub fn readings(&self) -> u32 {
        self.readings
    }
}

impl ErrorType for SyntheticSensorBus {
    type Error = Infallible;
}

impl I2c<SevenBitAddress> for SyntheticSensorBus {
    fn transaction(
        &mut self,
        address: SevenBitAddress,
        operations: &mut [Operation<'_>],
    ) -> Result<(), Infallible> {
        for op in operations {
            match op {
                Operation::Write(bytes) => {
                    if let Some(&r) = bytes.first() {
                        self.register = r;
                    }
                }
                Operation::Read(buf) => {
                    if address == DEFAULT_ADDRESS && self.register == TEMPERATURE_REGISTER {
                        let value = waveform(self.readings).to_be_bytes();
                        self.readings = self.readings.wrapping_add(1);
                        buf.fill(0);
                        for (b, v) in buf.iter_mut().zip(value) {
                            *b = v;
                        }
                    } else {
                        buf.fill(0);
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sensor::TempSensor;

    #[test]
    fn sensor_reads_the_waveform() {
        let mut sensor = TempSensor::new(SyntheticSensorBus::new(), DEFAULT_ADDRESS);
        for n in 0..100 {
            let Ok(raw) = sensor.read_raw();
            assert_eq!(raw, waveform(n));
            // 21.5 ± 5.5 °C
            assert!((16 * 128..=27 * 128).contains(&raw), "{raw}");
        }
        assert_eq!(sensor.release().readings(), 100);
        assert_eq!(waveform(0), 2752); // 21.5 °C exactly
    }
}
