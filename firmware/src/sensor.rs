//! Temperature sensors on I²C, generic over [`embedded_hal::i2c::I2c`]. Every one is a
//! [`Thermometer`]: it yields readings in 1/128 °C as an `i16`, which the application
//! bins with integers only and converts to [`Fixed`] exactly ([`raw_to_celsius`]).
//!
//! * [`TempSensor`]: a digital thermometer (register map of e.g. TI TMP117: register
//!   `0x00` holds the temperature as a big-endian `i16` in units of 1/128 °C);
//! * [`NtcSensor`]: an NTC thermistor in a voltage divider, read by a 16-bit I²C ADC
//!   (conversion register `0x00`, big-endian, as on an ADS1115). Turning the ADC code
//!   into a temperature needs a logarithm (the B-parameter model, [`Ntc`]); it is
//!   computed in `f32` with `micromath` and rounded to the 1/128 °C grid **before** the
//!   reading enters the integer path, so no float ever decides a noise value. The
//!   `f32` steps are IEEE-754 basic operations only (micromath's approximations are
//!   polynomials and bit manipulation), so a reading is bit-identical on the host,
//!   Cortex-M0 (soft float) and Cortex-M4F (FPU); the end-to-end test checks it.

use embedded_hal::i2c::I2c;
use micromath::F32Ext;
use privq_core::Fixed;

/// A temperature source: readings in 1/128 °C.
pub trait Thermometer {
    /// The read error.
    type Error;
    /// The next reading, in 1/128 °C.
    fn read_raw(&mut self) -> Result<i16, Self::Error>;
}

impl<I2C: I2c> Thermometer for TempSensor<I2C> {
    type Error = I2C::Error;
    fn read_raw(&mut self) -> Result<i16, I2C::Error> {
        TempSensor::read_raw(self)
    }
}

/// Register holding the latest temperature.
pub const TEMPERATURE_REGISTER: u8 = 0x00;

/// Default 7-bit bus address.
pub const DEFAULT_ADDRESS: u8 = 0x48;

/// Converts a raw reading (1/128 °C units) to degrees Celsius, exactly:
/// 1/128 = 2⁻⁷, so the fixed-point value is `raw · 2³²⁻⁷`.
pub const fn raw_to_celsius(raw: i16) -> Fixed {
    Fixed::from_bits((raw as i64) << (Fixed::FRAC_BITS - 7))
}

/// A temperature sensor on an I²C bus.
#[derive(Debug)]
pub struct TempSensor<I2C> {
    bus: I2C,
    address: u8,
}

impl<I2C: I2c> TempSensor<I2C> {
    /// A sensor at `address` on `bus`.
    pub fn new(bus: I2C, address: u8) -> Self {
        TempSensor { bus, address }
    }

    /// Reads the raw register value (1/128 °C units).
    pub fn read_raw(&mut self) -> Result<i16, I2C::Error> {
        let mut buf = [0u8; 2];
        self.bus
            .write_read(self.address, &[TEMPERATURE_REGISTER], &mut buf)?;
        Ok(i16::from_be_bytes(buf))
    }

    /// Reads the temperature in °C.
    pub fn read_celsius(&mut self) -> Result<Fixed, I2C::Error> {
        self.read_raw().map(raw_to_celsius)
    }

    /// Gives the bus back.
    pub fn release(self) -> I2C {
        self.bus
    }
}

/// Default 7-bit address of the ADC that reads the thermistor divider.
pub const NTC_ADC_ADDRESS: u8 = 0x49;

/// The ADC's conversion register (big-endian `i16`).
pub const ADC_CONVERSION_REGISTER: u8 = 0x00;

/// The ADC code at the divider's supply voltage (ratiometric, 15 bits positive).
pub const ADC_FULL_SCALE: i16 = i16::MAX;

/// 0 °C in kelvin.
const ZERO_CELSIUS_K: f32 = 273.15;

