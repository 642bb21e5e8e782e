//! A fake I²C temperature sensor that serves a synthetic waveform, for QEMU, host
//! simulations of whole fleets, and tests.
//!
//! Device `d` sits at its own baseline temperature `b(d)` ([`device_baseline`]) and
//! reading `n` is `b(d) + 4 sin(2πn/48) + 1.5 sin(2πn/7)` °C in 1/128 °C units
//! ([`waveform`]). Baselines are spread over 12–28 °C (a triangular distribution
//! peaking at 20 °C), so a fleet's devices fall into different histogram bins.
//!
//! The two sine terms come from tables of their values already rounded to 1/128 °C,
//! so the simulation is integer-only: no soft-float code in the Cortex-M0 image, and
//! readings that are trivially bit-identical on the host, M0 and M4F (the end-to-end
//! test, `tests/tests/e2e.rs`, relies on that).

use core::convert::Infallible;

use embedded_hal::i2c::{ErrorType, I2c, Operation, SevenBitAddress};

use crate::sensor::{
    ADC_CONVERSION_REGISTER, DEFAULT_ADDRESS, NTC_ADC_ADDRESS, Ntc, TEMPERATURE_REGISTER,
};

/// Baseline of the original single-device demo (and of [`SyntheticSensorBus::new`]):
/// 21.5 °C in 1/128 °C units.
pub const DEMO_BASELINE: i16 = 2752;

/// The baseline temperature of simulated device `device`, in 1/128 °C units.
///
/// Integer-only and independent of any RNG (the release RNG must not be touched by
/// the simulation, or device reports would not match the host's for the same seed):
/// two 11-bit uniform values from a SplitMix64 finaliser of `device` are added, giving
/// 12 °C + (0..=16 °C), triangular with its peak at 20 °C.
pub fn device_baseline(device: u64) -> i16 {
    let mut z = device.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let a = (z & 0xffff) % 1025;
    let b = ((z >> 16) & 0xffff) % 1025;
    // 12 °C · 128 = 1536; a + b ≤ 2048 (16 °C): the sum fits an i16 easily.
    (1536 + a + b) as i16
}

/// `round(128 · 4 sin(2πk/48))`, `k = 0..48`: the slow term, 1/128 °C units.
const SLOW: [i16; 48] = [
    0, 67, 133, 196, 256, 312, 362, 406, 443, 473, 495, 508, 512, 508, 495, 473, 443, 406, 362,
    312, 256, 196, 133, 67, 0, -67, -133, -196, -256, -312, -362, -406, -443, -473, -495, -508,
    -512, -508, -495, -473, -443, -406, -362, -312, -256, -196, -133, -67,
];

/// `round(128 · 1.5 sin(2πk/7))`, `k = 0..7`: the fast term, 1/128 °C units.
const FAST: [i16; 7] = [0, 150, 187, 83, -83, -187, -150];

/// Synthetic temperature of reading `n` around `baseline` (both in 1/128 °C units).
pub fn waveform(baseline: i16, n: u32) -> i16 {
    let slow = SLOW.get((n % 48) as usize).copied().unwrap_or(0);
    let fast = FAST.get((n % 7) as usize).copied().unwrap_or(0);
    baseline.saturating_add(slow).saturating_add(fast)
}

/// An I²C bus with one synthetic sensor at [`DEFAULT_ADDRESS`]. Each read of the
/// temperature register returns the next sample of [`waveform`].
///
/// Transfers to other addresses or registers read as zeros (like a pulled-down bus).
#[derive(Debug)]
pub struct SyntheticSensorBus {
    baseline: i16,
    readings: u32,
    register: u8,
}

impl Default for SyntheticSensorBus {
    fn default() -> Self {
        Self::with_baseline(DEMO_BASELINE)
    }
}

impl SyntheticSensorBus {
    /// A bus around the demo baseline 21.5 °C whose first reading is `waveform(DEMO_BASELINE, 0)`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The sensor of simulated device `device` (baseline [`device_baseline`]`(device)`).
    pub fn for_device(device: u64) -> Self {
        Self::with_baseline(device_baseline(device))
    }

    /// A bus around `baseline` (1/128 °C units).
    pub fn with_baseline(baseline: i16) -> Self {
        SyntheticSensorBus {
            baseline,
            readings: 0,
            register: 0,
        }
    }