/// An NTC thermistor in the B-parameter model, `1/T = 1/T₀ + ln(R/R₀)/B` (T in kelvin),
/// on the low side of a divider with a fixed resistor to the supply, so the ADC code is
/// `FS · R/(R + R_fixed)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ntc {
    /// B constant, kelvin.
    pub beta: f32,
    /// Resistance at `t0_kelvin`, ohms.
    pub r0_ohm: f32,
    /// Reference temperature, kelvin.
    pub t0_kelvin: f32,
    /// The divider's fixed resistor, ohms.
    pub r_fixed_ohm: f32,
}

/// A common part: 10 kΩ at 25 °C, B = 3950 K, with a 10 kΩ divider resistor.
pub const NTC_10K_B3950: Ntc = Ntc {
    beta: 3950.0,
    r0_ohm: 10_000.0,
    t0_kelvin: 298.15,
    r_fixed_ohm: 10_000.0,
};

impl Ntc {
    /// The temperature for ADC code `code`, in 1/128 °C rounded to the nearest step;
    /// `None` for a code that means an open or shorted thermistor (`≤ 0` or full
    /// scale) or a temperature outside the `i16` range.
    pub fn code_to_raw(&self, code: i16) -> Option<i16> {
        if code <= 0 || code == ADC_FULL_SCALE {
            return None;
        }
        let c = f32::from(code);
        let r = self.r_fixed_ohm * c / (f32::from(ADC_FULL_SCALE) - c);
        // micromath's `ln` is accurate to about 1e-4 for arguments ≥ 1, but below 1 it
        // goes through an approximate reciprocal (errors up to 0.12): keep it ≥ 1.
        let ln_ratio = if r >= self.r0_ohm {
            F32Ext::ln(r / self.r0_ohm)
        } else {
            -F32Ext::ln(self.r0_ohm / r)
        };
        let inv_t = 1.0 / self.t0_kelvin + ln_ratio / self.beta;
        let steps = F32Ext::round((1.0 / inv_t - ZERO_CELSIUS_K) * 128.0);
        // NaN and out-of-range values fail the range test.
        if (f32::from(i16::MIN)..=f32::from(i16::MAX)).contains(&steps) {
            Some(steps as i16)
        } else {
            None
        }
    }

    /// The ADC code an ideal divider gives at `raw` (1/128 °C; clamped to the usual
    /// NTC range −55 … 150 °C), clamped to `1..FS`: the inverse of [`code_to_raw`](Self::code_to_raw), for the simulated
    /// sensor ([`crate::synthetic::SyntheticNtcBus`]).
    pub fn raw_to_code(&self, raw: i16) -> i16 {
        let raw = raw.clamp(-55 * 128, 150 * 128);
        let t = f32::from(raw) / 128.0 + ZERO_CELSIUS_K;
        let r = self.r0_ohm * F32Ext::exp(self.beta * (1.0 / t - 1.0 / self.t0_kelvin));
        let code = F32Ext::round(f32::from(ADC_FULL_SCALE) * r / (r + self.r_fixed_ohm));
        if code >= f32::from(ADC_FULL_SCALE - 1) {
            ADC_FULL_SCALE - 1
        } else if code >= 1.0 {
            code as i16
        } else {
            1
        }
    }
}

/// A 64-bit FNV-1a digest of [`Ntc::code_to_raw`] for every ADC code (`i16::MIN` for
/// `None`) and of [`Ntc::raw_to_code`] for every 7th reading from −60 to 155 °C: the
/// host, Cortex-M0 and Cortex-M4F must compute the same value
/// ([`NTC_10K_B3950_DIGEST`]), which shows that the `f32`/micromath conversion is
/// bit-identical on all of them.
pub fn ntc_digest(ntc: &Ntc) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |v: i16| {
        for b in v.to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for code in 0..=i16::MAX {
        feed(ntc.code_to_raw(code).unwrap_or(i16::MIN));
    }
    for raw in (-60 * 128..=155 * 128).step_by(7) {
        feed(ntc.raw_to_code(raw));
    }
    h
}

/// [`ntc_digest`] of [`NTC_10K_B3950`], as computed on the host.
pub const NTC_10K_B3950_DIGEST: u64 = 0x59b5_bcd9_6755_990f;