    /// The baseline, in 1/128 °C units.
    pub fn baseline(&self) -> i16 {
        self.baseline
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
                    buf.fill(0);
                    if address == DEFAULT_ADDRESS && self.register == TEMPERATURE_REGISTER {
                        let value = waveform(self.baseline, self.readings).to_be_bytes();
                        self.readings = self.readings.wrapping_add(1);
                        for (b, v) in buf.iter_mut().zip(value) {
                            *b = v;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// The simulated thermistor of [`crate::sensor::NtcSensor`]: an ADC at
/// [`NTC_ADC_ADDRESS`] whose conversion register serves, for each reading, the code an
/// ideal divider gives at the temperature [`SyntheticSensorBus`] would serve
/// ([`Ntc::raw_to_code`]). Other transfers read zeros.
#[derive(Debug)]
pub struct SyntheticNtcBus {
    inner: SyntheticSensorBus,
    ntc: Ntc,
    register: u8,
}

impl SyntheticNtcBus {
    /// The thermistor of simulated device `device` (the waveform of
    /// [`SyntheticSensorBus::for_device`]).
    pub fn for_device(device: u64, ntc: Ntc) -> Self {
        SyntheticNtcBus {
            inner: SyntheticSensorBus::for_device(device),
            ntc,
            register: 0,
        }
    }
}

impl ErrorType for SyntheticNtcBus {
    type Error = Infallible;
}

impl I2c<SevenBitAddress> for SyntheticNtcBus {
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
                    buf.fill(0);
                    if address == NTC_ADC_ADDRESS && self.register == ADC_CONVERSION_REGISTER {
                        let mut t = [0u8; 2];
                        self.inner
                            .write_read(DEFAULT_ADDRESS, &[TEMPERATURE_REGISTER], &mut t)?;
                        let code = self.ntc.raw_to_code(i16::from_be_bytes(t)).to_be_bytes();
                        for (b, v) in buf.iter_mut().zip(code) {
                            *b = v;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::sensor::TempSensor;

    #[test]
    fn sensor_reads_the_waveform() {
        let mut sensor = TempSensor::new(SyntheticSensorBus::new(), DEFAULT_ADDRESS);
        for n in 0..100 {
            let Ok(raw) = sensor.read_raw();
            assert_eq!(raw, waveform(DEMO_BASELINE, n));
            // 21.5 ± 5.5 °C
            assert!((16 * 128..=27 * 128).contains(&raw), "{raw}");
        }
        assert_eq!(sensor.release().readings(), 100);
        assert_eq!(waveform(DEMO_BASELINE, 0), 2752); // 21.5 °C exactly
    }

    #[test]
    fn the_thermistor_reads_the_waveform_within_a_tenth_of_a_degree() {
        use crate::sensor::{NTC_10K_B3950, NtcSensor, Thermometer};
        let mut ntc = NtcSensor::new(
            SyntheticNtcBus::for_device(7, NTC_10K_B3950),
            NTC_ADC_ADDRESS,
            NTC_10K_B3950,
        );
        for n in 0..100 {
            let raw = ntc.read_raw().unwrap();
            let truth = waveform(device_baseline(7), n);
            assert!((raw - truth).abs() <= 12, "{n}: {raw} vs {truth}");
        }
        let mut wrong = NtcSensor::new(
            SyntheticNtcBus::for_device(7, NTC_10K_B3950),
            0x10,
            NTC_10K_B3950,
        );
        assert!(
            wrong.read_raw().is_err(),
            "other addresses read 0: open circuit"
        );
    }

    #[test]
    fn the_tables_are_the_rounded_sines() {
        for (k, &v) in SLOW.iter().enumerate() {
            let exact = 128.0 * 4.0 * (2.0 * std::f64::consts::PI * k as f64 / 48.0).sin();
            assert_eq!(f64::from(v), exact.round(), "slow {k}");
        }
        for (k, &v) in FAST.iter().enumerate() {
            let exact = 128.0 * 1.5 * (2.0 * std::f64::consts::PI * k as f64 / 7.0).sin();
            assert_eq!(f64::from(v), exact.round(), "fast {k}");
        }
    }

    #[test]
    fn other_addresses_and_registers_read_zero() {
        let mut bus = SyntheticSensorBus::new();
        let mut buf = [0xaa; 2];
        bus.write_read(0x49, &[TEMPERATURE_REGISTER], &mut buf)
            .unwrap();
        assert_eq!(buf, [0, 0]);
        bus.write_read(DEFAULT_ADDRESS, &[0x01], &mut buf).unwrap();
        assert_eq!(buf, [0, 0]);
        assert_eq!(bus.readings(), 0);
    }

    #[test]
    fn baselines_spread_over_12_to_28_degrees_peaking_near_20() {
        let mut bands = [0u32; 4]; // 12-16, 16-20, 20-24, 24-28 °C
        for d in 0..20_000u64 {
            let b = device_baseline(d);
            assert!((12 * 128..=28 * 128).contains(&b), "{b}");
            bands[(((b - 12 * 128) / (4 * 128)) as usize).min(3)] += 1;
        }
        // Triangular: the middle bands hold 3/8 each, the outer ones 1/8 each.
        assert!(
            bands[1] > 2 * bands[0] && bands[2] > 2 * bands[3],
            "{bands:?}"
        );
        assert_ne!(device_baseline(0), device_baseline(1));
        assert_eq!(
            SyntheticSensorBus::for_device(5).baseline(),
            device_baseline(5)
        );
    }
}