/// Why an [`NtcSensor`] read failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NtcError<E> {
    /// The bus failed.
    Bus(E),
    /// The code means an open or shorted thermistor, or an impossible temperature.
    OutOfRange,
}

/// An NTC thermistor read through an I²C ADC (see [`Ntc`]).
#[derive(Debug)]
pub struct NtcSensor<I2C> {
    bus: I2C,
    address: u8,
    ntc: Ntc,
}

impl<I2C: I2c> NtcSensor<I2C> {
    /// A thermistor `ntc` behind the ADC at `address` on `bus`.
    pub fn new(bus: I2C, address: u8, ntc: Ntc) -> Self {
        NtcSensor { bus, address, ntc }
    }

    /// Reads the ADC code.
    pub fn read_code(&mut self) -> Result<i16, I2C::Error> {
        let mut buf = [0u8; 2];
        self.bus
            .write_read(self.address, &[ADC_CONVERSION_REGISTER], &mut buf)?;
        Ok(i16::from_be_bytes(buf))
    }
}

impl<I2C: I2c> Thermometer for NtcSensor<I2C> {
    type Error = NtcError<I2C::Error>;
    fn read_raw(&mut self) -> Result<i16, Self::Error> {
        let code = self.read_code().map_err(NtcError::Bus)?;
        self.ntc.code_to_raw(code).ok_or(NtcError::OutOfRange)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The B-parameter model in f64 with std's exact `ln`, °C.
    fn reference_celsius(ntc: &Ntc, code: i16) -> f64 {
        let c = f64::from(code);
        let r = f64::from(ntc.r_fixed_ohm) * c / (32767.0 - c);
        let inv_t =
            1.0 / f64::from(ntc.t0_kelvin) + (r / f64::from(ntc.r0_ohm)).ln() / f64::from(ntc.beta);
        1.0 / inv_t - 273.15
    }

    #[test]
    fn ntc_conversion_matches_the_model_within_a_twentieth_of_a_degree() {
        let ntc = NTC_10K_B3950;
        // 25 °C: R = R0, code = FS/2.
        assert!(ntc.code_to_raw(16384).unwrap().abs() - 25 * 128 <= 3);
        let mut worst = 0.0f64;
        // Codes covering about −20 … 80 °C.
        for code in (2_000..29_000).step_by(7) {
            let got = f64::from(ntc.code_to_raw(code).unwrap()) / 128.0;
            worst = worst.max((got - reference_celsius(&ntc, code)).abs());
        }
        assert!(worst < 0.05, "worst error {worst} °C");
        for bad in [i16::MIN, -1, 0, ADC_FULL_SCALE] {
            assert_eq!(ntc.code_to_raw(bad), None);
        }
    }

    #[test]
    fn ntc_digest_is_the_recorded_one() {
        assert_eq!(
            ntc_digest(&NTC_10K_B3950),
            NTC_10K_B3950_DIGEST,
            "{:#x}",
            ntc_digest(&NTC_10K_B3950)
        );
    }

    #[test]
    fn the_simulated_divider_inverts_the_conversion() {
        let ntc = NTC_10K_B3950;
        // 6.5 … 33.5 °C, the synthetic waveform's range.
        for raw in (832..4300).step_by(3) {
            let back = ntc.code_to_raw(ntc.raw_to_code(raw)).unwrap();
            assert!((back - raw).abs() <= 8, "{raw} -> {back}");
        }
        assert_eq!(ntc.raw_to_code(i16::MIN), ntc.raw_to_code(-55 * 128));
        assert_eq!(ntc.raw_to_code(i16::MAX), ntc.raw_to_code(150 * 128));
        assert!(ntc.raw_to_code(-55 * 128) > ntc.raw_to_code(150 * 128));
    }

    #[test]
    fn conversion_is_exact() {
        assert_eq!(raw_to_celsius(128), Fixed::ONE);
        assert_eq!(raw_to_celsius(-64), Fixed::from_bits(-(1 << 31)));
        assert_eq!(raw_to_celsius(2752).to_f64(), 21.5);
    }
}
